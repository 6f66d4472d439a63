"""Dropout: zero elements at random during training (inverted scaling)."""

from __future__ import annotations

from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.grad_mode import is_grad_enabled
from ember.tensor.ops.nn import dropout
from ember.tensor.tensor import Tensor

__all__ = ["Dropout", "DropoutConfig"]


class DropoutConfig(Config):
    """Configuration of :class:`Dropout`.

    Args:
        prob: probability of zeroing each element, in [0, 1].
    """

    prob: float

    def init(self, device=None, dtype=None) -> "Dropout":
        """Build the layer (it has no parameters; ``device``/``dtype`` are accepted for symmetry)."""
        return Dropout(self.prob)


class Dropout(Module):
    """Zeroes each element with probability ``prob`` and scales the others by 1/(1 − prob).

    Active only in training mode while gradients are recorded (Burn: only on an autodiff
    device); an inference copy (``module.valid()``) or ``ember.no_grad()`` passes the input
    through unchanged.

    Args:
        prob: probability of zeroing each element, in [0, 1].
    """

    def __init__(self, prob: float):
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"Dropout: probability should be between 0 and 1, got {prob}")
        self.prob = float(prob)

    def forward(self, x: Tensor) -> Tensor:
        if self.prob == 1.0 and self._training and is_grad_enabled():
            return x * 0.0  # everything dropped (the 1/(1-p) scale would be infinite)
        return dropout(x, self.prob, self._training)
