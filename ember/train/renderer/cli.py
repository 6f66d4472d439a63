"""`CliMetricsRenderer`: plain, greppable progress lines for logs, pipes and CI.

Burn's CLI renderer prints ``Starting training for N epochs.``, ``Starting split 'train'
with N items.``, one debug line per item, ``Split ended.`` and ``Training ended.``. ember
prints the same boundary lines verbatim, but replaces the per-item flood with one progress
line at most every `interval` seconds (and always at the last batch of a split)::

    [train] epoch 2/5 batch 120/782 items 3840/25000 12.3 it/s ETA 0:00:54 | Loss epoch 0.52 - batch 0.48

and, when a split ends, one line with every metric's running (epoch) value::

    [train] epoch 2/5 ended in 0:01:05 | Loss 0.52 | Accuracy 81.25 %

Nothing here writes an ANSI escape, and every line is flushed, so ``tail -f`` and CI log
viewers show it as it happens.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import IO

from .base import (
    LaneRenderer,
    MetricState,
    TrainingProgress,
    estimate_total_batches,
    format_duration,
    format_metric_value,
    format_rate,
    lane_of,
    rate_and_eta,
)

__all__ = ["CliMetricsRenderer"]


class CliMetricsRenderer(LaneRenderer):
    """Progress as plain text lines (the renderer used when the output is no terminal).

    Args:
        stream: where the lines go; `sys.stdout` (looked up at each write, so redirections
            made later are honoured) when None.
        interval: the least number of seconds between two progress lines of a split; the
            first and the last batch of a split are always printed. 0 prints every batch.
        clock: a monotonic clock in seconds (tests inject a fake one).

    Raises:
        ValueError: `interval` is negative.
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval < 0:
            raise ValueError(f"CliMetricsRenderer: interval must be >= 0 seconds, got {interval}")
        self._stream = stream
        self._interval = float(interval)
        self._clock = clock
        self._lock = threading.Lock()  # status messages may come from other threads
        self._num_epochs: int | None = None
        # Per lane ("train"/"valid"): metric states by name, in first-seen order.
        self._states: dict[str, dict[str, MetricState]] = {"train": {}, "valid": {}}
        self._split_started: dict[str, float] = {}
        self._last_printed: dict[str, float] = {}
        self._last_progress: dict[str, TrainingProgress] = {}
        self._pending: dict[str, TrainingProgress] = {}  # rendered but not yet printed
        self._closed = False

    # -- output ----------------------------------------------------------------------------

    def _write(self, line: str) -> None:
        stream = self._stream if self._stream is not None else sys.stdout
        with self._lock:
            stream.write(line + "\n")
            stream.flush()

    # -- MetricsRenderer -------------------------------------------------------------------

    def on_train_start(self, num_epochs: int, starting_epoch: int) -> None:
        """Print ``Starting training for N epochs.``.

        Args:
            num_epochs: the number of epochs of the whole training.
            starting_epoch: the first epoch run (above 1 when resuming).
        """
        self._num_epochs = num_epochs
        # The resume notice, if any, comes from the loop through `on_message`.
        self._write(f"Starting training for {num_epochs} epochs.")

    def on_split_start(self, split: str, epoch: int, num_items: int) -> None:
        """Print ``Starting split '<split>' with N items.`` and reset the split's state.

        Args:
            split: the split's name.
            epoch: the current epoch (1-based).
            num_items: the number of items in the split.
        """
        lane = lane_of(split)
        self._states[lane] = {}  # metrics are cleared at split start, so are their states
        self._split_started[lane] = self._clock()
        self._last_printed.pop(lane, None)
        self._pending.pop(lane, None)
        self._last_progress.pop(lane, None)
        self._write(f"Starting split '{split}' with {num_items} items.")

    def on_split_end(self, split: str, epoch: int) -> None:
        """Print the split's last progress line if still owed, its metrics, ``Split ended.``.

        Args:
            split: the split's name.
            epoch: the current epoch (1-based).
        """
        lane = lane_of(split)
        pending = self._pending.pop(lane, None)
        if pending is not None:
            self._write(self._progress_line(lane, pending, self._clock()))
        self._write(self._summary_line(lane, split, epoch))
        self._write("Split ended.")

    def on_message(self, text: str) -> None:
        """Print a status line as is.

        Args:
            text: the message.
        """
        self._write(text)

    def on_train_end(self, summary: str | None) -> None:
        """Print ``Training ended.`` and then the summary, if any.

        Args:
            summary: the summary text, or None.
        """
        self._write("Training ended.")
        if summary:
            self._write(summary.rstrip("\n"))

    def close(self) -> None:
        """Flush the stream; safe to call any number of times."""
        if self._closed:
            return
        self._closed = True
        stream = self._stream if self._stream is not None else sys.stdout
        try:
            stream.flush()
        except (ValueError, OSError):  # already closed by its owner: nothing left to flush
            pass

    # -- lines -----------------------------------------------------------------------------

    def _update(self, lane: str, state: MetricState) -> None:
        self._states[lane][state.name] = state

    def _render(self, lane: str, progress: TrainingProgress) -> None:
        """Print a progress line of `lane` if one is due, else keep it for the split's end."""
        now = self._clock()
        self._last_progress[lane] = progress
        if lane not in self._split_started:  # rendered without on_split_start
            self._split_started[lane] = now
        last_batch = progress.progress.items_processed >= progress.progress.items_total
        previous = self._last_printed.get(lane)
        if previous is None or last_batch or now - previous >= self._interval:
            self._last_printed[lane] = now
            self._pending.pop(lane, None)
            self._write(self._progress_line(lane, progress, now))
        else:
            self._pending[lane] = progress

    def _progress_line(self, lane: str, progress: TrainingProgress, now: float) -> str:
        done = progress.progress.items_processed
        total = progress.progress.items_total
        rate, eta = rate_and_eta(progress, now - self._split_started.get(lane, now))
        batches = estimate_total_batches(progress)
        parts = [
            f"[{progress.split}] epoch {progress.epoch}/{progress.epoch_total}"
            f" batch {progress.iteration}/{batches if batches is not None else '?'}"
            f" items {done}/{total}"
            f" {format_rate(rate)} it/s ETA {format_duration(eta)}"
        ]
        parts += [f"{s.name} {s.formatted}" for s in self._states[lane].values()]
        return " | ".join(parts)

    def _summary_line(self, lane: str, split: str, epoch: int) -> str:
        last = self._last_progress.get(lane)
        epochs = (
            self._num_epochs
            if self._num_epochs is not None
            else (last.epoch_total if last is not None else None)
        )
        started = self._split_started.get(lane)
        took = self._clock() - started if started is not None else None
        head = f"[{split}] epoch {epoch}/{epochs if epochs is not None else '?'} ended"
        head += f" in {format_duration(took)}"
        parts = [head]
        for state in self._states[lane].values():
            if state.numeric:
                parts.append(f"{state.name} {format_metric_value(state.running, state.unit)}")
            else:
                parts.append(f"{state.name} {state.formatted}")
        return " | ".join(parts)
