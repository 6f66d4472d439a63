"""Squashing activations: they map the real line into a bounded range.

Sigmoid and tanh with their cheap piecewise-linear forms (hard sigmoid, hardtanh), softsign,
log-sigmoid and softmax (which squashes a whole dim onto the simplex). Re-exported by
:mod:`ember.nn.activation`.
"""

from __future__ import annotations

from ember.nn import functional as F
from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.ops.elementwise import sigmoid
from ember.tensor.ops.nn import softmax
from ember.tensor.tensor import Tensor

__all__ = [
    "HardSigmoid",
    "HardSigmoidConfig",
    "Hardtanh",
    "HardtanhConfig",
    "LogSigmoid",
    "Sigmoid",
    "Softmax",
    "Softsign",
    "Tanh",
]


# ---- parameter-free --------------------------------------------------------------------------
class Sigmoid(Module):
    """``1 / (1 + exp(−x))``."""

    def forward(self, x: Tensor) -> Tensor:
        return sigmoid(x)


class LogSigmoid(Module):
    """``log(sigmoid(x)) = −softplus(−x)``, finite for any x."""

    def forward(self, x: Tensor) -> Tensor:
        return F.log_sigmoid(x)


class Tanh(Module):
    """``tanh(x)``."""

    def forward(self, x: Tensor) -> Tensor:
        return x.tanh()


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.softsign(x)


class Softmax(Module):
    """Softmax along ``dim``.

    Args:
        dim: the normalised dim (last by default).
    """

    def __init__(self, dim: int = -1):
        self.dim = int(dim)

    def forward(self, x: Tensor) -> Tensor:
        return softmax(x, self.dim)


# ---- with settings ---------------------------------------------------------------------------
class HardSigmoidConfig(Config):
    """Configuration of :class:`HardSigmoid`.

    Args:
        alpha: slope (0.2).
        beta: offset (0.5).
    """

    alpha: float = 0.2
    beta: float = 0.5

    def init(self, device=None, dtype=None) -> "HardSigmoid":
        return HardSigmoid(self.alpha, self.beta)


class HardSigmoid(Module):
    """``max(0, min(1, alpha·x + beta))``.

    Args:
        alpha: slope.
        beta: offset.
    """

    def __init__(self, alpha: float = 0.2, beta: float = 0.5):
        self.alpha = float(alpha)
        self.beta = float(beta)

    def forward(self, x: Tensor) -> Tensor:
        return F.hard_sigmoid(x, self.alpha, self.beta)


class HardtanhConfig(Config):
    """Configuration of :class:`Hardtanh`.

    Args:
        min_val: lower end of the linear range (−1).
        max_val: upper end of the linear range (1).
    """

    min_val: float = -1.0
    max_val: float = 1.0

    def init(self, device=None, dtype=None) -> "Hardtanh":
        return Hardtanh(self.min_val, self.max_val)


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)``.

    Args:
        min_val: lower bound.
        max_val: upper bound (>= min_val).
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0):
        if not min_val <= max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must be <= max_val ({max_val})")
        self.min_val = float(min_val)
        self.max_val = float(max_val)

    def forward(self, x: Tensor) -> Tensor:
        return F.hardtanh(x, self.min_val, self.max_val)
