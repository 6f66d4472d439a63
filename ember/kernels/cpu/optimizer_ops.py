"""The optimizer family's fused kernels on ``cpu``: multi-tensor Numba kernels
(:mod:`.optim_updates`) and row-sparse ones (:mod:`.optim_sparse_updates`).

One parallel kernel call per parameter group: the parameter and state arrays passed in are
updated in place and returned. Lists are packed on every call; an ArrayTable from
``optim_pack`` skips that. Dtypes other than float32/float64 decline to the per-tensor default.
"""

from __future__ import annotations

import numpy as np

from ember.kernels.backend import DECLINED, fused

from . import optim_sparse_updates, optim_updates
from .checks import FLOAT_DTYPES


class CpuOptimizerOps:
    """Optimizer updates and gradient clipping on ``cpu``."""

    @fused(ready_arg=None)
    def optim_own(self, x, copy=False):
        if copy or not x.flags.c_contiguous or not x.flags.writeable:
            return np.array(x, order="C", copy=True)
        return x

    @fused
    def optim_pack(self, arrays):
        if isinstance(arrays, optim_updates.ArrayTable):
            return arrays
        arrays = list(arrays)
        if arrays and arrays[0].dtype in FLOAT_DTYPES:
            return optim_updates.pack_arrays(arrays, op="optim_pack", what="arrays")
        return arrays

    @fused
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
            return DECLINED
        optim_updates.sgd_update(
            params, grads, momentum_bufs, lr, weight_decay, momentum, dampening, nesterov, first_step_flags
        )
        return _listed(params), _listed(momentum_bufs)

    @fused
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
            return DECLINED
        optim_updates.adam_update(
            params, grads, m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, cautious, steps
        )
        return _listed(params), _listed(m), _listed(v), _listed(vmax)

    @fused
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
            return DECLINED
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

    @fused
    def adagrad_update(self, params, grads, sums, lr, lr_decay=0.0, eps=1e-5, weight_decay=0.0, steps=1):
        if not _fused(params):
            return DECLINED
        optim_updates.adagrad_update(params, grads, sums, lr, lr_decay, eps, weight_decay, steps)
        return _listed(params), _listed(sums)

    @fused
    def lion_update(self, params, grads, exp_avg, lr, beta1=0.9, beta2=0.99, weight_decay=0.0):
        if not _fused(params):
            return DECLINED
        optim_updates.lion_update(params, grads, exp_avg, lr, beta1, beta2, weight_decay)
        return _listed(params), _listed(exp_avg)

    # Row-sparse (lazy) updates: one parallel Numba loop over the gradient's rows, writing the
    # table and its state buffers in place (ember.kernels.cpu.optim_sparse_updates).
    @fused
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
            return DECLINED
        optim_sparse_updates.sparse_sgd_update(
            param, rows, values, momentum_buf, lr, weight_decay, momentum, dampening, nesterov, first_step
        )
        return param, momentum_buf

    @fused
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
            return DECLINED
        optim_sparse_updates.sparse_adam_update(
            param, rows, values, m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, cautious, step
        )
        return param, m, v, vmax

    # Clipping writes fresh copies: gradients may be read-only views or shared between tensors.
    @fused
    def clip_by_value(self, grads, threshold):
        if not _fused(grads):
            return DECLINED
        out = [np.array(g, order="C", copy=True) for g in grads]
        optim_updates.clip_by_value(out, threshold)
        return out

    @fused
    def clip_by_norm(self, grads, max_norm):
        if not _fused(grads):
            return DECLINED
        out = [np.array(g, order="C", copy=True) for g in grads]
        optim_updates.clip_by_norm_per_tensor(out, max_norm)
        return out

    @fused
    def grads_norm(self, grads) -> float:
        if not _fused(grads):
            return DECLINED
        return optim_updates.global_norm(list(grads))

    @fused(ready_arg=None)
    def scale_grads(self, grads, coef):
        return [np.multiply(g, g.dtype.type(coef)) for g in grads]


def _sparse_fused(*arrays) -> bool:
    """Whether the in-place sparse kernels take these arrays (float32/float64, C-contiguous, writeable)."""
    return all(
        a is None or (a.dtype in FLOAT_DTYPES and a.flags.c_contiguous and a.flags.writeable) for a in arrays
    )


def _fused(arrays) -> bool:
    """Whether the Numba kernels take these arrays (an ArrayTable, or float32/float64 arrays)."""
    if isinstance(arrays, (list, tuple)):
        return not arrays or getattr(arrays[0], "dtype", None) in FLOAT_DTYPES
    return isinstance(arrays, optim_updates.ArrayTable)


def _listed(arrays):
    """The arrays of an ArrayTable or list, as a list (None stays None)."""
    if arrays is None:
        return None
    return list(arrays.arrays) if hasattr(arrays, "arrays") else list(arrays)
