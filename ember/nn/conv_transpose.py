"""Transposed convolutions (Burn's ``ConvTranspose1d``/``2d``/``3d``): the adjoint of a
convolution, i.e. the gradient of ``conv`` with respect to its input, with stride, padding,
``padding_out``, dilation and groups.

Computed as one batched matmul (every input element times its filters, ``Wᵀ @ x``) followed by
col2im (``fold_windows``: each product is added where the matching convolution window would
have read it), then the ``padding`` is cropped from both sides. The output size per axis is
Burn's and PyTorch's ``(in - 1)·stride - 2·padding + dilation·(kernel - 1) + padding_out + 1``;
``padding_out`` only lengthens the end of the output (it adds no taps).

The weight is ``[C_in, C_out / groups, *kernel]`` (Burn's and PyTorch's layout, so records
move between them). As in Burn (and PyTorch), it is initialised with fan_in =
channels_out/groups · kernel elements; fan_out, which Burn leaves unset, is channels_in/groups ·
kernel elements.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from ember.nn.conv import (
    _check_channels,
    _ConvGeometry2d,
    _ConvGeometry3d,
    _positive,
    init_conv_params,
    per_axis_fields,
)
from ember.nn.init import Initializer, default_linear_initializer
from ember.nn.module import Module
from ember.nn.param import Param
from ember.nn.unfold import fold_windows, per_axis
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = [
    "ConvTranspose1d",
    "ConvTranspose1dConfig",
    "ConvTranspose2d",
    "ConvTranspose2dConfig",
    "ConvTranspose3d",
    "ConvTranspose3dConfig",
    "conv_transpose_nd",
]

_DIMS = {1: "length", 2: "height, width", 3: "depth, height, width"}


def conv_transpose_nd(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: tuple,
    padding: tuple,
    padding_out: tuple,
    dilation: tuple,
    groups: int,
    op: str = "conv_transpose",
) -> Tensor:
    """N-d transposed convolution of ``x [B, C_in, *spatial]`` with ``weight [C_in, C_out/groups, *kernel]``.

    Args:
        x: the input.
        weight: the filters.
        bias: ``[C_out]`` or None.
        stride, padding, padding_out, dilation: one int per spatial dim; ``padding`` is cropped
            from both sides of each axis, ``padding_out`` added at its end.
        groups: channel groups.
        op: name used in error messages.

    Returns:
        ``[B, C_out, *out]`` with ``out = (in - 1)·stride - 2·padding + dilation·(kernel - 1) + padding_out + 1``.

    Raises:
        ValueError: the input's rank or channels do not fit the weight, or an output size is not positive.
    """
    n = weight.ndim - 2
    if not isinstance(x, Tensor) or x.ndim != n + 2:
        got = shape_str(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{op}: expected input [batch, channels, {_DIMS.get(n, f'{n} dims')}], got {got}")
    b, c_in = x.shape[:2]
    c_group_out = weight.shape[1]
    c_group_in = c_in // groups
    kernel = tuple(weight.shape[2:])
    if c_in != weight.shape[0] or c_in % groups:
        raise ValueError(
            f"{op}: input {shape_str(x.shape)} has {c_in} channels but the weight "
            f"{shape_str(weight.shape)} expects {weight.shape[0]} (groups={groups})"
        )
    spatial = tuple(x.shape[2:])
    full = tuple(
        (spatial[d] - 1) * stride[d] + dilation[d] * (kernel[d] - 1) + 1 + padding_out[d] for d in range(n)
    )
    outs = tuple(full[d] - 2 * padding[d] for d in range(n))
    if any(s <= 0 for s in spatial) or any(o <= 0 for o in outs):
        raise ValueError(
            f"{op}: input {shape_str(x.shape)} gives output size {list(outs)} (kernel {list(kernel)}, "
            f"stride {list(stride)}, padding {list(padding)}, padding_out {list(padding_out)}, "
            f"dilation {list(dilation)}); every size must be positive"
        )
    c_out = c_group_out * groups
    k = int(np.prod(kernel))
    # Wᵀ per group: [G, C_out/G · K, C_in/G] applied to every input position at once
    w_t = weight.reshape(1, groups, c_group_in, c_group_out * k).transpose(-1, -2)
    n_in = int(np.prod(spatial))
    cols = w_t @ x.reshape(b, groups, c_group_in, n_in)  # [B, G, C_out/G·K, L]
    out = fold_windows(cols.reshape(b, c_out, k, n_in), full, kernel, stride, dilation, spatial)
    for d in range(n):
        if padding[d]:
            out = out.narrow(2 + d, padding[d], outs[d])
    if bias is not None:
        out = out + bias.reshape((1, c_out) + (1,) * n)
    return out


def _check_settings(
    op: str, c_in: int, c_out: int, groups: int, kernel, stride, dilation, padding, padding_out
):
    _check_channels(op, c_in, c_out, groups)
    _positive(op, "kernel_size, stride and dilation", tuple(kernel) + tuple(stride) + tuple(dilation))
    pads = tuple(padding) + tuple(padding_out)
    if any(isinstance(p, bool) or not isinstance(p, int) or p < 0 for p in pads):
        raise ValueError(f"{op}: padding and padding_out must be non-negative ints, got {pads}")


# the per-axis settings of a config or layer, in the order of _check_settings' arguments
_AXIS_SETTINGS = ("kernel_size", "stride", "dilation", "padding", "padding_out")


class _ConvTransposeConfig(Config):
    """What the 1-D, 2-D and 3-D configs share: checking and building the layer (``_n`` is the
    number of spatial dims; a 1-D config holds plain ints)."""

    _n = 0

    def __post_init__(self):
        """The 2-D and 3-D configs' per-axis fields (the 1-D config, of plain ints, overrides this)."""
        super().__post_init__()
        per_axis_fields(self, self._n, ("padding", "padding_out"))

    def init(self, device=None, dtype=None) -> "_ConvTranspose":
        """Build the layer with freshly initialised weight (and bias).

        Args:
            device: where the parameters live (the default device when None).
            dtype: their float dtype (float32 when None).

        Returns:
            A :class:`ConvTranspose1d`, :class:`ConvTranspose2d` or :class:`ConvTranspose3d`,
            as the config.

        Raises:
            ValueError: channels not multiples of groups, or invalid sizes.
        """
        c_in, c_out = self.channels
        settings = [getattr(self, name) for name in _AXIS_SETTINGS]
        if self._n == 1:  # a 1-D config holds plain ints
            settings = [(value,) for value in settings]
        _check_settings(type(self).__name__, c_in, c_out, self.groups, *settings)
        weight, bias = init_conv_params(
            self.initializer, self.bias, c_in, c_out, self.groups, settings[0], device, dtype, transposed=True
        )
        layer = {1: ConvTranspose1d, 2: ConvTranspose2d, 3: ConvTranspose3d}[self._n]
        return layer(weight, bias, self.stride, self.dilation, self.groups, self.padding, self.padding_out)


