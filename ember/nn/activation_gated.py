"""Gated activations: the input times a gate computed from an input.

The self-gated ones multiply x by a smooth step of x itself (GELU, SiLU/swish, Mish,
hard swish); :class:`Glu` gates one half of a dim by the other. :class:`~ember.nn.SwiGlu`, whose
gate is learnt, lives in :mod:`ember.nn.activation_learned`. Re-exported by :mod:`ember.nn.activation`.
"""

from __future__ import annotations

from ember.nn import functional as F
from ember.nn.module import Module
from ember.tensor.ops.elementwise import silu
from ember.tensor.ops.nn import gelu
from ember.tensor.tensor import Tensor

__all__ = [
    "Gelu",
    "Glu",
    "HardSwish",
    "Mish",
    "Silu",
]


# ---- self-gated ------------------------------------------------------------------------------
class Gelu(Module):
    """GELU ``x·Φ(x)``; with ``approximate=True`` its tanh approximation.

    Args:
        approximate: use the tanh approximation (Burn's ``Gelu::new_approximate``).
    """

    def __init__(self, approximate: bool = False):
        self.approximate = bool(approximate)

    @classmethod
    def new_approximate(cls) -> "Gelu":
        """The tanh approximation (Burn's name)."""
        return cls(approximate=True)

    def forward(self, x: Tensor) -> Tensor:
        return gelu(x, "tanh" if self.approximate else "none")


class Silu(Module):
    """``x·sigmoid(x)`` (a.k.a. swish)."""

    def forward(self, x: Tensor) -> Tensor:
        return silu(x)


class Mish(Module):
    """``x · tanh(softplus(x))``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(x)


class HardSwish(Module):
    """``x · max(0, min(1, x/6 + 1/2))``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hard_swish(x)


# ---- gating one half by the other ------------------------------------------------------------
class Glu(Module):
    """Gated linear unit ``a · sigmoid(b)`` over the two halves of ``dim`` (halves that dim).

    Burn keeps it out of ``ActivationConfig`` because it changes the shape.

    Args:
        dim: the split dim (negative counts from the end).
    """

    def __init__(self, dim: int):
        self.dim = int(dim)

    def forward(self, x: Tensor) -> Tensor:
        return F.glu(x, self.dim)
