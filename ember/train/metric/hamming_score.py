"""``HammingScore`` (Burn's ``metric/hamming.rs``): share of label cells predicted right."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._array import check_same_shape, to_numpy
from .base import MetricEntry, MetricMetadata, WeightedMetric
from .format import format_f32

__all__ = ["HammingScore", "HammingScoreInput"]


@dataclass
class HammingScoreInput:
    """What :class:`HammingScore` needs.

    Args:
        outputs: ``[B, C]`` scores (probabilities, or logits with ``with_sigmoid(True)``).
        targets: ``[B, C]`` 0/1 labels.
    """

    outputs: Any
    targets: Any


class HammingScore(WeightedMetric):
    """``Hamming Score @ Threshold(t)`` in %: mean over cells of ``(score > t) == label``,
    weighted by the batch size, higher is better.

    The threshold is an ``f32``, as in Burn (the name prints it as Rust's ``f32`` Display).
    """

    input_type = HammingScoreInput
    unit = "%"
    higher_is_better = True

    def __init__(self) -> None:
        super().__init__()
        self.threshold = float(np.float32(0.5))
        self.sigmoid = False

    def with_threshold(self, threshold: float) -> "HammingScore":
        """Predict a label when its score is above ``threshold``.

        Args:
            threshold: the cut-off (stored as f32).
        """
        self.threshold = float(np.float32(threshold))
        return self

    def with_sigmoid(self, sigmoid: bool) -> "HammingScore":
        """Apply a sigmoid to the outputs first (when they are logits).

        Args:
            sigmoid: whether to apply it.
        """
        self.sigmoid = bool(sigmoid)
        return self

    @property
    def name(self) -> str:
        return f"Hamming Score @ Threshold({format_f32(self.threshold)})"

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Add one batch.

        Args:
            item: an output adaptable to :class:`HammingScoreInput`.
            metadata: unused.
        """
        inp = self.adapt_input(item)
        batch, _ = check_same_shape("HammingScore", "outputs", inp.outputs, inp.targets)
        scores = to_numpy(inp.outputs)
        if self.sigmoid:
            # tanh form: no overflow warning for large negative logits
            scores = 0.5 * (1.0 + np.tanh(0.5 * scores.astype(np.float64)))
        predicted = scores > self.threshold
        right = np.count_nonzero(predicted == to_numpy(inp.targets).astype(bool))
        cells = predicted.size
        value = 100.0 * right / cells if cells else 0.0
        self._state.update(value, batch)
        return self._entry()
