"""Likelihood losses: KL divergence, Poisson NLL and Gaussian NLL (Burn's ``KLDivLoss``,
``PoissonNllLoss``, ``GaussianNllLoss``), each ``forward(..., reduction)`` plus
``forward_no_reduction``.
"""

from __future__ import annotations

import math

import numpy as np

from ember._deprecation import renamed_globals
from ember.nn.loss_reduction import Reduction, check_float, check_same_shape, reduce_loss
from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.grad_mode import no_grad
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = [
    "GaussianNllLoss",
    "GaussianNllLossConfig",
    "KlDivLoss",
    "KlDivLossConfig",
    "PoissonNllLoss",
    "PoissonNllLossConfig",
]

HALF_LOG_TWO_PI = 0.5 * math.log(2.0 * math.pi)


def _smallest_normal(x: Tensor) -> float:
    return float(np.finfo(x.dtype.numpy).tiny)


class KlDivLossConfig(Config):
    """Configuration of :class:`KlDivLoss`.

    Args:
        log_target: the targets are log-probabilities too (False).
    """

    _former_names = ("KLDivLossConfig",)  # config files written before the rename say this

    log_target: bool = False

    def init(self, device=None, dtype=None) -> "KlDivLoss":
        return KlDivLoss(self.log_target)


class KlDivLoss(Module):
    """Kullback-Leibler divergence ``y·(log y − x)`` of targets ``y`` from log-probability
    predictions ``x`` (``exp(y)·(y − x)`` with ``log_target``).

    ``log y`` is taken of ``y`` clamped to ``[smallest normal, 1]`` (Burn). A term whose target
    is 0 (``-inf`` with ``log_target``) is exactly 0 — also where the prediction is ``-inf``,
    which Burn's and PyTorch's formula turn into ``0·inf = NaN``; its gradient is 0. A
    prediction of ``-inf`` under a positive target gives an infinite loss, as it should.

    ``Reduction.Auto`` is ``BatchMean`` (the sum over all elements divided by the batch size,
    the divergence per sample); ``Mean`` divides by the number of elements instead.

    Args:
        log_target: the targets are log-probabilities.
    """

    def __init__(self, log_target: bool = False):
        self.log_target = bool(log_target)

    def forward(self, predictions: Tensor, targets: Tensor, reduction=Reduction.Auto) -> Tensor:
        """Args:
        predictions: log-probabilities ``[batch, ...]``.
        targets: probabilities (or log-probabilities), same shape.
        reduction: ``Auto``/``BatchMean``, ``Mean`` or ``Sum``.
        """
        loss = self.forward_no_reduction(predictions, targets)
        return reduce_loss(
            "KlDivLoss",
            loss,
            reduction,
            auto=Reduction.BatchMean,
            supported=(Reduction.BatchMean, Reduction.Mean, Reduction.Sum),
        )

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The element-wise divergence terms."""
        op = "KlDivLoss"
        check_float(op, "predictions", predictions)
        check_float(op, "targets", targets)
        check_same_shape(op, ("predictions", "targets"), predictions, targets)
        targets = targets.to(predictions.dtype)
        present = targets > (-math.inf if self.log_target else 0.0)
        # absent terms compute on zeros: an infinite operand would send 0·inf = NaN backwards
        # through the product even though the term is masked out
        predictions = predictions.where(present, 0.0)
        if self.log_target:
            targets = targets.where(present, 0.0)
            terms = targets.exp() * (targets - predictions)
        else:
            terms = targets * (targets.clamp(_smallest_normal(targets), 1.0).log() - predictions)
        return terms.where(present, 0.0)


class PoissonNllLossConfig(Config):
    """Configuration of :class:`PoissonNllLoss`.

    Args:
        log_input: the predictions are log-rates (True).
        full: add Stirling's approximation of ``log(target!)`` (False).
        eps: added to rate predictions before their log when not ``log_input`` (1e-8; > 0).
    """

    log_input: bool = True
    full: bool = False
    eps: float = 1e-8

    def init(self, device=None, dtype=None) -> "PoissonNllLoss":
        return PoissonNllLoss(self.log_input, self.full, self.eps)


class PoissonNllLoss(Module):
    """Negative log-likelihood of targets drawn from Poisson(rate):
    ``exp(x) − y·x`` with log-rates x (``log_input``), else ``x − y·log(x + eps)``; with
    ``full``, plus ``y·log y − y + ½·log(2πy)`` where ``y > 1`` (0 elsewhere).

    Args:
        log_input: the predictions are log-rates.
        full: add the Stirling term.
        eps: stabiliser of the log of rate predictions (> 0).
    """

    def __init__(self, log_input: bool = True, full: bool = False, eps: float = 1e-8):
        if not eps > 0:
            raise ValueError(f"PoissonNllLoss: eps must be a positive number, got {eps}")
        self.log_input = bool(log_input)
        self.full = bool(full)
        self.eps = float(eps)

    def forward(self, predictions: Tensor, targets: Tensor, reduction=Reduction.Auto) -> Tensor:
        """The loss reduced with ``Mean``/``Auto`` or ``Sum``."""
        return reduce_loss("PoissonNllLoss", self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The element-wise loss.

        Raises:
            ValueError: shapes differ, a target is negative, or (without ``log_input``) a
                prediction is negative.
        """
        op = "PoissonNllLoss"
        check_float(op, "predictions", predictions)
        check_same_shape(op, ("predictions", "targets"), predictions, targets)
        targets = targets.to(predictions.dtype)
        with no_grad():
            if not bool((targets >= 0.0).all()):
                raise ValueError(f"{op}: all the values of targets must be non-negative")
            if not self.log_input and not bool((predictions >= 0.0).all()):
                raise ValueError(f"{op}: when log_input is False, all the predictions must be non-negative")
        if self.log_input:
            loss = predictions.exp() - targets * predictions
        else:
            loss = predictions - targets * (predictions + self.eps).log()
        if self.full:
            # the log of targets clamped to >= 1: the term is masked there, and log(0) would
            # put 0·(−inf) = NaN into the unselected branch
            y = targets.clamp(min=1.0)
            stirling = y * y.log() - y + (y * (2.0 * math.pi)).log() * 0.5
            loss = loss + stirling.where(targets > 1.0, 0.0)
        return loss


