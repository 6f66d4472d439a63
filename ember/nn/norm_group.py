"""Group normalisation (Burn's ``GroupNorm``): channels of ``[batch, channels, ...]`` split into
groups, each group normalised over its channels and spatial positions.

:func:`group_norm` is shared with :class:`~ember.nn.InstanceNorm` (one group per channel).
"""

from __future__ import annotations

import math

from ember.nn.init import Ones, Zeros
from ember.nn.module import Module
from ember.nn.param import Param
from ember.record.config import Config
from ember.tensor import dtypes as dt
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["GroupNorm", "GroupNormConfig", "group_norm"]


def check_norm_input(op: str, x: Tensor, num_channels: int) -> None:
    """``x`` must be a float ``[batch, num_channels, *spatial]`` tensor with at least one spatial dim."""
    if not isinstance(x, Tensor) or not x.dtype.is_float:
        got = f"{x.dtype} tensor" if isinstance(x, Tensor) else type(x).__name__
        raise TypeError(f"{op}: expected a float Tensor input, got {got}")
    if x.ndim < 3 or x.shape[1] != num_channels:
        raise ValueError(
            f"{op}: expected input [batch, {num_channels}, *spatial] of rank >= 3, got {shape_str(x.shape)}"
        )


def check_affine(op: str, gamma: Param | None, beta: Param | None, num_channels: int) -> None:
    if (gamma is None) != (beta is None):
        raise ValueError(f"{op}: gamma and beta must both be given (affine) or both be None")
    for name, p in (("gamma", gamma), ("beta", beta)):
        if p is not None and tuple(p.shape) != (num_channels,):
            raise ValueError(f"{op}: {name} must have shape [{num_channels}], got {shape_str(p.shape)}")


def group_norm(
    x: Tensor, gamma: Tensor | None, beta: Tensor | None, num_groups: int, epsilon: float
) -> Tensor:
    """``(x − mean) / √(var + ε) · gamma + beta`` with mean and biased variance taken per sample
    over each group of ``channels / num_groups`` channels and all spatial positions.

    float16 statistics are computed in float32 (squares past ~256 overflow float16, as Burn
    notes); the result is cast back before the affine step.

    Args:
        x: ``[batch, channels, *spatial]``, channels divisible by ``num_groups``.
        gamma, beta: ``[channels]`` tensors, or None for no affine step.
        num_groups: number of groups.
        epsilon: added to the variance.
    """
    shape = tuple(x.shape)
    batch, channels = shape[0], shape[1]
    hidden = math.prod(shape[2:]) * (channels // num_groups)  # elements per group
    grouped = x.reshape(batch, num_groups, hidden)
    if x.dtype is dt.float16:
        grouped = grouped.to(dt.float32)
    centred = grouped - grouped.mean(2, keepdim=True)
    var = centred.square().mean(2, keepdim=True)
    # a variance past the dtype's range: NaN, as layer_norm (and PyTorch's group_norm), not
    # centred / inf, a group of zeros that looks healthy
    std = (var + epsilon).sqrt().mask_fill(var.isinf(), math.nan)
    normed = (centred / std).to(x.dtype).reshape(shape)
    if gamma is None:
        return normed
    affine_shape = (1, channels) + (1,) * (len(shape) - 2)
    return normed * gamma.to(x.dtype).reshape(affine_shape) + beta.to(x.dtype).reshape(affine_shape)


class GroupNormConfig(Config):
    """Configuration of :class:`GroupNorm`.

    Args:
        num_groups: number of groups the channels are split into (divides ``num_channels``).
        num_channels: number of channels C (dim 1 of the input).
        epsilon: added to the variance (1e-5).
        affine: learn a per-channel ``gamma`` (ones) and ``beta`` (zeros) (True).
    """

    num_groups: int
    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def init(self, device=None, dtype=None) -> "GroupNorm":
        """Build the layer."""
        g, c = self.num_groups, self.num_channels
        for name, value in (("num_groups", g), ("num_channels", c)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"GroupNormConfig: {name} must be a positive int, got {value!r}")
        if c % g:
            raise ValueError(f"GroupNormConfig: num_channels={c} is not divisible by num_groups={g}")
        return GroupNorm(*affine_params(c, self.affine, device, dtype), g, c, self.epsilon)


def affine_params(num_channels: int, affine: bool, device, dtype) -> tuple:
    """``(gamma, beta)``: ones and zeros ``[num_channels]`` when ``affine``, else ``(None, None)``."""
    if not affine:
        return None, None
    return Ones().init((num_channels,), device, dtype), Zeros().init((num_channels,), device, dtype)


class ChannelNorm(Module):
    """What :class:`GroupNorm` and :class:`~ember.nn.InstanceNorm` share: optional per-channel
    ``gamma``/``beta`` and :func:`group_norm` over ``[batch, num_channels, *spatial]``."""

    @property
    def affine(self) -> bool:
        return self.gamma is not None

    _groups: int  # the channel groups normalised together

    def forward(self, x: Tensor) -> Tensor:
        """Args:
        x: ``[batch, num_channels, *spatial]`` (rank >= 3).
        """
        check_norm_input(type(self).__name__, x, self.num_channels)
        gamma = None if self.gamma is None else self.gamma.val()
        beta = None if self.beta is None else self.beta.val()
        return group_norm(x, gamma, beta, self._groups, self.epsilon)


class GroupNorm(ChannelNorm):
    """Group normalisation of ``[batch, channels, *spatial]`` inputs (see :func:`group_norm`);
    the output has the input's shape. Records hold ``gamma`` and ``beta`` when affine.

    Args:
        gamma, beta: Params ``[num_channels]``, or both None (no affine step).
        num_groups: number of channel groups.
        num_channels: number of channels.
        epsilon: added to the variance.
    """

    def __init__(
        self,
        gamma: Param | None,
        beta: Param | None,
        num_groups: int,
        num_channels: int,
        epsilon: float = 1e-5,
    ):
        if num_groups <= 0 or num_channels <= 0:
            raise ValueError(
                f"GroupNorm: num_groups and num_channels must be positive, got {num_groups} and "
                f"{num_channels}"
            )
        if num_channels % num_groups:
            raise ValueError(
                f"GroupNorm: num_channels={num_channels} is not divisible by num_groups={num_groups}"
            )
        check_affine("GroupNorm", gamma, beta, num_channels)
        self.gamma = gamma
        self.beta = beta
        self.num_groups = int(num_groups)
        self.num_channels = int(num_channels)
        self.epsilon = float(epsilon)

    @property
    def _groups(self) -> int:
        return self.num_groups

    def extra_repr(self) -> dict:
        return {
            "num_groups": self.num_groups,
            "num_channels": self.num_channels,
            "epsilon": self.epsilon,
            "affine": self.affine,
        }
