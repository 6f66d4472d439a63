"""Losses (Burn's ``burn_nn::loss``): cross-entropy, binary cross-entropy, MSE and Huber here;
the others in their own files, re-exported here so that ``ember.nn.loss.X`` finds all of them:

* :mod:`ember.nn.loss_regression`: ``SmoothL1Loss``, ``LpLoss``;
* :mod:`ember.nn.loss_likelihood`: ``KlDivLoss``, ``PoissonNllLoss``, ``GaussianNllLoss``;
* :mod:`ember.nn.loss_margin`: ``CosineEmbeddingLoss``, ``HingeEmbeddingLoss``,
  ``MarginRankingLoss``, ``MultiMarginLoss``, ``SoftMarginLoss``, ``TripletMarginLoss``;
* :mod:`ember.nn.loss_ctc`: ``CtcLoss``.

Every reduced loss returns a 0-d tensor. ``reduction`` is a :class:`Reduction`
(:mod:`ember.nn.loss_reduction`): for the losses here ``Mean`` / ``Auto`` (the mean, Burn's
behaviour) or ``Sum``.
"""

from __future__ import annotations

import numpy as np

from ember._deprecation import renamed_globals, renames_of
from ember.nn import loss_ctc, loss_likelihood
from ember.nn.loss_ctc import CtcLoss, CtcLossConfig
from ember.nn.loss_likelihood import (
    GaussianNllLoss,
    GaussianNllLossConfig,
    KlDivLoss,
    KlDivLossConfig,
    PoissonNllLoss,
    PoissonNllLossConfig,
)
from ember.nn.loss_margin import (
    CosineEmbeddingLoss,
    CosineEmbeddingLossConfig,
    HingeEmbeddingLoss,
    HingeEmbeddingLossConfig,
    MarginRankingLoss,
    MarginRankingLossConfig,
    MultiMarginLoss,
    MultiMarginLossConfig,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginLossConfig,
)
from ember.nn.loss_reduction import Reduction, as_reduction, check_float, reduce_loss
from ember.nn.loss_regression import LpLoss, LpLossConfig, SmoothL1Loss, SmoothL1LossConfig
from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.creation import tensor as make_tensor
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.elementwise import softplus
from ember.tensor.ops.nn import cross_entropy_per_sample, log_softmax
from ember.tensor.tensor import Tensor

__all__ = [
    "BinaryCrossEntropyLoss",
    "BinaryCrossEntropyLossConfig",
    "CosineEmbeddingLoss",
    "CosineEmbeddingLossConfig",
    "CrossEntropyLoss",
    "CrossEntropyLossConfig",
    "CtcLoss",
    "CtcLossConfig",
    "GaussianNllLoss",
    "GaussianNllLossConfig",
    "HingeEmbeddingLoss",
    "HingeEmbeddingLossConfig",
    "HuberLoss",
    "HuberLossConfig",
    "KlDivLoss",
    "KlDivLossConfig",
    "LpLoss",
    "LpLossConfig",
    "MarginRankingLoss",
    "MarginRankingLossConfig",
    "MseLoss",
    "MultiMarginLoss",
    "MultiMarginLossConfig",
    "PoissonNllLoss",
    "PoissonNllLossConfig",
    "Reduction",
    "SmoothL1Loss",
    "SmoothL1LossConfig",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginLossConfig",
]

# the names this module used before the shared helpers moved to loss_reduction
_as_reduction = as_reduction
_float = check_float


def _reduce(op: str, loss: Tensor, reduction) -> Tensor:
    return reduce_loss(op, loss, reduction)


def _check_weights(op: str, weights) -> None:
    if weights is not None and any(not w > 0 for w in weights):
        raise ValueError(f"{op}: weights have to be positive, got {list(weights)}")


def _check_smoothing(op: str, smoothing) -> None:
    if smoothing is not None and not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"{op}: smoothing (alpha) should be in [0, 1], got {smoothing}")


def _class_weights(config, device, dtype) -> Tensor | None:
    """A cross-entropy config's checked settings: its ``weights`` as a tensor (None without)."""
    op = type(config).__name__
    _check_smoothing(op, config.smoothing)
    _check_weights(op, config.weights)
    if config.weights is None:
        return None
    return make_tensor(list(config.weights), dtype=dtype or "float32", device=device)


