"""Local response normalisation across channels (Burn's ``LocalResponseNorm``, AlexNet's LRN)."""

from __future__ import annotations

import math

from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["LocalResponseNorm", "LocalResponseNormConfig"]


def _check_settings(op: str, size, alpha, beta, k) -> None:
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ValueError(f"{op}: size must be a positive int, got {size!r}")
    for name, value in (("alpha", alpha), ("beta", beta), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{op}: {name} must be a finite number, got {value!r}")


class LocalResponseNormConfig(Config):
    """Configuration of :class:`LocalResponseNorm` (Burn's defaults, which are PyTorch's).

    Args:
        size: number of channels in the sliding window.
        alpha: scale (1e-4).
        beta: exponent (0.75).
        k: additive constant (1.0; ONNX calls it ``bias``).
    """

    size: int
    alpha: float = 1e-4
    beta: float = 0.75
    k: float = 1.0

    def init(self, device=None, dtype=None) -> "LocalResponseNorm":
        """Build the layer (it has no parameters)."""
        _check_settings("LocalResponseNormConfig", self.size, self.alpha, self.beta, self.k)
        return LocalResponseNorm(self.size, self.alpha, self.beta, self.k)


class LocalResponseNorm(Module):
    """``y = x / (k + alpha/size · Σ x²)^beta``, the sum over a window of ``size`` neighbouring
    channels (zeros beyond the first and last channel, always divided by ``size``).

    An odd window is centred on the channel. An even one reaches one channel further up
    (towards higher channel indices) than down, as in Burn; PyTorch leans the other way, so
    the two agree for odd sizes only.

    Args:
        size, alpha, beta, k: as in the config.
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        _check_settings("LocalResponseNorm", size, alpha, beta, k)
        self.size = int(size)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.k = float(k)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
        x: ``[batch, channels, *spatial]`` (rank >= 3); the output has the same shape.
        """
        if not isinstance(x, Tensor) or not x.dtype.is_float or x.ndim < 3:
            got = f"{x.dtype} {shape_str(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(
                f"LocalResponseNorm: expected a float input [batch, channels, *spatial] "
                f"of rank >= 3, got {got}"
            )
        channels = x.shape[1]
        below, above = (self.size - 1) // 2, self.size // 2
        # pad takes (before, after) pairs from the last dim backwards; only dim 1 is padded
        padded = x.square().pad((0, 0) * (x.ndim - 2) + (below, above), 0.0)
        window_sum = padded.narrow(1, 0, channels)
        for offset in range(1, self.size):  # shifted copies: one slice per window position
            window_sum = window_sum + padded.narrow(1, offset, channels)
        return x / (window_sum * (self.alpha / self.size) + self.k) ** self.beta
