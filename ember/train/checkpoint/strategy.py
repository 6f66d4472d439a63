"""Which checkpoints to write and which to delete after each epoch (Burn's
``CheckpointingStrategy``, ``checkpoint/strategy/*.rs``)."""

from __future__ import annotations

from dataclasses import dataclass

from ember.train.store import Aggregate, Direction, MetricsStore, MetricWatcher, Split

__all__ = [
    "CheckpointingAction",
    "CheckpointingStrategy",
    "ComposedCheckpointingStrategy",
    "KeepLastNCheckpoints",
    "MetricCheckpointingStrategy",
]


@dataclass(frozen=True)
class CheckpointingAction:
    """``Save`` (the current epoch) or ``Delete(epoch)``."""

    kind: str
    epoch: int | None = None

    @staticmethod
    def save() -> "CheckpointingAction":
        return CheckpointingAction("save")

    @staticmethod
    def delete(epoch: int) -> "CheckpointingAction":
        return CheckpointingAction("delete", int(epoch))


class CheckpointingStrategy:
    """Base: ``checkpointing(epoch, store) -> [CheckpointingAction]``."""

    def checkpointing(self, epoch: int, store: MetricsStore) -> list[CheckpointingAction]:
        raise NotImplementedError


class KeepLastNCheckpoints(CheckpointingStrategy):
    """Save every epoch and delete the one ``n`` epochs back.

    Args:
        n: how many recent checkpoints to keep (>= 1).
    """

    def __init__(self, n: int):
        if int(n) < 1:
            raise ValueError(f"KeepLastNCheckpoints: n must be >= 1, got {n}")
        self.n = int(n)

    def checkpointing(self, epoch, store):
        actions = [CheckpointingAction.save()]
        if epoch - self.n > 0:
            actions.append(CheckpointingAction.delete(epoch - self.n))
        return actions

    def __repr__(self) -> str:
        return f"KeepLastNCheckpoints({self.n})"


class MetricCheckpointingStrategy(MetricWatcher, CheckpointingStrategy):
    """Keep the checkpoint of the best epoch by a metric: save when the current epoch is the
    best so far, delete the previous best.

    Args:
        metric: a metric instance or its name (``LossMetric()`` or ``"Loss"``).
        aggregate: how an epoch's values are reduced (``Aggregate.Mean``).
        direction: ``Direction.Lowest`` or ``Direction.Highest``.
        split: ``Split.Valid`` or ``Split.Train``.
    """

    def __init__(
        self,
        metric,
        aggregate: Aggregate = Aggregate.Mean,
        direction: Direction = Direction.Lowest,
        split: Split = Split.Valid,
    ):
        self._watch(metric, aggregate, direction, split)
        self._best_epoch: int | None = None

    def checkpointing(self, epoch, store):
        found = store.best_epoch(self.name, self.split, self.direction, epoch)
        best = found[0] if found else epoch
        current = self._best_epoch
        if current is None and epoch > 1:  # a resumed run: the best among the earlier epochs
            earlier = store.best_epoch(self.name, self.split, self.direction, epoch - 1)
            current = earlier[0] if earlier else None
        actions = []
        if current is not None and current != best:
            actions.append(CheckpointingAction.delete(current))
        if best == epoch:
            actions.append(CheckpointingAction.save())
        self._best_epoch = best
        return actions

    def __repr__(self) -> str:
        return f"MetricCheckpointingStrategy({self._watched()})"


class ComposedCheckpointingStrategy(CheckpointingStrategy):
    """Several strategies: save if any saves; delete an epoch only once every strategy has
    flagged it (asked to delete it, now or earlier, or did not want it saved), so one that
    still keeps an epoch — the best so far — protects it.

    Build with ``ComposedCheckpointingStrategy.builder().add(a).add(b).build()`` or from a list.
    """

    def __init__(self, strategies: list[CheckpointingStrategy]):
        if not strategies:
            raise ValueError("ComposedCheckpointingStrategy: give at least one strategy")
        self.strategies = list(strategies)
        self._asked: dict[int, set[int]] = {}  # epoch -> indices of strategies that flagged it

    class _Builder:
        def __init__(self):
            self._strategies: list[CheckpointingStrategy] = []

        def add(self, strategy: CheckpointingStrategy) -> "ComposedCheckpointingStrategy._Builder":
            self._strategies.append(strategy)
            return self

        def build(self) -> "ComposedCheckpointingStrategy":
            return ComposedCheckpointingStrategy(self._strategies)

    @classmethod
    def builder(cls) -> "ComposedCheckpointingStrategy._Builder":
        return cls._Builder()

    def checkpointing(self, epoch, store):
        saved, to_check = False, []
        for index, strategy in enumerate(self.strategies):
            acts = strategy.checkpointing(epoch, store)
            if not acts:  # this strategy does not want the epoch: it counts as deleted for it
                self._asked.setdefault(epoch, set()).add(index)
            for a in acts:
                if a.kind == "save":
                    saved = True
                else:
                    self._asked.setdefault(a.epoch, set()).add(index)
                    to_check.append(a.epoch)
        actions = [CheckpointingAction.save()] if saved else []
        for old_epoch in to_check:
            if len(self._asked.get(old_epoch, ())) == len(self.strategies):
                actions.append(CheckpointingAction.delete(old_epoch))
                del self._asked[old_epoch]
        return actions

    def __repr__(self) -> str:
        return f"ComposedCheckpointingStrategy({self.strategies!r})"
