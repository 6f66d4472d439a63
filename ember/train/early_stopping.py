"""Stop training when a metric stops improving (Burn's ``MetricEarlyStoppingStrategy``,
``learner/early_stopping.rs``)."""

from __future__ import annotations

from dataclasses import dataclass

from ember.train.store import Aggregate, Direction, MetricsStore, MetricWatcher, Split

__all__ = ["EarlyStoppingStrategy", "MetricEarlyStoppingStrategy", "StoppingCondition"]


@dataclass(frozen=True)
class StoppingCondition:
    """``StoppingCondition.no_improvement_since(n)``: stop after ``n`` epochs without a new best."""

    n_epochs: int

    @classmethod
    def no_improvement_since(cls, n_epochs: int) -> "StoppingCondition":
        if int(n_epochs) < 1:
            raise ValueError(f"StoppingCondition: n_epochs must be >= 1, got {n_epochs}")
        return cls(int(n_epochs))

    NoImprovementSince = no_improvement_since


class EarlyStoppingStrategy:
    """Base: ``should_stop(epoch, store) -> bool`` after each epoch."""

    def should_stop(self, epoch: int, store: MetricsStore) -> bool:
        raise NotImplementedError


class MetricEarlyStoppingStrategy(MetricWatcher, EarlyStoppingStrategy):
    """Stop when ``metric`` has not improved on its best for ``no_improvement_since`` epochs.

    Args:
        metric: a metric instance or its name.
        aggregate: ``Aggregate.Mean``.
        direction: ``Direction.Lowest`` (loss) or ``Direction.Highest`` (accuracy).
        split: ``Split.Valid`` or ``Split.Train``.
        no_improvement_since: epochs without a new best before stopping (or pass
            ``condition=StoppingCondition.no_improvement_since(n)``).
        condition: alternative to ``no_improvement_since``.
    """

    def __init__(
        self,
        metric,
        aggregate: Aggregate = Aggregate.Mean,
        direction: Direction = Direction.Lowest,
        split: Split = Split.Valid,
        no_improvement_since: int | None = None,
        condition: StoppingCondition | None = None,
    ):
        if (no_improvement_since is None) == (condition is None):
            raise ValueError(
                "MetricEarlyStoppingStrategy: give exactly one of no_improvement_since=n "
                "or condition=StoppingCondition.no_improvement_since(n)"
            )
        self.condition = condition or StoppingCondition.no_improvement_since(no_improvement_since)
        self._watch(metric, aggregate, direction, split)
        self.warmup_epochs: int | None = None
        self.best_epoch = 1
        self.best_value: float | None = None

    def with_warmup_epochs(self, epochs: int | None) -> "MetricEarlyStoppingStrategy":
        """Never stop during the first ``epochs`` epochs."""
        self.warmup_epochs = None if epochs is None else int(epochs)
        return self

    def should_stop(self, epoch: int, store: MetricsStore) -> bool:
        value = store.aggregate(self.name, epoch, self.split, self.aggregate)
        if value is None:
            raise ValueError(
                f"early stopping: no {self.split.value} aggregate of metric {self.name!r} for "
                f"epoch {epoch}; register that metric on that split"
            )
        if self.best_value is None or self.direction.better(value, self.best_value):
            self.best_value, self.best_epoch = value, epoch
            return False
        if self.warmup_epochs is not None and epoch <= self.warmup_epochs:
            return False
        return epoch - self.best_epoch >= self.condition.n_epochs

    def __repr__(self) -> str:
        return (
            f"MetricEarlyStoppingStrategy({self._watched()}, no_improvement_since={self.condition.n_epochs})"
        )
