"""1-D and 2-D convolutions (Burn's ``Conv1d``/``Conv2d``), with stride, padding, dilation and
groups, computed as im2col (one ``index_select``) followed by one batched matmul. ``conv_nd``
serves any number of spatial dims (``Conv3d`` in ``ember.nn.conv3d`` uses it too).

Weights are ``[channels_out, channels_in / groups, *kernel]`` (Burn's and PyTorch's layout),
initialised with fan_in = channels_in/groups · kernel elements.
"""

from __future__ import annotations

import math
from dataclasses import field

import numpy as np

from ember.nn.init import Initializer, default_linear_initializer
from ember.nn.module import Module
from ember.nn.padding import PaddingConfig1d, PaddingConfig2d, padding_1d, padding_2d
from ember.nn.param import Param
from ember.nn.unfold import out_size, per_axis, unfold_windows
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["Conv1d", "Conv1dConfig", "Conv2d", "Conv2dConfig", "conv_nd"]


def _pad_args(pads) -> list:
    """((before, after) per spatial dim) -> ember.pad's last-dim-first flat list."""
    flat = []
    for before, after in reversed(pads):
        flat += [before, after]
    return flat


def conv_nd(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: tuple,
    pads: tuple,
    dilation: tuple,
    groups: int,
    op: str = "conv",
) -> Tensor:
    """N-d convolution of ``x [B, C_in, *spatial]`` with ``weight [C_out, C_in/groups, *kernel]``.

    Args:
        x: the input.
        weight: the filters.
        bias: ``[C_out]`` or None.
        stride, dilation: per spatial dim.
        pads: ``(before, after)`` per spatial dim.
        groups: channel groups.
        op: name used in error messages.

    Returns:
        ``[B, C_out, *out]``.

    Raises:
        ValueError: the input's rank or channels do not fit the weight, or the padded input is
            smaller than the dilated kernel.
    """
    n = weight.ndim - 2
    if not isinstance(x, Tensor) or x.ndim != n + 2:
        got = shape_str(x.shape) if isinstance(x, Tensor) else type(x).__name__
        dims = {1: "length", 2: "height, width", 3: "depth, height, width"}.get(n, f"{n} spatial dims")
        raise ValueError(f"{op}: expected input [batch, channels, {dims}], got {got}")
    b, c_in = x.shape[:2]
    c_out, c_group = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    if c_in != c_group * groups:
        raise ValueError(
            f"{op}: input has {c_in} channels but the weight {shape_str(weight.shape)} with "
            f"groups={groups} expects {c_group * groups}"
        )
    if any(p for pair in pads for p in pair):
        x = x.pad(_pad_args(pads), 0.0)
    padded = tuple(x.shape[2:])
    outs = tuple(out_size(padded[d], kernel[d], stride[d], dilation[d]) for d in range(n))
    if any(o <= 0 for o in outs):
        raise ValueError(
            f"{op}: the (padded) input {shape_str(padded)} is smaller than the dilated kernel "
            f"{shape_str(kernel)} (dilation {list(dilation)})"
        )
    k = int(np.prod(kernel))
    cols = unfold_windows(x, kernel, stride, dilation, outs)  # [B, C_in, K, L]
    cols = cols.reshape(b, groups, c_group * k, int(np.prod(outs)))  # not -1: an empty batch cannot infer it
    w = weight.reshape(1, groups, c_out // groups, c_group * k)
    out = (w @ cols).reshape((b, c_out) + outs)
    if bias is not None:
        out = out + bias.reshape((1, c_out) + (1,) * n)
    return out


def _check_channels(op: str, c_in: int, c_out: int, groups: int) -> None:
    if c_in <= 0 or c_out <= 0 or groups <= 0 or c_in % groups or c_out % groups:
        raise ValueError(
            f"{op}: channels_in ({c_in}) and channels_out ({c_out}) must be positive multiples of "
            f"groups ({groups})"
        )


def init_conv_params(
    initializer, bias: bool, c_in: int, c_out: int, groups: int, kernel, device, dtype, transposed=False
):
    """``(weight, bias)`` of a convolution, both drawn by ``initializer`` with the layer's fans
    (channels per group times the kernel volume): weight ``[C_out, C_in/groups, *kernel]``, or
    for a transposed one ``[C_in, C_out/groups, *kernel]`` with the fans swapped; bias ``[C_out]``
    or None."""
    k = math.prod(kernel)
    rows, cols = (c_in, c_out) if transposed else (c_out, c_in)
    fan_in, fan_out = cols // groups * k, rows // groups * k
    shape = (rows, cols // groups) + tuple(kernel)
    weight = initializer.init(shape, device, dtype, fan_in=fan_in, fan_out=fan_out)
    bias_param = initializer.init((c_out,), device, dtype, fan_in=fan_in, fan_out=fan_out) if bias else None
    return weight, bias_param


def _positive(op: str, name: str, values) -> None:
    if any(isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in values):
        raise ValueError(f"{op}: {name} must be positive ints, got {values}")


def per_axis_fields(config, n: int, names=("kernel_size", "stride", "dilation")) -> None:
    """Normalise a convolution config in place: ``channels`` as a pair, and the settings ``names``
    as ``n``-tuples (an int stands for every axis)."""
    op = type(config).__name__
    config.channels = tuple(config.channels)
    for name in names:
        setattr(config, name, per_axis(op, name, getattr(config, name), n))


def config_params(config, groups: int, device, dtype) -> tuple:
    """``(weight, bias)`` of a convolution config with per-axis ``kernel_size``, ``stride`` and
    ``dilation`` tuples, once its channels, ``groups`` and sizes are checked."""
    op = type(config).__name__
    c_in, c_out = config.channels
    _check_channels(op, c_in, c_out, groups)
    _positive(op, "kernel_size, stride and dilation", config.kernel_size + config.stride + config.dilation)
    return init_conv_params(
        config.initializer, config.bias, c_in, c_out, groups, config.kernel_size, device, dtype
    )


class _ConvGeometry2d(Config):
    """The fields the 2-D convolution configs begin with (Conv2d, DeformConv2d and
    ConvTranspose2d): an int given for a per-axis setting stands for both axes.

    Args:
        channels: ``(channels_in, channels_out)``.
        kernel_size: ``(kh, kw)``.
        stride: ``(sh, sw)`` ((1, 1)).
        dilation: ``(dh, dw)`` ((1, 1)).
    """

    channels: tuple[int, int]
    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)

    def __post_init__(self):
        per_axis_fields(self, 2)


class _ConvGeometry3d(Config):
    """The fields the 3-D convolution configs begin with (Conv3d and ConvTranspose3d): an int
    given for a per-axis setting stands for every axis.

    Args:
        channels: ``(channels_in, channels_out)``.
        kernel_size: ``(kd, kh, kw)``.
        stride: ``(sd, sh, sw)`` ((1, 1, 1)).
        dilation: ``(dd, dh, dw)`` ((1, 1, 1)).
    """

    channels: tuple[int, int]
    kernel_size: tuple[int, int, int]
    stride: tuple[int, int, int] = (1, 1, 1)
    dilation: tuple[int, int, int] = (1, 1, 1)

    def __post_init__(self):
        per_axis_fields(self, 3)


class Conv1dConfig(Config):
    """Configuration of :class:`Conv1d`.

    Args:
        channels_in, channels_out: channel counts.
        kernel_size: kernel length.
        stride: step between windows (1).
        dilation: spacing of kernel elements (1).
        groups: channel groups (1).
        padding: ``PaddingConfig1d.Valid`` (default), ``.Same`` or ``.Explicit(left, right)``.
        bias: learn a bias.
        initializer: KaimingUniform(1/√3) by default, i.e. U(±1/√fan_in).
    """

    channels_in: int
    channels_out: int
    kernel_size: int
    stride: int = 1
    dilation: int = 1
    groups: int = 1
    padding: PaddingConfig1d = field(default_factory=lambda: PaddingConfig1d.Valid)
    bias: bool = True
    initializer: Initializer = field(default_factory=default_linear_initializer)

    def __post_init__(self):
        self.padding = padding_1d(self.padding)

    def init(self, device=None, dtype=None) -> "Conv1d":
        _check_channels("Conv1dConfig", self.channels_in, self.channels_out, self.groups)
        _positive(
            "Conv1dConfig", "kernel_size, stride and dilation", (self.kernel_size, self.stride, self.dilation)
        )
        weight, bias = init_conv_params(
            self.initializer,
            self.bias,
            self.channels_in,
            self.channels_out,
            self.groups,
            (self.kernel_size,),
            device,
            dtype,
        )
        return Conv1d(weight, bias, self.stride, self.dilation, self.groups, self.padding)


class Conv1d(Module):
    """1-D convolution: ``[B, C_in, L] -> [B, C_out, L_out]``.

    Args:
        weight: Param ``[C_out, C_in/groups, kernel]``.
        bias: Param ``[C_out]`` or None.
        stride, dilation, groups: as in the config.
        padding: a PaddingConfig1d.
    """

    def __init__(
        self,
        weight: Param,
        bias: Param | None,
        stride: int = 1,
        dilation: int = 1,
        groups: int = 1,
        padding=None,
    ):
        self.weight = weight
        self.bias = bias
        self.stride = int(stride)
        self.kernel_size = weight.shape[2]
        self.dilation = int(dilation)
        self.groups = int(groups)
        self.padding = padding_1d(padding if padding is not None else PaddingConfig1d.Valid)

    def forward(self, x: Tensor) -> Tensor:
        length = x.shape[-1] if isinstance(x, Tensor) and x.ndim else 0
        pads = (self.padding.pairs(length, self.kernel_size, self.stride, self.dilation),)
        return conv_nd(
            x,
            self.weight.val(),
            None if self.bias is None else self.bias.val(),
            (self.stride,),
            pads,
            (self.dilation,),
            self.groups,
            "Conv1d",
        )

    def extra_repr(self) -> dict:
        c_out, c_group, _ = self.weight.shape
        return {
            "ch_in": c_group * self.groups,
            "ch_out": c_out,
            "stride": self.stride,
            "kernel_size": self.kernel_size,
            "dilation": self.dilation,
            "groups": self.groups,
            "padding": type(self.padding).__name__,
        }


class Conv2dConfig(_ConvGeometry2d):
    """Configuration of :class:`Conv2d`.

    Args:
        channels, kernel_size, stride, dilation: ``(channels_in, channels_out)``, then
            ``(h, w)`` pairs (stride and dilation (1, 1)); an int stands for both axes.
        groups: channel groups (1).
        padding: ``PaddingConfig2d.Valid`` (default), ``.Same`` or ``.Explicit(top, left, bottom, right)``.
        bias: learn a bias.
        initializer: KaimingUniform(1/√3) by default.
    """

    groups: int = 1
    padding: PaddingConfig2d = field(default_factory=lambda: PaddingConfig2d.Valid)
    bias: bool = True
    initializer: Initializer = field(default_factory=default_linear_initializer)

    def __post_init__(self):
        super().__post_init__()
        self.padding = padding_2d(self.padding)

    def init(self, device=None, dtype=None) -> "Conv2d":
        weight, bias = config_params(self, self.groups, device, dtype)
        return Conv2d(weight, bias, self.stride, self.dilation, self.groups, self.padding)


class ConvNd(Module):
    """What :class:`Conv2d` and :class:`~ember.nn.Conv3d` share: per-axis tuples, padding
    resolved against the input's spatial size, display. ``_op`` names the layer in errors."""

    _op: str

    def _set_fields(self, weight: Param, bias: Param | None, stride, dilation, groups: int, padding) -> None:
        self.weight = weight
        self.bias = bias
        self.stride = tuple(int(s) for s in stride)
        self.kernel_size = tuple(weight.shape[2:])
        self.dilation = tuple(int(d) for d in dilation)
        self.groups = int(groups)
        self.padding = padding

    def forward(self, x: Tensor) -> Tensor:
        n = len(self.kernel_size)
        spatial = tuple(x.shape[-n:]) if isinstance(x, Tensor) and x.ndim >= n else (0,) * n
        pads = self.padding.pairs(*spatial, self.kernel_size, self.stride, self.dilation)
        return conv_nd(
            x,
            self.weight.val(),
            None if self.bias is None else self.bias.val(),
            self.stride,
            pads,
            self.dilation,
            self.groups,
            self._op,
        )

    def extra_repr(self) -> dict:
        c_out, c_group = self.weight.shape[:2]
        return {
            "ch_in": c_group * self.groups,
            "ch_out": c_out,
            "stride": list(self.stride),
            "kernel_size": list(self.kernel_size),
            "dilation": list(self.dilation),
            "groups": self.groups,
            "padding": type(self.padding).__name__,
        }


class Conv2d(ConvNd):
    """2-D convolution: ``[B, C_in, H, W] -> [B, C_out, H_out, W_out]``.

    Args:
        weight: Param ``[C_out, C_in/groups, kh, kw]``.
        bias: Param ``[C_out]`` or None.
        stride, dilation: ``(h, w)`` pairs.
        groups: channel groups.
        padding: a PaddingConfig2d.
    """

    _op = "Conv2d"

    def __init__(
        self, weight: Param, bias: Param | None, stride=(1, 1), dilation=(1, 1), groups: int = 1, padding=None
    ):
        self._set_fields(
            weight,
            bias,
            stride,
            dilation,
            groups,
            padding_2d(padding if padding is not None else PaddingConfig2d.Valid),
        )
