"""Deformable 2-D convolution (Burn's ``DeformConv2d``, torchvision's ``deform_conv2d`` semantics).

Each kernel tap of each output position reads the input at its regular place moved by a
learnt ``(dy, dx)`` offset, optionally scaled by a mask (DCNv2)::

    out[b, o, i, j] = bias[o] + Σ_{c, ky, kx} weight[o, c, ky, kx] · mask[b, g·K + k, i, j]
                      · bilinear(x[b, c], i·sh - top + ky·dh + dy, j·sw - left + kx·dw + dx)

with ``k = ky·kw + kx``, ``(dy, dx) = offset[b, 2(g·K + k) : 2(g·K + k) + 2, i, j]`` and ``g``
the offset group of channel ``c``. ``bilinear`` is torchvision's: a point outside
``(-1, H) × (-1, W)`` reads 0 (with no gradient), and a corner outside the image reads 0.

Built from tensor ops, so autodiff gives every gradient: the four corners come from ``gather``
on the input padded by one zero row/column per side, the corner weights are the fractional
parts of the sample coordinates (``floor`` has no gradient, so the offsets get the bilinear
slope), and the sampled taps go through the same grouped matmul as ``Conv2d``.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from ember.nn.conv import _ConvGeometry2d, _positive, config_params
from ember.nn.init import Initializer, default_linear_initializer
from ember.nn.module import Module
from ember.nn.padding import PaddingConfig2d, padding_2d
from ember.nn.param import Param
from ember.nn.unfold import out_size, per_axis
from ember.tensor.creation import from_numpy
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["DeformConv2d", "DeformConv2dConfig", "deform_conv2d"]


def _describe(t) -> str:
    return shape_str(t.shape) if isinstance(t, Tensor) else type(t).__name__


def _base_coords(outs: tuple, kernel: tuple, stride: tuple, dilation: tuple, before: tuple) -> tuple:
    """Undeformed sample rows and columns ``[K, L]`` (input coordinates, padding subtracted)."""
    (oh, ow), (kh, kw) = outs, kernel
    oy, ox = np.meshgrid(np.arange(oh), np.arange(ow), indexing="ij")
    ky, kx = np.meshgrid(np.arange(kh), np.arange(kw), indexing="ij")
    rows = oy.reshape(1, -1) * stride[0] - before[0] + ky.reshape(-1, 1) * dilation[0]
    cols = ox.reshape(1, -1) * stride[1] - before[1] + kx.reshape(-1, 1) * dilation[1]
    return rows, cols


def _sample(x: Tensor, y: Tensor, xs: Tensor, offset_groups: int) -> Tensor:
    """Bilinear samples of ``x [B, C, H, W]`` at rows ``y`` and columns ``xs`` ``[B, G, K, L]``
    (offset group g serves channels ``g·C/G .. (g+1)·C/G``): ``[B, G, C/G, K, L]``."""
    b, c, h, w = x.shape
    _, g, k, n_out = y.shape
    inside = (y > -1.0).logical_and(y < float(h)).logical_and(xs > -1.0).logical_and(xs < float(w))
    # outside points are moved in range (their value is replaced by 0 below), so every corner
    # index is valid in the input padded by one zero on each side
    y = y.where(inside, 0.0)
    xs = xs.where(inside, 0.0)
    y0, x0 = y.floor(), xs.floor()
    ly, lx = y - y0, xs - x0  # the fractional parts carry the gradient of the offsets
    hy, hx = 1.0 - ly, 1.0 - lx
    row0 = y0.long() + 1  # in the padded input
    col0 = x0.long() + 1
    width = w + 2
    flat = x.pad((1, 1, 1, 1), 0.0).reshape(b, c, (h + 2) * width)
    per_group = c // offset_groups

    def corner(rows: Tensor, columns: Tensor) -> Tensor:
        index = (rows * width + columns).reshape(b, g, 1, k * n_out).expand(b, g, per_group, k * n_out)
        picked = flat.gather(2, index.reshape(b, c, k * n_out))
        return picked.reshape(b, g, per_group, k, n_out)

    def spread(weight: Tensor) -> Tensor:  # [B, G, K, L] -> [B, G, 1, K, L], shared by the group's channels
        return weight.reshape(b, g, 1, k, n_out)

    sampled = (
        corner(row0, col0) * spread(hy * hx)
        + corner(row0, col0 + 1) * spread(hy * lx)
        + corner(row0 + 1, col0) * spread(ly * hx)
        + corner(row0 + 1, col0 + 1) * spread(ly * lx)
    )
    return sampled.where(spread(inside), 0.0)


def deform_conv2d(
    x: Tensor,
    offset: Tensor,
    weight: Tensor,
    mask: Tensor | None,
    bias: Tensor | None,
    stride: tuple,
    pads: tuple,
    dilation: tuple,
    weight_groups: int,
    offset_groups: int,
    op: str = "deform_conv2d",
) -> Tensor:
    """Deformable convolution of ``x [B, C_in, H, W]`` (see the module docstring).

    Args:
        x: the input.
        offset: ``[B, 2·offset_groups·kh·kw, H_out, W_out]``, ``(dy, dx)`` per tap.
        weight: ``[C_out, C_in/weight_groups, kh, kw]``.
        mask: ``[B, offset_groups·kh·kw, H_out, W_out]`` or None (all ones).
        bias: ``[C_out]`` or None.
        stride, dilation: ``(h, w)`` pairs.
        pads: ``((top, bottom), (left, right))``.
        weight_groups: channel groups of the weight.
        offset_groups: channel groups sharing one set of offsets.
        op: name used in error messages.

    Returns:
        ``[B, C_out, H_out, W_out]``.

    Raises:
        ValueError: shapes that do not fit each other.
    """
    if not isinstance(x, Tensor) or x.ndim != 4 or not x.dtype.is_float:
        got = f"{x.dtype} {shape_str(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{op}: expected a float input [batch, channels, height, width], got {got}")
    b, c_in, h, w = x.shape
    c_out, c_group = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    if c_in != c_group * weight_groups or c_in % offset_groups:
        raise ValueError(
            f"{op}: input has {c_in} channels but the weight {shape_str(weight.shape)} with "
            f"weight_groups={weight_groups} expects {c_group * weight_groups}, and it must be a multiple "
            f"of offset_groups={offset_groups}"
        )
    (top, bottom), (left, right) = pads
    outs = (
        out_size(h + top + bottom, kernel[0], stride[0], dilation[0]),
        out_size(w + left + right, kernel[1], stride[1], dilation[1]),
    )
    if min(outs) <= 0:
        raise ValueError(
            f"{op}: the (padded) input {shape_str((h + top + bottom, w + left + right))} is smaller than the "
            f"dilated kernel {shape_str(kernel)} (dilation {list(dilation)})"
        )
    k = kernel[0] * kernel[1]
    n_out = outs[0] * outs[1]
    want = (b, 2 * offset_groups * k) + outs
    if not isinstance(offset, Tensor) or tuple(offset.shape) != want:
        raise ValueError(f"{op}: offset must have shape {shape_str(want)}, got {_describe(offset)}")
    if mask is not None and (
        not isinstance(mask, Tensor) or tuple(mask.shape) != (b, offset_groups * k) + outs
    ):
        raise ValueError(
            f"{op}: mask must have shape {shape_str((b, offset_groups * k) + outs)}, got {_describe(mask)}"
        )
    rows, columns = _base_coords(outs, kernel, stride, dilation, (top, left))
    dt = x.dtype.numpy
    moves = offset.to(x.dtype).reshape(b, offset_groups, k, 2, n_out)
    y = moves.narrow(3, 0, 1).reshape(b, offset_groups, k, n_out) + from_numpy(rows.astype(dt), x.device)
    xs = moves.narrow(3, 1, 1).reshape(b, offset_groups, k, n_out) + from_numpy(columns.astype(dt), x.device)
    taps = _sample(x, y, xs, offset_groups)  # [B, G_off, C/G_off, K, L]
    if mask is not None:
        taps = taps * mask.to(x.dtype).reshape(b, offset_groups, 1, k, n_out)
    cols = taps.reshape(b, weight_groups, c_group * k, n_out)
    out = (weight.reshape(1, weight_groups, c_out // weight_groups, c_group * k) @ cols).reshape(
        (b, c_out) + outs
    )
    if bias is not None:
        out = out + bias.reshape(1, c_out, 1, 1)
    return out


class DeformConv2dConfig(_ConvGeometry2d):
    """Configuration of :class:`DeformConv2d`.

    Args:
        channels, kernel_size, stride, dilation: ``(channels_in, channels_out)``, then
            ``(h, w)`` pairs (stride and dilation (1, 1)); an int stands for both axes.
        weight_groups: channel groups of the weight (1).
        offset_groups: channel groups sharing one set of offsets (1).
        padding: ``PaddingConfig2d.Valid`` (default), ``.Same`` or ``.Explicit(top, left, bottom, right)``.
            ``Same`` with an even kernel pads one more at the end, where Burn refuses it.
        bias: learn a bias.
        initializer: KaimingUniform(1/√3) by default, i.e. U(±1/√fan_in).
    """

    weight_groups: int = 1
    offset_groups: int = 1
    padding: PaddingConfig2d = field(default_factory=lambda: PaddingConfig2d.Valid)
    bias: bool = True
    initializer: Initializer = field(default_factory=default_linear_initializer)

    def __post_init__(self):
        super().__post_init__()
        self.padding = padding_2d(self.padding)

    def init(self, device=None, dtype=None) -> "DeformConv2d":
        """Build the layer with freshly initialised weight (and bias).

        Args:
            device: where the parameters live (the default device when None).
            dtype: their float dtype (float32 when None).

        Returns:
            A :class:`DeformConv2d`.

        Raises:
            ValueError: channels not multiples of the groups, or a non-positive kernel/stride/dilation.
        """
        _positive("DeformConv2dConfig", "offset_groups", (self.offset_groups,))
        if self.channels[0] % self.offset_groups:
            raise ValueError(
                f"DeformConv2dConfig: channels_in ({self.channels[0]}) must be a multiple of offset_groups "
                f"({self.offset_groups})"
            )
        weight, bias = config_params(self, self.weight_groups, device, dtype)
        return DeformConv2d(
            weight, bias, self.stride, self.dilation, self.weight_groups, self.offset_groups, self.padding
        )


class DeformConv2d(Module):
    """Deformable 2-D convolution: ``[B, C_in, H, W]`` with per-tap offsets (and an optional
    mask) ``-> [B, C_out, H_out, W_out]``; ``H_out, W_out`` are those of a ``Conv2d`` of the
    same geometry.

    Args:
        weight: Param ``[C_out, C_in/weight_groups, kh, kw]``.
        bias: Param ``[C_out]`` or None.
        stride, dilation: ``(h, w)`` pairs.
        weight_groups, offset_groups: as in the config.
        padding: a PaddingConfig2d.
    """

    def __init__(
        self,
        weight: Param,
        bias: Param | None,
        stride: tuple[int, int] = (1, 1),
        dilation: tuple[int, int] = (1, 1),
        weight_groups: int = 1,
        offset_groups: int = 1,
        padding=None,
    ):
        self.weight = weight
        self.bias = bias
        self.stride = per_axis("DeformConv2d", "stride", stride, 2)
        self.kernel_size = tuple(weight.shape[2:])
        self.dilation = per_axis("DeformConv2d", "dilation", dilation, 2)
        self.weight_groups = int(weight_groups)
        self.offset_groups = int(offset_groups)
        self.padding = padding_2d(padding if padding is not None else PaddingConfig2d.Valid)

    def forward(self, x: Tensor, offset: Tensor, mask: Tensor | None = None) -> Tensor:
        """Deformable convolution of ``x``.

        Args:
            x: ``[B, C_in, H, W]``.
            offset: ``[B, 2·offset_groups·kh·kw, H_out, W_out]``: ``(dy, dx)`` of each tap, in
                the order ``(group, ky, kx, dy/dx)``.
            mask: ``[B, offset_groups·kh·kw, H_out, W_out]`` scaling each tap, or None.

        Returns:
            ``[B, C_out, H_out, W_out]``.

        Raises:
            ValueError: shapes that do not fit the layer.
        """
        h, w = (x.shape[-2], x.shape[-1]) if isinstance(x, Tensor) and x.ndim >= 2 else (0, 0)
        pads = self.padding.pairs(h, w, self.kernel_size, self.stride, self.dilation)
        return deform_conv2d(
            x,
            offset,
            self.weight.val(),
            mask,
            None if self.bias is None else self.bias.val(),
            self.stride,
            pads,
            self.dilation,
            self.weight_groups,
            self.offset_groups,
            "DeformConv2d",
        )

    def extra_repr(self) -> dict:
        return {
            "stride": list(self.stride),
            "kernel_size": list(self.kernel_size),
            "dilation": list(self.dilation),
            "weight_groups": self.weight_groups,
            "offset_groups": self.offset_groups,
            "padding": type(self.padding).__name__,
        }
