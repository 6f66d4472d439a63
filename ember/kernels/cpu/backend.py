"""The ``cpu`` backend: NumPy primitives (BLAS GEMM), fused Numba composites, and native C++
kernels where they measure faster than their Numba twins (see bench/)."""

from __future__ import annotations

import functools

import numpy as np

from ember.kernels import native_ops, threads
from ember.kernels.cpu import (
    activations,
    attention,
    cross_entropy,
    dropout,
    embedding,
    embedding_bag,
    gemm,
    norms,
    optim_sparse_updates,
    optim_updates,
    rows,
    softmax,
)
from ember.kernels.cpu.background_compile import BackgroundCompile
from ember.kernels.reference import HALF_VIA_SINGLE, ArrayBackend, unique_rows
from ember.kernels.reference import half_via_single as _half_via_single
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


def _compiled(standby: str | None = None, dtype_of: int = 0):
    """Run the decorated fused-kernel method once its dtype's machine code is ready, and until
    then (an empty kernel cache: see :mod:`.background_compile`) the ``standby`` method, by
    default the composed implementation of :class:`ArrayBackend`. ``dtype_of`` is the
    positional argument whose dtype picks the kernels."""

    def wrap(method):
        fallback = getattr(ArrayBackend, method.__name__) if standby is None else None

        def stand_in(self, *args, **kwargs):
            if fallback is None:
                return getattr(self, standby)(*args, **kwargs)
            return fallback(self, *args, **kwargs)

        # float16 computed in float32 by the stand-in too, as by the kernel and the reference
        # (in float16 a layer-norm row's squares overflowed past ~256 while the kernels compiled)
        stats = HALF_VIA_SINGLE.get(method.__name__)
        stand_in_half = stand_in if stats is None else _half_via_single(stats)(stand_in)

        @functools.wraps(method)
        def run(self, *args, **kwargs):
            picked = args[dtype_of] if len(args) > dtype_of else next(iter(kwargs.values()), None)
            if self._tiers.ready_for(picked):
                return method(self, *args, **kwargs)
            if kwargs:  # (half_via_single takes positional arguments; ember passes them so)
                return stand_in(self, *args, **kwargs)
            return stand_in_half(self, *args)

        return run

    return wrap


