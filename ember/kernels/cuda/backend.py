"""The ``cuda`` backend: CuPy arrays, cuBLAS GEMM, fused kernels from the ``.cu`` sources.

The primitives are the NumPy reference's, run through CuPy (same code, ``xp = cupy``); the
composites are overridden with the fused kernels of this package, each falling back to the
composed default outside its kernel's limits (a head dimension over 128, no keys, an empty
normalised axis, rows past the int32 arguments or the launch grid, non-contiguous or
mixed-dtype optimizer buffers).
"""

from __future__ import annotations

import os

import numpy as np

from ember import config
from ember.kernels.cuda.activations import CudaActivationOps
from ember.kernels.cuda.attention import CudaAttentionOps
from ember.kernels.cuda.cross_entropy import CudaLossOps
from ember.kernels.cuda.dropout import CudaDropoutOps
from ember.kernels.cuda.embedding import CudaEmbeddingOps
from ember.kernels.cuda.fused_chain import Runner
from ember.kernels.cuda.norms import CudaNormOps
from ember.kernels.cuda.optimizers import CudaOptimizerOps
from ember.kernels.cuda.runtime import cupy_or_error
from ember.kernels.cuda.softmax import CudaSoftmaxOps
from ember.kernels.reference import ArrayBackend


class CudaOutOfMemoryError(MemoryError):
    """GPU memory ran out; the message says how much was asked and how much is free."""


def _install_allocator(cp) -> None:
    """Route CuPy allocations through the memory pool, translating out-of-memory errors."""
    pool = cp.get_default_memory_pool()
    if getattr(cp.cuda, "_ember_allocator", False):
        return

    def malloc(nbytes):
        try:
            return pool.malloc(nbytes)
        except cp.cuda.memory.OutOfMemoryError:
            pool.free_all_blocks()  # give cached blocks back and retry once
            try:
                return pool.malloc(nbytes)
            except cp.cuda.memory.OutOfMemoryError:
                free, total = cp.cuda.runtime.memGetInfo()
                raise CudaOutOfMemoryError(
                    f"CUDA out of memory on device {cp.cuda.Device().id}: asked for {nbytes / 2**20:.1f} MiB, "
                    f"{free / 2**20:.1f} MiB free of {total / 2**20:.1f} MiB "
                    f"(pool holds {pool.total_bytes() / 2**20:.1f} MiB); free tensors and call "
                    f"ember.cuda.empty_cache()"
                ) from None

    cp.cuda.set_allocator(malloc)
    cp.cuda._ember_allocator = True


class CudaBackend(
    CudaActivationOps,
    CudaSoftmaxOps,
    CudaNormOps,
    CudaLossOps,
    CudaEmbeddingOps,
    CudaDropoutOps,
    CudaAttentionOps,
    CudaOptimizerOps,
    ArrayBackend,
):
    """CuPy primitives, and the fused kernels of each op family, one mixin per family from the
    module holding its launchers."""

    name = "cuda"

    def __init__(self, index: int = 0, seed: int | None = None):
        # TF32 GEMMs change float32 results: off unless asked for ([cuda] tf32, EMBER_CUDA_TF32=1).
        os.environ.setdefault("CUPY_TF32", "1" if config.get("cuda.tf32") else "0")
        cp = cupy_or_error()
        count = cp.cuda.runtime.getDeviceCount()
        if not 0 <= index < count:
            raise ValueError(
                f"Device('cuda:{index}'): there are {count} CUDA device(s) (cuda:0..cuda:{count - 1})"
            )
        self.xp = cp
        self.index = index
        self.cuda_device = cp.cuda.Device(index)
        self.cuda_device.use()
        _install_allocator(cp)
        super().__init__(seed)
        self._chain_runner = Runner(self)

    def chain_runner(self):
        return self._chain_runner  # element-wise chains as one generated kernel (fused_chain)

    # ---- random (device generator for data; a host generator for kernel seeds) ----------
    def seed(self, seed):
        self.generator = self.xp.random.default_rng(seed)
        self._host_rng = np.random.Generator(np.random.PCG64(seed))

    def next_seed(self) -> int:
        return int(self._host_rng.integers(0, 2**63 - 1))

    def uniform(self, shape, dtype, low=0.0, high=1.0):
        u = self.generator.random(shape, dtype=np.float64 if dtype.numpy == np.float64 else np.float32)
        return (u * (high - low) + low).astype(dtype.numpy)

    def normal(self, shape, dtype, mean=0.0, std=1.0):
        z = self.generator.standard_normal(
            shape, dtype=np.float64 if dtype.numpy == np.float64 else np.float32
        )
        return (z * std + mean).astype(dtype.numpy)

    def bernoulli(self, shape, p):
        return self.generator.random(shape) < p

    def randint(self, shape, low, high, dtype):
        return self.generator.integers(low, high, size=shape).astype(dtype.numpy)

    # ---- transfer -----------------------------------------------------------------------
    def from_host(self, array):
        with self.cuda_device:
            return self.xp.asarray(array)

    def to_host(self, x):
        return self.xp.asnumpy(x)

    # ---- primitives that differ from NumPy ----------------------------------------------
    def _erf(self, x):
        from cupyx.scipy.special import erf

        return erf(x).astype(x.dtype)

    def _add_at(self, out, key, values):
        import cupyx

        if out.dtype == np.float16:  # atomics on half: accumulate in float32
            acc = out.astype(np.float32)
            cupyx.scatter_add(acc, key, values.astype(np.float32))
            out[...] = acc.astype(np.float16)
        else:
            cupyx.scatter_add(out, key, values)

    def sort(self, x, axis, descending):
        xp = self.xp
        if not descending:
            idx = xp.argsort(x, axis=axis)  # CuPy's sort is a stable radix sort
        else:
            # Descending, stable, NaN first (as PyTorch): the ascending sort of the reversed
            # row, reversed. Negating the keys instead would put NaN last and the minimum of
            # an int type (whose negation overflows to itself) first.
            n = x.shape[axis]
            idx = (n - 1) - xp.flip(xp.argsort(xp.flip(x, axis), axis=axis), axis)
        return xp.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)
