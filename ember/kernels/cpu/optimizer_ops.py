"""The optimizer family's fused kernels on ``cpu``: multi-tensor Numba kernels
(:mod:`.optim_updates`, :mod:`.optim_clipping`) and row-sparse ones (:mod:`.optim_sparse_updates`).

One parallel kernel call per parameter group: the parameter and state arrays passed in are
updated in place and returned. Lists are packed (:mod:`.optim_tables`) on every call; an
ArrayTable from ``optim_pack`` skips that. The kernels' coefficients come from the args
objects (:mod:`ember.kernels.families.optimizer_args`), derived there once for every backend.
Dtypes other than float32/float64 decline to the per-tensor default.
"""

from __future__ import annotations

import numpy as np

from ember.kernels.backend import DECLINED, fused
from ember.kernels.families.optimizer_args import (
    AdagradState,
    AdamState,
    LionState,
    RmspropState,
    SgdState,
)

from . import optim_clipping, optim_sparse_updates, optim_updates
from .checks import FLOAT_DTYPES
from .optim_tables import ArrayTable, matching, pack_arrays


def _fused(arrays) -> bool:
    """Whether the Numba kernels take these arrays (an ArrayTable, or float32/float64 arrays)."""
    if isinstance(arrays, (list, tuple)):
        return not arrays or getattr(arrays[0], "dtype", None) in FLOAT_DTYPES
    return isinstance(arrays, ArrayTable)


class CpuOptimizerOps:
    """Optimizer updates and gradient clipping on ``cpu``."""

    @fused(ready_arg=None)
    def optim_own(self, x, copy=False):
        if copy or not x.flags.c_contiguous or not x.flags.writeable:
            return np.array(x, order="C", copy=True)
        return x

    @fused
    def optim_pack(self, arrays):
        if isinstance(arrays, ArrayTable):
            return arrays
        arrays = list(arrays)
        if arrays and arrays[0].dtype in FLOAT_DTYPES:
            return pack_arrays(arrays, op="optim_pack", what="arrays")
        return arrays

    @fused(accepts=_fused)
    def sgd_update(self, params, grads, state, args):
        p, g = _group("sgd_update", params, grads)
        bufs = state.momentum_bufs
        args.check_state(bufs is not None)
        b = matching("sgd_update", "momentum_bufs", bufs, p) if bufs is not None else p
        rates, first = args.lr_per_tensor(len(p)), args.first_per_tensor(len(p))
        if len(p):
            hp = np.array([args.weight_decay, args.momentum, 1.0 - args.dampening], dtype=p.dtype)
            optim_updates.sgd_kernel(
                p.addresses,
                g.addresses,
                b.addresses,
                p.sizes,
                hp,
                rates.astype(p.dtype),
                np.ascontiguousarray(first),
                bufs is not None,
                args.nesterov,
            )
        return _listed(params), SgdState(_listed(bufs))

    @fused(accepts=_fused)
    def adam_update(self, params, grads, state, args):
        p, g, m, v = _group("adam_update", params, grads, m=state.m, v=state.v)
        amsgrad = state.vmax is not None
        vmax = matching("adam_update", "vmax", state.vmax, p) if amsgrad else v
        per = args.per_tensor(len(p))
        if len(p):
            hp = np.array([*args.betas, 0.0], dtype=p.dtype)  # the trailing 0 is the kernel's typed zero
            optim_updates.adam_kernel(
                p.addresses,
                g.addresses,
                m.addresses,
                v.addresses,
                vmax.addresses,
                p.sizes,
                hp,
                per.astype(p.dtype),
                amsgrad,
                args.mode,
            )
        return _listed(params), AdamState(_listed(state.m), _listed(state.v), _listed(state.vmax))

    @fused(accepts=_fused)
    def rmsprop_update(self, params, grads, state, args):
        op = "rmsprop_update"
        p, g, s = _group(op, params, grads, square_avg=state.square_avg)
        ga = matching(op, "grad_avg", state.grad_avg, p) if args.centered else s
        has_momentum = args.momentum > 0.0
        b = matching(op, "momentum_bufs", state.momentum_bufs, p) if has_momentum else s
        rates = args.lr_per_tensor(len(p))
        if len(p):
            hp = np.array(
                [args.alpha, 1.0 - args.alpha, args.eps, args.momentum, args.weight_decay], dtype=p.dtype
            )
            optim_updates.rmsprop_kernel(
                p.addresses,
                g.addresses,
                s.addresses,
                ga.addresses,
                b.addresses,
                p.sizes,
                hp,
                rates.astype(p.dtype),
                args.centered,
                has_momentum,
            )
        return _listed(params), RmspropState(
            _listed(state.square_avg),
            _listed(state.grad_avg) if args.centered else None,
            _listed(state.momentum_bufs) if has_momentum else None,
        )

    @fused(accepts=_fused)
    def adagrad_update(self, params, grads, state, args):
        p, g, s = _group("adagrad_update", params, grads, sums=state.sums)
        rates = args.decayed_lr(len(p))
        if len(p):
            hp = np.array([args.eps, args.weight_decay], dtype=p.dtype)
            optim_updates.adagrad_kernel(
                p.addresses, g.addresses, s.addresses, p.sizes, hp, rates.astype(p.dtype)
            )
        return _listed(params), AdagradState(_listed(state.sums))

    @fused(accepts=_fused)
    def lion_update(self, params, grads, state, args):
        p, g, m = _group("lion_update", params, grads, exp_avg=state.exp_avg)
        rates = args.lr_per_tensor(len(p))
        if len(p):
            per = np.stack([rates, 1.0 - rates * args.weight_decay], axis=1).astype(p.dtype)
            hp = np.array([args.beta1, 1.0 - args.beta1, args.beta2, 1.0 - args.beta2], dtype=p.dtype)
            optim_updates.lion_kernel(p.addresses, g.addresses, m.addresses, p.sizes, hp, per)
        return _listed(params), LionState(_listed(state.exp_avg))

    # Row-sparse (lazy) updates: one parallel Numba loop over the gradient's rows, writing the
    # table and its state buffers in place (ember.kernels.cpu.optim_sparse_updates).
    @fused
    def sparse_sgd_update(self, param, rows, values, state, args):
        return _sparse_update(optim_sparse_updates.sparse_sgd_update, param, rows, values, state, args)

    @fused
    def sparse_adam_update(self, param, rows, values, state, args):
        return _sparse_update(optim_sparse_updates.sparse_adam_update, param, rows, values, state, args)

    # Clipping writes fresh copies: gradients may be read-only views or shared between tensors.
    @fused
    def clip_by_value(self, grads, threshold):
        return _clipped_copies(grads, optim_clipping.clip_by_value, threshold)

    @fused
    def clip_by_norm(self, grads, max_norm):
        return _clipped_copies(grads, optim_clipping.clip_by_norm_per_tensor, max_norm)

    @fused(accepts=_fused)
    def grads_norm(self, grads) -> float:
        return optim_clipping.global_norm(list(grads))

    @fused(ready_arg=None)
    def scale_grads(self, grads, coef):
        return [np.multiply(g, g.dtype.type(coef)) for g in grads]


