"""The metric interface (Burn's ``metric/base.rs``): ``Metric``, ``NumericMetric``, their entries.

A metric receives the synced item of every batch (``update(item, metadata)``), converts it
to the input it needs through ``item.adapt(InputType)``, and returns a :class:`MetricEntry`:
the display string and the line for the ``.log`` file. Numeric metrics also expose their
last batch value and the exact aggregate of the split so far as :class:`NumericEntry`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from ember.data import Progress

from .format import format_f64, format_float

__all__ = [
    "Metric",
    "MetricEntry",
    "MetricMetadata",
    "NumericEntry",
    "NumericMetric",
    "WeightedMetric",
    "WeightedState",
    "format_entry",
    "format_f64",
    "format_float",
    "not_available_entry",
]


@dataclass(frozen=True)
class MetricMetadata:
    """What the loop knows about the batch being measured (Burn's ``MetricMetadata``).

    Args:
        progress: items processed / total in the current split.
        epoch: 1-based epoch.
        epoch_total: number of epochs of the run.
        iteration: 1-based index of the batch in the split.
        lr: the learning rate used for this batch, None when there is none (validation).
    """

    progress: "Progress"
    epoch: int
    epoch_total: int
    iteration: int
    lr: float | None = None

    @classmethod
    def fake(cls, iteration: int = 1, lr: float | None = None) -> "MetricMetadata":
        """Metadata for tests and examples: one item processed out of one, epoch 1 of 1.

        Args:
            iteration: the batch index to report.
            lr: the learning rate to report.
        """
        return cls(Progress(1, 1), 1, 1, iteration, lr)


@dataclass(frozen=True)
class MetricEntry:
    """One metric's state after an update.

    Args:
        name: the metric's name (also its ``.log`` file name, spaces replaced by ``_``).
        formatted: the display string, e.g. ``epoch 84.12 % - batch 84.38 %``.
        serialized: the ``.log`` line for this iteration; None writes nothing (AUROC's "N/A").
    """

    name: str
    formatted: str
    serialized: str | None


class NumericEntry:
    """A numeric value as logged: ``NumericEntry.Value(v)``, ``NumericEntry.Aggregated(value,
    count)`` or ``NumericEntry.Final(value)`` (Burn's ``NumericEntry``).

    ``serialize()`` gives the ``.log`` text (``v`` / ``v,count`` / ``v,final``, numbers in
    Rust's f64 Display) and ``NumericEntry.deserialize(line)`` reads it back.
    """

    # The three variants are the subclasses below, attached once they exist.
    Value: ClassVar[type["NumericEntry"]]
    Aggregated: ClassVar[type["NumericEntry"]]
    Final: ClassVar[type["NumericEntry"]]

    value: float

    def current(self) -> float:
        """The number the entry carries (the aggregated value for ``Aggregated``)."""
        return self.value

    def serialize(self) -> str:
        raise NotImplementedError

    def better_than(self, other: "NumericEntry", higher_is_better: bool) -> bool:
        """Whether this entry beats ``other`` for a metric going the given way.

        Args:
            other: the entry to compare with.
            higher_is_better: the metric's direction.
        """
        return (self.current() > other.current()) == higher_is_better

    @staticmethod
    def deserialize(line: str) -> "NumericEntry":
        """Parse one ``.log`` line (``v``, ``v,count`` or ``v,final``).

        Args:
            line: the text; surrounding whitespace (a newline) is ignored.

        Raises:
            ValueError: the line is not a numeric entry; the message quotes it.
        """
        text = line.strip()
        parts = text.split(",")
        if len(parts) == 1:
            return _ValueEntry(_parse_f64(parts[0], text))
        if len(parts) == 2:
            if parts[1] == "final":
                return _FinalEntry(_parse_f64(parts[0], text))
            if not parts[1].isdigit() or not parts[1].isascii():
                raise ValueError(
                    f"NumericEntry.deserialize: the count in {text!r} is not a "
                    f"non-negative integer (expected 'value,count' or 'value,final')"
                )
            return _AggregatedEntry(_parse_f64(parts[0], text), int(parts[1]))
        raise ValueError(
            f"NumericEntry.deserialize: {text!r} has {len(parts)} comma-separated "
            f"fields; expected 'value', 'value,count' or 'value,final'"
        )


def _parse_f64(text: str, line: str) -> float:
    # Python's float() also takes '1_0' and surrounding spaces, which Rust's parser refuses.
    if "_" in text or text != text.strip() or not text:
        raise ValueError(f"NumericEntry.deserialize: {text!r} in {line!r} is not a number")
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"NumericEntry.deserialize: {text!r} in {line!r} is not a number") from None


@dataclass(frozen=True)
class _ValueEntry(NumericEntry):
    """A single value, serialized bare (``v``)."""

    value: float

    def serialize(self) -> str:
        return format_f64(self.value)


@dataclass(frozen=True)
class _AggregatedEntry(NumericEntry):
    """A batch value and the number of samples it stands for (``v,count``)."""

    value: float
    count: int

    @property
    def aggregated_value(self) -> float:
        """Burn's field name for :attr:`value`."""
        return self.value

    def serialize(self) -> str:
        return f"{format_f64(self.value)},{int(self.count)}"


@dataclass(frozen=True)
class _FinalEntry(NumericEntry):
    """The exact aggregate of a whole split (``v,final``)."""

    value: float

    def serialize(self) -> str:
        return f"{format_f64(self.value)},final"


for _variant, _name in ((_ValueEntry, "Value"), (_AggregatedEntry, "Aggregated"), (_FinalEntry, "Final")):
    _variant.__name__ = _variant.__qualname__ = f"NumericEntry.{_name}"
    setattr(NumericEntry, _name, _variant)


def format_entry(running: float, current: float | str, unit: str | None, precision: int = 2) -> str:
    """``epoch {running} {unit} - batch {current} {unit}`` with :func:`format_float`.

    Args:
        running: the split aggregate so far.
        current: the batch value, or a placeholder string such as ``"N/A"``.
        unit: appended after each number when not None.
        precision: decimals for :func:`format_float`.
    """

    def show(v: float | str) -> str:
        return v if isinstance(v, str) else format_float(v, precision)

    suffix = f" {unit}" if unit else ""
    return f"epoch {show(running)}{suffix} - batch {show(current)}{suffix}"


def not_available_entry(name: str, unit: str | None) -> MetricEntry:
    """Burn's ``N/A`` placeholder: shown, but nothing written to the log."""
    return MetricEntry(name, format_entry("N/A", "N/A", unit), None)


class Metric(ABC):
    """A metric of the training loop (Burn's ``Metric`` trait).

    Subclasses set :attr:`input_type` to the input class they need (None when they need
    nothing from the item, as the learning rate) and implement :attr:`name` (a class
    attribute where it does not depend on the configuration), :meth:`update` and :meth:`clear`.
    """

    numeric: ClassVar[bool] = False
    input_type: ClassVar[type | None] = None

    @property
    @abstractmethod
    def name(self) -> str:
        """Burn's display and file name, unique per configuration (``Top-K Accuracy @ TopK(5)``)."""

    @abstractmethod
    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Measure one batch.

        Args:
            item: the synced output of the step (converted with ``item.adapt(input_type)``).
            metadata: the batch's position and learning rate.
        """

    @abstractmethod
    def clear(self) -> None:
        """Forget the split's running state (called when a split starts)."""

    def adapt_input(self, item: Any) -> Any:
        """``item`` as this metric's :attr:`input_type` (an instance already is one).

        Raises:
            TypeError: the item cannot produce the input; names the item type and the metric.
        """
        wanted = self.input_type
        if wanted is None or isinstance(item, wanted):
            return item
        adapt = getattr(item, "adapt", None)
        who = f"{type(self).__name__} ('{self.name}')"
        if adapt is None:
            raise TypeError(
                f"{who} needs {wanted.__name__}, but got {type(item).__name__}, which has "
                f"no adapt(); give the output an adapt(input_type) method returning "
                f"{wanted.__name__}"
            )
        try:
            adapted = adapt(wanted)
        except TypeError as exc:
            raise TypeError(f"{who} cannot use {type(item).__name__}: {exc}") from exc
        if not isinstance(adapted, wanted):
            raise TypeError(
                f"{who} needs {wanted.__name__}, but {type(item).__name__}.adapt"
                f"({wanted.__name__}) returned {type(adapted).__name__}"
            )
        return adapted

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class NumericMetric(Metric):
    """A metric with a number per batch, plotted and summarised (Burn's ``Numeric``).

    Subclasses set :attr:`unit` and :attr:`higher_is_better` and implement :meth:`value`
    (the last batch) and :meth:`running_value` (the exact aggregate of the split so far).
    """

    numeric: ClassVar[bool] = True
    unit: ClassVar[str | None] = None
    higher_is_better: ClassVar[bool] = True
    # False for rank-based metrics (AUROC) whose batch value is Burn's "N/A".
    batch_value_available: ClassVar[bool] = True

    @abstractmethod
    def value(self) -> NumericEntry | None:
        """The last batch's value (``NumericEntry.Aggregated(value, count)`` for weighted
        metrics); None for a metric with no per-batch value (AUROC)."""

    @abstractmethod
    def running_value(self) -> NumericEntry:
        """The exact aggregate of the split so far, as ``NumericEntry.Final``."""

    def compute(self) -> MetricEntry:
        """The entry closing a split: ``{aggregate},final`` (Burn's ``Metric::compute``)."""
        running = self.running_value()
        batch = self.value() if self.batch_value_available else None
        current: float | str = batch.current() if batch is not None else "N/A"
        return MetricEntry(
            self.name, format_entry(running.current(), current, self.unit), running.serialize()
        )


class WeightedState:
    """Running weighted mean: each batch adds ``value × count`` (Burn's ``NumericMetricState``).

    A batch with count 0 (every sample padding) adds nothing, so it can never turn the
    aggregate into NaN.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.total = 0.0
        self.count = 0
        self.current = math.nan
        self.current_count = 0
        self.updates = 0

    def update(self, value: float, count: int, weighted_sum: float | None = None) -> None:
        """Add one batch.

        Args:
            value: the batch value.
            count: how many samples it stands for.
            weighted_sum: the exact ``value × count`` when the caller has it (integer counts).
        """
        if count > 0:
            self.total += value * count if weighted_sum is None else weighted_sum
            self.count += count
        self.current = float(value)
        self.current_count = int(count)
        self.updates += 1

    @property
    def running(self) -> float:
        """``Σ value·count / Σ count``; 0 when every batch so far had count 0, NaN before any."""
        if self.count:
            return self.total / self.count
        return 0.0 if self.updates else math.nan


class WeightedMetric(NumericMetric):
    """Base of the metrics aggregated as a count-weighted mean of batch values."""

    precision: ClassVar[int] = 2

    def __init__(self) -> None:
        self._state = WeightedState()

    def clear(self) -> None:
        self._state.reset()

    def value(self) -> NumericEntry:
        return NumericEntry.Aggregated(self._state.current, self._state.current_count)

    def running_value(self) -> NumericEntry:
        return NumericEntry.Final(self._state.running)

    def _entry(self) -> MetricEntry:
        state = self._state
        return MetricEntry(
            self.name,
            format_entry(state.running, state.current, self.unit, self.precision),
            self.value().serialize(),
        )
