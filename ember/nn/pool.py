"""2-D pooling: MaxPool2d, AvgPool2d (Burn's defaults: stride = kernel, no padding) and
AdaptiveAvgPool2d. Windows come from the shared im2col (``ember.nn.unfold``), adaptive bins
from ``ember.nn.pool_adaptive``, so gradients come from the ``max``/``sum``/``index_select``
rules. Configs take an int where a pair goes (``MaxPool2dConfig(2)`` is a 2×2 kernel), as
PyTorch and Burn users write it.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from ember.nn.module import Module
from ember.nn.padding import PaddingConfig2d, padding_2d
from ember.nn.pool_adaptive import adaptive_avg_pool
from ember.nn.unfold import max_over_windows, out_size, per_axis, unfold_windows
from ember.record.config import Config
from ember.tensor.creation import from_numpy
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = [
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool2dConfig",
    "AvgPool2d",
    "AvgPool2dConfig",
    "MaxPool2d",
    "MaxPool2dConfig",
]


def _check_input(op: str, x: Tensor) -> None:
    if not isinstance(x, Tensor) or x.ndim != 4 or not x.dtype.is_float:
        got = f"{x.dtype} {shape_str(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{op}: expected a float input [batch, channels, height, width], got {got}")


def _geometry(op, x, kernel, stride, dilation, padding, ceil_mode):
    """Pads per side (ceil-mode overhang included) and the output size."""
    (top, bottom), (left, right) = padding.pairs(x.shape[2], x.shape[3], kernel, stride, dilation)
    pads, outs = [], []
    for size, k, s, d, (before, after) in (
        (x.shape[2], kernel[0], stride[0], dilation[0], (top, bottom)),
        (x.shape[3], kernel[1], stride[1], dilation[1], (left, right)),
    ):
        padded = size + before + after
        n = out_size(padded, k, s, d, ceil_mode, after)
        if n <= 0:
            raise ValueError(
                f"{op}: input {shape_str(x.shape)} with padding is smaller than the kernel "
                f"{list(kernel)} (dilation {list(dilation)})"
            )
        overhang = max((n - 1) * s + d * (k - 1) + 1 - padded, 0)  # ceil mode's partial last window
        pads.append((before, after, overhang))
        outs.append(n)
    return pads, tuple(outs)


def _pad(x: Tensor, pads, value: float) -> Tensor:
    (t, b, oh), (l, r, ow) = pads
    if t or b or oh or l or r or ow:
        x = x.pad((l, r + ow, t, b + oh), value)
    return x


def _window(op: str, kernel_size, strides) -> tuple:
    """A config's ``kernel_size`` and ``strides`` as pairs; the strides are the kernel size
    when None (Burn's default)."""
    kernel = per_axis(op, "kernel_size", kernel_size, 2)
    return kernel, kernel if strides is None else per_axis(op, "strides", strides, 2)


class _Pool2d(Module):
    """What MaxPool2d and AvgPool2d share: the window (the stride is the kernel size when
    None), its padding and the ceil mode."""

    def _set_window(self, kernel_size, stride, padding, ceil_mode: bool) -> None:
        self.kernel_size = tuple(int(k) for k in kernel_size)
        self.stride = self.kernel_size if stride is None else tuple(int(s) for s in stride)
        self.padding = padding_2d(padding if padding is not None else PaddingConfig2d.Valid)
        self.ceil_mode = bool(ceil_mode)


class MaxPool2dConfig(Config):
    """Configuration of :class:`MaxPool2d`.

    Args:
        kernel_size: ``(kh, kw)``; an int ``k`` means ``(k, k)``.
        strides: ``(sh, sw)``; the kernel size when None (Burn's default); an int means both axes.
        padding: ``PaddingConfig2d`` (Valid); padding never wins the max.
        dilation: ``(dh, dw)`` ((1, 1)); an int means both axes.
        ceil_mode: count a partial last window.
    """

    kernel_size: tuple[int, int]
    strides: tuple[int, int] | None = None
    padding: PaddingConfig2d = field(default_factory=lambda: PaddingConfig2d.Valid)
    dilation: tuple[int, int] = (1, 1)
    ceil_mode: bool = False

    def __post_init__(self):
        self.kernel_size, self.strides = _window("MaxPool2dConfig", self.kernel_size, self.strides)
        self.dilation = per_axis("MaxPool2dConfig", "dilation", self.dilation, 2)
        self.padding = padding_2d(self.padding)

    def init(self, device=None, dtype=None) -> "MaxPool2d":
        return MaxPool2d(self.kernel_size, self.strides, self.padding, self.dilation, self.ceil_mode)


class MaxPool2d(_Pool2d):
    """Maximum over each window: ``[B, C, H, W] -> [B, C, H_out, W_out]``; each window's gradient
    goes to one element, PyTorch's choice (:func:`ember.nn.unfold.max_over_windows`).

    Args:
        kernel_size, stride, padding, dilation, ceil_mode: as in the config.
    """

    def __init__(
        self,
        kernel_size: tuple[int, int],
        stride: tuple[int, int] | None = None,
        padding=None,
        dilation: tuple[int, int] = (1, 1),
        ceil_mode: bool = False,
    ):
        self._set_window(kernel_size, stride, padding, ceil_mode)
        self.dilation = tuple(int(d) for d in dilation)

    def forward(self, x: Tensor) -> Tensor:
        _check_input("MaxPool2d", x)
        pads, outs = _geometry(
            "MaxPool2d", x, self.kernel_size, self.stride, self.dilation, self.padding, self.ceil_mode
        )
        xp = _pad(x, pads, float("-inf"))
        geometry = (self.kernel_size, self.stride, self.dilation, outs)
        windows = unfold_windows(xp, *geometry)  # [B, C, K, L]
        (top, _, _), (left, _, _) = pads
        inside = np.zeros(xp.shape[2:], dtype=bool)
        inside[top : top + x.shape[2], left : left + x.shape[3]] = True
        return max_over_windows(windows, inside, *geometry).reshape(x.shape[:2] + outs)

    def extra_repr(self) -> dict:
        return {
            "kernel_size": list(self.kernel_size),
            "stride": list(self.stride),
            "dilation": list(self.dilation),
            "padding": type(self.padding).__name__,
            "ceil_mode": self.ceil_mode,
        }


class AvgPool2dConfig(Config):
    """Configuration of :class:`AvgPool2d`.

    Args:
        kernel_size: ``(kh, kw)``; an int ``k`` means ``(k, k)``.
        strides: ``(sh, sw)``; the kernel size when None (Burn's default); an int means both axes.
        padding: ``PaddingConfig2d`` (Valid).
        count_include_pad: padding zeros count in the divisor (True, as Burn).
        ceil_mode: count a partial last window.
    """

    kernel_size: tuple[int, int]
    strides: tuple[int, int] | None = None
    padding: PaddingConfig2d = field(default_factory=lambda: PaddingConfig2d.Valid)
    count_include_pad: bool = True
    ceil_mode: bool = False

    def __post_init__(self):
        self.kernel_size, self.strides = _window("AvgPool2dConfig", self.kernel_size, self.strides)
        self.padding = padding_2d(self.padding)

    def init(self, device=None, dtype=None) -> "AvgPool2d":
        return AvgPool2d(self.kernel_size, self.strides, self.padding, self.count_include_pad, self.ceil_mode)


class AvgPool2d(_Pool2d):
    """Mean over each window. The divisor counts the window's elements inside the padded input
    (``count_include_pad=True``) or inside the input only; a ceil-mode overhang never counts.

    Args:
        kernel_size, stride, padding, count_include_pad, ceil_mode: as in the config.
    """

    def __init__(
        self,
        kernel_size: tuple[int, int],
        stride: tuple[int, int] | None = None,
        padding=None,
        count_include_pad: bool = True,
        ceil_mode: bool = False,
    ):
        self._set_window(kernel_size, stride, padding, ceil_mode)
        self.count_include_pad = bool(count_include_pad)

    def forward(self, x: Tensor) -> Tensor:
        _check_input("AvgPool2d", x)
        one = (1, 1)
        pads, outs = _geometry(
            "AvgPool2d", x, self.kernel_size, self.stride, one, self.padding, self.ceil_mode
        )
        xp = _pad(x, pads, 0.0)
        windows = unfold_windows(xp, self.kernel_size, self.stride, one, outs)
        divisor = self._divisor(x.shape[2:], pads, outs)
        out = windows.sum(2) / from_numpy(divisor.astype(x.dtype.numpy), x.device)
        return out.reshape(x.shape[:2] + outs)

    def _divisor(self, size, pads, outs) -> np.ndarray:
        counts = []
        for d in range(2):
            before, after, _ = pads[d]
            start = np.arange(outs[d]) * self.stride[d]  # window start in padded coordinates
            end = start + self.kernel_size[d]
            lo, hi = (0, size[d] + before + after) if self.count_include_pad else (before, before + size[d])
            counts.append(np.clip(np.minimum(end, hi) - np.maximum(start, lo), 1, None))
        return np.outer(counts[0], counts[1]).reshape(-1)

    def extra_repr(self) -> dict:
        return {
            "kernel_size": list(self.kernel_size),
            "stride": list(self.stride),
            "padding": type(self.padding).__name__,
            "count_include_pad": self.count_include_pad,
            "ceil_mode": self.ceil_mode,
        }


class AdaptiveAvgPool2dConfig(Config):
    """Configuration of :class:`AdaptiveAvgPool2d`.

    Args:
        output_size: ``(oh, ow)``; an int means a square.
    """

    output_size: tuple[int, int]

    def __post_init__(self):
        self.output_size = per_axis("AdaptiveAvgPool2dConfig", "output_size", self.output_size, 2)

    def init(self, device=None, dtype=None) -> "AdaptiveAvgPool2d":
        return AdaptiveAvgPool2d(self.output_size)


class AdaptiveAvgPool2d(Module):
    """Averages ``[B, C, H, W]`` into ``[B, C, oh, ow]`` bins (PyTorch's bin edges), one axis
    after the other; each bin gathers only its own elements, so an infinity or NaN stays in
    the outputs whose bins contain it.

    Args:
        output_size: ``(oh, ow)``.
    """

    def __init__(self, output_size: tuple[int, int]):
        self.output_size = tuple(int(s) for s in output_size)
        if len(self.output_size) != 2 or min(self.output_size) <= 0:
            raise ValueError(f"AdaptiveAvgPool2d: output_size must be two positive ints, got {output_size}")

    def forward(self, x: Tensor) -> Tensor:
        _check_input("AdaptiveAvgPool2d", x)
        return adaptive_avg_pool(x, self.output_size, "AdaptiveAvgPool2d")

    def extra_repr(self) -> dict:
        return {"output_size": list(self.output_size)}