# ---- cross-entropy ------------------------------------------------------------------------------
class CrossEntropyLossConfig(Config):
    """Configuration of :class:`CrossEntropyLoss`.

    Args:
        pad_tokens: target classes whose samples are ignored (their loss is zeroed).
        weights: one positive weight per class.
        smoothing: label smoothing α in [0, 1].
        logits: the inputs are logits (else probabilities).
    """

    pad_tokens: list[int] | None = None
    weights: list[float] | None = None
    smoothing: float | None = None
    logits: bool = True

    def init(self, device=None, dtype=None) -> "CrossEntropyLoss":
        return CrossEntropyLoss(
            self.pad_tokens, _class_weights(self, device, dtype), self.smoothing, self.logits
        )


class CrossEntropyLoss(Module):
    """Cross-entropy between ``logits [N, C]`` and int ``targets [N]`` (Burn's semantics).

    * default: ``−mean_n log p[n, t_n]``, with samples whose target is a pad token zeroed —
      but still counted in the mean's divisor (Burn's behaviour);
    * ``smoothing`` α: the target distribution is ``(1 − α)·onehot + α/C``;
    * ``weights`` w: ``−Σ_n w[t_n]·log p[n, t_n] / Σ_n w[t_n]`` (with smoothing, each class
      term is weighted by its own w_c); the divisor sums over all samples, pads included,
      as Burn does.

    Without weights the fused ``ember.cross_entropy_per_sample`` kernel is used.

    Args:
        pad_tokens: ignored target classes.
        weights: per-class weights tensor ``[C]`` or None.
        smoothing: α or None.
        logits: inputs are logits (else probabilities).
    """

    def __init__(
        self,
        pad_tokens=None,
        weights: Tensor | None = None,
        smoothing: float | None = None,
        logits: bool = True,
    ):
        _check_smoothing("CrossEntropyLoss", smoothing)
        self.pad_tokens = None if pad_tokens is None else [int(t) for t in pad_tokens]
        self.weights = weights
        self.smoothing = None if smoothing is None else float(smoothing)
        self.logits = bool(logits)

    @classmethod
    def new(cls, pad_index: int | None = None, device=None) -> "CrossEntropyLoss":
        """Burn's ``CrossEntropyLoss::new(pad_index, device)``."""
        return CrossEntropyLossConfig(pad_tokens=None if pad_index is None else [pad_index]).init(device)

    def forward(self, logits: Tensor, targets: Tensor, reduction=Reduction.Auto) -> Tensor:
        """Args:
        logits: ``[N, C]`` logits (or probabilities when ``logits=False``).
        targets: ``[N]`` int class indices.
        reduction: Mean/Auto (Burn's formula) or Sum (no division).
        """
        op = "CrossEntropyLoss"
        _float(op, "logits", logits)
        if logits.ndim != 2:
            raise ValueError(f"{op}: logits must be [batch, classes], got {shape_str(logits.shape)}")
        if not isinstance(targets, Tensor) or not targets.dtype.is_int or targets.shape != (logits.shape[0],):
            got = (
                f"{targets.dtype} {shape_str(targets.shape)}"
                if isinstance(targets, Tensor)
                else type(targets).__name__
            )
            raise ValueError(
                f"{op}: targets must be int [{logits.shape[0]}] (the batch of the logits), got {got}"
            )
        n, c = logits.shape
        weights = self.weights
        if weights is not None:
            if weights.shape != (c,):
                raise ValueError(f"{op}: {weights.shape[0]} class weights for {c} classes")
            weights = weights.to(logits.device).to(logits.dtype)
        reduction = _as_reduction(op, reduction)
        if reduction is Reduction.BatchMean:
            raise ValueError(f"{op}: BatchMean reduction is not supported; use Mean, Sum or Auto")
        mask = self._pad_mask(targets)
        alpha = self.smoothing
        if weights is None:
            if self.logits:
                per_sample = cross_entropy_per_sample(logits, targets, alpha or 0.0)
            elif alpha is None:
                per_sample = -self._prob_log(logits).gather(1, targets.reshape(n, 1)).reshape(n)
            else:
                per_sample = -(logits.log() * self._smoothed(targets, c, alpha, logits)).sum(1)
            if mask is not None:
                per_sample = per_sample.mask_fill(mask, 0.0)
            return _reduce(op, per_sample, reduction)
        w_targets = weights.index_select(0, targets)
        if alpha is None:
            logp = log_softmax(logits, 1) if self.logits else self._prob_log(logits)
            per_sample = -logp.gather(1, targets.reshape(n, 1)).reshape(n) * w_targets
        else:
            logp = log_softmax(logits, 1) if self.logits else logits.log()
            per_sample = -(logp * self._smoothed(targets, c, alpha, logits) * weights.reshape(1, c)).sum(1)
        if mask is not None:
            per_sample = per_sample.mask_fill(mask, 0.0)
        total = per_sample.sum()
        if reduction is Reduction.Sum:
            return total
        return total / w_targets.sum()

    def _prob_log(self, probs: Tensor) -> Tensor:
        eps = float(np.sqrt(np.finfo(probs.dtype.numpy).tiny))  # Burn: sqrt(min_positive)
        return probs.clamp(min=eps).log()

    @staticmethod
    def _smoothed(targets: Tensor, c: int, alpha: float, like: Tensor) -> Tensor:
        onehot = targets.one_hot(c, dtype=like.dtype)
        return onehot * (1.0 - alpha) + alpha / c

    def _pad_mask(self, targets: Tensor) -> Tensor | None:
        if not self.pad_tokens:
            return None
        mask = targets == self.pad_tokens[0]
        for t in self.pad_tokens[1:]:
            mask = mask | (targets == t)
        return mask

    def extra_repr(self) -> dict:
        return {
            "pad_tokens": self.pad_tokens,
            "smoothing": self.smoothing,
            "logits": self.logits,
            "weights": None if self.weights is None else self.weights.tolist(),
        }