class CpuBackend(ArrayBackend):
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

    # ---- primitives with a faster kernel than NumPy's -----------------------------------
    def _gemm(self, a, b):
        return gemm.matmul(a, b)  # single-threaded BLAS pieces on ember's threads (see gemm)

    def linear(self, x, w, b):
        return gemm.matmul(x, w, bias=b)  # the bias added to each block of rows while in cache

    # ---- token packing's row gather and scatter: one parallel sweep --------------------
    def getitem(self, x, key):
        picked = _row_key(x, key)
        if picked is None or not self._tiers.ready_for(x):
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
            or not self._tiers.ready_for(x)
        ):
            return None
        return picked

    @_compiled()
    def _erf(self, x):
        if x.dtype == np.float16:  # the kernel is float32/float64
            return activations.erf(x.astype(np.float32)).astype(np.float16)
        return activations.erf(x)

    # ---- fused composites ---------------------------------------------------------------
    @_compiled()
    @_half_via_single()
    def softmax(self, x):
        return softmax.softmax(x)

    @_compiled()
    @_half_via_single()
    def softmax_backward(self, y, dy):
        return softmax.softmax_backward(y, dy)

    @_compiled()
    @_half_via_single()
    def log_softmax(self, x):
        return softmax.log_softmax(x)

    @_compiled()
    @_half_via_single()
    def log_softmax_backward(self, y, dy):
        return softmax.log_softmax_backward(y, dy)

    # Each fused override runs the composed default (super()) for inputs its kernel cannot
    # take, never raising where the reference computes: the backend contract.
    @_compiled(standby="_standby_layer_norm")
    @_half_via_single((1, 2))
    def layer_norm(self, x, gamma, beta, eps):
        if x.shape[-1] == 0:  # the kernels need a non-empty axis: the composed default
            return super().layer_norm(x, gamma, beta, eps)
        if self._native and x.dtype == np.float32:
            return native_ops.layer_norm(x, gamma, beta, eps)
        return norms.layer_norm(x, gamma, beta, eps)

    @_compiled(standby="_standby_layer_norm_backward")
    @_half_via_single()
    def layer_norm_backward(self, dy, x, mean, rstd, gamma):
        if x.shape[-1] == 0:
            return super().layer_norm_backward(dy, x, mean, rstd, gamma)
        return norms.layer_norm_backward(dy, x, mean, rstd, gamma)

    @_compiled()
    @_half_via_single((1,))
    def rms_norm(self, x, gamma, eps):
        if x.shape[-1] == 0:
            return super().rms_norm(x, gamma, eps)
        return norms.rms_norm(x, gamma, eps)

    @_compiled()
    @_half_via_single()
    def rms_norm_backward(self, dy, x, rstd, gamma):
        if x.shape[-1] == 0:
            return super().rms_norm_backward(dy, x, rstd, gamma)
        return norms.rms_norm_backward(dy, x, rstd, gamma)

    @_compiled(standby="_standby_gelu")
    @_half_via_single()
    def gelu(self, x, approximate):
        if self._native and not approximate and x.dtype == np.float64:
            return native_ops.gelu(x, approximate)
        return activations.gelu(x, approximate)

    @_compiled(standby="_standby_gelu_backward")
    @_half_via_single()
    def gelu_backward(self, x, dy, approximate):
        if self._native and not approximate and x.dtype == np.float64:
            return native_ops.gelu_backward(x, dy, approximate)
        return activations.gelu_backward(x, dy, approximate)

    @_compiled()
    @_half_via_single((1,))
    def cross_entropy(self, logits, targets, smoothing):
        if logits.shape[1] == 0:  # no classes (so no rows either): the kernels need C >= 1
            return super().cross_entropy(logits, targets, smoothing)
        return cross_entropy.cross_entropy(logits, targets, smoothing)

    @_compiled()
    @_half_via_single()
    def cross_entropy_backward(self, logits, targets, lse, dloss, smoothing):
        if logits.shape[1] == 0:
            return super().cross_entropy_backward(logits, targets, lse, dloss, smoothing)
        return cross_entropy.cross_entropy_backward(logits, targets, lse, dloss, smoothing)

    @_compiled()
    @_half_via_single()
    def embedding(self, weight, ids):
        return embedding.embedding(weight, ids)

    @_compiled()
    @_half_via_single()
    def embedding_backward(self, dout, ids, num_embeddings):
        return embedding.embedding_backward(dout, ids, num_embeddings)

    @_compiled()
    @_half_via_single((1,))
    def embedding_bag(self, weight, indices, bounds, per_sample_weights, mode):
        return embedding_bag.embedding_bag(weight, indices, bounds, per_sample_weights, mode)

    @_compiled()
    @_half_via_single((0,))
    def embedding_bag_backward(self, dout, indices, bounds, per_sample_weights, mode, max_pos):
        return embedding_bag.embedding_bag_backward(dout, indices, bounds, per_sample_weights, mode, max_pos)

    @_compiled()
    @_half_via_single()
    def embedding_bag_weights_backward(self, dout, weight, indices, bounds):
        return embedding_bag.embedding_bag_weights_backward(dout, weight, indices, bounds)

    @_compiled(dtype_of=1)
    @_half_via_single((0,))
    def coalesce_rows(self, rows, values):
        return embedding_bag.coalesce_rows(rows, values)

    @_compiled(dtype_of=1)
    @_half_via_single()
    def rows_to_dense(self, rows, values, num_rows):
        return embedding_bag.rows_to_dense(rows, values, num_rows)

    @_compiled()
    def rows_add_dense(self, dense, rows, values):
        if dense.dtype not in _FUSED_DTYPES:
            return super().rows_add_dense(dense, rows, values)
        return embedding_bag.rows_add_dense(dense, rows, values)

    @_compiled()
    @_half_via_single()
    def dropout(self, x, p, seed):
        return dropout.dropout(x, p, seed)

    @_compiled()
    @_half_via_single()
    def dropout_backward(self, dy, p, seed):
        return dropout.dropout_backward(dy, p, seed)

    @_compiled()
    @_half_via_single((1,))
    def attention(self, q, k, v, mask_pad, scale, quiet, dropout_p, seed):
        return attention.attention(q, k, v, mask_pad, scale, quiet, dropout_p, seed)

    @_compiled()
    @_half_via_single()
    def attention_backward(self, dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed):
        return attention.attention_backward(dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed)

    # ---- stand-ins while the kernels compile: the C++ kernels where they exist ---------
    def _standby_layer_norm(self, x, gamma, beta, eps):
        if self._native and x.shape[-1] and x.dtype in _FUSED_DTYPES:
            return native_ops.layer_norm(x, gamma, beta, eps)
        return super().layer_norm(x, gamma, beta, eps)

    def _standby_layer_norm_backward(self, dy, x, mean, rstd, gamma):
        if self._native and x.shape[-1] and x.dtype in _FUSED_DTYPES:
            return native_ops.layer_norm_backward(dy, x, mean, rstd, gamma)
        return super().layer_norm_backward(dy, x, mean, rstd, gamma)

    def _standby_gelu(self, x, approximate):
        if self._native and x.dtype in _FUSED_DTYPES:
            return native_ops.gelu(x, approximate)
        return super().gelu(x, approximate)

    def _standby_gelu_backward(self, x, dy, approximate):
        if self._native and x.dtype in _FUSED_DTYPES:
            return native_ops.gelu_backward(x, dy, approximate)
        return super().gelu_backward(x, dy, approximate)

    # =====================================================================================
    # ---- optimizer composites: fused multi-tensor Numba kernels (ember.kernels.cpu.optim_updates)
    # One parallel kernel call per parameter group: the parameter and state arrays passed in
    # are updated in place and returned. Lists are packed on every call; an ArrayTable from
    # ``optim_pack`` skips that. Dtypes other than float32/float64 use the per-tensor default.
    # =====================================================================================
    def optim_own(self, x, copy=False):
        if copy or not x.flags.c_contiguous or not x.flags.writeable:
            return np.array(x, order="C", copy=True)
        return x

    @_compiled()
    def optim_pack(self, arrays):
        if isinstance(arrays, optim_updates.ArrayTable):
            return arrays
        arrays = list(arrays)
        if arrays and arrays[0].dtype in _FUSED_DTYPES:
            return optim_updates.pack_arrays(arrays, op="optim_pack", what="arrays")
        return arrays

    @_compiled()
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
        if not _fused(params):
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
        optim_updates.sgd_update(
            params, grads, momentum_bufs, lr, weight_decay, momentum, dampening, nesterov, first_step_flags
        )
        return _listed(params), _listed(momentum_bufs)

    @_compiled()
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
        if not _fused(params):
            return super().adam_update(
                params, grads, m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, cautious, steps
            )
        optim_updates.adam_update(
            params, grads, m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, cautious, steps
        )
        return _listed(params), _listed(m), _listed(v), _listed(vmax)

    @_compiled()
    def rmsprop_update(
        self,
        params,
        grads,
        square_avg,
        grad_avg,
        momentum_bufs,
        lr,
        alpha=0.99,
        eps=1e-5,
        weight_decay=0.0,
        momentum=0.9,
        centered=False,
    ):
        if not _fused(params):
            return super().rmsprop_update(
                params,
                grads,
                square_avg,
                grad_avg,
                momentum_bufs,
                lr,
                alpha,
                eps,
                weight_decay,
                momentum,
                centered,
            )
        optim_updates.rmsprop_update(
            params,
            grads,
            square_avg,
            grad_avg,
            momentum_bufs,
            lr,
            alpha,
            eps,
            weight_decay,
            momentum,
            centered,
        )
        return (
            _listed(params),
            _listed(square_avg),
            _listed(grad_avg) if centered else None,
            _listed(momentum_bufs) if momentum > 0.0 else None,
        )

    @_compiled()
    def adagrad_update(self, params, grads, sums, lr, lr_decay=0.0, eps=1e-5, weight_decay=0.0, steps=1):
        if not _fused(params):
            return super().adagrad_update(params, grads, sums, lr, lr_decay, eps, weight_decay, steps)
        optim_updates.adagrad_update(params, grads, sums, lr, lr_decay, eps, weight_decay, steps)
        return _listed(params), _listed(sums)

    @_compiled()
    def lion_update(self, params, grads, exp_avg, lr, beta1=0.9, beta2=0.99, weight_decay=0.0):
        if not _fused(params):
            return super().lion_update(params, grads, exp_avg, lr, beta1, beta2, weight_decay)
        optim_updates.lion_update(params, grads, exp_avg, lr, beta1, beta2, weight_decay)
        return _listed(params), _listed(exp_avg)

    # Row-sparse (lazy) updates: one parallel Numba loop over the gradient's rows, writing the
    # table and its state buffers in place (ember.kernels.cpu.optim_sparse_updates).
    @_compiled()
    def sparse_sgd_update(
        self,
        param,
        rows,
        values,
        momentum_buf,
        lr,
        weight_decay=0.0,
        momentum=0.0,
        dampening=0.0,
        nesterov=False,
        first_step=False,
    ):
        if not _sparse_fused(param, momentum_buf):
            return super().sparse_sgd_update(
                param, rows, values, momentum_buf, lr, weight_decay, momentum, dampening, nesterov, first_step
            )
        optim_sparse_updates.sparse_sgd_update(
            param, rows, values, momentum_buf, lr, weight_decay, momentum, dampening, nesterov, first_step
        )
        return param, momentum_buf

    @_compiled()
    def sparse_adam_update(
        self,
        param,
        rows,
        values,
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
        step=1,
    ):
        if not _sparse_fused(param, m, v, vmax):
            return super().sparse_adam_update(
                param,
                rows,
                values,
                m,
                v,
                vmax,
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
                decoupled,
                cautious,
                step,
            )
        optim_sparse_updates.sparse_adam_update(
            param, rows, values, m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, cautious, step
        )
        return param, m, v, vmax

    # Clipping writes fresh copies: gradients may be read-only views or shared between tensors.
    @_compiled()
    def clip_by_value(self, grads, threshold):
        if not _fused(grads):
            return super().clip_by_value(grads, threshold)
        out = [np.array(g, order="C", copy=True) for g in grads]
        optim_updates.clip_by_value(out, threshold)
        return out

    @_compiled()
    def clip_by_norm(self, grads, max_norm):
        if not _fused(grads):
            return super().clip_by_norm(grads, max_norm)
        out = [np.array(g, order="C", copy=True) for g in grads]
        optim_updates.clip_by_norm_per_tensor(out, max_norm)
        return out

    @_compiled()
    def grads_norm(self, grads) -> float:
        if not _fused(grads):
            return super().grads_norm(grads)
        return optim_updates.global_norm(list(grads))

    def scale_grads(self, grads, coef):
        return [np.multiply(g, g.dtype.type(coef)) for g in grads]


_FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _sparse_fused(*arrays) -> bool:
    """Whether the in-place sparse kernels take these arrays (float32/float64, C-contiguous, writeable)."""
    return all(
        a is None or (a.dtype in _FUSED_DTYPES and a.flags.c_contiguous and a.flags.writeable) for a in arrays
    )


def _fused(arrays) -> bool:
    """Whether the Numba kernels take these arrays (an ArrayTable, or float32/float64 arrays)."""
    if isinstance(arrays, (list, tuple)):
        return not arrays or getattr(arrays[0], "dtype", None) in _FUSED_DTYPES
    return isinstance(arrays, optim_updates.ArrayTable)


def _listed(arrays):
    """The arrays of an ArrayTable or list, as a list (None stays None)."""
    if arrays is None:
        return None
    return list(arrays.arrays) if hasattr(arrays, "arrays") else list(arrays)
