"""Instance normalisation (Burn's ``InstanceNorm``): each channel of each sample normalised
over its spatial positions — group normalisation with one group per channel."""

from __future__ import annotations

from ember.nn.norm_group import ChannelNorm, affine_params, check_affine
from ember.nn.param import Param
from ember.record.config import Config

__all__ = ["InstanceNorm", "InstanceNormConfig"]


class InstanceNormConfig(Config):
    """Configuration of :class:`InstanceNorm`.

    Args:
        num_channels: number of channels C (dim 1 of the input).
        epsilon: added to the variance (1e-5).
        affine: learn a per-channel ``gamma`` (ones) and ``beta`` (zeros). True, as Burn;
            PyTorch's ``InstanceNorm1d/2d`` default to False.
    """

    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def init(self, device=None, dtype=None) -> "InstanceNorm":
        """Build the layer."""
        c = self.num_channels
        if isinstance(c, bool) or not isinstance(c, int) or c <= 0:
            raise ValueError(f"InstanceNormConfig: num_channels must be a positive int, got {c!r}")
        return InstanceNorm(*affine_params(c, self.affine, device, dtype), c, self.epsilon)


class InstanceNorm(ChannelNorm):
    """``(x − mean) / √(var + ε) · gamma + beta`` per sample and channel, statistics (biased
    variance) over the spatial dims of ``[batch, channels, *spatial]``. No running statistics
    are kept: training and inference copies compute the same thing, as in Burn.

    Args:
        gamma, beta: Params ``[num_channels]``, or both None (no affine step).
        num_channels: number of channels.
        epsilon: added to the variance.
    """

    def __init__(self, gamma: Param | None, beta: Param | None, num_channels: int, epsilon: float = 1e-5):
        check_affine("InstanceNorm", gamma, beta, num_channels)
        self.gamma = gamma
        self.beta = beta
        self.num_channels = int(num_channels)
        self.epsilon = float(epsilon)

    @property
    def _groups(self) -> int:
        return self.num_channels  # a group per channel

    def extra_repr(self) -> dict:
        return {"num_channels": self.num_channels, "epsilon": self.epsilon, "affine": self.affine}
