"""``EventProcessor``: what the training loop tells, fanned out to the metrics, the metric
loggers, the progress loggers, the renderer and ``experiment.log`` (Burn's
``FullEventProcessorTraining``, ``metric/processor/full.rs``).

The epoch loop (``epoch.py``) only iterates and steps; each batch it hands over one
:class:`LearnerItem`, and at the edges of a split it calls :meth:`EventProcessor.start_split`
and :meth:`EventProcessor.end_split`. The processor updates the metrics, writes their lines,
records each epoch's aggregates in its :class:`MetricsStore` and keeps the display current.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ember.data import Progress
from ember.train.logger import FileMetricLogger
from ember.train.logger.application_logger import OwnInfoFilter
from ember.train.metric import MetricMetadata
from ember.train.metric.base import NumericEntry
from ember.train.renderer import MetricState, TrainingProgress
from ember.train.settings import RegisteredMetric
from ember.train.store import MetricsStore

__all__ = ["QUIET", "EventProcessor", "LearnerItem"]

_log = logging.getLogger("ember.train")
# Records the dashboard shows in its own way (progress, summary): experiment.log only.
QUIET = {"ember_quiet": True}


class _NotQuiet(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "ember_quiet", False)


@dataclass(frozen=True)
class LearnerItem:
    """One batch, as the loop reports it (Burn's ``LearnerItem``).

    Args:
        split: ``"train"`` or ``"valid"``.
        output: the step's output the metrics read; None for a batch whose update was
            skipped (shown in the progress, not measured).
        progress: the loader's progress after the batch.
        epoch, epoch_total: the epoch and the last epoch of the run.
        iteration: the batch's number in the epoch, from 1.
        lr: the learning rate of the default group (None when there is none yet).
    """

    split: str
    output: Any
    progress: Progress
    epoch: int
    epoch_total: int
    iteration: int
    lr: float | None


def _position(item: LearnerItem) -> dict[str, Any]:
    """Where the batch stands in the run, as the metrics' metadata and the renderers' progress
    both take it."""
    return {
        "progress": item.progress,
        "epoch": item.epoch,
        "epoch_total": item.epoch_total,
        "iteration": item.iteration,
    }


def _numeric_state(metric):
    """(current, running) of a numeric metric, None where the metric has no value yet."""
    out = []
    for getter in ("value", "running_value"):
        try:
            entry = getattr(metric, getter)()
            value = entry.current() if entry is not None else None
        except Exception:  # (a metric without a value yet, e.g. AUROC per batch)
            value = None
        out.append(value)
    return out[0], out[1]


class EventProcessor:
    """The receiver of the loop's events in one process.

    Args:
        metrics: the metrics of each split, ``{"train": (...), "valid": (...)}``.
        metric_loggers: the metric loggers (``log/end_split/read_numeric/close``).
        progress_loggers: objects with ``log_progress(TrainingProgress)``.
        renderer: the display.
        application_logger: the ``experiment.log`` installer, or None.
    """

    def __init__(
        self,
        metrics: dict[str, tuple[RegisteredMetric, ...]],
        metric_loggers: list,
        progress_loggers: list,
        renderer,
        application_logger=None,
    ):
        self.metrics = metrics
        self.metric_loggers = metric_loggers
        self.progress_loggers = progress_loggers
        self.renderer = renderer
        self.application_logger = application_logger
        self.numeric_names = {
            split: [entry.metric.name for entry in registered if entry.numeric]
            for split, registered in metrics.items()
        }
        self.store = MetricsStore(reader=self.read_numeric)
        self._continued: tuple[str, int] | None = None  # an epoch resumed mid-way
        self._log_handler = None
        self._previous_level: int | None = None

    # ---- logging set up for the run and taken down after it -----------------------------------
    def open(self) -> None:
        """Start ``experiment.log``, route log records to the renderer when it shows them."""
        if self.application_logger is not None:
            self.application_logger.install()
        make_handler = getattr(self.renderer, "log_handler", None)
        if callable(make_handler):
            self._log_handler = make_handler()
            if self._log_handler is not None:
                self._log_handler.addFilter(OwnInfoFilter())
                self._log_handler.addFilter(_NotQuiet())
                logging.getLogger().addHandler(self._log_handler)
        if _log.getEffectiveLevel() > logging.INFO:  # the loop's own INFO messages must be made
            self._previous_level = _log.level
            _log.setLevel(logging.INFO)

    def close(self) -> None:
        """Close the loggers and the renderer, then undo :meth:`open`."""
        for logger in self.metric_loggers:
            logger.close()
        self.renderer.close()
        if self._previous_level is not None:
            _log.setLevel(self._previous_level)
            self._previous_level = None
        if self._log_handler is not None:
            logging.getLogger().removeHandler(self._log_handler)
            self._log_handler = None
        if self.application_logger is not None:
            self.application_logger.uninstall()

    def message(self, text: str) -> None:
        """A line for ``experiment.log`` and the display."""
        _log.info(text)
        if self._log_handler is None:  # the renderer shows log records itself otherwise
            self.renderer.on_message(text)

    def notice(self, text: str) -> None:
        """A line for the display only (safe in a signal handler: no logging lock taken)."""
        self.renderer.on_message(text)

    # ---- the run ----------------------------------------------------------------------------
    def start_training(self, num_epochs: int, start_epoch: int, directory: Path) -> None:
        _log.info(
            "Starting training for %d epochs (epochs %d..%d) in %s",
            num_epochs,
            start_epoch,
            num_epochs,
            directory,
            extra=QUIET,
        )
        self.renderer.on_train_start(num_epochs, start_epoch)

    def end_training(self, summary: str | None) -> None:
        """The run is over; ``summary``: the learner summary to show, or None."""
        if summary is not None:
            _log.info("Learner summary\n%s", summary, extra=QUIET)
        _log.info("Training ended.", extra=QUIET)
        self.renderer.on_train_end(summary)

    def continue_epoch(self, split: str, epoch: int) -> None:
        """``epoch`` of ``split`` resumes mid-way: its logs are appended to, and its ``final``
        lines cover the batches from before the interrupt too."""
        self._continued = (split, epoch)
        for logger in self.metric_loggers:
            if isinstance(logger, FileMetricLogger):
                logger.continue_epoch(split, epoch)

    # ---- one split ----------------------------------------------------------------------------
    def start_split(self, split: str, epoch: int, num_items: int) -> None:
        for registered in self.metrics[split]:
            registered.metric.clear()
        _log.info("Starting split '%s' of epoch %d with %d items", split, epoch, num_items, extra=QUIET)
        self.renderer.on_split_start(split, epoch, num_items)

    def process_item(self, item: LearnerItem) -> None:
        """Metrics, logs and display of one batch."""
        if item.output is not None:
            metadata = MetricMetadata(**_position(item), lr=item.lr)
            self._update_metrics(item.split, item.output, metadata, item.epoch)
        state = TrainingProgress(**_position(item), split=item.split)
        (self.renderer.render_train if item.split == "train" else self.renderer.render_valid)(state)
        for logger in self.progress_loggers:
            logger.log_progress(state)

    def _update_metrics(self, split: str, output, metadata: MetricMetadata, epoch: int) -> None:
        update_renderer = self.renderer.update_train if split == "train" else self.renderer.update_valid
        for registered in self.metrics[split]:
            metric = registered.metric
            entry = metric.update(output, metadata)
            if entry.serialized is not None:
                for logger in self.metric_loggers:
                    logger.log(split, epoch, metric.name, entry.serialized)
            current = running = None
            if registered.numeric:
                current, running = _numeric_state(metric)
            update_renderer(
                MetricState(
                    name=metric.name,
                    formatted=entry.formatted,
                    current=current,
                    running=running,
                    unit=getattr(metric, "unit", None),
                    higher_is_better=getattr(metric, "higher_is_better", None),
                )
            )

    def end_split(self, split: str, epoch: int) -> None:
        """The ``final`` line of each numeric metric, its aggregate in the store."""
        # An epoch resumed mid-way: the metrics saw only the batches after the interrupt, so
        # its `final` line is the count-weighted mean of all its iteration lines, those before
        # the interrupt included (read back from the logs).
        continued = self._continued == (split, epoch)
        if continued:
            for logger in self.metric_loggers:
                flush = getattr(logger, "flush", None)
                if callable(flush):
                    flush()
        for registered in self.metrics[split]:
            if not registered.numeric:
                continue
            final = registered.metric.running_value()
            if continued:
                read = self.read_numeric(split, registered.metric.name, epoch)
                if read is not None:
                    final = NumericEntry.Final(read)
            for logger in self.metric_loggers:
                logger.log(split, epoch, registered.metric.name, final.serialize())
            self.store.record(split, registered.metric.name, epoch, final.current())
        for logger in self.metric_loggers:
            logger.end_split(split, epoch)
        if continued:
            self._continued = None
        self.renderer.on_split_end(split, epoch)

    # ---- what was measured ----------------------------------------------------------------------
    def read_numeric(self, split: str, name: str, epoch: int) -> float | None:
        """The aggregate of ``name`` in ``epoch`` as the first logger that can read it says."""
        for logger in self.metric_loggers:
            reader = getattr(logger, "read_numeric", None)
            value = reader(split, name, epoch) if callable(reader) else None
            if value is not None:
                return value
        return None

    def last_metrics(self, epoch: int) -> dict[str, dict[str, float]]:
        """``{split: {name: aggregate}}`` of ``epoch`` (empty before the first epoch)."""
        out: dict[str, dict[str, float]] = {}
        if epoch < 1:
            return out
        for split, names in self.numeric_names.items():
            values = {name: self.store.aggregate(name, epoch, split) for name in names}
            values = {name: value for name, value in values.items() if value is not None}
            if values:
                out[split] = values
        return out
