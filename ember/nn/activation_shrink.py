"""Shrinkage activations: they zero (or pull towards zero) a band around 0.

Hard and soft shrinkage, ONNX's Shrink with its own shift, and tanhshrink. Burn's ``lambda``
settings are spelled ``lambd`` here (``lambda`` is a Python keyword). Re-exported by
:mod:`ember.nn.activation`.
"""

from __future__ import annotations

from ember.nn import functional as F
from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.tensor import Tensor

__all__ = [
    "HardShrink",
    "HardShrinkConfig",
    "Shrink",
    "ShrinkConfig",
    "SoftShrink",
    "SoftShrinkConfig",
    "Tanhshrink",
]


# ---- parameter-free --------------------------------------------------------------------------
class Tanhshrink(Module):
    """``x − tanh(x)``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanhshrink(x)


# ---- with settings ---------------------------------------------------------------------------
class HardShrinkConfig(Config):
    """Configuration of :class:`HardShrink`.

    Args:
        lambd: half-width of the zeroed band (0.5; Burn's ``lambda``).
    """

    lambd: float = 0.5

    def init(self, device=None, dtype=None) -> "HardShrink":
        return HardShrink(self.lambd)


class HardShrink(Module):
    """``x`` where |x| > lambd, 0 elsewhere.

    Args:
        lambd: half-width of the zeroed band.
    """

    def __init__(self, lambd: float = 0.5):
        self.lambd = float(lambd)

    def forward(self, x: Tensor) -> Tensor:
        return F.hard_shrink(x, self.lambd)


class SoftShrinkConfig(Config):
    """Configuration of :class:`SoftShrink`.

    Args:
        lambd: half-width of the zeroed band and the shift (0.5; Burn's ``lambda``).
    """

    lambd: float = 0.5

    def init(self, device=None, dtype=None) -> "SoftShrink":
        return SoftShrink(self.lambd)


class SoftShrink(Module):
    """``x − lambd`` where x > lambd, ``x + lambd`` where x < −lambd, 0 elsewhere.

    Args:
        lambd: half-width of the zeroed band and the shift.
    """

    def __init__(self, lambd: float = 0.5):
        self.lambd = float(lambd)

    def forward(self, x: Tensor) -> Tensor:
        return F.soft_shrink(x, self.lambd)


class ShrinkConfig(Config):
    """Configuration of :class:`Shrink` (ONNX's Shrink).

    Args:
        lambd: half-width of the zeroed band (0.5; Burn's ``lambda``).
        bias: the shift applied outside it (0.5).
    """

    lambd: float = 0.5
    bias: float = 0.5

    def init(self, device=None, dtype=None) -> "Shrink":
        return Shrink(self.lambd, self.bias)


class Shrink(Module):
    """``x − bias`` where x > lambd, ``x + bias`` where x < −lambd, 0 elsewhere.

    Args:
        lambd: half-width of the zeroed band.
        bias: the shift outside it.
    """

    def __init__(self, lambd: float = 0.5, bias: float = 0.5):
        self.lambd = float(lambd)
        self.bias = float(bias)

    def forward(self, x: Tensor) -> Tensor:
        return F.shrink(x, self.lambd, self.bias)
