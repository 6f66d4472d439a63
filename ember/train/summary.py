"""The table printed at the end of training (Burn's ``LearnerSummary``, ``learner/summary.rs``):
for each split and numeric metric, the best and worst epoch aggregates and their epochs, and
(beyond Burn, not printed) the last epoch's value. NaN epochs are never hidden: a metric whose
every epoch is NaN keeps its row, with NaN, and the epochs with a NaN aggregate are listed under
the table."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ember.train.store import MetricsStore

__all__ = ["LearnerSummary", "MetricSummary"]


@dataclass(frozen=True)
class MetricSummary:
    """One row: the lowest and highest epoch aggregates (NaN epochs ignored unless every
    epoch is NaN), the last epoch's aggregate (``last_value``, NaN included) and the epochs
    whose aggregate is NaN (``nan_epochs``)."""

    split: str
    name: str
    min_value: float
    min_epoch: int
    max_value: float
    max_epoch: int
    last_value: float = math.nan
    last_epoch: int = 0
    nan_epochs: tuple[int, ...] = ()


def _fmt(value: float) -> str:
    if math.isfinite(value) and value != 0 and abs(value) < 1e-2:
        return f"{value:<9.3e}"
    return f"{value:<9.3f}"


@dataclass
class LearnerSummary:
    """Min/max of every numeric metric per split over the epochs of the run.

    Args:
        model: the model's description (``str(model)``).
        epochs: the number of epochs trained.
        metrics: one :class:`MetricSummary` per split and metric.
    """

    model: str
    epochs: int
    metrics: list[MetricSummary] = field(default_factory=list)

    @classmethod
    def from_store(
        cls, store: MetricsStore, names: dict[str, list[str]], model: str, epochs: int
    ) -> "LearnerSummary":
        """Build from the aggregates of epochs ``1..epochs``.

        Args:
            names: split -> metric names (numeric metrics only).
        """
        rows = []
        for split in ("train", "valid"):
            for name in sorted(names.get(split, ())):
                logged = store.epochs(name, split, epochs)
                if not logged:
                    continue
                last = logged[-1]
                nan_epochs = tuple(e for e, v in logged if math.isnan(v))
                values = [(e, v) for e, v in logged if not math.isnan(v)]
                if not values:  # every epoch NaN: a NaN row says so, dropping it would hide it
                    lo = hi = (last[0], math.nan)
                else:
                    lo = min(values, key=lambda ev: (ev[1], ev[0]))
                    hi = max(values, key=lambda ev: (ev[1], -ev[0]))
                rows.append(
                    MetricSummary(split, name, lo[1], lo[0], hi[1], hi[0], last[1], last[0], nan_epochs)
                )
        return cls(model, epochs, rows)

    def get(self, split: str, name: str) -> MetricSummary:
        """The row of metric ``name`` (exact, as registered: ``"Accuracy"``) on ``split``.

        Raises:
            KeyError: an unknown split or name; the message lists the valid ones.
        """
        splits = sorted({row.split for row in self.metrics})
        if split not in splits:
            raise KeyError(
                f"LearnerSummary.get: no split {split!r} in the summary; splits: {splits or 'none'}"
            )
        for row in self.metrics:
            if row.split == split and row.name == name:
                return row
        names = [row.name for row in self.metrics if row.split == split]
        raise KeyError(f"LearnerSummary.get: no metric {name!r} on split {split!r}; metrics: {names}")

    def __str__(self) -> str:
        width = max([len(r.name) for r in self.metrics] + [6])
        lines = [
            "=" * 24 + " Learner Summary " + "=" * 24,
            "Model:",
            self.model,
            f"Total Epochs: {self.epochs}",
            "",
            "",
            f"| Split | {'Metric':<{width}} | Min.      | Epoch     | Max.      | Epoch     |",
            f"|-------|{'-' * (width + 2)}|-----------|-----------|-----------|-----------|",
        ]
        for r in self.metrics:
            lines.append(
                f"| {r.split.capitalize():<5} | {r.name:<{width}} | {_fmt(r.min_value)} | "
                f"{r.min_epoch:<9} | {_fmt(r.max_value)} | {r.max_epoch:<9} |"
            )
        nan_rows = [r for r in self.metrics if r.nan_epochs]
        if nan_rows:
            lines.append("")
            lines.append("NaN epoch aggregates (not in Min./Max.):")
            for r in nan_rows:
                lines.append(f"  {r.split.capitalize()} {r.name}: epochs {', '.join(map(str, r.nan_epochs))}")
        return "\n".join(lines)
