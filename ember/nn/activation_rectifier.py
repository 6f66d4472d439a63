"""Rectifier activations: the identity (or close to it) for large x, something flatter below.

ReLU and its relatives with a bent or smoothed negative side (leaky, randomized, ELU, CELU,
SELU, softplus) and the thresholded ones that cut below a threshold. Re-exported by
:mod:`ember.nn.activation`, where :class:`~ember.nn.activation.ActivationConfig` picks one by name.
"""

from __future__ import annotations

from ember.nn import functional as F
from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.creation import rand
from ember.tensor.grad_mode import is_grad_enabled
from ember.tensor.ops.elementwise import leaky_relu, relu, where
from ember.tensor.tensor import Tensor

__all__ = [
    "Celu",
    "CeluConfig",
    "Elu",
    "EluConfig",
    "LeakyRelu",
    "LeakyReluConfig",
    "RRelu",
    "RReluConfig",
    "Relu",
    "Relu6",
    "Selu",
    "Softplus",
    "SoftplusConfig",
    "Threshold",
    "ThresholdConfig",
    "ThresholdedRelu",
    "ThresholdedReluConfig",
]


# ---- parameter-free, no settings -------------------------------------------------------------
class Relu(Module):
    """``max(x, 0)``."""

    def forward(self, x: Tensor) -> Tensor:
        return relu(x)


class Relu6(Module):
    """``min(max(x, 0), 6)``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu6(x)


class Selu(Module):
    """``scale·x`` for x > 0, ``scale·α·(exp(x) − 1)`` otherwise (α ≈ 1.6733, scale ≈ 1.0507)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.selu(x)


# ---- with settings ---------------------------------------------------------------------------
class LeakyReluConfig(Config):
    """Configuration of :class:`LeakyRelu`.

    Args:
        negative_slope: slope for x < 0 (0.01).
    """

    negative_slope: float = 0.01

    def init(self, device=None, dtype=None) -> "LeakyRelu":
        return LeakyRelu(self.negative_slope)


class LeakyRelu(Module):
    """``x`` for x > 0, ``negative_slope·x`` otherwise (the gradient at 0 is ``negative_slope``).

    Args:
        negative_slope: slope for x < 0.
    """

    def __init__(self, negative_slope: float = 0.01):
        self.negative_slope = float(negative_slope)

    def forward(self, x: Tensor) -> Tensor:
        return leaky_relu(x, self.negative_slope)


class RReluConfig(Config):
    """Configuration of :class:`RRelu`.

    Args:
        lower: lower end of the sampled slope range (1/8).
        upper: upper end (1/3); ``lower <= upper``.
    """

    lower: float = 0.125
    upper: float = 1.0 / 3.0

    def init(self, device=None, dtype=None) -> "RRelu":
        return RRelu(self.lower, self.upper)


class RRelu(Module):
    """Randomized leaky ReLU: while training (and recording gradients, like :class:`Dropout`)
    each element <= 0 is scaled by its own slope drawn from U[lower, upper); otherwise
    the fixed slope ``(lower + upper) / 2`` is used.

    Args:
        lower: lower end of the slope range.
        upper: upper end.
    """

    def __init__(self, lower: float = 0.125, upper: float = 1.0 / 3.0):
        if not lower <= upper:
            raise ValueError(f"RRelu: lower bound ({lower}) must be <= upper bound ({upper})")
        self.lower = float(lower)
        self.upper = float(upper)

    def forward(self, x: Tensor) -> Tensor:
        if not (self._training and is_grad_enabled()) or self.lower == self.upper:
            return leaky_relu(x, (self.lower + self.upper) / 2.0)
        slope = rand(x.shape, dtype=x.dtype, device=x.device, low=self.lower, high=self.upper)
        return where(x <= 0.0, x * slope, x)  # x = 0 takes its slope as gradient (PyTorch's)


class EluConfig(Config):
    """Configuration of :class:`Elu`.

    Args:
        alpha: scale of the negative branch (1.0).
    """

    alpha: float = 1.0

    def init(self, device=None, dtype=None) -> "Elu":
        return Elu(self.alpha)


class Elu(Module):
    """``x`` for x > 0, ``alpha·(exp(x) − 1)`` otherwise.

    Args:
        alpha: scale of the negative branch.
    """

    def __init__(self, alpha: float = 1.0):
        self.alpha = float(alpha)

    def forward(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha)


class CeluConfig(Config):
    """Configuration of :class:`Celu`.

    Args:
        alpha: the CELU alpha (1.0); must not be 0.
    """

    alpha: float = 1.0

    def init(self, device=None, dtype=None) -> "Celu":
        return Celu(self.alpha)


class Celu(Module):
    """``max(0, x) + min(0, alpha·(exp(x/alpha) − 1))``.

    Args:
        alpha: the CELU alpha (not 0).
    """

    def __init__(self, alpha: float = 1.0):
        if alpha == 0:
            raise ValueError("Celu: alpha must not be 0 (it divides the input)")
        self.alpha = float(alpha)

    def forward(self, x: Tensor) -> Tensor:
        return F.celu(x, self.alpha)


class SoftplusConfig(Config):
    """Configuration of :class:`Softplus`.

    Args:
        beta: sharpness (1.0).
    """

    beta: float = 1.0

    def init(self, device=None, dtype=None) -> "Softplus":
        return Softplus(self.beta)


class Softplus(Module):
    """``log(1 + exp(beta·x)) / beta``, computed stably (linear where beta·x > 20).

    Args:
        beta: sharpness (non-zero).
    """

    def __init__(self, beta: float = 1.0):
        if beta == 0:
            raise ValueError("Softplus: beta must not be 0 (the result is divided by it)")
        self.beta = float(beta)

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x, self.beta)


class ThresholdedReluConfig(Config):
    """Configuration of :class:`ThresholdedRelu`.

    Args:
        alpha: the threshold (1.0).
    """

    alpha: float = 1.0

    def init(self, device=None, dtype=None) -> "ThresholdedRelu":
        return ThresholdedRelu(self.alpha)


class ThresholdedRelu(Module):
    """``x`` where x > alpha, 0 elsewhere.

    Args:
        alpha: the threshold.
    """

    def __init__(self, alpha: float = 1.0):
        self.alpha = float(alpha)

    def forward(self, x: Tensor) -> Tensor:
        return F.thresholded_relu(x, self.alpha)


class ThresholdConfig(Config):
    """Configuration of :class:`Threshold` (no defaults, as in Burn).

    Args:
        threshold: inputs <= threshold are replaced.
        value: the replacement.
    """

    threshold: float
    value: float

    def init(self, device=None, dtype=None) -> "Threshold":
        return Threshold(self.threshold, self.value)


class Threshold(Module):
    """``x`` where x > threshold, ``value`` elsewhere.

    Args:
        threshold: the threshold.
        value: the replacement value.
    """

    def __init__(self, threshold: float, value: float):
        self.threshold = float(threshold)
        self.value = float(value)

    def forward(self, x: Tensor) -> Tensor:
        return F.threshold(x, self.threshold, self.value)