class ConvTranspose1dConfig(_ConvTransposeConfig):
    """Configuration of :class:`ConvTranspose1d`.

    Args:
        channels: ``(channels_in, channels_out)``.
        kernel_size: kernel length.
        stride: step between the input positions' taps in the output (1).
        dilation: spacing of kernel elements (1).
        groups: channel groups (1).
        padding: elements cropped from both ends of the output (0).
        padding_out: elements added at the end of the output (0).
        bias: learn a bias.
        initializer: KaimingUniform(1/√3) by default.
    """

    channels: tuple[int, int]
    kernel_size: int
    stride: int = 1
    dilation: int = 1
    groups: int = 1
    padding: int = 0
    padding_out: int = 0
    bias: bool = True
    initializer: Initializer = field(default_factory=default_linear_initializer)

    _n = 1

    def __post_init__(self):
        self.channels = tuple(self.channels)


class ConvTranspose2dConfig(_ConvTransposeConfig, _ConvGeometry2d):
    """Configuration of :class:`ConvTranspose2d`.

    Args:
        channels, kernel_size, stride, dilation: ``(channels_in, channels_out)``, then
            ``(h, w)`` pairs (stride and dilation (1, 1)); an int stands for both axes (so
            for the paddings).
        groups: channel groups (1).
        padding: ``(ph, pw)`` cropped from both sides of each axis ((0, 0)).
        padding_out: ``(oh, ow)`` added at the end of each axis ((0, 0)).
        bias: learn a bias.
        initializer: KaimingUniform(1/√3) by default.
    """

    groups: int = 1
    padding: tuple[int, int] = (0, 0)
    padding_out: tuple[int, int] = (0, 0)
    bias: bool = True
    initializer: Initializer = field(default_factory=default_linear_initializer)

    _n = 2


class ConvTranspose3dConfig(_ConvTransposeConfig, _ConvGeometry3d):
    """Configuration of :class:`ConvTranspose3d`.

    Args:
        channels, kernel_size, stride, dilation: ``(channels_in, channels_out)``, then
            ``(d, h, w)`` triples (stride and dilation (1, 1, 1)); an int stands for every axis (so
            for the paddings).
        groups: channel groups (1).
        padding: ``(pd, ph, pw)`` cropped from both sides of each axis ((0, 0, 0)).
        padding_out: ``(od, oh, ow)`` added at the end of each axis ((0, 0, 0)).
        bias: learn a bias.
        initializer: KaimingUniform(1/√3) by default.
    """

    groups: int = 1
    padding: tuple[int, int, int] = (0, 0, 0)
    padding_out: tuple[int, int, int] = (0, 0, 0)
    bias: bool = True
    initializer: Initializer = field(default_factory=default_linear_initializer)

    _n = 3


