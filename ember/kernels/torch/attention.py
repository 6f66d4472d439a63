"""Scaled dot-product attention through PyTorch's fused kernels, with the key-padding mask.

On the CPU, PyTorch's flash-attention kernel gives the output and the log-sum-exp in one
pass, and its backward the three gradients; on other devices the output comes from
``scaled_dot_product_attention`` and the log-sum-exp from the scores, and the backward is the
composed default. Declined: the quiet softmax and dropout (PyTorch has neither the extra 0
logit nor ember's hash masks), no keys, a query whose keys are all padded (ember fills
padded scores with -1e4, so such a row averages every value; PyTorch's mask gives it NaN),
and non-finite inputs (a padded key's gradient beside an infinite query is ember's 0 where
PyTorch's -inf mask gives 0·inf = NaN).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ember.kernels.backend import DECLINED, fused

_FLASH = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_FLASH_BACKWARD = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)


class TorchAttentionOps:
    """The attention family's composites PyTorch fuses."""

    def _sdpa_mask(self, q, k, v, mask_pad):
        """``(takes, additive mask [B, 1, 1, Sk] or None)``: whether PyTorch's kernel computes
        what the default does for these inputs, and the mask it is given."""
        if not all(bool(torch.isfinite(a).all()) for a in (q, k, v)):
            return False, None
        if mask_pad is None:
            return True, None
        if bool(mask_pad.all(dim=1).any()):
            return False, None
        b, sk = mask_pad.shape
        additive = torch.zeros((b, 1, 1, sk), dtype=q.dtype, device=q.device)
        return True, additive.masked_fill_(mask_pad.reshape(b, 1, 1, sk), -torch.inf)

    @fused(half=True)
    def attention(self, q, k, v, mask_pad, scale, quiet, dropout_p, seed):
        if quiet or dropout_p > 0.0 or k.shape[2] == 0 or q.shape[2] == 0:
            return DECLINED
        takes, mask = self._sdpa_mask(q, k, v, mask_pad)
        if not takes:
            return DECLINED
        if q.device.type == "cpu" and _FLASH is not None:
            # the kernel reads its operands as dense (a transposed view came out wrong)
            q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
            out, lse = _FLASH(q, k, v, 0.0, False, attn_mask=mask, scale=scale)
            return out, lse
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        scores = torch.matmul(q, k.transpose(2, 3)) * scale
        if mask is not None:
            scores = scores + mask
        return out, torch.logsumexp(scores, dim=-1)

    @fused(half=True)
    def attention_backward(self, dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed):
        if quiet or dropout_p > 0.0 or k.shape[2] == 0 or q.shape[2] == 0:
            return DECLINED
        if q.device.type != "cpu" or _FLASH_BACKWARD is None:
            return DECLINED
        takes, mask = self._sdpa_mask(q, k, v, mask_pad)
        if not takes:
            return DECLINED
        dout, q, k, v, out = (a.contiguous() for a in (dout, q, k, v, out))
        dq, dk, dv = _FLASH_BACKWARD(dout, q, k, v, out, lse, 0.0, False, attn_mask=mask, scale=scale)
        return dq, dk, dv
