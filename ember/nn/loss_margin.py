"""Margin and embedding losses (Burn's ``CosineEmbeddingLoss``, ``HingeEmbeddingLoss``,
``MarginRankingLoss``, ``MultiMarginLoss``, ``SoftMarginLoss``, ``TripletMarginLoss``), each
``forward(..., reduction)`` plus ``forward_no_reduction`` — except ``CosineEmbeddingLoss``,
whose reduction is part of its config, as in Burn.

Targets of ±1 may be int or float tensors.
"""

from __future__ import annotations

import numpy as np

from ember.nn.distance import cosine_similarity, lp_norm
from ember.nn.loss_reduction import Reduction, as_reduction, check_float, check_same_shape, reduce_loss
from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.elementwise import relu, softplus
from ember.tensor.ops.indexing import check_index_range
from ember.tensor.tensor import Tensor

__all__ = [
    "CosineEmbeddingLoss",
    "CosineEmbeddingLossConfig",
    "HingeEmbeddingLoss",
    "HingeEmbeddingLossConfig",
    "MarginRankingLoss",
    "MarginRankingLossConfig",
    "MultiMarginLoss",
    "MultiMarginLossConfig",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginLossConfig",
]


def _check_pairs(op: str, first: Tensor, second: Tensor, names=("input1", "input2")) -> None:
    check_float(op, names[0], first)
    check_same_shape(op, names, first, second)
    if first.ndim != 2:
        raise ValueError(f"{op}: {names[0]} must be [batch, embedding_dim], got {shape_str(first.shape)}")


def _check_batch_target(op: str, target, batch: int) -> None:
    if not isinstance(target, Tensor) or target.shape != (batch,):
        got = shape_str(target.shape) if isinstance(target, Tensor) else type(target).__name__
        raise ValueError(f"{op}: target must be [{batch}] (one per pair), got {got}")


class CosineEmbeddingLossConfig(Config):
    """Configuration of :class:`CosineEmbeddingLoss`.

    Args:
        margin: of dissimilar pairs (0.0).
        reduction: ``Mean`` (default) or ``Sum`` (``Auto`` = Mean).
    """

    margin: float = 0.0
    reduction: Reduction = Reduction.Mean

    def init(self, device=None, dtype=None) -> "CosineEmbeddingLoss":
        return CosineEmbeddingLoss(self.margin, self.reduction)


