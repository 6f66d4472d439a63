"""Pieces shared by the cpu attention kernels (:mod:`.attention`, :mod:`.attention_backward`):
key-column gathering for padded keys, row loads and checks, the head layouts and the
problem's shapes."""

from __future__ import annotations

import math

import numpy as np

from . import vecmath as vm
from .checks import contiguous, float_array, probability, seed_u64
from .dropout import keep_threshold
from .jit import serial

#: Bytes of one score tile (query rows x Sk); the backward keeps two per thread, plus
#: the head's gathered k and v (row and column layouts) and its dk and dv, in L2. Timings
#: at B=32, H=4, S=256, Dh=32 were flat from 16 to 256 KiB (and from 8 to 128 query rows
#: with AVX-512).
_TILE_BYTES = 64 << 10
_MASK_FILL = -1.0e4


@serial
def _gather_transposed(src, keep, n, dst):
    """``dst[d, c] = src[keep[c], d]`` for ``c < n`` (``src [S, D]``, ``dst [D, n]``)."""
    cols = src.shape[1]
    for c in range(n):
        row = src[keep[c]]
        for d in range(cols):
            dst[d, c] = row[d]


@serial
def _gather(src, keep, n, dst):
    """``dst[c] = src[keep[c]]`` for ``c < n`` (``src [S, D]``, ``dst [n, D]``)."""
    cols = src.shape[1]
    for c in range(n):
        row = src[keep[c]]
        out = dst[c]
        for d in range(cols):
            out[d] = row[d]


@serial
def _scatter(src, keep, n, dst):
    """``dst[keep[c]] = src[c]`` for ``c < n`` (``src [n, D]``, ``dst [S, D]``); the other rows
    of ``dst`` become 0."""
    rows, cols = dst.shape
    zero = vm.typed(0.0, dst)
    if n < rows:
        for j in range(rows):
            for d in range(cols):
                dst[j, d] = zero
    for c in range(n):
        row = dst[keep[c]]
        values = src[c]
        for d in range(cols):
            row[d] = values[d]


@serial
def _all_finite(a):
    # A count of the elements not within the finite range (NaN fails the comparison): one
    # vectorised loop instead of a test and early exit per element.
    big = vm.typed(np.finfo(a.dtype).max, a)
    bad = 0
    for i in range(a.shape[0]):
        for x in a[i]:
            bad += 0 if abs(x) <= big else 1
    return bad == 0


@serial
def _key_columns(masked, keep, kept_mask):
    """The keys a head's scores are formed for: the unmasked ones, in order (``keep``, with
    ``kept_mask`` all False). Returns their count, or 0 when no key or every key is masked
    (the caller then takes every key)."""
    n = 0
    for j in range(masked.shape[0]):
        if not masked[j]:
            keep[n] = j
            kept_mask[n] = False
            n += 1
    return n if 0 < n < masked.shape[0] else 0


@serial
def _every_key(masked, keep, kept_mask):
    sk = masked.shape[0]
    for j in range(sk):
        keep[j] = j
        kept_mask[j] = masked[j]
    return sk


@serial
def _any(flags, n):
    for j in range(n):
        if flags[j]:
            return True
    return False


@serial
def _load_rows(x, b, h, rows, count, dst):
    """``dst[r] = x[b, rows[r], h]`` for ``r < count`` (``x [B, S, H, D]``)."""
    for r in range(count):
        src = x[b, rows[r], h]
        row = dst[r]
        for d in range(src.shape[0]):
            row[d] = src[d]


@serial
def _is_zero(row):
    for x in row:
        if x != 0:  # NaN too
            return False
    return True


@serial
def _silent_rows_last(x, q, lse, guarded, rows):
    """Row indices into ``rows``: first, in order, those of the rows of ``x [S, D]`` that
    take part in the products, then (in any order) the all-zero rows that need not. Returns
    the first count.

    Forward (``x`` the queries, not ``guarded``): an all-zero query scores 0 against every
    finite key. Backward (``x`` the output gradient, ``guarded``): an all-zero row sends no
    gradient back when its query and ``lse`` are finite too, so that its weights are finite
    and ``w * 0`` is exactly 0.
    """
    live, dead = 0, x.shape[0]
    for i in range(x.shape[0]):
        silent = _is_zero(x[i])
        if silent and guarded:
            silent = math.isfinite(lse[i]) and _all_finite_row(q[i])
        if silent:
            dead -= 1
            rows[dead] = i
        else:
            rows[live] = i
            live += 1
    return live


