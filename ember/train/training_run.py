"""``TrainingRun``: one ``SupervisedTraining.launch`` — the pieces put together from the
:class:`TrainingSettings`, then epoch after epoch: train, validate, checkpoint, plot, decide
to stop (Burn's ``learner/supervised/paradigm.rs`` and ``strategies/base.rs``).

The pieces: :class:`EpochLoop` (``epoch.py``) iterates and steps, :class:`EventProcessor`
(``event_processor.py``) measures, logs and shows, :class:`RunControl` (``run_control.py``)
stops, checkpoints and resumes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ember.distributed.silent_renderer import SilentRenderer
from ember.train.checkpoint import AsyncCheckpointer, FileCheckpointer, LearningCheckpointer
from ember.train.epoch import EpochLoop
from ember.train.event_processor import EventProcessor
from ember.train.learner import Learner
from ember.train.logger import FileMetricLogger
from ember.train.plots import MetricPlotter
from ember.train.renderer import default_renderer
from ember.train.run_control import RunControl
from ember.train.settings import TrainingSettings
from ember.train.summary import LearnerSummary

__all__ = ["LearningResult", "TrainingRun"]

_log = logging.getLogger("ember.train")


@dataclass
class LearningResult:
    """What :meth:`SupervisedTraining.launch` returns.

    Attributes:
        model: the trained model in inference mode (``model.valid()``).
        summary: the :class:`LearnerSummary` (also when ``summary()`` was not asked for).
        renderer: the renderer that displayed the run.
        epochs_trained: the last epoch completed (less than ``num_epochs`` after early
            stopping or an interrupt).
        interrupted: True when the run was stopped by the interrupter, Ctrl-C or SIGTERM.
        metrics: the aggregates of the last epoch trained, ``{split: {metric name: value}}``
            (numeric metrics only; empty when no epoch was completed).
        skipped_batches: batches whose update was dropped for a non-finite loss
            (``on_non_finite_loss("skip_batch")``).
    """

    model: Any
    summary: LearnerSummary | None
    renderer: Any
    epochs_trained: int
    interrupted: bool = False
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    skipped_batches: int = 0


class TrainingRun:
    """One launch of ``settings`` on ``learner``.

    Under a strategy whose process is not the main one (a rank other than 0 of a distributed
    run), the run writes and shows nothing: no metrics, loggers, checkpoints, plots or display;
    it trains, and agrees with the main process through the strategy's hooks.

    Args:
        settings: what the builder was told.
        learner: the learner to train (already on the strategy's device).
    """

    def __init__(self, settings: TrainingSettings, learner: Learner):
        self.settings = settings
        self.learner = learner
        self.strategy = strategy = settings.training_strategy
        self.is_main = main = strategy.is_main
        train_loader = strategy.loader(settings.dataloader_train)
        valid_loader = (
            None if settings.dataloader_valid is None else strategy.loader(settings.dataloader_valid)
        )
        if main:
            metrics = {"train": settings.train_metrics, "valid": settings.valid_metrics}
            renderer = settings.renderer if settings.renderer is not None else default_renderer()
            metric_loggers = list(settings.metric_loggers) or [FileMetricLogger(settings.directory)]
        else:
            metrics, renderer, metric_loggers = {"train": (), "valid": ()}, SilentRenderer(), []
        self.events = EventProcessor(
            metrics,
            metric_loggers,
            list(settings.progress_loggers) if main else [],
            renderer,
            settings.application_logger if main else None,
        )
        checkpointer = None
        if settings.checkpointers is not None and main:
            training_state = AsyncCheckpointer(
                FileCheckpointer(settings.directory / "checkpoint", "training")
            )
            checkpointer = LearningCheckpointer(
                *settings.checkpointers, training_state, settings.checkpointing_strategy
            )
        self.control = RunControl(
            learner,
            strategy,
            settings.interrupter,
            self.events,
            settings.directory,
            checkpointer,
            settings.early_stopping,
            main,
        )
        self.epochs = EpochLoop(
            learner,
            strategy,
            self.events,
            self.control,
            train_loader,
            valid_loader,
            settings.num_epochs,
            settings.grads_accumulation,
            settings.non_finite_loss,
        )
        self.plotter = MetricPlotter(settings.directory / "plots") if settings.plots and main else None

    def execute(self) -> LearningResult:
        settings, events, control, epochs = self.settings, self.events, self.control, self.epochs
        start_epoch, skip = 1, 0
        settings.interrupter.reset()  # a stop asked during an earlier launch does not end this one
        events.open()
        control.install_signal_handlers(settings.handle_sigint, settings.handle_sigterm)
        last_epoch, interrupted, summary = 0, False, None
        try:
            if settings.resume_from_epoch is not None and self.is_main:
                start_epoch, skip = control.resume(settings.resume_from_epoch)
            self.strategy.start(self.learner)  # a distributed run: rank 0's state on every rank
            start_epoch, skip = self.strategy.from_main((start_epoch, skip))
            last_epoch = start_epoch - 1
            events.start_training(settings.num_epochs, start_epoch, settings.directory)
            for epoch in range(start_epoch, settings.num_epochs + 1):
                done = epochs.train(epoch, skip)
                skip = 0
                if control.should_stop():
                    interrupted = True
                    control.interrupt(epoch, done)
                    break
                if epochs.valid_loader is not None:
                    epochs.valid(epoch)
                last_epoch = epoch
                control.checkpoint_epoch(epoch)
                if self.plotter is not None:
                    self.plotter.draw(events.store, events.numeric_names, epoch)
                if control.should_stop_early(epoch):
                    break
                if control.should_stop():  # stopped during validation
                    interrupted = True
                    events.message(control.resume_hint(epoch, None))
                    break
            control.flush()
            summary = LearnerSummary.from_store(
                events.store, events.numeric_names, str(self.learner.model), last_epoch
            )
            events.end_training(str(summary) if settings.print_summary else None)
        except BaseException:
            _log.exception("Training failed; artifacts so far are in %s", settings.directory)
            raise
        finally:
            try:
                control.close()
            finally:
                control.restore_signal_handlers()
                events.close()
        return LearningResult(
            self.learner.model.valid(),
            summary,
            events.renderer,
            last_epoch,
            interrupted,
            events.last_metrics(last_epoch),
            epochs.skipped_batches,
        )
