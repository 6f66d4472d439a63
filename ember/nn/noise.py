"""Gaussian noise: add N(0, std²) to the input during training (Burn's ``GaussianNoise``)."""

from __future__ import annotations

import math

from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.creation import randn
from ember.tensor.grad_mode import is_grad_enabled
from ember.tensor.tensor import Tensor

__all__ = ["GaussianNoise", "GaussianNoiseConfig"]


class GaussianNoiseConfig(Config):
    """Configuration of :class:`GaussianNoise`.

    Args:
        std: standard deviation of the noise, >= 0.
    """

    std: float

    def init(self, device=None, dtype=None) -> "GaussianNoise":
        """Build the layer (no parameters; ``device``/``dtype`` are accepted for symmetry)."""
        return GaussianNoise(self.std)


class GaussianNoise(Module):
    """Adds independent ``N(0, std²)`` noise to every element: a regulariser and a cheap
    augmentation.

    Active, like :class:`~ember.nn.Dropout`, only in training mode while gradients are
    recorded (Burn: only on an autodiff device); ``module.valid()`` or ``ember.no_grad()``
    passes the input through unchanged, as does ``std = 0``. The noise is a constant, so the
    gradient with respect to the input is the identity. It is drawn from ember's generator
    (``ember.seed``) on the input's device, in its dtype.

    Args:
        std: standard deviation of the noise, >= 0.
    """

    def __init__(self, std: float):
        std = float(std)
        if not (std >= 0.0 and math.isfinite(std)):  # NaN fails both
            raise ValueError(f"GaussianNoise: the standard deviation must be finite and >= 0, got {std}")
        self.std = std

    def forward(self, x: Tensor) -> Tensor:
        if self.std == 0.0 or not self._training or not is_grad_enabled():
            return x
        if not x.dtype.is_float:
            raise TypeError(
                f"GaussianNoise: expected a float tensor, got {x.dtype} with shape {list(x.shape)}"
            )
        return x + randn(*x.shape, dtype=x.dtype, device=x.device, std=self.std)

    def extra_repr(self) -> dict:
        return {"std": self.std}