@serial
def _all_finite_row(row):
    for x in row:
        if not math.isfinite(x):
            return False
    return True


@serial
def _masked_rows_finite(x, masked):
    for j in range(masked.shape[0]):
        if masked[j]:
            for d in range(x.shape[1]):
                if not math.isfinite(x[j, d]):
                    return False
    return True


def _heads_last(op: str, name: str, x: object, dtype: np.dtype | None) -> np.ndarray:
    """``x [B, H, S, D]`` as a C-contiguous ``[B, S, H, D]`` array: free for the heads split
    off a ``[B, S, H * D]`` projection (the usual case), one copy otherwise."""
    if isinstance(x, np.ndarray) and x.ndim == 4:
        return float_array(op, name, x.transpose(0, 2, 1, 3), dtype=dtype)
    float_array(op, name, x, dtype=dtype, min_ndim=4)  # the error for a non-array, dtype or ndim < 4
    raise ValueError(f"{op}: {name} must have shape [B, H, S, Dh], got {x.shape}")


def _heads_first(x: np.ndarray) -> np.ndarray:
    """The ``[B, H, S, D]`` view of a ``[B, S, H, D]`` result (merging the heads back is free)."""
    return x.transpose(0, 2, 1, 3)


class _Problem:
    """Validated inputs shared by the forward and the backward, heads last (``[B, S, H, D]``)."""

    def __init__(self, op, q, k, v, mask_pad, scale, dropout_p, seed):
        self.q = _heads_last(op, "q", q, None)
        self.dtype = self.q.dtype
        self.k = _heads_last(op, "k", k, self.dtype)
        self.v = _heads_last(op, "v", v, self.dtype)
        b, sq, h, dh = self.q.shape
        sk = self.k.shape[1]
        if (self.k.shape[0], self.k.shape[2], self.k.shape[3]) != (b, h, dh):
            raise ValueError(
                f"{op}: k must have shape [B, H, Sk, Dh] = [{b}, {h}, Sk, {dh}] to match "
                f"q {np.shape(q)}, got {np.shape(k)}"
            )
        if self.v.shape[:3] != (b, sk, h):
            raise ValueError(
                f"{op}: v must have shape [B, H, Sk, Dv] = [{b}, {h}, {sk}, Dv] to match "
                f"k {np.shape(k)}, got {np.shape(v)}"
            )
        self.b, self.h, self.sq, self.sk, self.dh = b, h, sq, sk, dh
        self.dv = self.v.shape[3]
        self.bh = b * h
        if mask_pad is None:
            self.mask = np.zeros((b, sk), dtype=np.bool_)
        else:
            if not isinstance(mask_pad, np.ndarray) or mask_pad.dtype != np.bool_:
                raise TypeError(
                    f"{op}: mask_pad must be a bool numpy.ndarray or None, got "
                    f"{getattr(mask_pad, 'dtype', type(mask_pad).__name__)}"
                )
            if mask_pad.shape != (b, sk):
                raise ValueError(
                    f"{op}: mask_pad must have shape [B, Sk] = [{b}, {sk}], got {mask_pad.shape}"
                )
            self.mask = contiguous(mask_pad)
        self.scale = self.dtype.type(float(scale))
        p = probability(op, "dropout_p", dropout_p)
        self.use_dropout = p > 0.0
        self.seed = seed_u64(op, seed)
        self.threshold = keep_threshold(p)
        # p == 1 drops every score to 0 (then softmax is uniform); the scale is unused.
        self.drop_scale = self.dtype.type(1.0 / (1.0 - p) if p < 1.0 else 0.0)
        self.empty = self.bh == 0 or sq == 0 or sk == 0

    def block_rows(self, tile_bytes: int = _TILE_BYTES) -> int:
        """Query rows per tile: ``tile_bytes`` of scores, at least one row."""
        row_bytes = max(1, self.sk) * self.dtype.itemsize
        return max(1, min(max(1, self.sq), tile_bytes // row_bytes))


def _check_shape(op: str, name: str, arr: object, shape: tuple) -> None:
    if isinstance(arr, np.ndarray) and arr.shape != shape:
        raise ValueError(f"{op}: {name} must have shape {list(shape)}, got {arr.shape}")