class _ConvTranspose(Module):
    """What the 1-D, 2-D and 3-D transposed convolutions share; ``_n`` is the number of spatial dims."""

    _n: int = 0

    def __init__(
        self,
        weight: Param,
        bias: Param | None,
        stride=1,
        dilation=1,
        groups: int = 1,
        padding=0,
        padding_out=0,
    ):
        op = type(self).__name__
        n = self._n
        self.weight = weight
        self.bias = bias
        self.groups = int(groups)
        self.channels = (weight.shape[0], weight.shape[1] * self.groups)
        settings = {
            "kernel_size": tuple(weight.shape[2:]),
            "stride": per_axis(op, "stride", stride, n),
            "dilation": per_axis(op, "dilation", dilation, n),
            "padding": per_axis(op, "padding", padding, n),
            "padding_out": per_axis(op, "padding_out", padding_out, n),
        }
        _check_settings(op, self.channels[0], self.channels[1], self.groups, *settings.values())
        for name, value in settings.items():  # 1-D layers hold plain ints, as Burn's
            setattr(self, name, value[0] if n == 1 else value)

    def _axes(self, name: str) -> tuple:
        value = getattr(self, name)
        return (value,) if self._n == 1 else value

    def forward(self, x: Tensor) -> Tensor:
        """Transposed convolution of ``x [B, C_in, *spatial]``.

        Args:
            x: the input.

        Returns:
            ``[B, C_out, *out]`` (see the module docstring for the output size).

        Raises:
            ValueError: wrong rank or channels, or an output size that is not positive.
        """
        return conv_transpose_nd(
            x,
            self.weight.val(),
            None if self.bias is None else self.bias.val(),
            self._axes("stride"),
            self._axes("padding"),
            self._axes("padding_out"),
            self._axes("dilation"),
            self.groups,
            type(self).__name__,
        )

    def extra_repr(self) -> dict:
        def shown(value):
            return list(value) if isinstance(value, tuple) else value

        return {
            "channels": list(self.channels),
            "stride": shown(self.stride),
            "kernel_size": shown(self.kernel_size),
            "dilation": shown(self.dilation),
            "groups": self.groups,
            "padding": shown(self.padding),
            "padding_out": shown(self.padding_out),
        }


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution: ``[B, C_in, L] -> [B, C_out, L_out]``.

    Args:
        weight: Param ``[C_in, C_out/groups, kernel]``.
        bias: Param ``[C_out]`` or None.
        stride, dilation, groups, padding, padding_out: as in the config.
    """

    _n = 1

    def __init__(
        self,
        weight: Param,
        bias: Param | None,
        stride: int = 1,
        dilation: int = 1,
        groups: int = 1,
        padding: int = 0,
        padding_out: int = 0,
    ):
        super().__init__(weight, bias, stride, dilation, groups, padding, padding_out)


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution: ``[B, C_in, H, W] -> [B, C_out, H_out, W_out]``.

    Args:
        weight: Param ``[C_in, C_out/groups, kh, kw]``.
        bias: Param ``[C_out]`` or None.
        stride, dilation, padding, padding_out: ``(h, w)`` pairs.
        groups: channel groups.
    """

    _n = 2

    def __init__(
        self,
        weight: Param,
        bias: Param | None,
        stride: tuple[int, int] = (1, 1),
        dilation: tuple[int, int] = (1, 1),
        groups: int = 1,
        padding: tuple[int, int] = (0, 0),
        padding_out: tuple[int, int] = (0, 0),
    ):
        super().__init__(weight, bias, stride, dilation, groups, padding, padding_out)


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution: ``[B, C_in, D, H, W] -> [B, C_out, D_out, H_out, W_out]``.

    Args:
        weight: Param ``[C_in, C_out/groups, kd, kh, kw]``.
        bias: Param ``[C_out]`` or None.
        stride, dilation, padding, padding_out: ``(d, h, w)`` triples.
        groups: channel groups.
    """

    _n = 3

    def __init__(
        self,
        weight: Param,
        bias: Param | None,
        stride: tuple[int, int, int] = (1, 1, 1),
        dilation: tuple[int, int, int] = (1, 1, 1),
        groups: int = 1,
        padding: tuple[int, int, int] = (0, 0, 0),
        padding_out: tuple[int, int, int] = (0, 0, 0),
    ):
        super().__init__(weight, bias, stride, dilation, groups, padding, padding_out)
