"""The ``cpu`` backend: NumPy primitives (BLAS GEMM), fused Numba composites, and native C++
kernels where they measure faster than their Numba twins (see bench/).

The fused kernels compile in a background process on an empty kernel cache
(:mod:`.background_compile`); until a dtype's are ready, :meth:`CpuBackend.kernels_ready` is
False and every fused method declines to its family's default."""

from __future__ import annotations

import numpy as np

from ember.kernels import native_ops, threads
from ember.kernels.backend import fused
from ember.kernels.cpu import activations, embedding, fused_chain, gemm, rows
from ember.kernels.cpu.activations import CpuActivationOps
from ember.kernels.cpu.attention import CpuAttentionOps
from ember.kernels.cpu.background_compile import BackgroundCompile
from ember.kernels.cpu.cross_entropy import CpuLossOps
from ember.kernels.cpu.dropout import CpuDropoutOps
from ember.kernels.cpu.embedding import CpuEmbeddingOps
from ember.kernels.cpu.embedding_bag import CpuEmbeddingBagOps
from ember.kernels.cpu.norms import CpuNormOps
from ember.kernels.cpu.optimizer_ops import CpuOptimizerOps
from ember.kernels.cpu.softmax import CpuSoftmaxOps
from ember.kernels.reference import ArrayBackend, unique_rows
from ember.kernels.threads import apply_blas_threads

#: Elements below which NumPy's row indexing is as fast as the parallel row kernels.
_ROWS_MIN_ELEMENTS = 1 << 16
_ROW_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _row_key(x, key):
    """The row numbers when ``x[key]`` picks whole rows of a large float array by one in-range
    integer array (token packing's gather and scatter), else None."""
    if isinstance(key, tuple):
        if len(key) != 1:
            return None
        key = key[0]
    if not (
        isinstance(key, np.ndarray)
        and key.ndim == 1
        and key.dtype.kind in "iu"
        and key.size
        and isinstance(x, np.ndarray)
        and x.ndim >= 2
        and x.dtype in _ROW_DTYPES
        and x.flags.c_contiguous
        and key.size * (x.size // max(1, x.shape[0])) >= _ROWS_MIN_ELEMENTS
    ):
        return None
    if key.min() < 0 or key.max() >= x.shape[0]:
        return None  # (negative or out of range: NumPy's own indexing and errors)
    return key


class CpuBackend(
    CpuActivationOps,
    CpuSoftmaxOps,
    CpuNormOps,
    CpuLossOps,
    CpuEmbeddingOps,
    CpuEmbeddingBagOps,
    CpuDropoutOps,
    CpuAttentionOps,
    CpuOptimizerOps,
    ArrayBackend,
):
    """NumPy primitives (some with faster kernels of their own), and the fused kernels of each
    op family, one mixin per family from the module holding its kernels."""

    name = "cpu"

    def __init__(self, seed=None):
        super().__init__(seed)
        apply_blas_threads()
        # Only the calls where the C++ kernels measure faster than their Numba twins go to
        # C++ (float32 layer-norm forward, float64 exact GELU); bench/bench_native.py compares
        # the two, and Numba wins everywhere else.
        # ... unless an OpenMP runtime loaded before ember spins after every parallel region
        # (the C++ kernels are OpenMP; see ember.kernels.threads.SPINNING_OPENMP)
        self._native = native_ops.available() and not threads.SPINNING_OPENMP
        self._tiers = BackgroundCompile()
        self._chain_runner = fused_chain.Runner(self)

    # ---- primitives with a faster kernel than NumPy's -----------------------------------
    def _gemm(self, a, b):
        return gemm.matmul(a, b)  # single-threaded BLAS pieces on ember's threads (see gemm)

    @fused(ready_arg=None)
    def linear(self, x, w, b):
        return gemm.matmul(x, w, bias=b)  # the bias added to each block of rows while in cache

    # ---- token packing's row gather and scatter: one parallel sweep --------------------
    def getitem(self, x, key):
        picked = _row_key(x, key)
        if picked is None or not self._tiers.ready_for(x, "rows"):
            return super().getitem(x, key)
        return embedding.embedding(x.reshape(x.shape[0], -1), picked).reshape(picked.shape + x.shape[1:])

    def index_put(self, x, key, values, accumulate):
        if accumulate:
            return self.index_add(x, key, values)
        picked = self._row_update(x, key, values)
        if picked is None:
            return super().index_put(x, key, values, accumulate)
        return rows.put_rows(x, picked, values, add=False)

    def index_add(self, x, key, values):
        picked = self._row_update(x, key, values)
        if picked is None or not unique_rows(picked, x.shape[0]):
            return super().index_add(x, key, values)
        return rows.put_rows(x, picked, values, add=True)

    def _row_update(self, x, key, values):
        picked = _row_key(x, key)
        if (
            picked is None
            or not isinstance(values, np.ndarray)
            or values.dtype != x.dtype
            or values.shape != picked.shape + x.shape[1:]
            or not values.flags.c_contiguous
            or not self._tiers.ready_for(x, "rows")
        ):
            return None
        return picked

    def _erf(self, x):
        if not self.kernels_ready(x, "erf"):
            return super()._erf(x)
        if x.dtype == np.float16:  # the kernel is float32/float64
            return activations.erf(x.astype(np.float32)).astype(np.float16)
        return activations.erf(x)

    def kernels_ready(self, array, kernel: str | None = None) -> bool:
        return self._tiers.ready_for(array, kernel)

    def chain_runner(self):
        return self._chain_runner