# ---- binary cross-entropy -----------------------------------------------------------------------
class BinaryCrossEntropyLossConfig(Config):
    """Configuration of :class:`BinaryCrossEntropyLoss`.

    Args:
        weights: per-class weights: for ``[N, C]`` inputs one per column; for ``[N]`` inputs
            indexed by the target (0 or 1).
        smoothing: α in [0, 1]: targets become ``y·(1 − α) + α/C`` (C = 2 for 1-D inputs).
        logits: the inputs are logits (else probabilities; False by default, as in Burn).
    """

    weights: list[float] | None = None
    smoothing: float | None = None
    logits: bool = False

    def init(self, device=None, dtype=None) -> "BinaryCrossEntropyLoss":
        return BinaryCrossEntropyLoss(_class_weights(self, device, dtype), self.smoothing, self.logits)


class BinaryCrossEntropyLoss(Module):
    """Binary cross-entropy, element-wise then reduced.

    With logits x: ``(1 − y)·x − log_sigmoid(x)`` (stable for any x). With probabilities p:
    ``−(y·max(log p, −100) + (1 − y)·max(log(1 − p), −100))``.

    Args:
        weights: tensor of class weights or None.
        smoothing: α or None.
        logits: inputs are logits.
    """

    def __init__(self, weights: Tensor | None = None, smoothing: float | None = None, logits: bool = False):
        _check_smoothing("BinaryCrossEntropyLoss", smoothing)
        self.weights = weights
        self.smoothing = None if smoothing is None else float(smoothing)
        self.logits = bool(logits)

    def forward(self, logits: Tensor, targets: Tensor, reduction=Reduction.Auto) -> Tensor:
        """Args:
        logits: ``[N]`` or ``[N, C]`` logits (or probabilities).
        targets: same shape, 0/1 ints (or float probabilities).
        reduction: Mean/Auto or Sum.
        """
        op = "BinaryCrossEntropyLoss"
        _float(op, "logits", logits)
        if not isinstance(targets, Tensor) or targets.shape != logits.shape:
            got = shape_str(targets.shape) if isinstance(targets, Tensor) else type(targets).__name__
            raise ValueError(
                f"{op}: targets must have the shape of the logits {shape_str(logits.shape)}, got {got}"
            )
        y = targets.to(logits.dtype)
        if self.smoothing is not None:
            classes = logits.shape[-1] if logits.ndim > 1 else 2
            y = y * (1.0 - self.smoothing) + self.smoothing / classes
        if self.logits:
            loss = (1.0 - y) * logits + softplus(-logits)  # −log_sigmoid(x) = softplus(−x)
        else:
            loss = (y - 1.0) * (-logits).log1p().clamp(min=-100.0) - y * logits.log().clamp(min=-100.0)
        if self.weights is not None:
            w = self.weights.to(logits.device).to(logits.dtype)
            if logits.ndim > 1:
                if w.shape != (logits.shape[-1],):
                    raise ValueError(f"{op}: {w.shape[0]} weights for {logits.shape[-1]} classes")
                loss = loss * w
            else:
                if not targets.dtype.is_int:
                    raise TypeError(
                        f"{op}: per-target weights of 1-D inputs need int targets, got {targets.dtype}"
                    )
                loss = loss * w.index_select(0, targets.reshape(-1)).reshape(logits.shape)
        return _reduce(op, loss, reduction)

    def extra_repr(self) -> dict:
        return {
            "smoothing": self.smoothing,
            "logits": self.logits,
            "weights": None if self.weights is None else self.weights.tolist(),
        }


