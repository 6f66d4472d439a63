"""``TopKAccuracyMetric`` (Burn's ``metric/top_k_acc.rs``): target among the k highest scores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._array import shape_of, topk_rows
from .accuracy import PaddedTargetMetric
from .base import MetricEntry

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


class TopKAccuracyMetric(PaddedTargetMetric):
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

    @property
    def name(self) -> str:
        return f"Top-K Accuracy @ TopK({self.k})"

    def _measure(self, inp: TopKAccuracyInput, targets: np.ndarray, valid: np.ndarray) -> MetricEntry:
        classes = shape_of(inp.outputs)[1]
        if self.k > classes:
            raise ValueError(f"TopKAccuracyMetric: k={self.k} exceeds the {classes} classes of the outputs")
        hits = (topk_rows(inp.outputs, self.k) == targets[:, None]).any(axis=1)
        return self._add_hits(hits, valid)
