"""Activations through PyTorch: softmax and log-softmax (its fused kernels) and the exact GELU,
with their backward. float16 runs in float32 under the composites' rule (``@fused(half=True)``)."""

from __future__ import annotations

import math

import torch

from ember.kernels.backend import DECLINED, fused

_SQRT1_2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def _last_axis_pair(name: str, forward_kernel, backward_kernel):
    """The fused override of composite ``name`` over the last axis and of its backward, from
    PyTorch's kernel pair (softmax and log-softmax share the calling convention)."""

    def forward(self, x):
        return forward_kernel(x, dim=-1)

    def backward(self, y, dy):
        return backward_kernel(dy, y, -1, y.dtype)

    forward.__name__, backward.__name__ = name, f"{name}_backward"  # @fused reads the composite's name
    forward.__qualname__, backward.__qualname__ = (
        f"TorchActivationOps.{name}",
        f"TorchActivationOps.{name}_backward",
    )
    return fused(half=True)(forward), fused(half=True)(backward)


class TorchActivationOps:
    """The activation family's composites PyTorch fuses."""

    softmax, softmax_backward = _last_axis_pair("softmax", torch.softmax, torch._softmax_backward_data)
    log_softmax, log_softmax_backward = _last_axis_pair(
        "log_softmax", torch.log_softmax, torch._log_softmax_backward_data
    )

    # GELU: PyTorch's own kernels compute Phi as 0.5 (1 + erf) and 0.5 (1 + tanh), which cancel
    # in float32 for x << 0 (the suite checks the tails against float64), so the exact GELU
    # is PyTorch's erfc instead, and the tanh form keeps the default (sigmoid(2z), no 1 + tanh).
    @fused(half=True)
    def gelu(self, x, approximate):
        if approximate:
            return DECLINED
        return x * 0.5 * torch.special.erfc(x * -_SQRT1_2)

    @fused(half=True)
    def gelu_backward(self, x, dy, approximate):
        if approximate:
            return DECLINED
        # beyond |x| = 1e4 the derivative is its limit, 1 or 0, as the default's (inf * 0 = NaN
        # otherwise); NaN stays NaN
        x = torch.clamp(x, -1e4, 1e4)
        cdf = 0.5 * torch.special.erfc(x * -_SQRT1_2)
        pdf = torch.exp(-0.5 * x * x) * _INV_SQRT_2PI
        return dy * (cdf + x * pdf)
