"""Epoch aggregates of the metrics, and the names used to select one (Burn's
``MetricsStore``, ``Aggregate``, ``Direction``, ``Split``; ``metric/store/``).

The aggregates of the epochs run in this process are kept in memory as each split ends;
those of earlier epochs (a resumed run) are read back from the metric log files, the way
Burn reads them: the ``final`` line when there is one, else the count-weighted mean.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable

__all__ = ["Aggregate", "Direction", "MetricsStore", "Split"]


class Aggregate(enum.Enum):
    """How one epoch's values are reduced to a number (Burn has only the mean)."""

    Mean = "mean"


class Direction(enum.Enum):
    """Which way a metric improves."""

    Lowest = "lowest"
    Highest = "highest"

    def better(self, candidate: float, best: float) -> bool:
        if self is Direction.Lowest:
            return candidate < best
        return candidate > best


class Split(enum.Enum):
    Train = "train"
    Valid = "valid"

    @classmethod
    def of(cls, value) -> "Split":
        if isinstance(value, Split):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            raise ValueError(f"unknown split {value!r}; expected 'train' or 'valid'") from None


def metric_name(metric) -> str:
    """A metric instance's ``name`` or a plain string."""
    if isinstance(metric, str):
        return metric
    name = getattr(metric, "name", None)
    if not isinstance(name, str):
        raise TypeError(f"expected a metric (with a `name`) or a metric name, got {type(metric).__name__}")
    return name


class MetricWatcher:
    """Mixin of the strategies that follow one metric's epoch aggregates (best-epoch
    checkpointing, early stopping): which metric, reduced how, which direction is better,
    on which split."""

    def _watch(self, metric, aggregate: Aggregate, direction: Direction, split: Split) -> None:
        self.name = metric_name(metric)
        self.aggregate = aggregate
        self.direction = direction
        self.split = Split.of(split)

    def _watched(self) -> str:
        """The watched metric as the strategies' reprs show it."""
        return f"{self.name!r}, {self.direction.name}, {self.split.name}"


class MetricsStore:
    """``(split, metric name, epoch) -> aggregate``.

    Args:
        reader: ``reader(split, name, epoch) -> float | None`` for epochs not seen in this
            process (the file metric logger's reader); None means memory only.
    """

    def __init__(self, reader: Callable[[str, str, int], float | None] | None = None):
        self._values: dict[tuple[str, str, int], float] = {}
        self._reader = reader

    def record(self, split: str, name: str, epoch: int, value: float) -> None:
        self._values[(Split.of(split).value, name, int(epoch))] = float(value)

    def aggregate(self, name, epoch: int, split, aggregate: Aggregate = Aggregate.Mean) -> float | None:
        """The epoch's aggregate of metric ``name`` on ``split``, or None if it was not logged."""
        if aggregate is not Aggregate.Mean:
            raise ValueError(f"unsupported aggregate {aggregate!r}")
        key = (Split.of(split).value, metric_name(name), int(epoch))
        if key in self._values:
            return self._values[key]
        if self._reader is not None:
            value = self._reader(key[0], key[1], key[2])
            if value is not None:
                self._values[key] = value
            return value
        return None

    def epochs(self, name, split, last_epoch: int) -> list[tuple[int, float]]:
        """``(epoch, value)`` for every epoch ``1..last_epoch`` that has the metric."""
        out = []
        for epoch in range(1, last_epoch + 1):
            value = self.aggregate(name, epoch, split)
            if value is not None:
                out.append((epoch, value))
        return out

    def best_epoch(self, name, split, direction: Direction, last_epoch: int) -> tuple[int, float] | None:
        """The epoch with the best finite aggregate (the first one on ties), as Burn's ``find_epoch``."""
        best = None
        for epoch, value in self.epochs(name, split, last_epoch):
            if math.isnan(value):
                continue
            if best is None or direction.better(value, best[1]):
                best = (epoch, value)
        return best
