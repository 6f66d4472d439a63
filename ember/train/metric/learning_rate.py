"""``LearningRateMetric`` (Burn's ``metric/learning_rate.rs``): the learning rate of each batch."""

from __future__ import annotations

from typing import Any

from .base import MetricEntry, MetricMetadata, WeightedMetric

__all__ = ["LearningRateMetric"]


class LearningRateMetric(WeightedMetric):
    """``Learning Rate``: ``metadata.lr`` (0 when the split has none), weight 1 per batch."""

    name = "Learning Rate"
    input_type = None
    unit = None
    higher_is_better = False

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Log the batch's learning rate.

        Args:
            item: ignored.
            metadata: carries ``lr``.
        """
        lr = metadata.lr
        self._state.update(float(lr) if lr is not None else 0.0, 1)
        return self._entry()