def _clipped_copies(grads, clip, bound):
    """C-contiguous copies of ``grads`` clipped in place by ``clip(copies, bound)``."""
    if not _fused(grads):
        return DECLINED
    out = [np.array(g, order="C", copy=True) for g in grads]
    clip(out, bound)
    return out


def _group(op: str, params, grads, **buffers):
    """The parameters' table (updated in place), their gradients' and those of the state
    ``buffers`` named (updated in place, in the order given), checked to pair up."""
    p = pack_arrays(params, op=op, what="params")
    g = matching(op, "grads", grads, p, writeable=False)
    return (p, g, *(matching(op, name, arrays, p) for name, arrays in buffers.items()))


def _sparse_update(update, param, rows, values, state, args):
    """``update``, a row-sparse kernel of :mod:`.optim_sparse_updates`, in place on ``param``
    and ``state``, which it returns; declined for arrays it does not take."""
    if not _sparse_fused(param, *state):
        return DECLINED
    update(param, rows, values, state, args)
    return param, state


def _sparse_fused(*arrays) -> bool:
    """Whether the in-place sparse kernels take these arrays (float32/float64, C-contiguous, writeable)."""
    return all(
        a is None or (a.dtype in FLOAT_DTYPES and a.flags.c_contiguous and a.flags.writeable) for a in arrays
    )


def _listed(arrays):
    """The arrays of an ArrayTable or list, as a list (None stays None)."""
    if arrays is None:
        return None
    return list(arrays.arrays) if hasattr(arrays, "arrays") else list(arrays)
