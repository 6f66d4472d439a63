"""``LossMetric`` (Burn's ``metric/loss.rs``): the mean loss of each batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._array import shape_of, to_numpy
from .base import MetricEntry, MetricMetadata, WeightedMetric

__all__ = ["LossInput", "LossMetric"]


@dataclass
class LossInput:
    """What :class:`LossMetric` needs.

    Args:
        tensor: the loss, a scalar or one value per sample.
    """

    tensor: Any


class LossMetric(WeightedMetric):
    """``Loss``: the mean of the batch's loss, weighted by its first dimension (1 for a
    scalar loss, as Burn's ``loss.dims()[0]`` of a one-element loss), lower is better."""

    name = "Loss"
    input_type = LossInput
    unit = None
    higher_is_better = False

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Add one batch's loss.

        Args:
            item: an output adaptable to :class:`LossInput`.
            metadata: unused.
        """
        loss = self.adapt_input(item).tensor
        shape = shape_of(loss)
        values = to_numpy(loss).astype(np.float64)
        if values.size == 0:
            raise ValueError(f"LossMetric: the loss is empty (shape {list(shape)})")
        count = shape[0] if shape else 1
        self._state.update(float(values.mean()), int(count))
        return self._entry()
