"""``TopKAccuracyMetric`` (Burn's ``metric/top_k_acc.rs``): target among the k highest scores."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._array import to_numpy, topk_rows
from .accuracy import check_scores_and_targets, count_valid
from .base import MetricEntry, MetricMetadata, WeightedMetric

__all__ = ["TopKAccuracyInput", "TopKAccuracyMetric"]


@dataclass
class TopKAccuracyInput:
    """What :class:`TopKAccuracyMetric` needs.

    Args:
        outputs: ``[B, C]`` scores.
        targets: ``[B]`` class indices.
    """

    outputs: Any
    targets: Any


class TopKAccuracyMetric(WeightedMetric):
    """``Top-K Accuracy @ TopK(k)`` in %, higher is better; pad handling as :class:`AccuracyMetric`.

    Args:
        k: how many of the highest scores may hold the target (>= 1).
    """

    input_type = TopKAccuracyInput
    unit = "%"
    higher_is_better = True

    def __init__(self, k: int) -> None:
        super().__init__()
        if int(k) < 1:
            raise ValueError(f"TopKAccuracyMetric: k must be >= 1, got {k}")
        self.k = int(k)
        self.pad_token: int | None = None

    def with_pad_token(self, index: int) -> "TopKAccuracyMetric":
        """Ignore the samples whose target is ``index``.

        Args:
            index: the padding token / class index.
        """
        self.pad_token = int(index)
        return self

    @property
    def name(self) -> str:
        return f"Top-K Accuracy @ TopK({self.k})"

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Add one batch.

        Args:
            item: an output adaptable to :class:`TopKAccuracyInput`.
            metadata: unused.
        """
        inp = self.adapt_input(item)
        _, classes = check_scores_and_targets("TopKAccuracyMetric", inp.outputs, inp.targets)
        if self.k > classes:
            raise ValueError(f"TopKAccuracyMetric: k={self.k} exceeds the {classes} classes of the outputs")
        top = topk_rows(inp.outputs, self.k)
        targets = to_numpy(inp.targets).astype(np.int64)
        valid = count_valid(targets, self.pad_token)
        hit = (top == targets[:, None]).any(axis=1) & valid
        correct, weight = int(np.count_nonzero(hit)), int(np.count_nonzero(valid))
        value = 100.0 * correct / weight if weight else 0.0
        self._state.update(value, weight, weighted_sum=100.0 * correct)
        return self._entry()
