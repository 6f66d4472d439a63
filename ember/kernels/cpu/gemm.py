"""Matrix products on ember's own threads, each piece a single-threaded BLAS call.

OpenBLAS's worker threads spin for ``OPENBLAS_THREAD_TIMEOUT`` after every call (2^28 cycles,
unless the variable was set before NumPy loaded OpenBLAS), taking the cores that the Numba
kernels between two GEMMs need: a training step was markedly slower when NumPy was imported
before ember. Here BLAS runs with one thread during ember's products, and a
large product's rows are split over a small pool of Python threads (NumPy releases the GIL
inside BLAS), so no thread ever waits spinning and the speed does not depend on what the
user imported first. Where the BLAS library is not OpenBLAS with its own thread pool
(MKL, an OpenMP build, no control found), products go straight to NumPy.
"""

from __future__ import annotations

import itertools
import math
import os
import threading

import numpy as np

from ember import config
from ember.kernels import autotune

from . import threadpool

__all__ = ["matmul", "matmul_rows"]

#: Where a product is split over the pool when nothing is measured (autotune's ``minimal``
#: level): below this many multiply-adds, handing pieces to the pool cost more than it saved
#: on the machine this was first measured on.
_SPLIT_MIN_MACS = 1 << 20
#: Products below this many multiply-adds run in one call, untuned: the tuner's look-up would
#: cost a noticeable part of them, and splitting never pays there.
_TUNE_MIN_MACS = 1 << 16
#: Fewest rows a piece gets (BLAS kernels work on blocks of a few rows).
_MIN_ROWS = 16
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class _OpenBlasThreads:
    """``openblas_{get,set}_num_threads`` of every OpenBLAS loaded, found through threadpoolctl.

    Every one, not the first: SciPy (which Numba imports) brings its own OpenBLAS, and it may
    be listed before NumPy's; limiting only that one left NumPy's products running two BLAS
    threads each inside ember's split, more threads than cores."""

    def __init__(self):
        self._libraries = []  # (get, set) per OpenBLAS with its own thread pool
        try:
            from threadpoolctl import ThreadpoolController

            controllers = ThreadpoolController().select(internal_api="openblas").lib_controllers
        except Exception:  # (no threadpoolctl or an unreadable library: no control)
            controllers = []
        for ctl in controllers:
            if getattr(ctl, "threading_layer", None) == "openmp":
                continue  # per-thread limits there: nothing spins across threads
            for prefix, suffix in itertools.product(("", "scipy_"), ("", "64_", "_64")):
                get = getattr(ctl.dynlib, f"{prefix}openblas_get_num_threads{suffix}", None)
                put = getattr(ctl.dynlib, f"{prefix}openblas_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    self._libraries.append((get, put))
                    break
        self.available = bool(self._libraries)

    def __enter__(self):
        _call_lock.acquire()  # the setting is process-wide: one product at a time changes it
        self._before = [get() for get, _ in self._libraries]
        for (_, put), before in zip(self._libraries, self._before):
            if before != 1:
                put(1)

    def __exit__(self, *exc):
        try:
            for (_, put), before in zip(self._libraries, self._before):
                if before != 1:
                    put(before)
        finally:
            _call_lock.release()


_blas = None
_setup_lock = threading.Lock()
_call_lock = threading.RLock()


def _new_locks_after_fork() -> None:
    global _setup_lock, _call_lock  # a lock held by another thread at fork time stays held
    _setup_lock = threading.Lock()
    _call_lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_after_fork)


def _setup():
    global _blas
    with _setup_lock:
        if _blas is None:
            blas = _OpenBlasThreads()
            if not config.get("threads.gemm_pool"):  # NumPy's own BLAS threading
                blas.available = False
            _blas = blas
    return _blas


#: Bytes of output a biased product covers per BLAS call, so that the bias is added while
#: those rows are still in cache (a separate pass would read the whole result again).
_BIAS_BLOCK_BYTES = 1 << 20