class CosineEmbeddingLoss(Module):
    """For pairs of embeddings with cosine similarity ``s``: ``1 − s`` where the target is 1,
    ``max(0, s − margin)`` where it is −1 (0 for any other target value).

    Args:
        margin: of dissimilar pairs.
        reduction: applied by :meth:`forward`.
    """

    def __init__(self, margin: float = 0.0, reduction=Reduction.Mean):
        self.margin = float(margin)
        self.reduction = as_reduction("CosineEmbeddingLoss", reduction)

    @classmethod
    def new(cls) -> "CosineEmbeddingLoss":
        """The default loss (Burn's ``CosineEmbeddingLoss::new``)."""
        return CosineEmbeddingLossConfig().init()

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """Args:
            input1: ``[batch, dim]``.
            input2: ``[batch, dim]``.
            target: ``[batch]`` of 1 (similar) or −1 (dissimilar).

        Returns:
            The loss reduced with the configured reduction.
        """
        loss = self.forward_no_reduction(input1, input2, target)
        return reduce_loss("CosineEmbeddingLoss", loss, self.reduction)

    def forward_no_reduction(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """One loss per pair, ``[batch]``."""
        op = "CosineEmbeddingLoss"
        _check_pairs(op, input1, input2)
        _check_batch_target(op, target, input1.shape[0])
        # Burn's eps: the dtype's smallest normal number bounds each norm
        eps = float(np.finfo(input1.dtype.numpy).tiny)
        cos = cosine_similarity(input1, input2.to(input1.dtype), 1, eps)
        loss = (1.0 - cos).where(target == 1, 0.0)
        return relu(cos - self.margin).where(target == -1, loss)

    def extra_repr(self) -> dict:
        return {"margin": self.margin, "reduction": self.reduction.name}


class HingeEmbeddingLossConfig(Config):
    """Configuration of :class:`HingeEmbeddingLoss`.

    Args:
        margin: of negative pairs (1.0).
    """

    margin: float = 1.0

    def init(self, device=None, dtype=None) -> "HingeEmbeddingLoss":
        return HingeEmbeddingLoss(self.margin)


class HingeEmbeddingLoss(Module):
    """``x`` where the target is 1, ``max(0, margin − x)`` elsewhere (target −1).

    Args:
        margin: of negative pairs.
    """

    def __init__(self, margin: float = 1.0):
        self.margin = float(margin)

    def forward(self, input: Tensor, target: Tensor, reduction=Reduction.Auto) -> Tensor:
        """The loss reduced with ``Mean``/``Auto`` or ``Sum``."""
        return reduce_loss("HingeEmbeddingLoss", self.forward_no_reduction(input, target), reduction)

    def forward_no_reduction(self, input: Tensor, target: Tensor) -> Tensor:
        """The element-wise loss (``target`` has the shape of ``input``)."""
        op = "HingeEmbeddingLoss"
        check_float(op, "input", input)
        check_same_shape(op, ("input", "target"), input, target)
        return (self.margin - input).clamp(min=0.0).where(target != 1, input)


class MarginRankingLossConfig(Config):
    """Configuration of :class:`MarginRankingLoss`.

    Args:
        margin: by which a correctly ranked pair must be apart (0.0; >= 0).
    """

    margin: float = 0.0

    def init(self, device=None, dtype=None) -> "MarginRankingLoss":
        return MarginRankingLoss(self.margin)


class MarginRankingLoss(Module):
    """``max(0, −y·(x1 − x2) + margin)``: target 1 means ``x1`` should rank higher, −1 lower.

    Args:
        margin: the required separation (>= 0).
    """

    def __init__(self, margin: float = 0.0):
        if not margin >= 0:
            raise ValueError(f"MarginRankingLoss: margin must be a non-negative number, got {margin}")
        self.margin = float(margin)

    def forward(self, first: Tensor, second: Tensor, target: Tensor, reduction=Reduction.Auto) -> Tensor:
        """The loss reduced with ``Mean``/``Auto`` or ``Sum``."""
        return reduce_loss("MarginRankingLoss", self.forward_no_reduction(first, second, target), reduction)

    def forward_no_reduction(self, first: Tensor, second: Tensor, target: Tensor) -> Tensor:
        """The element-wise loss (all three of one shape)."""
        op = "MarginRankingLoss"
        check_float(op, "first", first)
        check_same_shape(op, ("first", "second"), first, second)
        check_same_shape(op, ("first", "target"), first, target)
        return relu(self.margin - target.to(first.dtype) * (first - second.to(first.dtype)))


class MultiMarginLossConfig(Config):
    """Configuration of :class:`MultiMarginLoss`.

    Args:
        margin: between the target class's score and the others (1.0; >= 0).
        p: the hinge's power, 1 or 2 (1).
    """

    margin: float = 1.0
    p: int = 1

    def init(self, device=None, dtype=None) -> "MultiMarginLoss":
        return MultiMarginLoss(self.margin, self.p)


class MultiMarginLoss(Module):
    """Multi-class hinge loss of scores ``x [batch, C]`` and target classes ``y``:
    ``Σ_{i ≠ y} max(0, margin − x[y] + x[i])^p / C`` per sample.

    Args:
        margin: the required margin (>= 0).
        p: 1 or 2.
    """

    def __init__(self, margin: float = 1.0, p: int = 1):
        if not margin >= 0:
            raise ValueError(f"MultiMarginLoss: margin must be non-negative, got {margin}")
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p = 1 or p = 2 are supported, got {p}")
        self.margin = float(margin)
        self.p = int(p)

    def forward(self, input: Tensor, target: Tensor, reduction=Reduction.Auto) -> Tensor:
        """The loss reduced with ``Mean``/``Auto`` or ``Sum``."""
        return reduce_loss("MultiMarginLoss", self.forward_no_reduction(input, target), reduction)

    def forward_no_reduction(self, input: Tensor, target: Tensor) -> Tensor:
        """One loss per sample, ``[batch]``.

        Args:
            input: scores ``[batch, classes]``.
            target: int class indices ``[batch]``.
        """
        op = "MultiMarginLoss"
        check_float(op, "input", input)
        if input.ndim != 2:
            raise ValueError(f"{op}: input must be [batch, classes], got {shape_str(input.shape)}")
        batch, classes = input.shape
        if not isinstance(target, Tensor) or not target.dtype.is_int or target.shape != (batch,):
            got = (
                f"{target.dtype} {shape_str(target.shape)}"
                if isinstance(target, Tensor)
                else type(target).__name__
            )
            raise ValueError(f"{op}: target must be int class indices [{batch}], got {got}")
        check_index_range(op, target, classes, "target class")
        correct = input.gather(1, target.reshape(batch, 1))
        hinge = (input - correct + self.margin).clamp(min=0.0)
        if self.p == 2:
            hinge = hinge.square()
        # the target class itself contributes max(0, margin)^p exactly: take it out again
        return (hinge.sum(1) - self.margin**self.p) / float(classes)


class SoftMarginLoss(Module):
    """Two-class logistic loss ``log(1 + exp(−y·x))`` for targets y of ±1 (computed as
    ``softplus(−y·x)``, finite for any x)."""

    @classmethod
    def new(cls) -> "SoftMarginLoss":
        return cls()

    def forward(self, logits: Tensor, targets: Tensor, reduction=Reduction.Auto) -> Tensor:
        """The loss reduced with ``Mean``/``Auto`` or ``Sum``."""
        return reduce_loss("SoftMarginLoss", self.forward_no_reduction(logits, targets), reduction)

    def forward_no_reduction(self, logits: Tensor, targets: Tensor) -> Tensor:
        """The element-wise loss (``targets`` has the shape of ``logits``)."""
        op = "SoftMarginLoss"
        check_float(op, "logits", logits)
        check_same_shape(op, ("logits", "targets"), logits, targets)
        return softplus(-(targets.to(logits.dtype) * logits))


class TripletMarginLossConfig(Config):
    """Configuration of :class:`TripletMarginLoss`.

    Args:
        margin: between the positive and negative distances (1.0).
        p: the norm of the distances (2.0).
    """

    margin: float = 1.0
    p: float = 2.0

    def init(self, device=None, dtype=None) -> "TripletMarginLoss":
        return TripletMarginLoss(self.margin, self.p)


class TripletMarginLoss(Module):
    """``max(0, ‖a − p‖ − ‖a − n‖ + margin)`` for anchors, positives and negatives
    ``[batch, dim]`` (the p-norm of the plain difference, as Burn; PyTorch adds ``eps = 1e-6``
    to the difference).

    Args:
        margin: the required gap.
        p: the norm.
    """

    def __init__(self, margin: float = 1.0, p: float = 2.0):
        self.margin = float(margin)
        self.p = float(p)

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor, reduction=Reduction.Auto) -> Tensor:
        """The loss reduced with ``Mean``/``Auto`` or ``Sum``."""
        return reduce_loss(
            "TripletMarginLoss", self.forward_no_reduction(anchor, positive, negative), reduction
        )

    def forward_no_reduction(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """One loss per triplet, ``[batch]``."""
        op = "TripletMarginLoss"
        _check_pairs(op, anchor, positive, ("anchor", "positive"))
        check_same_shape(op, ("anchor", "negative"), anchor, negative)
        d_pos = lp_norm(anchor - positive.to(anchor.dtype), self.p, 1)
        d_neg = lp_norm(anchor - negative.to(anchor.dtype), self.p, 1)
        return (d_pos - d_neg + self.margin).clamp(min=0.0)
