"""3-D convolution (Burn's ``Conv3d``): ``[B, C_in, D, H, W] -> [B, C_out, D_out, H_out, W_out]``,
with stride, padding, dilation and groups, computed by the shared ``conv_nd`` (im2col, then one
batched matmul).

The weight is ``[C_out, C_in / groups, kd, kh, kw]`` (Burn's and PyTorch's layout, so records
move between them), initialised with fan_in = channels_in/groups · kd·kh·kw.
"""

from __future__ import annotations

from dataclasses import field

from ember.nn.conv import ConvNd, _ConvGeometry3d, config_params
from ember.nn.init import Initializer, default_linear_initializer
from ember.nn.padding import PaddingConfig3d, padding_3d
from ember.nn.param import Param
from ember.tensor.tensor import Tensor

__all__ = ["Conv3d", "Conv3dConfig"]


class Conv3dConfig(_ConvGeometry3d):
    """Configuration of :class:`Conv3d`.

    Args:
        channels, kernel_size, stride, dilation: ``(channels_in, channels_out)``, then
            ``(d, h, w)`` triples (stride and dilation (1, 1, 1)); an int stands for every axis.
        groups: channel groups (1).
        padding: ``PaddingConfig3d.Valid`` (default), ``.Same`` or ``.Explicit(depth, height, width)``
            (both sides of each axis); an int or a triple means ``Explicit``.
        bias: learn a bias.
        initializer: KaimingUniform(1/√3) by default, i.e. U(±1/√fan_in).
    """

    groups: int = 1
    padding: PaddingConfig3d = field(default_factory=lambda: PaddingConfig3d.Valid)
    bias: bool = True
    initializer: Initializer = field(default_factory=default_linear_initializer)

    def __post_init__(self):
        super().__post_init__()
        self.padding = padding_3d(self.padding)

    def init(self, device=None, dtype=None) -> "Conv3d":
        """Build the layer with freshly initialised weight (and bias).

        Args:
            device: where the parameters live (the default device when None).
            dtype: their float dtype (float32 when None).

        Returns:
            A :class:`Conv3d`.

        Raises:
            ValueError: channels not multiples of groups, or a non-positive kernel/stride/dilation.
        """
        weight, bias = config_params(self, self.groups, device, dtype)
        return Conv3d(weight, bias, self.stride, self.dilation, self.groups, self.padding)


class Conv3d(ConvNd):
    """3-D convolution: ``[B, C_in, D, H, W] -> [B, C_out, D_out, H_out, W_out]``.

    Args:
        weight: Param ``[C_out, C_in/groups, kd, kh, kw]``.
        bias: Param ``[C_out]`` or None.
        stride, dilation: ``(d, h, w)`` triples.
        groups: channel groups.
        padding: a PaddingConfig3d.
    """

    _op = "Conv3d"

    def __init__(
        self,
        weight: Param,
        bias: Param | None,
        stride=(1, 1, 1),
        dilation=(1, 1, 1),
        groups: int = 1,
        padding=None,
    ):
        self._set_fields(
            weight,
            bias,
            stride,
            dilation,
            groups,
            padding_3d(padding if padding is not None else PaddingConfig3d.Valid),
        )

    def forward(self, x: Tensor) -> Tensor:
        """Convolve ``x [B, C_in, D, H, W]``.

        Args:
            x: the input.

        Returns:
            ``[B, C_out, D_out, H_out, W_out]``.

        Raises:
            ValueError: wrong rank or channels, or an input smaller than the dilated kernel.
        """
        return super().forward(x)
