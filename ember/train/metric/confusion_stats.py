"""Confusion counts and the metrics built on them (Burn's ``metric/confusion_stats.rs`` and
``ConfusionStatsState``).

The true-positive, false-positive and false-negative counts of every class are summed over
the whole split, and the split value is computed from those totals — never as a mean of
per-batch values (Burn #5514), which weights small batches wrongly and is not the metric of
the concatenated data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np

from ._array import check_same_shape, shape_of, to_numpy, topk_rows
from .base import MetricEntry, MetricMetadata, NumericEntry, NumericMetric, format_entry
from .classification import ClassificationMetricConfig, ClassReduction, DecisionRule

__all__ = ["ConfusionCounts", "ConfusionMetric", "ConfusionStatsInput"]

_R = TypeVar("_R", bound="ConfusionRatioMetric")


@dataclass
class ConfusionStatsInput:
    """What the confusion-based metrics need.

    Args:
        predictions: ``[B, C]`` scores (``C == 1``: binary classification).
        targets: ``[B, C]`` bool (or 0/1) labels; one-hot for multiclass.
    """

    predictions: Any
    targets: Any


@dataclass
class ConfusionCounts:
    """Per-class ``[C]`` counts of true positives, false positives and false negatives."""

    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray

    @classmethod
    def of(cls, predictions: Any, targets: Any, rule: DecisionRule, metric: str) -> "ConfusionCounts":
        """Count one batch.

        Args:
            predictions: ``[B, C]`` scores.
            targets: ``[B, C]`` labels.
            rule: which scores are positive predictions.
            metric: the metric's name for error messages.

        Raises:
            ValueError: shapes differ or are not ``[B, C]``, or top-k exceeds ``C``.
        """
        b, c = check_same_shape(metric, "predictions", predictions, targets)
        if rule.kind == "threshold":
            predicted = to_numpy(predictions) > rule.value
        else:
            k = int(rule.value)
            if k > c:
                raise ValueError(f"{metric}: top_k={k} exceeds the {c} classes of the predictions")
            predicted = np.zeros((b, c), dtype=bool)
            np.put_along_axis(predicted, topk_rows(predictions, k), True, axis=1)
        actual = to_numpy(targets).astype(bool)
        return cls(
            tp=np.count_nonzero(predicted & actual, axis=0).astype(np.int64),
            fp=np.count_nonzero(predicted & ~actual, axis=0).astype(np.int64),
            fn=np.count_nonzero(~predicted & actual, axis=0).astype(np.int64),
        )

    def __add__(self, other: "ConfusionCounts") -> "ConfusionCounts":
        return ConfusionCounts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    def reduced(self, reduction: ClassReduction) -> "ConfusionCounts":
        """The counts to score: per class (Macro) or pooled into one (Micro)."""
        if reduction is ClassReduction.Micro:
            return ConfusionCounts(
                self.tp.sum(keepdims=True), self.fp.sum(keepdims=True), self.fn.sum(keepdims=True)
            )
        return self


class ConfusionMetric(NumericMetric):
    """Base of precision, recall and F-beta: per-batch counts, split totals, a score function.

    Subclasses implement :meth:`_score` (per-class scores in %, NaN where undefined) and
    :attr:`name`. A Macro average leaves out the classes whose score is NaN (Burn); when no
    class is defined the value is 0.

    Args:
        config: the decision rule and class reduction.
    """

    unit = "%"
    higher_is_better = True
    input_type = ConfusionStatsInput

    def __init__(self, config: ClassificationMetricConfig) -> None:
        self.config = config
        self.clear()

    @property
    def decision_rule(self) -> DecisionRule:
        return self.config.decision_rule

    @property
    def class_reduction(self) -> ClassReduction:
        return self.config.class_reduction

    def _score(self, counts: ConfusionCounts) -> np.ndarray:
        raise NotImplementedError

    def _value(self, counts: ConfusionCounts | None) -> float:
        if counts is None:
            return math.nan
        scores = self._score(counts.reduced(self.class_reduction))
        defined = scores[~np.isnan(scores)]
        return float(defined.mean()) if defined.size else 0.0

    def clear(self) -> None:
        self._total: ConfusionCounts | None = None
        self._current = math.nan
        self._current_count = 0
        self._samples = 0

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Add one batch's counts.

        Args:
            item: an output adaptable to :class:`ConfusionStatsInput`.
            metadata: unused.
        """
        inp = self.adapt_input(item)
        counts = ConfusionCounts.of(inp.predictions, inp.targets, self.decision_rule, type(self).__name__)
        if self._total is not None and self._total.tp.shape != counts.tp.shape:
            raise ValueError(
                f"{type(self).__name__}: this batch has {counts.tp.shape[0]} classes, "
                f"earlier batches of the split had {self._total.tp.shape[0]}"
            )
        self._total = counts if self._total is None else self._total + counts
        self._current = self._value(counts)
        self._current_count = shape_of(inp.predictions)[0]
        self._samples += self._current_count
        return MetricEntry(
            self.name,
            format_entry(self._value(self._total), self._current, self.unit),
            self.value().serialize(),
        )

    def value(self) -> NumericEntry:
        return NumericEntry.Aggregated(self._current, self._current_count)

    def running_value(self) -> NumericEntry:
        return NumericEntry.Final(self._value(self._total))


class ConfusionRatioMetric(ConfusionMetric):
    """Base of precision and recall: ``100 · TP / (TP + errors)``, 0 where that is empty.

    Subclasses set :attr:`_label` (the name's first word) and implement :meth:`_score`.

    Args:
        config: decision rule and class reduction (default ``Threshold(0.5)``, Macro).
    """

    _label: ClassVar[str]

    def __init__(self, config: ClassificationMetricConfig | None = None) -> None:
        super().__init__(config or ClassificationMetricConfig())

    @classmethod
    def binary(cls: type[_R], threshold: float = 0.5) -> _R:
        """One score per sample (``[B, 1]``); positive when above ``threshold``.

        Args:
            threshold: the decision threshold.
        """
        return cls(ClassificationMetricConfig(DecisionRule.Threshold(threshold)))

    @classmethod
    def multiclass(
        cls: type[_R], top_k: int = 1, class_reduction: ClassReduction = ClassReduction.Macro
    ) -> _R:
        """One class per sample; the ``top_k`` highest scores are its predictions.

        Args:
            top_k: predictions per sample (>= 1).
            class_reduction: Macro (default) or Micro.
        """
        return cls(ClassificationMetricConfig(DecisionRule.TopK(top_k), ClassReduction(class_reduction)))

    @classmethod
    def multilabel(
        cls: type[_R], threshold: float = 0.5, class_reduction: ClassReduction = ClassReduction.Macro
    ) -> _R:
        """Any number of labels per sample; each score above ``threshold`` is a prediction.

        Args:
            threshold: the decision threshold.
            class_reduction: Macro (default) or Micro.
        """
        return cls(
            ClassificationMetricConfig(DecisionRule.Threshold(threshold), ClassReduction(class_reduction))
        )

    @property
    def name(self) -> str:
        return f"{self._label} @ {self.decision_rule} [{self.class_reduction}]"


def safe_ratio(numerator: np.ndarray, denominator: np.ndarray, empty: float) -> np.ndarray:
    """``100 · numerator / denominator`` with ``empty`` where the denominator is 0."""
    num = numerator.astype(np.float64)
    den = denominator.astype(np.float64)
    out = np.full(num.shape, empty, dtype=np.float64)
    np.divide(100.0 * num, den, out=out, where=den != 0)
    return out
