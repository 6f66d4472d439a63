"""Cross-entropy through PyTorch's fused loss (``F.cross_entropy`` with label smoothing)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ember.kernels.backend import DECLINED, fused


class TorchLossOps:
    """The loss family's composites PyTorch fuses."""

    @fused(half=True)
    def cross_entropy(self, logits, targets, smoothing):
        if logits.shape[1] == 0 or smoothing >= 1.0:
            # no classes; or smoothing 1, where PyTorch multiplies an infinite picked term by 0
            return DECLINED
        loss = F.cross_entropy(logits, targets.long(), reduction="none", label_smoothing=smoothing)
        lse = torch.logsumexp(logits, dim=1)
        # the default's lse is NaN for a row with +inf or of -inf only (PyTorch's is ±inf)
        return loss, torch.where(torch.isinf(lse), math.nan, lse)

    @fused(half=True)
    def cross_entropy_backward(self, logits, targets, lse, dloss, smoothing):
        n, c = logits.shape
        if c == 0:
            return DECLINED
        g = torch.softmax(logits, dim=1)
        g.scatter_add_(
            1,
            targets.long().reshape(n, 1),
            torch.full((n, 1), smoothing - 1.0, dtype=g.dtype, device=g.device),
        )
        if smoothing:
            g -= smoothing / c
        return g.mul_(dloss.reshape(n, 1))
