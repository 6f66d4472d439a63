"""Optimizer updates as PyTorch multi-tensor (``torch._foreach_*``) operations.

Each override computes the composed default's formula, in its order, one foreach call per
step over all the tensors; it never writes its inputs. Declined: float16 (PyTorch multiplies
half tensors by a float32 scalar where the default rounds the scalar to float16 first) and
mixed dtypes.
"""

from __future__ import annotations

import torch

from ember.kernels.backend import DECLINED, fused
from ember.kernels.families.optimizer_args import AdamState, SgdState

_WIDE = (torch.float32, torch.float64)


def _takes(*lists) -> bool:
    """Whether every tensor of ``lists`` has one float32 or float64 dtype."""
    dtypes = {t.dtype for ts in lists if ts is not None for t in ts}
    return len(dtypes) == 1 and dtypes.pop() in _WIDE


class TorchOptimizerOps:
    """The optimizer family's dense updates, multi-tensor."""

    @fused
    def sgd_update(self, params, grads, state, args):
        params, grads = list(params), list(grads)
        bufs = None if state.momentum_bufs is None else list(state.momentum_bufs)
        args.check_state(bufs is not None)
        if not params or not _takes(params, grads, bufs):
            return DECLINED
        n = len(params)
        rates = args.lr_per_tensor(n).tolist()
        if args.weight_decay != 0.0:
            grads = torch._foreach_add(grads, torch._foreach_mul(params, args.weight_decay))
        new_bufs = None
        if bufs is not None:
            first = args.first_per_tensor(n).tolist()
            moved = torch._foreach_add(
                torch._foreach_mul(bufs, args.momentum), torch._foreach_mul(grads, 1.0 - args.dampening)
            )
            new_bufs = [g if f else b for g, b, f in zip(grads, moved, first)]
            grads = (
                torch._foreach_add(grads, torch._foreach_mul(new_bufs, args.momentum))
                if args.nesterov
                else new_bufs
            )
        new_params = torch._foreach_sub(params, torch._foreach_mul(grads, rates))
        return new_params, SgdState(new_bufs)

    @fused
    def adam_update(self, params, grads, state, args):
        params, grads, m, v = list(params), list(grads), list(state.m), list(state.v)
        vmax = None if state.vmax is None else list(state.vmax)
        if not params or not _takes(params, grads, m, v, vmax):
            return DECLINED
        per = args.per_tensor(len(params))
        lr, corr, eps, l2, keep, decay = (per[:, j].tolist() for j in range(6))
        beta1, one_minus_beta1, beta2, one_minus_beta2 = args.betas
        if l2[0] != 0.0:  # one weight decay for every tensor
            grads = torch._foreach_add(grads, torch._foreach_mul(params, l2[0]))
        new_m = torch._foreach_add(torch._foreach_mul(m, beta1), torch._foreach_mul(grads, one_minus_beta1))
        new_v = torch._foreach_add(
            torch._foreach_mul(v, beta2),
            torch._foreach_mul(torch._foreach_mul(grads, grads), one_minus_beta2),
        )
        second = new_v
        new_vmax = None
        if vmax is not None:
            second = new_vmax = torch._foreach_maximum(vmax, new_v)
        denominator = torch._foreach_add(torch._foreach_sqrt(second), eps)
        update = torch._foreach_div(torch._foreach_mul(new_m, corr), denominator)
        if args.mode == 2:  # cautious: decay only where sign(θ) agrees with sign(m)
            decayed = torch._foreach_mul(params, decay)
            params = [
                p - torch.where((p >= 0) != (mi >= 0), torch.zeros((), dtype=p.dtype, device=p.device), dp)
                for p, mi, dp in zip(params, new_m, decayed)
            ]
        elif args.mode == 1:
            params = torch._foreach_mul(params, keep)
        new_params = torch._foreach_sub(params, torch._foreach_mul(update, lr))
        return new_params, AdamState(new_m, new_v, new_vmax)
