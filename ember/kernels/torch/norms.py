"""Layer norm through PyTorch's fused kernel (``native_layer_norm``) and its backward."""

from __future__ import annotations

import torch

from ember.kernels.backend import DECLINED, fused


class TorchNormOps:
    """The normalisation family's composites PyTorch fuses."""

    @fused(half=True)
    def layer_norm(self, x, gamma, beta, eps):
        d = x.shape[-1]
        if d <= 1:
            # an empty axis: the default's empty output and statistics; one value: the
            # default's gradient is exactly 0, PyTorch's a rounding residue
            return DECLINED
        y, mean, rstd = torch.native_layer_norm(x, [d], gamma, beta, eps)
        if bool((rstd == 0).any()):
            # a variance past the dtype's range: the default gives NaN where PyTorch gives
            # rstd 0 and a row of zeros
            return DECLINED
        return y, mean.reshape(x.shape[:-1]), rstd.reshape(x.shape[:-1])

    @fused(half=True)
    def layer_norm_backward(self, dy, x, mean, rstd, gamma):
        d = x.shape[-1]
        if d <= 1:
            return DECLINED
        stats = mean.shape + (1,)
        affine = gamma is not None
        bias = torch.zeros_like(gamma) if affine else None  # read for its shape only
        return torch.ops.aten.native_layer_norm_backward(
            dy, x, [d], mean.reshape(stats), rstd.reshape(stats), gamma, bias, [True, affine, affine]
        )
