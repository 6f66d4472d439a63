"""1-D pooling over ``[batch, channels, length]``: MaxPool1d, AvgPool1d (Burn's defaults:
stride = kernel, no padding) and AdaptiveAvgPool1d. Same rules as the 2-D pools in
``ember.nn.pool``: windows come from the shared im2col (``ember.nn.unfold``), padding never
wins a max, a ceil-mode overhang never counts in an average, and gradients come from the
``max`` / ``sum`` / ``index_select`` rules.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from ember.nn.module import Module
from ember.nn.padding import PaddingConfig1d, padding_1d
from ember.nn.pool_adaptive import adaptive_avg_pool
from ember.nn.unfold import max_over_windows, out_size, unfold_windows
from ember.record.config import Config
from ember.tensor.creation import from_numpy
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool1dConfig",
    "AvgPool1d",
    "AvgPool1dConfig",
    "MaxPool1d",
    "MaxPool1dConfig",
]


def _check_positive(op: str, **values) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{op}: {name} must be a positive int, got {value!r}")


def _check_input(op: str, x) -> None:
    if not isinstance(x, Tensor) or x.ndim != 3 or not x.dtype.is_float:
        got = f"{x.dtype} {shape_str(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{op}: expected a float input [batch, channels, length], got {got}")


def _geometry(
    op: str, x: Tensor, kernel: int, stride: int, dilation: int, padding: PaddingConfig1d, ceil_mode: bool
) -> tuple:
    """(left pad, right pad, ceil-mode overhang, number of windows)."""
    length = x.shape[2]
    left, right = padding.pairs(length, kernel, stride, dilation)
    padded = length + left + right
    n = out_size(padded, kernel, stride, dilation, ceil_mode, right)
    if n <= 0:
        raise ValueError(
            f"{op}: input {shape_str(x.shape)} padded by ({left}, {right}) is shorter than the "
            f"kernel {kernel} (dilation {dilation})"
        )
    overhang = max((n - 1) * stride + dilation * (kernel - 1) + 1 - padded, 0)  # ceil mode's partial window
    return left, right, overhang, n


class _Pool1d(Module):
    """What MaxPool1d and AvgPool1d share: the window (the stride is the kernel size when
    None, Burn's default), its padding and the ceil mode."""

    def _set_window(self, kernel_size: int, stride: int | None, padding, ceil_mode: bool, **more) -> None:
        """Check and set the window; ``more`` are further settings that must be positive ints."""
        stride = kernel_size if stride is None else stride
        _check_positive(type(self).__name__, kernel_size=kernel_size, stride=stride, **more)
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding_1d(padding if padding is not None else PaddingConfig1d.Valid)
        self.ceil_mode = bool(ceil_mode)


class MaxPool1dConfig(Config):
    """Configuration of :class:`MaxPool1d`.

    Args:
        kernel_size: window length.
        stride: step between windows; the kernel size when None (Burn's default).
        padding: ``PaddingConfig1d`` (Valid), an int or ``(left, right)``; padding never wins the max.
            ``Same`` pads for the dilated kernel extent, as ``MaxPool2d`` does (Burn's ``Same``
            ignores dilation, so the two differ only for ``Same`` with ``dilation > 1``).
        dilation: spacing of the window's elements (1).
        ceil_mode: count a partial last window.
    """

    kernel_size: int
    stride: int | None = None
    padding: PaddingConfig1d = field(default_factory=lambda: PaddingConfig1d.Valid)
    dilation: int = 1
    ceil_mode: bool = False

    def __post_init__(self):
        self.stride = self.kernel_size if self.stride is None else self.stride
        self.padding = padding_1d(self.padding)

    def init(self, device=None, dtype=None) -> "MaxPool1d":
        """Build the layer (it has no parameters)."""
        return MaxPool1d(self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class MaxPool1d(_Pool1d):
    """Maximum over each window: ``[B, C, L] -> [B, C, L_out]``; a NaN in a window gives NaN.
    Each window's gradient goes to one element, PyTorch's choice
    (:func:`ember.nn.unfold.max_over_windows`).

    Args:
        kernel_size, stride, padding, dilation, ceil_mode: as in the config.
    """

    def __init__(
        self,
        kernel_size: int,
        stride: int | None = None,
        padding=None,
        dilation: int = 1,
        ceil_mode: bool = False,
    ):
        self._set_window(kernel_size, stride, padding, ceil_mode, dilation=dilation)
        self.dilation = dilation

    def forward(self, x: Tensor) -> Tensor:
        _check_input("MaxPool1d", x)
        left, right, overhang, n = _geometry(
            "MaxPool1d", x, self.kernel_size, self.stride, self.dilation, self.padding, self.ceil_mode
        )
        length = x.shape[2]
        if left or right or overhang:
            x = x.pad((left, right + overhang), float("-inf"))
        geometry = ((self.kernel_size,), (self.stride,), (self.dilation,), (n,))
        windows = unfold_windows(x, *geometry)  # [B, C, K, n]
        inside = np.zeros(x.shape[2], dtype=bool)
        inside[left : left + length] = True
        return max_over_windows(windows, inside, *geometry)

    def extra_repr(self) -> dict:
        return {
            "kernel_size": self.kernel_size,
            "stride": self.stride,
            "dilation": self.dilation,
            "padding": type(self.padding).__name__,
            "ceil_mode": self.ceil_mode,
        }


class AvgPool1dConfig(Config):
    """Configuration of :class:`AvgPool1d`.

    Args:
        kernel_size: window length.
        stride: step between windows; the kernel size when None (Burn's default).
        padding: ``PaddingConfig1d`` (Valid), an int or ``(left, right)``.
        count_include_pad: padding zeros count in the divisor (True, as Burn).
        ceil_mode: count a partial last window.
    """

    kernel_size: int
    stride: int | None = None
    padding: PaddingConfig1d = field(default_factory=lambda: PaddingConfig1d.Valid)
    count_include_pad: bool = True
    ceil_mode: bool = False

    def __post_init__(self):
        self.stride = self.kernel_size if self.stride is None else self.stride
        self.padding = padding_1d(self.padding)

    def init(self, device=None, dtype=None) -> "AvgPool1d":
        """Build the layer (it has no parameters)."""
        return AvgPool1d(self.kernel_size, self.stride, self.padding, self.count_include_pad, self.ceil_mode)


class AvgPool1d(_Pool1d):
    """Mean over each window. The divisor counts the window's elements inside the padded input
    (``count_include_pad=True``) or inside the input only; a ceil-mode overhang never counts.
    As in ``AvgPool2d``, ``count_include_pad=False`` leaves out asymmetric padding too (Burn
    pads unequal sides explicitly before pooling, so there they always count).

    Args:
        kernel_size, stride, padding, count_include_pad, ceil_mode: as in the config.
    """

    def __init__(
        self,
        kernel_size: int,
        stride: int | None = None,
        padding=None,
        count_include_pad: bool = True,
        ceil_mode: bool = False,
    ):
        self._set_window(kernel_size, stride, padding, ceil_mode)
        self.count_include_pad = bool(count_include_pad)

    def forward(self, x: Tensor) -> Tensor:
        _check_input("AvgPool1d", x)
        left, right, overhang, n = _geometry(
            "AvgPool1d", x, self.kernel_size, self.stride, 1, self.padding, self.ceil_mode
        )
        length = x.shape[2]
        if left or right or overhang:
            x = x.pad((left, right + overhang), 0.0)
        windows = unfold_windows(x, (self.kernel_size,), (self.stride,), (1,), (n,))
        start = np.arange(n) * self.stride  # window starts in padded coordinates
        lo, hi = (0, length + left + right) if self.count_include_pad else (left, left + length)
        count = np.clip(np.minimum(start + self.kernel_size, hi) - np.maximum(start, lo), 1, None)
        return windows.sum(2) / from_numpy(count.astype(x.dtype.numpy), x.device)

    def extra_repr(self) -> dict:
        return {
            "kernel_size": self.kernel_size,
            "stride": self.stride,
            "padding": type(self.padding).__name__,
            "count_include_pad": self.count_include_pad,
            "ceil_mode": self.ceil_mode,
        }


class AdaptiveAvgPool1dConfig(Config):
    """Configuration of :class:`AdaptiveAvgPool1d`.

    Args:
        output_size: number of output bins.
    """

    output_size: int

    def init(self, device=None, dtype=None) -> "AdaptiveAvgPool1d":
        """Build the layer (it has no parameters)."""
        return AdaptiveAvgPool1d(self.output_size)


class AdaptiveAvgPool1d(Module):
    """Averages ``[B, C, L]`` into ``[B, C, output_size]`` bins (PyTorch's and Burn's bin edges),
    with :func:`ember.nn.pool_adaptive.adaptive_avg_pool`: each bin gathers only its own
    elements, so an infinity or NaN stays in its bins.

    Args:
        output_size: number of bins.
    """

    def __init__(self, output_size: int):
        _check_positive("AdaptiveAvgPool1d", output_size=output_size)
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        _check_input("AdaptiveAvgPool1d", x)
        if x.shape[2] == 0:
            raise ValueError(
                f"AdaptiveAvgPool1d: cannot pool an empty length, got input {shape_str(x.shape)}"
            )
        return adaptive_avg_pool(x, (self.output_size,), "AdaptiveAvgPool1d")

    def extra_repr(self) -> dict:
        return {"output_size": self.output_size}
