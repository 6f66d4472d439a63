"""Batch normalisation over the channel dim of ``[batch, channels, ...]`` inputs."""

from __future__ import annotations

import math

from ember.nn.init import Ones, Zeros
from ember.nn.module import Module
from ember.nn.param import Param, RunningState
from ember.record.config import Config
from ember.tensor.creation import ones, zeros
from ember.tensor.grad_mode import no_grad
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["BatchNorm", "BatchNorm1d", "BatchNorm2d", "BatchNormConfig"]


class BatchNormConfig(Config):
    """Configuration of :class:`BatchNorm`.

    Args:
        num_features: number of channels C (dim 1 of the input).
        epsilon: added to the variance (1e-5).
        momentum: weight of the new batch in the running averages (0.1).
    """

    num_features: int
    epsilon: float = 1e-5
    momentum: float = 0.1

    def init(self, device=None, dtype=None) -> "BatchNorm":
        """Build a rank-agnostic BatchNorm (gamma 1, beta 0, running mean 0, running var 1)."""
        return self._build(BatchNorm, device, dtype)

    def init_1d(self, device=None, dtype=None) -> "BatchNorm1d":
        """Build a BatchNorm for ``[B, C]`` or ``[B, C, L]`` inputs."""
        return self._build(BatchNorm1d, device, dtype)

    def init_2d(self, device=None, dtype=None) -> "BatchNorm2d":
        """Build a BatchNorm for ``[B, C, H, W]`` inputs."""
        return self._build(BatchNorm2d, device, dtype)

    def _build(self, cls, device, dtype):
        if self.num_features <= 0:
            raise ValueError(f"BatchNormConfig: num_features must be positive, got {self.num_features}")
        if not 0.0 <= self.momentum <= 1.0:
            raise ValueError(f"BatchNormConfig: momentum must be in [0, 1], got {self.momentum}")
        c = self.num_features
        gamma = Ones().init((c,), device, dtype)
        beta = Zeros().init((c,), device, dtype)
        running_mean = RunningState(zeros(c, dtype=gamma.dtype, device=gamma.device))
        running_var = RunningState(ones(c, dtype=gamma.dtype, device=gamma.device))
        return cls(gamma, beta, running_mean, running_var, self.momentum, self.epsilon)


class BatchNorm(Module):
    """Normalises each channel of ``[B, C, ...]``: ``(x − mean) / √(var + ε) · gamma + beta``.

    In training mode the batch statistics are used (biased variance over batch and spatial
    dims) and the running averages move towards them:
    ``running ← (1 − momentum)·running + momentum·batch`` — with the biased variance, as in
    Burn (PyTorch stores the unbiased one). In an inference copy (``module.valid()``) the
    running statistics are used. ``running_mean`` and ``running_var`` are saved in records
    but never trained.

    Args:
        gamma, beta: Params ``[C]``.
        running_mean, running_var: RunningState ``[C]``.
        momentum: weight of the new batch in the running averages.
        epsilon: added to the variance.
    """

    _ranks: tuple | None = None  # input ranks accepted (None: any rank >= 2)

    def __init__(
        self,
        gamma: Param,
        beta: Param,
        running_mean: RunningState,
        running_var: RunningState,
        momentum: float = 0.1,
        epsilon: float = 1e-5,
    ):
        self.gamma = gamma
        self.beta = beta
        self.running_mean = running_mean
        self.running_var = running_var
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
        x: ``[batch, channels, ...]``.
        """
        name = type(self).__name__
        c = self.gamma.shape[0]
        if not isinstance(x, Tensor) or not x.dtype.is_float:
            raise TypeError(f"{name}: expected a float Tensor input")
        ranks = self._ranks or tuple(range(2, max(x.ndim, 2) + 1))
        if x.ndim < 2 or x.ndim not in ranks or x.shape[1] != c:
            raise ValueError(
                f"{name}: expected input [batch, {c}, ...] of rank {' or '.join(map(str, ranks))}, "
                f"got {shape_str(x.shape)}"
            )
        bshape = (1, c) + (1,) * (x.ndim - 2)
        if self._training:
            axes = (0,) + tuple(range(2, x.ndim))
            mean = x.mean(axes, keepdim=True)
            var = (x - mean).square().mean(axes, keepdim=True)
            with no_grad():
                m, rm, rv = self.momentum, self.running_mean, self.running_var
                new_mean = rm.value * (1.0 - m) + mean.detach().reshape(c).to(rm.dtype).to(rm.device) * m
                new_var = rv.value * (1.0 - m) + var.detach().reshape(c).to(rv.dtype).to(rv.device) * m
            self.running_mean.update(new_mean)
            self.running_var.update(new_var)
        else:
            mean = self.running_mean.value.to(x.device).reshape(bshape)
            var = self.running_var.value.to(x.device).reshape(bshape)
        # a variance past the dtype's range: NaN, as layer_norm, not rstd = 0 and a channel of
        # zeros that looks healthy
        x_hat = (x - mean) * (var + self.epsilon).rsqrt().mask_fill(var.isinf(), math.nan)
        return x_hat * self.gamma.val().reshape(bshape) + self.beta.val().reshape(bshape)

    def extra_repr(self) -> dict:
        return {"num_features": self.gamma.shape[0], "momentum": self.momentum, "epsilon": self.epsilon}


class BatchNorm1d(BatchNorm):
    """:class:`BatchNorm` for ``[B, C]`` or ``[B, C, L]`` inputs."""

    _ranks = (2, 3)


class BatchNorm2d(BatchNorm):
    """:class:`BatchNorm` for ``[B, C, H, W]`` inputs."""

    _ranks = (4,)