class GaussianNllLossConfig(Config):
    """Configuration of :class:`GaussianNllLoss`.

    Args:
        eps: lower clamp of the variance (1e-6).
        full: add the constant ``½·log(2π)`` (False).
    """

    _former_names = ("GaussianNLLLossConfig",)  # config files written before the rename say this

    eps: float = 1e-6
    full: bool = False

    def init(self, device=None, dtype=None) -> "GaussianNllLoss":
        return GaussianNllLoss(self.eps, self.full)


class GaussianNllLoss(Module):
    """Negative log-likelihood of targets under N(input, var):
    ``½·(log v + (input − target)² / v)`` with ``v = max(var, eps)`` (plus ``½·log(2π)`` with
    ``full``). The clamp passes no gradient to clamped variances (Burn; PyTorch passes it).

    Args:
        eps: lower clamp of the variance.
        full: add the constant term.
    """

    def __init__(self, eps: float = 1e-6, full: bool = False):
        if not eps >= 0:
            raise ValueError(f"GaussianNllLoss: eps must be >= 0, got {eps}")
        self.eps = float(eps)
        self.full = bool(full)

    def forward(self, input: Tensor, target: Tensor, var: Tensor, reduction=Reduction.Auto) -> Tensor:
        """The loss reduced with ``Mean``/``Auto`` or ``Sum``."""
        return reduce_loss("GaussianNllLoss", self.forward_no_reduction(input, target, var), reduction)

    def forward_no_reduction(self, input: Tensor, target: Tensor, var: Tensor) -> Tensor:
        """The element-wise loss.

        Args:
            input: predicted means.
            target: observations, the shape of ``input``.
            var: predicted variances, the shape of ``input`` or broadcastable to it with the
                same number of dims (size-1 dims, e.g. one variance per sample).
        """
        op = "GaussianNllLoss"
        check_float(op, "input", input)
        check_float(op, "var", var)
        check_same_shape(op, ("input", "target"), input, target)
        if var.ndim != input.ndim or any(v not in (1, s) for v, s in zip(var.shape, input.shape)):
            raise ValueError(
                f"{op}: var must have the shape of input {shape_str(input.shape)} or size-1 dims in "
                f"its place, got {shape_str(var.shape)}"
            )
        var = var.to(input.dtype).clamp(min=self.eps)
        loss = (var.log() + (input - target.to(input.dtype)).square() / var) * 0.5
        return loss + HALF_LOG_TWO_PI if self.full else loss


# The names before the acronym rule (README, "Names"), kept one release: each use warns.
__getattr__ = renamed_globals(
    __name__,
    {
        "GaussianNLLLoss": "GaussianNllLoss",
        "GaussianNLLLossConfig": "GaussianNllLossConfig",
        "KLDivLoss": "KlDivLoss",
        "KLDivLossConfig": "KlDivLossConfig",
    },
)
