"""``IterationSpeedMetric`` (Burn's ``metric/iteration.rs``): iterations per second."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .base import MetricEntry, MetricMetadata, WeightedMetric

__all__ = ["IterationSpeedMetric"]


class IterationSpeedMetric(WeightedMetric):
    """``Iteration Speed`` in ``iter/sec``: ``metadata.iteration / seconds since the first
    update`` of the split (the first update starts the clock and reports 0), weight 1.

    Args:
        clock: seconds as a float; ``time.perf_counter`` unless a test injects one.
    """

    name = "Iteration Speed"
    input_type = None
    unit = "iter/sec"
    higher_is_better = True

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__()
        self._clock = clock
        self._start: float | None = None

    def clear(self) -> None:
        # Burn resets only the clock here; the running mean is reset too, per split.
        super().clear()
        self._start = None

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Measure the speed so far.

        Args:
            item: ignored.
            metadata: carries the 1-based ``iteration``.
        """
        now = self._clock()
        if self._start is None:
            self._start = now
            speed = 0.0
        else:
            elapsed = now - self._start
            speed = metadata.iteration / elapsed if elapsed > 0 else 0.0
        self._state.update(speed, 1)
        return self._entry()
