"""Activation modules (no parameters) and ``ActivationConfig`` to pick one by name."""
from __future__ import annotations

from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.ops.elementwise import leaky_relu, relu, sigmoid, silu, unary
from ember.tensor.ops.nn import gelu, softmax
from ember.tensor.tensor import Tensor

__all__ = ["ActivationConfig", "Gelu", "LeakyRelu", "LeakyReluConfig", "Relu", "SiLU", "Sigmoid", "Silu",
           "Softmax", "Tanh"]


class Gelu(Module):
    """GELU ``x·Φ(x)``; with ``approximate=True`` its tanh approximation.

    Args:
        approximate: use the tanh approximation (Burn's ``Gelu::new_approximate``).
    """

    def __init__(self, approximate: bool = False):
        self.approximate = bool(approximate)

    def forward(self, x: Tensor) -> Tensor:
        return gelu(x, "tanh" if self.approximate else "none")


class Relu(Module):
    """``max(x, 0)``."""

    def forward(self, x: Tensor) -> Tensor:
        return relu(x)


class LeakyReluConfig(Config):
    """Configuration of :class:`LeakyRelu`.

    Args:
        negative_slope: slope for x < 0 (0.01).
    """

    negative_slope: float = 0.01

    def init(self, device=None, dtype=None) -> "LeakyRelu":
        return LeakyRelu(self.negative_slope)


class LeakyRelu(Module):
    """``x`` for x ≥ 0, ``negative_slope·x`` otherwise.

    Args:
        negative_slope: slope for x < 0.
    """

    def __init__(self, negative_slope: float = 0.01):
        self.negative_slope = float(negative_slope)

    def forward(self, x: Tensor) -> Tensor:
        return leaky_relu(x, self.negative_slope)


class SiLU(Module):
    """``x·sigmoid(x)`` (a.k.a. swish)."""

    def forward(self, x: Tensor) -> Tensor:
        return silu(x)


Silu = SiLU


class Tanh(Module):
    """``tanh(x)``."""

    def forward(self, x: Tensor) -> Tensor:
        return unary("tanh", x)


class Sigmoid(Module):
    """``1 / (1 + exp(−x))``."""

    def forward(self, x: Tensor) -> Tensor:
        return sigmoid(x)


class Softmax(Module):
    """Softmax along ``dim``.

    Args:
        dim: the normalised dim (last by default).
    """

    def __init__(self, dim: int = -1):
        self.dim = int(dim)

    def forward(self, x: Tensor) -> Tensor:
        return softmax(x, self.dim)


_KINDS = ("identity", "gelu", "gelu_approximate", "relu", "leaky_relu", "silu", "sigmoid", "tanh")


class ActivationConfig(Config):
    """Which activation a layer uses (Burn's ``ActivationConfig`` enum, by name).

    Args:
        kind: one of ``identity``, ``gelu``, ``gelu_approximate``, ``relu``, ``leaky_relu``,
            ``silu``, ``sigmoid``, ``tanh``.
        negative_slope: slope of ``leaky_relu`` for x < 0.
    """

    kind: str = "gelu"
    negative_slope: float = 0.01

    def __post_init__(self):
        key = self.kind.lower().replace("-", "_")
        key = {"geluapproximate": "gelu_approximate", "leakyrelu": "leaky_relu", "swish": "silu"}.get(key, key)
        if key not in _KINDS:
            raise ValueError(f"ActivationConfig: unknown activation {self.kind!r}; expected one of {list(_KINDS)}")
        self.kind = key

    def init(self, device=None, dtype=None) -> Module:
        """Build the activation module."""
        from ember.nn.container import Identity
        return {
            "identity": Identity,
            "gelu": Gelu,
            "gelu_approximate": lambda: Gelu(approximate=True),
            "relu": Relu,
            "leaky_relu": lambda: LeakyRelu(self.negative_slope),
            "silu": SiLU,
            "sigmoid": Sigmoid,
            "tanh": Tanh,
        }[self.kind]()
