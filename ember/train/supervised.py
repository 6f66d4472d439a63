"""``SupervisedTraining``: the builder of a supervised training run — configuration only
(Burn's ``SupervisedTraining``, ``learner/supervised/paradigm.rs``).

Each method records one setting in a frozen :class:`~ember.train.settings.TrainingSettings`
(:meth:`SupervisedTraining.settings` returns it). :meth:`SupervisedTraining.launch` checks the
learner and the loaders, then hands the settings to a
:class:`~ember.train.training_run.TrainingRun`, which trains epoch by epoch through three
pieces: :class:`~ember.train.epoch.EpochLoop` iterates and steps (scheduler, ``train_step``,
the non-finite-loss check, the optimizer step or gradient accumulation), the
:class:`~ember.train.event_processor.EventProcessor` feeds the metrics, loggers and display,
and :class:`~ember.train.run_control.RunControl` checkpoints, resumes, stops on an interrupt
and decides early stopping.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

from ember.train.checkpoint import (
    AsyncCheckpointer,
    ComposedCheckpointingStrategy,
    FileCheckpointer,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
)
from ember.train.epoch import NonFiniteLossError
from ember.train.interrupter import Interrupter
from ember.train.learner import Learner
from ember.train.logger import FileApplicationLoggerInstaller
from ember.train.settings import (
    NON_FINITE_LOSS_ACTIONS,
    RecordCheckpointers,
    RegisteredMetric,
    TrainingSettings,
)
from ember.train.store import Aggregate, Direction, Split
from ember.train.strategy import TrainingStrategy
from ember.train.training_run import LearningResult, TrainingRun

__all__ = ["LearningResult", "NonFiniteLossError", "SupervisedTraining"]


class SupervisedTraining:
    """Builder of a supervised training run.

    Args:
        directory: the artifact directory (``experiment.log``, ``checkpoint/``,
            ``train/epoch-E/*.log``, ``valid/...``, ``plots/``).
        dataloader_train: an ``ember.data.DataLoader`` (any iterable with ``len`` works;
            ``set_epoch``/``progress``/``num_items`` are used when present).
        dataloader_valid: the validation loader, or None to skip validation.
    """

    def __init__(self, directory, dataloader_train, dataloader_valid=None):
        directory = Path(directory)
        self._settings = TrainingSettings(
            directory=directory,
            dataloader_train=dataloader_train,
            dataloader_valid=dataloader_valid,
            application_logger=FileApplicationLoggerInstaller(directory / "experiment.log"),
            checkpointing_strategy=(
                ComposedCheckpointingStrategy.builder()
                .add(KeepLastNCheckpoints(2))
                .add(MetricCheckpointingStrategy("Loss", Aggregate.Mean, Direction.Lowest, Split.Valid))
                .build()
            ),
        )

    def _set(self, **changes) -> "SupervisedTraining":
        self._settings = replace(self._settings, **changes)
        return self

    def settings(self) -> TrainingSettings:
        """What this builder was told so far, as the run will read it."""
        return self._settings

    @property
    def directory(self) -> Path:
        """The artifact directory."""
        return self._settings.directory

    @property
    def dataloader_train(self):
        return self._settings.dataloader_train

    @property
    def dataloader_valid(self):
        return self._settings.dataloader_valid

    # ---- metrics ------------------------------------------------------------------------------
    def _add(self, split: str, metric, numeric: bool) -> "SupervisedTraining":
        if not callable(getattr(metric, "update", None)) or not isinstance(
            getattr(metric, "name", None), str
        ):
            raise TypeError(
                f"SupervisedTraining: expected a metric (with `name` and `update(item, metadata)`), "
                f"got {type(metric).__name__}"
            )
        if numeric and not callable(getattr(metric, "running_value", None)):
            raise TypeError(
                f"SupervisedTraining: {metric.name!r} is not a numeric metric; register it with "
                "metric_train/metric_valid or metrics_text"
            )
        registered = self._settings.metrics_of(split)
        if any(other.metric.name == metric.name for other in registered):
            raise ValueError(
                f"SupervisedTraining: a metric named {metric.name!r} is already registered on the "
                f"{split} split (its log file would be written twice)"
            )
        return self._set(**{f"{split}_metrics": (*registered, RegisteredMetric(metric, numeric))})

    def metric_train(self, metric) -> "SupervisedTraining":
        """A metric shown and logged on the training split (not plotted or summarised)."""
        return self._add("train", metric, False)

    def metric_valid(self, metric) -> "SupervisedTraining":
        """A metric shown and logged on the validation split."""
        return self._add("valid", metric, False)

    def metric_train_numeric(self, metric) -> "SupervisedTraining":
        """A numeric metric on the training split: also plotted and in the summary."""
        return self._add("train", metric, True)

    def metric_valid_numeric(self, metric) -> "SupervisedTraining":
        """A numeric metric on the validation split: also plotted and in the summary."""
        return self._add("valid", metric, True)

    def metrics(self, *metrics) -> "SupervisedTraining":
        """Numeric metrics on both splits (each split gets its own copy)."""
        for metric in _flatten(metrics):
            self.metric_train_numeric(metric)
            self.metric_valid_numeric(copy.deepcopy(metric))
        return self

    def metrics_text(self, *metrics) -> "SupervisedTraining":
        """Text (non-numeric) metrics on both splits."""
        for metric in _flatten(metrics):
            self.metric_train(metric)
            self.metric_valid(copy.deepcopy(metric))
        return self

    # ---- loggers and display ----------------------------------------------------------------
    def with_metric_logger(self, logger) -> "SupervisedTraining":
        """Add a metric logger (``log/end_split/read_numeric/close``); the default
        ``FileMetricLogger`` is used only when none is added."""
        return self._set(metric_loggers=(*self._settings.metric_loggers, logger))

    def with_progress_logger(self, logger) -> "SupervisedTraining":
        """Add an object whose ``log_progress(TrainingProgress)`` is called after every batch."""
        if not callable(getattr(logger, "log_progress", None)):
            raise TypeError("with_progress_logger: expected an object with log_progress(progress)")
        return self._set(progress_loggers=(*self._settings.progress_loggers, logger))

    def renderer(self, renderer) -> "SupervisedTraining":
        """The display (default: the rich dashboard on a terminal, plain lines otherwise)."""
        return self._set(renderer=renderer)

    def with_application_logger(self, installer) -> "SupervisedTraining":
        """Replace the ``experiment.log`` installer; ``None`` disables the file."""
        return self._set(application_logger=installer)

    def with_plots(self, enabled: bool = True) -> "SupervisedTraining":
        """Draw ``plots/<Metric>.png`` after every epoch (default on; needs matplotlib)."""
        return self._set(plots=bool(enabled))

    def summary(self) -> "SupervisedTraining":
        """Print the learner summary at the end of training."""
        return self._set(print_summary=True)

    # ---- loop options -----------------------------------------------------------------------
    def grads_accumulation(self, n: int) -> "SupervisedTraining":
        """Sum the gradients of ``n`` batches and step the optimizer once per ``n`` (as in Burn
        the gradients are summed, not averaged: lower the learning rate accordingly)."""
        if int(n) < 1:
            raise ValueError(f"grads_accumulation: n must be >= 1, got {n}")
        return self._set(grads_accumulation=int(n))

    def gradient_checkpointing(self) -> "SupervisedTraining":
        raise NotImplementedError(
            "SupervisedTraining.gradient_checkpointing: ember's autodiff does not "
            "recompute activations yet; train without it"
        )

    def num_epochs(self, n: int) -> "SupervisedTraining":
        if int(n) < 1:
            raise ValueError(f"num_epochs: n must be >= 1, got {n}")
        return self._set(num_epochs=int(n))

    def checkpoint(self, epoch: int) -> "SupervisedTraining":
        """Resume from the checkpoint of ``epoch``: model, optimizer, scheduler and generators
        are restored and training continues at epoch ``epoch + 1`` (or, for a checkpoint taken
        by an interrupt, at the next batch of ``epoch``)."""
        if int(epoch) < 1:
            raise ValueError(f"checkpoint: epoch must be >= 1, got {epoch}")
        return self._set(resume_from_epoch=int(epoch))

    def interrupter(self) -> Interrupter:
        """The run's :class:`Interrupter` (call ``stop()`` from anywhere to end it cleanly)."""
        return self._settings.interrupter

    def with_interrupter(self, interrupter: Interrupter) -> "SupervisedTraining":
        return self._set(interrupter=interrupter)

    def with_sigint_handler(self, enabled: bool) -> "SupervisedTraining":
        """Whether Ctrl-C asks the run to stop and checkpoint (default on, main thread only)."""
        return self._set(handle_sigint=bool(enabled))

    def with_sigterm_handler(self, enabled: bool) -> "SupervisedTraining":
        """Whether SIGTERM (sent by SLURM, Kubernetes, ``kill``) stops the run like Ctrl-C: at
        the end of the batch, with a checkpoint to resume from (default on, main thread only)."""
        return self._set(handle_sigterm=bool(enabled))

    def on_non_finite_loss(self, action: str) -> "SupervisedTraining":
        """What a NaN or infinite training loss does (checked before the optimizer step).

        Args:
            action: ``"stop"`` (default): raise :class:`NonFiniteLossError` before the step,
                so the weights and the last checkpoint stay finite; ``"skip_batch"``: drop
                the batch (no update, not in the metrics; counted in
                ``LearningResult.skipped_batches`` and logged); ``"continue"``: apply it
                like any other batch. The loss is read from the training output's ``loss``.
        """
        if action not in NON_FINITE_LOSS_ACTIONS:
            raise ValueError(
                f"on_non_finite_loss: action must be one of {', '.join(map(repr, NON_FINITE_LOSS_ACTIONS))}, "
                f"got {action!r}"
            )
        return self._set(non_finite_loss=action)

    def early_stopping(self, strategy) -> "SupervisedTraining":
        """Stop when ``strategy.should_stop(epoch, store)`` says so (e.g.
        ``MetricEarlyStoppingStrategy``)."""
        if not callable(getattr(strategy, "should_stop", None)):
            raise TypeError("early_stopping: expected a strategy with should_stop(epoch, store)")
        return self._set(early_stopping=strategy)

    def with_checkpointing_strategy(self, strategy) -> "SupervisedTraining":
        if not callable(getattr(strategy, "checkpointing", None)):
            raise TypeError(
                "with_checkpointing_strategy: expected a strategy with checkpointing(epoch, store)"
            )
        return self._set(checkpointing_strategy=strategy)

    def with_default_checkpointers(self) -> "SupervisedTraining":
        """``<dir>/checkpoint/{model,optim,scheduler}-E.bpk``, each written in the background."""
        folder = self.directory / "checkpoint"
        return self._set(
            checkpointers=RecordCheckpointers(
                *(
                    AsyncCheckpointer(FileCheckpointer(folder, name))
                    for name in ("model", "optim", "scheduler")
                )
            )
        )

    def with_custom_checkpointers(self, model, optim, scheduler) -> "SupervisedTraining":
        """Checkpointers (``save(epoch, bytes)``, ``restore(epoch)``, ``delete(epoch)``) for
        the model, optimizer and scheduler records."""
        for checkpointer in (model, optim, scheduler):
            if not all(
                callable(getattr(checkpointer, method, None)) for method in ("save", "restore", "delete")
            ):
                raise TypeError(
                    f"with_custom_checkpointers: {type(checkpointer).__name__} lacks save/restore/delete"
                )
        return self._set(checkpointers=RecordCheckpointers(model, optim, scheduler))

    def with_training_strategy(self, strategy: TrainingStrategy) -> "SupervisedTraining":
        if not isinstance(strategy, TrainingStrategy):
            raise TypeError(
                "with_training_strategy: expected SingleDevice, MultiDevice or "
                f"DistributedDataParallel, got {type(strategy).__name__}"
            )
        return self._set(training_strategy=strategy)

    # ---- launch -----------------------------------------------------------------------------
    def launch(self, learner: Learner) -> LearningResult:
        """Train ``learner`` for the configured epochs; returns a :class:`LearningResult`."""
        if not isinstance(learner, Learner):
            raise TypeError(
                f"launch: expected an ember.train.Learner(model, optimizer, lr_scheduler), got "
                f"{type(learner).__name__}"
            )
        settings = self._settings
        strategy = settings.training_strategy
        strategy.check_supported()
        device = strategy.run_device()
        if device is not None:
            learner.fork(device)
        if settings.resume_from_epoch is not None and settings.checkpointers is None:
            raise ValueError(
                f"checkpoint({settings.resume_from_epoch}): no checkpointers to resume from; add "
                ".with_default_checkpointers() (or custom ones)"
            )
        _check_not_empty("train", settings.dataloader_train)
        if settings.dataloader_valid is not None:
            _check_not_empty("valid", settings.dataloader_valid)
        if settings.dataloader_valid is not None and not callable(
            getattr(learner.model, "inference_step", None)
        ):
            raise TypeError(
                f"launch: {type(learner.model).__name__} must define inference_step(batch) to be "
                "validated (see ember.train.InferenceStep), or pass dataloader_valid=None"
            )
        if strategy.is_main:
            settings.directory.mkdir(parents=True, exist_ok=True)
        return TrainingRun(settings, learner).execute()


def _check_not_empty(split: str, loader) -> None:
    """An empty loader is an error before anything runs: the loop would train nothing."""
    try:
        batches = len(loader)
    except TypeError:  # an iterable without a length: nothing to check
        return
    if batches == 0:
        skip = " or pass dataloader_valid=None to skip validation" if split == "valid" else ""
        raise ValueError(
            f"SupervisedTraining: the {split} loader has no batches ({loader!r}); check its dataset "
            f"(is the {split} split empty, or filtered to nothing?){skip}"
        )


def _flatten(metrics) -> list:
    out = []
    for metric in metrics:
        out.extend(_flatten(metric) if isinstance(metric, (list, tuple)) else [metric])
    return out
