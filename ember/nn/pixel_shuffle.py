"""Sub-pixel rearrangement (Burn's ``PixelShuffle`` and ``PixelUnshuffle``): channels traded for
spatial resolution by a reshape and a permute, so gradients are exact rearrangements too."""

from __future__ import annotations

from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["PixelShuffle", "PixelShuffleConfig", "PixelUnshuffle", "PixelUnshuffleConfig"]


def _check_factor(op: str, name: str, factor) -> None:
    if isinstance(factor, bool) or not isinstance(factor, int) or factor <= 0:
        raise ValueError(f"{op}: {name} must be a positive int, got {factor!r}")


def _check_input(op: str, x) -> None:
    if not isinstance(x, Tensor) or x.ndim != 4:
        got = shape_str(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{op}: expected an input [batch, channels, height, width], got {got}")


class PixelShuffleConfig(Config):
    """Configuration of :class:`PixelShuffle`.

    Args:
        upscale_factor: ``r``, the factor applied to height and width.
    """

    upscale_factor: int

    def init(self, device=None, dtype=None) -> "PixelShuffle":
        """Build the layer (it has no parameters)."""
        return PixelShuffle(self.upscale_factor)


class PixelShuffle(Module):
    """``[N, C·r², H, W] -> [N, C, H·r, W·r]``: output pixel ``(c, h·r + i, w·r + j)`` is input
    channel ``c·r² + i·r + j`` at ``(h, w)`` (PyTorch's ``PixelShuffle``).

    Args:
        upscale_factor: ``r``.
    """

    def __init__(self, upscale_factor: int):
        _check_factor("PixelShuffle", "upscale_factor", upscale_factor)
        self.upscale_factor = upscale_factor

    def forward(self, x: Tensor) -> Tensor:
        _check_input("PixelShuffle", x)
        n, c, h, w = x.shape
        r = self.upscale_factor
        if c % (r * r):
            raise ValueError(
                f"PixelShuffle: input channels {c} (input {shape_str(x.shape)}) must be divisible by "
                f"upscale_factor² = {r * r}"
            )
        out_c = c // (r * r)
        return x.reshape(n, out_c, r, r, h, w).permute(0, 1, 4, 2, 5, 3).reshape(n, out_c, h * r, w * r)


class PixelUnshuffleConfig(Config):
    """Configuration of :class:`PixelUnshuffle`.

    Args:
        downscale_factor: ``r``, the factor height and width are divided by.
    """

    downscale_factor: int

    def init(self, device=None, dtype=None) -> "PixelUnshuffle":
        """Build the layer (it has no parameters)."""
        return PixelUnshuffle(self.downscale_factor)


class PixelUnshuffle(Module):
    """``[N, C, H·r, W·r] -> [N, C·r², H, W]``, the inverse of :class:`PixelShuffle`.

    Args:
        downscale_factor: ``r``.
    """

    def __init__(self, downscale_factor: int):
        _check_factor("PixelUnshuffle", "downscale_factor", downscale_factor)
        self.downscale_factor = downscale_factor

    def forward(self, x: Tensor) -> Tensor:
        _check_input("PixelUnshuffle", x)
        n, c, h, w = x.shape
        r = self.downscale_factor
        if h % r or w % r:
            raise ValueError(
                f"PixelUnshuffle: input height and width (input {shape_str(x.shape)}) must be "
                f"divisible by downscale_factor = {r}"
            )
        oh, ow = h // r, w // r
        return x.reshape(n, c, oh, r, ow, r).permute(0, 1, 3, 5, 2, 4).reshape(n, c * r * r, oh, ow)