def _product(a, b, out, bias):
    if bias is None:
        np.matmul(a, b, out=out)
        return
    rows = max(_MIN_ROWS, _BIAS_BLOCK_BYTES // max(1, out.shape[-1] * out.itemsize))
    for r0 in range(0, max(1, a.shape[-2]), rows):
        block = out[..., r0 : r0 + rows, :]
        np.matmul(a[..., r0 : r0 + rows, :], b, out=block)
        np.add(block, bias, out=block)


def _products(pieces, bias=None):
    return [(lambda a=a, b=b, out=out: _product(a, b, out, bias)) for a, b, out in pieces]


def _plain(a, b, bias):
    out = np.matmul(a, b)
    if bias is not None:
        out += bias
    return out


def _bounds(n, parts):
    return [(i * n // parts, (i + 1) * n // parts) for i in range(parts)]


def matmul(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """``a @ b`` (NumPy semantics), plus ``bias`` (broadcast over the result's rows) when given.
    2-D float products large enough are split by rows and batched ones by their leading
    dimension; all run with single-threaded BLAS, and each piece adds the bias to its rows
    while they are in cache."""
    blas = _setup() if _blas is None else _blas
    if not blas.available:
        return _plain(a, b, bias)
    if a.dtype not in _FLOATS or b.dtype != a.dtype or a.ndim < 2 or b.ndim < 2:
        with blas:
            return _plain(a, b, bias)
    macs = math.prod(a.shape[:-1]) * a.shape[-1] * b.shape[-1]
    pool = threadpool.pool()
    if pool.threads == 1 or macs < _TUNE_MIN_MACS:
        with blas:
            return _plain(a, b, bias)
    if a.ndim == 2 and b.ndim == 2:
        if a.shape[0] // _MIN_ROWS > 1:
            parts = (
                a.dtype,
                a.shape,
                b.shape,
                a.strides[0] < a.strides[1],
                b.strides[0] < b.strides[1],
                pool.threads,
            )
            return _MATMUL(parts, a, b, bias, default="rows" if macs >= _SPLIT_MIN_MACS else "one")
    elif macs < _SPLIT_MIN_MACS:
        with blas:
            return _plain(a, b, bias)
    elif a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0] and a.shape[0] >= 2:
        parts = min(pool.threads, a.shape[0])
        out = np.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=a.dtype)
        pieces = [(a[s:e], b[s:e], out[s:e]) for s, e in _bounds(a.shape[0], parts)]
        with blas:
            pool.run(_products(pieces, bias))
        return out
    with blas:
        return _plain(a, b, bias)


def _one_call(a, b, bias):
    """The product in one single-threaded BLAS call."""
    with _blas:
        return _plain(a, b, bias)


def _split_rows(a, b, bias):
    """The product's rows split over ember's threads, each piece a single-threaded BLAS call."""
    pool = threadpool.pool()
    parts = max(1, min(pool.threads, a.shape[0] // _MIN_ROWS))
    out = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
    pieces = [(a[r0:r1], b, out[r0:r1]) for r0, r1 in _bounds(a.shape[0], parts)]
    with _blas:
        pool.run(_products(pieces, bias))
    return out


def _split_depth(a, b, bias):
    """The product's inner dimension split over ember's threads and the partial products
    summed: a short, wide result over a long inner dimension (a weight's gradient, summed over
    every token) reads each input once instead of once per thread."""
    pool = threadpool.pool()
    depth = a.shape[1]
    parts = max(1, min(pool.threads, depth // _MIN_ROWS))
    partial = np.empty((parts, a.shape[0], b.shape[1]), dtype=a.dtype)
    pieces = [(a[:, k0:k1], b[k0:k1], partial[i]) for i, (k0, k1) in enumerate(_bounds(depth, parts))]
    with _blas:
        pool.run(_products(pieces))
    out = partial[0]
    for rest in partial[1:]:
        np.add(out, rest, out=out)
    if bias is not None:
        np.add(out, bias, out=out)
    return out


#: A 2-D product's split, measured per class of shapes, layouts and thread count: where one
#: call beats a split, and which split, depends on the machine's BLAS kernels and cores.
_MATMUL = autotune.Tunable(
    "cpu.matmul",
    [
        autotune.Candidate("one", _one_call),
        autotune.Candidate("rows", _split_rows),
        autotune.Candidate("depth", _split_depth),
    ],
    default="rows",
)


def matmul_rows(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None, epilogue, into=None) -> None:
    """``a [M, K] @ b [K, N]`` (plus ``bias``) made block of rows by block of rows, each handed to
    ``epilogue(r0, r1, block)`` while it is in cache (the fusion engine's matmul epilogue). The
    blocks are written to ``into`` [M, N] when given; otherwise each thread reuses one block
    buffer and the product is never stored whole. Large products are split by rows over
    ember's threads, as :func:`matmul` splits them."""
    blas = _setup() if _blas is None else _blas
    m, n = a.shape[0], b.shape[1]
    rows = max(_MIN_ROWS, _BIAS_BLOCK_BYTES // max(1, n * a.itemsize))
    pool = threadpool.pool()
    parts = 1
    if blas.available and pool.threads > 1 and m * a.shape[1] * n >= _SPLIT_MIN_MACS:
        parts = max(1, min(pool.threads, m // _MIN_ROWS))

    def piece(p0: int, p1: int) -> None:
        scratch = np.empty((min(rows, p1 - p0), n), a.dtype) if into is None else None
        for r0 in range(p0, p1, rows):
            r1 = min(r0 + rows, p1)
            block = scratch[: r1 - r0] if into is None else into[r0:r1]
            np.matmul(a[r0:r1], b, out=block)
            if bias is not None:
                np.add(block, bias, out=block)
            epilogue(r0, r1, block)

    if not blas.available:
        piece(0, m)
        return
    with blas:
        if parts > 1:
            pool.run([lambda p0=p0, p1=p1: piece(p0, p1) for p0, p1 in _bounds(m, parts)])
        else:
            piece(0, m)
