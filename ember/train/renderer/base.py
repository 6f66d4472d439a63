"""What the training loop tells a progress display.

The loop drives a `MetricsRenderer` (Burn's `MetricsRenderer` trait): once per batch it
hands over one `MetricState` per metric (`update_train` / `update_valid`), then a
`TrainingProgress` (`render_train` / `render_valid`). Split and training boundaries,
status messages and the final summary come through the `on_*` hooks, and `close()`
restores the terminal whatever happened. How a display is chosen: `default.py`.

The small formatting helpers used by both renderers live here too, so the CLI lines and
the dashboard print numbers, durations and rates the same way.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ember.data.progress import Progress
from ember.train.metric.format import format_float

__all__ = [
    "ENV_VAR",
    "MetricState",
    "MetricsRenderer",
    "TrainingProgress",
    "estimate_total_batches",
    "format_duration",
    "format_metric_value",
    "format_number",
    "format_rate",
    "is_tty",
]

#: Environment variable that forces a renderer: ``cli``, ``tui`` or ``auto`` (the default).
ENV_VAR = "EMBER_RENDERER"


@dataclass(frozen=True)
class TrainingProgress:
    """Where the loop stands when it renders a batch.

    Args:
        progress: items processed so far / items in the current split.
        epoch: the current epoch, 1-based.
        epoch_total: the number of epochs of the whole training.
        iteration: the 1-based index of the batch in the split.
        split: the split's name, ``"train"`` or ``"valid"`` (``"test"`` for an evaluator).
    """

    progress: Progress
    epoch: int
    epoch_total: int
    iteration: int
    split: str


@dataclass(frozen=True)
class MetricState:
    """One metric's display state after a batch.

    Args:
        name: the metric's display name (``"Loss"``, ``"Accuracy"``...).
        formatted: the display string, ``epoch {running} {unit} - batch {current} {unit}``
            (``MetricEntry.formatted``); for a text metric, its text.
        current: numeric metrics: the value of the last batch; None for text metrics.
        running: numeric metrics: the running aggregate of the split so far.
        unit: the unit shown after the value (``"%"``, ``"iter/sec"``), or None.
        higher_is_better: whether larger values are better, or None when unknown.
    """

    name: str
    formatted: str
    current: float | None
    running: float | None
    unit: str | None = None
    higher_is_better: bool | None = None

    @property
    def numeric(self) -> bool:
        """True when the metric carries a number (and so can be plotted)."""
        return self.current is not None or self.running is not None


@runtime_checkable
class MetricsRenderer(Protocol):
    """The progress display the training loop drives (Burn's `MetricsRenderer`)."""

    def on_train_start(self, num_epochs: int, starting_epoch: int) -> None:
        """Training begins: `num_epochs` in all, the first one run is `starting_epoch`."""

    def on_split_start(self, split: str, epoch: int, num_items: int) -> None:
        """A pass over `split` begins in `epoch`, over `num_items` items."""

    def update_train(self, state: MetricState) -> None:
        """A train metric's state after the current batch."""

    def update_valid(self, state: MetricState) -> None:
        """A valid metric's state after the current batch."""

    def render_train(self, progress: TrainingProgress) -> None:
        """A train batch is done (called once per batch, after its updates)."""

    def render_valid(self, progress: TrainingProgress) -> None:
        """A valid batch is done (called once per batch, after its updates)."""

    def on_split_end(self, split: str, epoch: int) -> None:
        """The pass over `split` in `epoch` has ended."""

    def on_message(self, text: str) -> None:
        """A status line (resume, interrupt, checkpoint) to show the user."""

    def on_train_end(self, summary: str | None) -> None:
        """Training is over; `summary` is the summary text, None when it is turned off."""

    def close(self) -> None:
        """Release the display and restore the terminal; idempotent."""


def lane_of(split: str) -> str:
    """Which set of metric states a split uses: train, or valid for any other split."""
    return "train" if split == "train" else "valid"


class LaneRenderer:
    """The per-lane half of `MetricsRenderer` shared by the renderers: ``update_*`` and
    ``render_*`` hand the lane (``"train"``/``"valid"``) to ``_update`` and ``_render``."""

    def _update(self, lane: str, state: MetricState) -> None:
        raise NotImplementedError

    def _render(self, lane: str, progress: TrainingProgress) -> None:
        raise NotImplementedError

    def update_train(self, state: MetricState) -> None:
        """Record a train metric's latest state.

        Args:
            state: the metric's state after the current batch.
        """
        self._update("train", state)

    def update_valid(self, state: MetricState) -> None:
        """Record a valid metric's latest state.

        Args:
            state: the metric's state after the current batch.
        """
        self._update("valid", state)

    def render_train(self, progress: TrainingProgress) -> None:
        """A train batch is done: show its progress when the display is due.

        Args:
            progress: where the train split stands.
        """
        self._render("train", progress)

    def render_valid(self, progress: TrainingProgress) -> None:
        """A valid batch is done: show its progress when the display is due.

        Args:
            progress: where the valid split stands.
        """
        self._render("valid", progress)


# ----------------------------------------------------------------------------------------
# Formatting shared by the renderers
# ----------------------------------------------------------------------------------------


#: Burn's TUI number format; the same function as ``ember.train.metric.format_float``.
format_number = format_float


def format_metric_value(value: float | None, unit: str | None, precision: int = 2) -> str:
    """A metric value with its unit (``"81.25 %"``), or ``"-"`` when there is none.

    Args:
        value: the number, or None.
        unit: appended after a space when given.
        precision: digits after the decimal point.
    """
    if value is None:
        return "-"
    text = format_float(value, precision)
    return f"{text} {unit}" if unit else text


def format_duration(seconds: float | None) -> str:
    """``H:MM:SS`` (hours unbounded, so the text never contains a space), ``?`` if unknown.

    Args:
        seconds: the duration, or None / a non-finite number when unknown.
    """
    if seconds is None or not math.isfinite(seconds):
        return "?"
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def format_rate(rate: float | None) -> str:
    """An iteration speed: one decimal from 1 it/s up, three below, ``?`` if unknown.

    Args:
        rate: iterations per second, or None.
    """
    if rate is None or not math.isfinite(rate) or rate < 0:
        return "?"
    return f"{rate:.1f}" if rate >= 1 else f"{rate:.3f}"


def rate_and_eta(
    progress: TrainingProgress | None, elapsed: float | None
) -> tuple[float | None, float | None]:
    """Batches per second and seconds left in the split, each None when unknown.

    Args:
        progress: where the split stands, or None before its first batch.
        elapsed: seconds since the split started.
    """
    if progress is None or elapsed is None or elapsed <= 0:
        return None, None
    done, total = progress.progress.items_processed, progress.progress.items_total
    eta = (total - done) * elapsed / done if done > 0 else None
    return progress.iteration / elapsed, eta


def estimate_total_batches(progress: TrainingProgress) -> int | None:
    """The number of batches in the split, inferred from the batches seen so far.

    The loop does not say how many batches a split has, but every batch but the last is
    full, so ``ceil(items_total / (items_processed / iteration))`` is exact until the last
    batch and at it.

    Args:
        progress: the current progress; None is returned before any item was processed.
    """
    done, total = progress.progress.items_processed, progress.progress.items_total
    if done <= 0 or progress.iteration <= 0 or total <= 0:
        return None
    if done >= total:
        return progress.iteration
    per_batch = done / progress.iteration
    return max(progress.iteration, math.ceil(total / per_batch - 1e-9))


# ----------------------------------------------------------------------------------------
# Choosing a renderer
# ----------------------------------------------------------------------------------------


def is_tty(stream: object) -> bool:
    """Whether `stream` is an interactive terminal (False for anything that cannot tell).

    A ``TERM=dumb`` terminal counts as no terminal: it cannot move the cursor.

    Args:
        stream: a file-like object.
    """
    isatty = getattr(stream, "isatty", None)
    if isatty is None:
        return False
    try:
        tty = bool(isatty())
    except (ValueError, OSError):  # a closed or detached stream
        return False
    return tty and os.environ.get("TERM", "").lower() != "dumb"
