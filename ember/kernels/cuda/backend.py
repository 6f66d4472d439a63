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

from ember.kernels.backend import Backend
from ember.kernels.cuda import ops as fused
from ember.kernels.cuda import optimizers
from ember.kernels.cuda.launch import row_fits
from ember.kernels.cuda.runtime import cupy_or_error
from ember.kernels.reference import HALF_VIA_SINGLE, ArrayBackend, half_via_single

_COMPOSED = {name: half_via_single(stats)(getattr(Backend, name)) for name, stats in HALF_VIA_SINGLE.items()}
"""The composed defaults of the composites, float16 computed in float32 with float32
statistics (as the fused kernels and the reference do): the fallbacks of the fused ops."""


def _rows_fit(x, allow_empty: bool = False) -> bool:
    """Whether a row kernel (reducing the last axis) takes ``x``; an empty last axis only
    when the wrapper handles it (``allow_empty``)."""
    rows = 1
    for s in x.shape[:-1]:
        rows *= int(s)
    cols = int(x.shape[-1]) if x.ndim else 1
    return row_fits(rows, cols) or (allow_empty and cols == 0)


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


class CudaBackend(ArrayBackend):
    name = "cuda"

    def __init__(self, index: int = 0, seed: int | None = None):
        # TF32 GEMMs change float32 results: off unless asked for (EMBER_CUDA_TF32=1).
        os.environ.setdefault("CUPY_TF32", "1" if os.environ.get("EMBER_CUDA_TF32") == "1" else "0")
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
        self._fused = fused
        super().__init__(seed)

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

    # ---- fused composites ---------------------------------------------------------------
    # Each falls back to the composed default (float16 computed in float32, as on every
    # backend) for inputs outside its kernel's limits, deciding from the same inputs in the
    # forward and the backward pass: the backend contract (ember/kernels/backend.py).
    def softmax(self, x):
        if not _rows_fit(x, allow_empty=True):
            return _COMPOSED["softmax"](self, x)
        return self._fused.softmax(x)

    def softmax_backward(self, y, dy):
        if not _rows_fit(y, allow_empty=True):
            return _COMPOSED["softmax_backward"](self, y, dy)
        return self._fused.softmax_backward(y, dy)

    def log_softmax(self, x):
        if not _rows_fit(x, allow_empty=True):
            return _COMPOSED["log_softmax"](self, x)
        return self._fused.log_softmax(x)

    def log_softmax_backward(self, y, dy):
        if not _rows_fit(y, allow_empty=True):
            return _COMPOSED["log_softmax_backward"](self, y, dy)
        return self._fused.log_softmax_backward(y, dy)

    def layer_norm(self, x, gamma, beta, eps):
        if not _rows_fit(x):
            return _COMPOSED["layer_norm"](self, x, gamma, beta, eps)
        return self._fused.layer_norm(x, gamma, beta, eps)

    def layer_norm_backward(self, dy, x, mean, rstd, gamma):
        if not _rows_fit(x):
            return _COMPOSED["layer_norm_backward"](self, dy, x, mean, rstd, gamma)
        return self._fused.layer_norm_backward(dy, x, mean, rstd, gamma)

    def rms_norm(self, x, gamma, eps):
        if not _rows_fit(x):
            return _COMPOSED["rms_norm"](self, x, gamma, eps)
        return self._fused.rms_norm(x, gamma, eps)

    def rms_norm_backward(self, dy, x, rstd, gamma):
        if not _rows_fit(x):
            return _COMPOSED["rms_norm_backward"](self, dy, x, rstd, gamma)
        return self._fused.rms_norm_backward(dy, x, rstd, gamma)

    def gelu(self, x, approximate):
        return self._fused.gelu(x, approximate)

    def gelu_backward(self, x, dy, approximate):
        return self._fused.gelu_backward(x, dy, approximate)

    def cross_entropy(self, logits, targets, smoothing):
        if not _rows_fit(logits, allow_empty=logits.shape[0] == 0):
            return _COMPOSED["cross_entropy"](self, logits, targets, smoothing)
        return self._fused.cross_entropy(logits, targets, smoothing)

    def cross_entropy_backward(self, logits, targets, lse, dloss, smoothing):
        if not _rows_fit(logits, allow_empty=logits.shape[0] == 0):
            return _COMPOSED["cross_entropy_backward"](self, logits, targets, lse, dloss, smoothing)
        return self._fused.cross_entropy_backward(logits, targets, lse, dloss, smoothing)

    def embedding(self, weight, ids):
        return self._fused.embedding(weight, ids)

    def embedding_backward(self, dout, ids, num_embeddings):
        return self._fused.embedding_backward(dout, ids, num_embeddings)

    def dropout(self, x, p, seed):
        return self._fused.dropout(x, p, seed)

    def dropout_backward(self, dy, p, seed):
        return self._fused.dropout_backward(dy, p, seed)

    def attention(self, q, k, v, mask_pad, scale, quiet, dropout_p, seed):
        # head dims over 128, no keys, a non-finite scale, sequences past the launch grid
        if not self._fused.attention_fits(q.shape, k.shape, scale):
            return _COMPOSED["attention"](self, q, k, v, mask_pad, scale, quiet, dropout_p, seed)
        return self._fused.attention(q, k, v, mask_pad, scale, quiet, dropout_p, seed)

    def attention_backward(self, dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed):
        if not self._fused.attention_fits(q.shape, k.shape, scale):
            return _COMPOSED["attention_backward"](
                self, dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed
            )
        return self._fused.attention_backward(
            dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed
        )

    # =====================================================================================
    # ---- optimizer composites: multi-tensor CUDA kernels (ember.kernels.cuda.optimizers)
    # SGD and Adam/AdamW run as one kernel launch per parameter group, updating the arrays
    # passed in and returning them; RMSprop, AdaGrad, Lion and clipping use the per-tensor
    # default composed from primitives.
    # =====================================================================================
    def optim_own(self, x, copy=False):
        return x.copy() if copy or not x.flags.c_contiguous else x

    def sgd_update(
        self,
        params,
        grads,
        momentum_bufs,
        lr,
        weight_decay=0.0,
        momentum=0.0,
        dampening=0.0,
        nesterov=False,
        first_step_flags=False,
    ):
        if not self._fused.optim_fits(params, grads, momentum_bufs):  # layouts / dtypes the kernel lacks
            return super().sgd_update(
                params,
                grads,
                momentum_bufs,
                lr,
                weight_decay,
                momentum,
                dampening,
                nesterov,
                first_step_flags,
            )
        params = list(params)
        bufs = None if momentum_bufs is None else list(momentum_bufs)
        optimizers.sgd_update(
            params, list(grads), bufs, lr, weight_decay, momentum, dampening, nesterov, first_step_flags
        )
        return params, bufs

    def adam_update(
        self,
        params,
        grads,
        m,
        v,
        vmax,
        lr,
        beta1=0.9,
        beta2=0.999,
        eps=1e-5,
        weight_decay=0.0,
        decoupled=False,
        cautious=False,
        steps=1,
    ):
        if not self._fused.optim_fits(params, grads, m, v, vmax):
            return super().adam_update(
                params, grads, m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, cautious, steps
            )
        params, m, v = list(params), list(m), list(v)
        vmax = None if vmax is None else list(vmax)
        optimizers.adam_update(
            params, list(grads), m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, cautious, steps
        )
        return params, m, v, vmax