# ---- regression ---------------------------------------------------------------------------------
def _check_regression(op: str, predictions: Tensor, targets) -> None:
    """Float predictions, and targets of their shape."""
    _float(op, "predictions", predictions)
    if not isinstance(targets, Tensor) or targets.shape != predictions.shape:
        got = shape_str(targets.shape) if isinstance(targets, Tensor) else type(targets).__name__
        raise ValueError(
            f"{op}: targets must have the predictions' shape {shape_str(predictions.shape)}, got {got}"
        )


class MseLoss(Module):
    """Mean squared error ``(prediction − target)²``, reduced."""

    def forward(self, logits: Tensor, targets: Tensor, reduction=Reduction.Auto) -> Tensor:
        return _reduce("MseLoss", self.forward_no_reduction(logits, targets), reduction)

    def forward_no_reduction(self, logits: Tensor, targets: Tensor) -> Tensor:
        _check_regression("MseLoss", logits, targets)
        return (logits - targets).square()


class HuberLossConfig(Config):
    """Configuration of :class:`HuberLoss`.

    Args:
        delta: where the loss turns from quadratic to linear (>= 0).
    """

    delta: float

    def init(self, device=None, dtype=None) -> "HuberLoss":
        return HuberLoss(self.delta)


class HuberLoss(Module):
    """Huber loss of the residual r = target − prediction:
    ``r²/2`` where ``|r| <= delta``, else ``delta·|r| − delta²/2``.

    Args:
        delta: the threshold (>= 0).
    """

    def __init__(self, delta: float):
        if not delta >= 0:
            raise ValueError(f"HuberLoss: delta must be a non-negative number, got {delta}")
        self.delta = float(delta)
        self.lin_bias = self.delta * self.delta * 0.5

    def forward(self, predictions: Tensor, targets: Tensor, reduction=Reduction.Auto) -> Tensor:
        return _reduce("HuberLoss", self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        _check_regression("HuberLoss", predictions, targets)
        return self.forward_residuals(targets - predictions)

    def forward_residuals(self, residuals: Tensor) -> Tensor:
        """The element-wise loss of given residuals."""
        # Each branch sees only what it may be selected for: the branch a residual does not take
        # gets gradient 0, and 0 times an infinite residual's derivative would be NaN.
        large = residuals.abs() > self.delta
        outside = residuals.abs() * self.delta - self.lin_bias
        inside = residuals.mask_fill(large, 0.0).square() * 0.5  # a NaN residual stays NaN
        return inside.mask_where(large, outside)


# The names before the acronym rule (README, "Names"), kept one release: each use warns.
__getattr__ = renamed_globals(__name__, {"MSELoss": "MseLoss", **renames_of(loss_ctc, loss_likelihood)})
