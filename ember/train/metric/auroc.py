"""``AurocMetric`` (Burn's ``metric/auroc.rs``): area under the ROC curve over a whole split.

AUROC ranks every sample of the split against every other, so no batch has a value of its
own (Burn shows ``N/A`` per batch and writes no iteration line): the area is that of all
the split's scores. It is exact: the Mann-Whitney statistic ``P(score of a positive > score
of a negative)``, ties counting one half, which is the trapezoidal area under the ROC curve.
The pair count is kept up to date batch by batch (sorted scores, binary search), so the
running value costs ``O(C)`` to read and each update ``O(B log N)`` plus one merge.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._array import check_same_shape, to_numpy
from .base import MetricEntry, MetricMetadata, NumericEntry, NumericMetric, format_entry, not_available_entry
from .classification import ClassReduction

__all__ = ["AurocInput", "AurocMetric", "roc_auc"]

_log = logging.getLogger(__name__)


@dataclass
class AurocInput:
    """What :class:`AurocMetric` needs.

    Args:
        predictions: ``[B, C]`` scores (``C == 1``: binary).
        targets: ``[B, C]`` bool (or 0/1) labels; one-hot for multiclass (one-vs-rest).
    """

    predictions: Any
    targets: Any


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Exact ROC AUC of one score column; NaN without both a positive and a negative.

    ``(Σ ranks of the positives − P(P+1)/2) / (P·N)`` with tied scores sharing their mean
    rank — the pairwise count ``(#pos > neg + ½ #ties) / (P·N)`` in ``O(n log n)``.

    Args:
        scores: ``[n]`` scores.
        labels: ``[n]`` bool labels.
    """
    labels = np.asarray(labels, dtype=bool).reshape(-1)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    positives = int(np.count_nonzero(labels))
    negatives = labels.size - positives
    if positives == 0 or negatives == 0:
        return math.nan
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    mean_rank = ends - (counts - 1) / 2.0  # 1-based mean rank of each distinct score
    rank_sum = float(mean_rank[inverse.reshape(-1)][labels].sum())
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


class PairCounter:
    """Running Mann-Whitney count of one score column: ``2U`` = 2·#(positive > negative)
    + #(ties), over every positive/negative pair seen so far (exact integers)."""

    def __init__(self) -> None:
        self.positives = np.empty(0, dtype=np.float64)  # sorted scores of the positives
        self.negatives = np.empty(0, dtype=np.float64)
        self.twice_u = 0

    @staticmethod
    def _below(sorted_scores: np.ndarray, values: np.ndarray) -> int:
        """``Σ_v 2·#(s < v) + #(s == v)`` for ``s`` in ``sorted_scores``."""
        left = np.searchsorted(sorted_scores, values, side="left")
        right = np.searchsorted(sorted_scores, values, side="right")
        return int(left.sum()) + int(right.sum())

    def add(self, scores: np.ndarray, labels: np.ndarray) -> None:
        """Add a batch of scores with their bool labels."""
        new_pos, new_neg = np.sort(scores[labels]), np.sort(scores[~labels])
        # pairs (new positive, old negative), (old positive, new negative), (new, new)
        self.twice_u += self._below(self.negatives, new_pos)
        self.twice_u += 2 * self.positives.size * new_neg.size - self._below(self.positives, new_neg)
        self.twice_u += self._below(new_neg, new_pos)
        self.positives = _merge(self.positives, new_pos)
        self.negatives = _merge(self.negatives, new_neg)

    def area(self) -> float:
        """The AUC, NaN without both a positive and a negative."""
        pairs = self.positives.size * self.negatives.size
        return self.twice_u / (2.0 * pairs) if pairs else math.nan


def _merge(sorted_a: np.ndarray, sorted_b: np.ndarray) -> np.ndarray:
    if not sorted_b.size:
        return sorted_a
    return np.insert(sorted_a, np.searchsorted(sorted_a, sorted_b, side="right"), sorted_b)


