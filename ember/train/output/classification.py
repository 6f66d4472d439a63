"""``ClassificationOutput`` and ``MultiLabelClassificationOutput`` (Burn's ``learner/classification.rs``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ember.train.metric import (
    AccuracyInput,
    AurocInput,
    ConfusionStatsInput,
    HammingScoreInput,
    LossInput,
    PerplexityInput,
    TopKAccuracyInput,
)
from ember.train.metric._array import as_bool, one_hot_bool, reshape

from .base import LossOutputTargets, check_rank

__all__ = ["ClassificationOutput", "MultiLabelClassificationOutput"]


@dataclass
class ClassificationOutput(LossOutputTargets):
    """The output of a single-label classification step.

    Feeds ``AccuracyInput``, ``LossInput``, ``TopKAccuracyInput``, ``PerplexityInput``,
    ``ConfusionStatsInput`` and ``AurocInput`` (the last two with one-hot targets; with a
    single output column, ``C == 1``, the targets are the 0/1 labels of a binary problem).

    Args:
        loss: the loss (a scalar, or one value per sample).
        output: ``[B, C]`` scores (logits or probabilities).
        targets: ``[B]`` int class indices.
    """

    def __post_init__(self) -> None:
        b, _ = check_rank("ClassificationOutput", "output", self.output, 2, "[batch, classes]")
        (bt,) = check_rank("ClassificationOutput", "targets", self.targets, 1, "[batch] class indices")
        if b != bt:
            raise ValueError(f"ClassificationOutput: output has {b} rows but targets has {bt}")

    def _label_matrix(self) -> Any:
        """``[B, C]`` bool targets: one-hot, or the labels themselves when ``C == 1``."""
        b, c = self.output.shape
        if c == 1:
            return as_bool(reshape(self.targets, (b, 1)))
        return one_hot_bool(self.targets, c)

    def _adaptors(self) -> dict[type, Callable[[], Any]]:
        return {
            AccuracyInput: lambda: AccuracyInput(self.output, self.targets),
            LossInput: lambda: LossInput(self.loss),
            TopKAccuracyInput: lambda: TopKAccuracyInput(self.output, self.targets),
            PerplexityInput: lambda: PerplexityInput(self.output, self.targets),
            ConfusionStatsInput: lambda: ConfusionStatsInput(self.output, self._label_matrix()),
            AurocInput: lambda: AurocInput(self.output, self._label_matrix()),
        }


@dataclass
class MultiLabelClassificationOutput(LossOutputTargets):
    """The output of a multi-label classification step.

    Feeds ``HammingScoreInput``, ``LossInput``, ``ConfusionStatsInput`` and ``AurocInput``.

    Args:
        loss: the loss.
        output: ``[B, C]`` scores.
        targets: ``[B, C]`` int 0/1 labels.
    """

    def __post_init__(self) -> None:
        self._check_same_shape("[batch, classes]", "[batch, classes] 0/1 labels")

    def _adaptors(self) -> dict[type, Callable[[], Any]]:
        return {
            HammingScoreInput: lambda: HammingScoreInput(self.output, self.targets),
            LossInput: lambda: LossInput(self.loss),
            ConfusionStatsInput: lambda: ConfusionStatsInput(self.output, as_bool(self.targets)),
            AurocInput: lambda: AurocInput(self.output, as_bool(self.targets)),
        }
