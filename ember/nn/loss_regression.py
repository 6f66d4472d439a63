"""Regression losses: Smooth L1 and Lp (Burn's ``SmoothL1Loss``, ``LpLoss``).

Both compare predictions with targets of the same shape, element by element. Their methods
follow Burn's, which differ between the two: ``SmoothL1Loss.forward`` returns the element-wise
loss (``forward_with_reduction`` reduces it), ``LpLoss.forward`` reduces
(``forward_no_reduction`` does not); both have ``forward_reduce_dims`` (a mean over some dims,
kept with size 1).
"""

from __future__ import annotations

from ember.nn.loss_reduction import Reduction, check_float, check_same_shape, reduce_loss
from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.ops._core import normalize_dims
from ember.tensor.tensor import Tensor

__all__ = ["LpLoss", "LpLossConfig", "SmoothL1Loss", "SmoothL1LossConfig"]


def _error(op: str, predictions: Tensor, targets: Tensor) -> Tensor:
    check_float(op, "predictions", predictions)
    check_same_shape(op, ("predictions", "targets"), predictions, targets)
    return predictions - targets.to(predictions.dtype)


def _mean_dims(op: str, loss: Tensor, dims) -> Tensor:
    axes = normalize_dims(op, list(dims), loss.ndim)
    return loss.mean(axes, keepdim=True) if axes else loss


class SmoothL1LossConfig(Config):
    """Configuration of :class:`SmoothL1Loss`.

    Args:
        beta: where the loss turns from quadratic to linear (1.0); must be positive.
    """

    beta: float = 1.0

    def init(self, device=None, dtype=None) -> "SmoothL1Loss":
        return SmoothL1Loss(self.beta)


class SmoothL1Loss(Module):
    """Smooth L1 of the error ``e = prediction − target``: ``0.5·e²/beta`` where ``|e| < beta``,
    ``|e| − 0.5·beta`` elsewhere (``Huber(delta=beta) / beta``; use LpLoss(1) for beta = 0).

    Args:
        beta: the threshold (> 0).
    """

    def __init__(self, beta: float = 1.0):
        if not beta > 0:
            raise ValueError(f"SmoothL1Loss: beta must be positive, got {beta}")
        self.beta = float(beta)

    def forward(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The element-wise loss (Burn's ``forward``: no reduction), shaped like the inputs."""
        error = _error("SmoothL1Loss", predictions, targets)
        magnitude = error.abs()
        linear = magnitude - 0.5 * self.beta
        # squared only where it is taken: the linear part's gradient at an infinite error must
        # not meet 0 · inf = NaN from the other branch; a NaN error takes the square (NaN gradient)
        small = ~(magnitude >= self.beta)
        quadratic = error.mask_fill(~small, 0.0).square() * (0.5 / self.beta)
        return quadratic.where(small, linear)

    def forward_with_reduction(
        self, predictions: Tensor, targets: Tensor, reduction=Reduction.Auto
    ) -> Tensor:
        """The loss reduced with ``Mean``/``Auto`` or ``Sum``."""
        return reduce_loss("SmoothL1Loss", self.forward(predictions, targets), reduction)

    def forward_reduce_dims(self, predictions: Tensor, targets: Tensor, dims) -> Tensor:
        """The mean over ``dims`` (kept with size 1), e.g. ``[1, 2, 3]`` for one loss per image."""
        return _mean_dims("SmoothL1Loss", self.forward(predictions, targets), dims)


class LpLossConfig(Config):
    """Configuration of :class:`LpLoss`.

    Args:
        p: the exponent of ``|error|^p`` (> 0; 1 gives L1/MAE, 2 gives L2/MSE).
    """

    p: float

    def init(self, device=None, dtype=None) -> "LpLoss":
        return LpLoss(self.p)

    @staticmethod
    def l1() -> "LpLoss":
        """``LpLoss(p=1)`` (Burn's ``LpLossConfig::l1``)."""
        return LpLoss(1.0)

    @staticmethod
    def l2() -> "LpLoss":
        """``LpLoss(p=2)`` (Burn's ``LpLossConfig::l2``)."""
        return LpLoss(2.0)


class LpLoss(Module):
    """``|prediction − target|^p`` element-wise (not the Lp norm: no 1/p root), then reduced.

    Args:
        p: the exponent (> 0).
    """

    def __init__(self, p: float):
        if not p > 0:
            raise ValueError(f"LpLoss: the order of the norm p must be positive, got {p}")
        self.p = float(p)

    def forward(self, predictions: Tensor, targets: Tensor, reduction=Reduction.Auto) -> Tensor:
        """The loss reduced with ``Mean``/``Auto`` or ``Sum``."""
        return reduce_loss("LpLoss", self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """``|prediction − target|^p`` of every element."""
        error = _error("LpLoss", predictions, targets)
        if self.p == 1.0:
            return error.abs()
        if self.p == 2.0:
            return error * error
        return error.abs() ** self.p

    def forward_reduce_dims(self, predictions: Tensor, targets: Tensor, dims) -> Tensor:
        """The mean over ``dims`` (kept with size 1)."""
        return _mean_dims("LpLoss", self.forward_no_reduction(predictions, targets), dims)