class AurocMetric(NumericMetric):
    """``AUROC [{reduction}]`` in %, higher is better, over all the split's scores.

    Macro averages the one-vs-rest area of every class that has both positives and
    negatives; Micro pools every (sample, class) cell into one ranking. When no class is
    defined the value is 50 (chance level, as Burn, with a warning). Build it with
    :meth:`binary`, :meth:`multiclass` or :meth:`multilabel`.

    A batch has no value of its own: :meth:`value` is None and no iteration line is
    written; the display shows the split's area so far and ``batch N/A``.

    Args:
        class_reduction: Macro (default) or Micro.
    """

    input_type = AurocInput
    unit = "%"
    higher_is_better = True
    batch_value_available = False

    def __init__(self, class_reduction: ClassReduction = ClassReduction.Macro) -> None:
        self.class_reduction = ClassReduction(class_reduction)
        self.clear()

    @classmethod
    def binary(cls) -> "AurocMetric":
        """Scores ``[B, 1]`` against 0/1 labels."""
        return cls(ClassReduction.Macro)

    @classmethod
    def multiclass(cls, class_reduction: ClassReduction = ClassReduction.Macro) -> "AurocMetric":
        """One-vs-rest over the ``C`` classes of one-hot targets.

        Args:
            class_reduction: Macro (default) or Micro.
        """
        return cls(class_reduction)

    @classmethod
    def multilabel(cls, class_reduction: ClassReduction = ClassReduction.Macro) -> "AurocMetric":
        """One area per label column.

        Args:
            class_reduction: Macro (default) or Micro.
        """
        return cls(class_reduction)

    @property
    def name(self) -> str:
        return f"AUROC [{self.class_reduction}]"

    def clear(self) -> None:
        self._counters: list[PairCounter] = []
        self._columns = 0
        self._warned = False

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Add one batch's scores and labels.

        Args:
            item: an output adaptable to :class:`AurocInput`.
            metadata: unused.
        """
        inp = self.adapt_input(item)
        _, columns = check_same_shape("AurocMetric", "predictions", inp.predictions, inp.targets)
        if self._counters and self._columns != columns:
            raise ValueError(
                f"AurocMetric: this batch has {columns} columns, earlier batches "
                f"of the split had {self._columns}"
            )
        scores = to_numpy(inp.predictions).astype(np.float64)
        labels = to_numpy(inp.targets).astype(bool)
        if self.class_reduction is ClassReduction.Micro:
            scores, labels = scores.reshape(-1, 1), labels.reshape(-1, 1)
        if not self._counters:
            self._columns = columns
            self._counters = [PairCounter() for _ in range(scores.shape[1])]
        for j, counter in enumerate(self._counters):
            counter.add(scores[:, j], labels[:, j])
        return MetricEntry(self.name, format_entry(self._area(), "N/A", self.unit), None)

    def _area(self) -> float:
        if not self._counters:
            return math.nan
        defined = [a for a in (c.area() for c in self._counters) if not math.isnan(a)]
        if not defined:
            if not self._warned:
                _log.warning(
                    "AUROC is undefined (no class has both positive and negative samples "
                    "in the split so far); reporting 50 %% (chance level)"
                )
                self._warned = True
            return 50.0
        return 100.0 * float(np.mean(defined))

    def value(self) -> None:
        """None: AUROC has no per-batch value (Burn's ``N/A``)."""
        return None

    def running_value(self) -> NumericEntry:
        return NumericEntry.Final(self._area())

    def compute(self) -> MetricEntry:
        """The split's closing entry: ``{area},final`` (nothing when no batch was seen)."""
        if not self._counters:
            return not_available_entry(self.name, self.unit)
        area = self._area()
        return MetricEntry(
            self.name, format_entry(area, "N/A", self.unit), NumericEntry.Final(area).serialize()
        )
