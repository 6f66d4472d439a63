"""``SupervisedTraining``: the builder that trains a :class:`Learner` epoch by epoch with
metrics, logs, checkpoints, resume, early stopping and a live display (Burn's
``SupervisedTraining``, ``learner/supervised/paradigm.rs`` and ``strategies/single/``).

One iteration, as in Burn: the scheduler is stepped (before every batch, the first one
included), ``train_step`` runs, its loss is checked for NaN/Inf (``on_non_finite_loss``, beyond
Burn), then the optimizer steps — or the gradients are summed until ``grads_accumulation(n)``
batches are in — and the metrics see the batch's output. After the
training split, the validation split runs on ``model.valid()`` (dropout off, no graph), then
the checkpointing strategy acts and early stopping decides.
"""

from __future__ import annotations

import copy
import logging
import math
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ember.data import Progress
from ember.optim import GradientsAccumulator
from ember.train.checkpoint import (
    AsyncCheckpointer,
    ComposedCheckpointingStrategy,
    FileCheckpointer,
    KeepLastNCheckpoints,
    LearningCheckpointer,
    MetricCheckpointingStrategy,
)
from ember.train.interrupter import Interrupter
from ember.train.learner import Learner, base_lr
from ember.train.logger import FileApplicationLoggerInstaller, FileMetricLogger
from ember.train.logger.application_logger import OwnInfoFilter
from ember.train.metric import MetricMetadata
from ember.train.metric._array import to_numpy
from ember.train.metric.base import NumericEntry
from ember.train.plots import MetricPlotter
from ember.train.renderer import MetricState, TrainingProgress, default_renderer
from ember.train.store import Aggregate, Direction, MetricsStore, Split
from ember.train.strategy import SingleDevice, TrainingStrategy
from ember.train.summary import LearnerSummary

__all__ = ["LearningResult", "NonFiniteLossError", "SupervisedTraining"]

_log = logging.getLogger("ember.train")
# Records the dashboard shows in its own way (progress, summary): experiment.log only.
_QUIET = {"ember_quiet": True}


class NonFiniteLossError(FloatingPointError):
    """The training loss was NaN or infinite and ``on_non_finite_loss("stop")`` (the default)
    ended the run before the optimizer step that would have used it."""


# What the loop does at a non-finite training loss (``on_non_finite_loss``).
_NON_FINITE_ACTIONS = ("stop", "skip_batch", "continue")


class _NotQuiet(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "ember_quiet", False)


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


@dataclass
class _RegisteredMetric:
    metric: Any
    numeric: bool


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
        self.directory = Path(directory)
        self.dataloader_train = dataloader_train
        self.dataloader_valid = dataloader_valid
        self._metrics: dict[str, list[_RegisteredMetric]] = {"train": [], "valid": []}
        self._metric_loggers: list = []
        self._progress_loggers: list = []
        self._renderer = None
        self._grad_accum: int | None = None
        self._num_epochs = 1
        self._checkpoint: int | None = None
        self._interrupter = Interrupter()
        self._early_stopping = None
        self._app_logger = FileApplicationLoggerInstaller(self.directory / "experiment.log")
        self._checkpointing_strategy = (
            ComposedCheckpointingStrategy.builder()
            .add(KeepLastNCheckpoints(2))
            .add(MetricCheckpointingStrategy("Loss", Aggregate.Mean, Direction.Lowest, Split.Valid))
            .build()
        )
        self._checkpointers: tuple | None = None
        self._training_strategy: TrainingStrategy = SingleDevice()
        self._summary = False
        self._plots = True
        self._handle_sigint = True
        self._handle_sigterm = True
        self._non_finite = "stop"

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
        if any(r.metric.name == metric.name for r in self._metrics[split]):
            raise ValueError(
                f"SupervisedTraining: a metric named {metric.name!r} is already registered on the "
                f"{split} split (its log file would be written twice)"
            )
        self._metrics[split].append(_RegisteredMetric(metric, numeric))
        return self

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
        self._metric_loggers.append(logger)
        return self

    def with_progress_logger(self, logger) -> "SupervisedTraining":
        """Add an object whose ``log_progress(TrainingProgress)`` is called after every batch."""
        if not callable(getattr(logger, "log_progress", None)):
            raise TypeError("with_progress_logger: expected an object with log_progress(progress)")
        self._progress_loggers.append(logger)
        return self

    def renderer(self, renderer) -> "SupervisedTraining":
        """The display (default: the rich dashboard on a terminal, plain lines otherwise)."""
        self._renderer = renderer
        return self

    def with_application_logger(self, installer) -> "SupervisedTraining":
        """Replace the ``experiment.log`` installer; ``None`` disables the file."""
        self._app_logger = installer
        return self

    def with_plots(self, enabled: bool = True) -> "SupervisedTraining":
        """Draw ``plots/<Metric>.png`` after every epoch (default on; needs matplotlib)."""
        self._plots = bool(enabled)
        return self

    def summary(self) -> "SupervisedTraining":
        """Print the learner summary at the end of training."""
        self._summary = True
        return self

    # ---- loop options -----------------------------------------------------------------------
    def grads_accumulation(self, n: int) -> "SupervisedTraining":
        """Sum the gradients of ``n`` batches and step the optimizer once per ``n`` (as in Burn
        the gradients are summed, not averaged: lower the learning rate accordingly)."""
        if int(n) < 1:
            raise ValueError(f"grads_accumulation: n must be >= 1, got {n}")
        self._grad_accum = int(n)
        return self

    def gradient_checkpointing(self) -> "SupervisedTraining":
        raise NotImplementedError(
            "SupervisedTraining.gradient_checkpointing: ember's autodiff does not "
            "recompute activations yet; train without it"
        )

    def num_epochs(self, n: int) -> "SupervisedTraining":
        if int(n) < 1:
            raise ValueError(f"num_epochs: n must be >= 1, got {n}")
        self._num_epochs = int(n)
        return self

    def checkpoint(self, epoch: int) -> "SupervisedTraining":
        """Resume from the checkpoint of ``epoch``: model, optimizer, scheduler and generators
        are restored and training continues at epoch ``epoch + 1`` (or, for a checkpoint taken
        by an interrupt, at the next batch of ``epoch``)."""
        if int(epoch) < 1:
            raise ValueError(f"checkpoint: epoch must be >= 1, got {epoch}")
        self._checkpoint = int(epoch)
        return self

    def interrupter(self) -> Interrupter:
        """The run's :class:`Interrupter` (call ``stop()`` from anywhere to end it cleanly)."""
        return self._interrupter

    def with_interrupter(self, interrupter: Interrupter) -> "SupervisedTraining":
        self._interrupter = interrupter
        return self

    def with_sigint_handler(self, enabled: bool) -> "SupervisedTraining":
        """Whether Ctrl-C asks the run to stop and checkpoint (default on, main thread only)."""
        self._handle_sigint = bool(enabled)
        return self

    def with_sigterm_handler(self, enabled: bool) -> "SupervisedTraining":
        """Whether SIGTERM (sent by SLURM, Kubernetes, ``kill``) stops the run like Ctrl-C: at
        the end of the batch, with a checkpoint to resume from (default on, main thread only)."""
        self._handle_sigterm = bool(enabled)
        return self

    def on_non_finite_loss(self, action: str) -> "SupervisedTraining":
        """What a NaN or infinite training loss does (checked before the optimizer step).

        Args:
            action: ``"stop"`` (default): raise :class:`NonFiniteLossError` before the step,
                so the weights and the last checkpoint stay finite; ``"skip_batch"``: drop
                the batch (no update, not in the metrics; counted in
                ``LearningResult.skipped_batches`` and logged); ``"continue"``: apply it
                like any other batch. The loss is read from the training output's ``loss``.
        """
        if action not in _NON_FINITE_ACTIONS:
            raise ValueError(
                f"on_non_finite_loss: action must be one of {', '.join(map(repr, _NON_FINITE_ACTIONS))}, "
                f"got {action!r}"
            )
        self._non_finite = action
        return self

    def early_stopping(self, strategy) -> "SupervisedTraining":
        """Stop when ``strategy.should_stop(epoch, store)`` says so (e.g.
        ``MetricEarlyStoppingStrategy``)."""
        if not callable(getattr(strategy, "should_stop", None)):
            raise TypeError("early_stopping: expected a strategy with should_stop(epoch, store)")
        self._early_stopping = strategy
        return self

    def with_checkpointing_strategy(self, strategy) -> "SupervisedTraining":
        if not callable(getattr(strategy, "checkpointing", None)):
            raise TypeError(
                "with_checkpointing_strategy: expected a strategy with checkpointing(epoch, store)"
            )
        self._checkpointing_strategy = strategy
        return self

    def with_default_checkpointers(self) -> "SupervisedTraining":
        """``<dir>/checkpoint/{model,optim,scheduler}-E.bpk``, each written in the background."""
        folder = self.directory / "checkpoint"
        self._checkpointers = tuple(
            AsyncCheckpointer(FileCheckpointer(folder, name)) for name in ("model", "optim", "scheduler")
        )
        return self

    def with_custom_checkpointers(self, model, optim, scheduler) -> "SupervisedTraining":
        """Checkpointers (``save(epoch, bytes)``, ``restore(epoch)``, ``delete(epoch)``) for
        the model, optimizer and scheduler records."""
        for c in (model, optim, scheduler):
            if not all(callable(getattr(c, m, None)) for m in ("save", "restore", "delete")):
                raise TypeError(f"with_custom_checkpointers: {type(c).__name__} lacks save/restore/delete")
        self._checkpointers = (model, optim, scheduler)
        return self

    def with_training_strategy(self, strategy: TrainingStrategy) -> "SupervisedTraining":
        if not isinstance(strategy, TrainingStrategy):
            raise TypeError(
                "with_training_strategy: expected SingleDevice, MultiDevice or "
                f"DistributedDataParallel, got {type(strategy).__name__}"
            )
        self._training_strategy = strategy
        return self

    # ---- launch -----------------------------------------------------------------------------
    def launch(self, learner: Learner) -> LearningResult:
        """Train ``learner`` for the configured epochs; returns a :class:`LearningResult`."""
        if not isinstance(learner, Learner):
            raise TypeError(
                f"launch: expected an ember.train.Learner(model, optimizer, lr_scheduler), got "
                f"{type(learner).__name__}"
            )
        strategy = self._training_strategy
        strategy.check_supported()
        device = strategy.run_device()
        if device is not None:
            learner.fork(device)
        if self._checkpoint is not None and self._checkpointers is None:
            raise ValueError(
                f"checkpoint({self._checkpoint}): no checkpointers to resume from; add "
                ".with_default_checkpointers() (or custom ones)"
            )
        _check_not_empty("train", self.dataloader_train)
        if self.dataloader_valid is not None:
            _check_not_empty("valid", self.dataloader_valid)
        if self.dataloader_valid is not None and not callable(getattr(learner.model, "inference_step", None)):
            raise TypeError(
                f"launch: {type(learner.model).__name__} must define inference_step(batch) to be "
                "validated (see ember.train.InferenceStep), or pass dataloader_valid=None"
            )
        if strategy.is_main:
            self.directory.mkdir(parents=True, exist_ok=True)
        run = _Run(self, learner, strategy)
        return run.execute()


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
    for m in metrics:
        out.extend(_flatten(m) if isinstance(m, (list, tuple)) else [m])
    return out


class _Run:
    """The state of one ``launch``: loggers, store, checkpointer, renderer, signal handler.

    Under a strategy whose process is not the main one (a rank other than 0 of a distributed
    run), the run writes and shows nothing: no metrics, loggers, checkpoints, plots or display;
    it trains, and agrees with the main process through the strategy's hooks.
    """

    def __init__(self, training: SupervisedTraining, learner: Learner, strategy: TrainingStrategy):
        self.t = training
        self.learner = learner
        self.strategy = strategy
        self.main = main = strategy.is_main
        self.train_loader = strategy.loader(training.dataloader_train)
        self.valid_loader = (
            None if training.dataloader_valid is None else strategy.loader(training.dataloader_valid)
        )
        self.metrics = training._metrics if main else {"train": [], "valid": []}
        if main:
            self.renderer = training._renderer if training._renderer is not None else default_renderer()
        else:
            from ember.distributed.silent_renderer import SilentRenderer

            self.renderer = SilentRenderer()
        self.progress_loggers = training._progress_loggers if main else []
        self.app_logger = training._app_logger if main else None
        self.interrupter = training._interrupter
        self.numeric_names = {
            split: [r.metric.name for r in regs if r.numeric] for split, regs in self.metrics.items()
        }
        self.checkpointer = None
        if training._checkpointers is not None and main:
            training_state = AsyncCheckpointer(
                FileCheckpointer(training.directory / "checkpoint", "training")
            )
            self.checkpointer = LearningCheckpointer(
                *training._checkpointers, training_state, training._checkpointing_strategy
            )
        self.loggers = list(training._metric_loggers) if main else []
        self.resumed_partial: tuple[str, int] | None = None
        self.plotter = MetricPlotter(training.directory / "plots") if training._plots and main else None
        self._log_handler = None
        self._previous_handlers: dict[int, Any] = {}
        self._previous_level: int | None = None
        self.skipped_batches = 0
        self.last_checkpoint: int | None = None  # the newest epoch checkpointed (or resumed from)

    # ---- setup and teardown -------------------------------------------------------------------
    def _install(self) -> None:
        if self.app_logger is not None:
            self.app_logger.install()
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
        if threading.current_thread() is threading.main_thread():  # (Python's rule for signals)
            wanted = [(signal.SIGINT, self.t._handle_sigint), (signal.SIGTERM, self.t._handle_sigterm)]
            for signum, enabled in wanted:
                if enabled:
                    self._previous_handlers[signum] = signal.getsignal(signum)
                    signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        if self.interrupter.should_stop():  # a second one: stop now
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise SystemExit(128 + signum)
        self.interrupter.stop(name)
        again = "press Ctrl-C" if signum == signal.SIGINT else f"send {name}"
        self.renderer.on_message(
            f"{name}: stopping after this batch and saving a checkpoint ({again} again to abort at once)"
        )

    def _uninstall(self) -> None:
        if self._previous_level is not None:
            _log.setLevel(self._previous_level)
            self._previous_level = None
        for signum, previous in self._previous_handlers.items():
            # (None: a handler not set from Python; the default is the closest to restore)
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)
        self._previous_handlers = {}
        if self._log_handler is not None:
            logging.getLogger().removeHandler(self._log_handler)
            self._log_handler = None
        if self.app_logger is not None:
            self.app_logger.uninstall()

    def _message(self, text: str) -> None:
        _log.info(text)
        if self._log_handler is None:  # the renderer shows log records itself otherwise
            self.renderer.on_message(text)

    # ---- the run --------------------------------------------------------------------------------
    def execute(self) -> LearningResult:
        t = self.t
        start_epoch, skip = 1, 0
        if not self.loggers and self.main:
            self.loggers = [FileMetricLogger(t.directory)]
        store = MetricsStore(reader=self._read_numeric)
        self.store = store
        self.interrupter.reset()  # a stop asked during an earlier launch does not end this one
        self._install()
        last_epoch, interrupted, summary = 0, False, None
        try:
            if t._checkpoint is not None and self.main:
                start_epoch, skip = self._resume(t._checkpoint)
            self.strategy.start(self.learner)  # a distributed run: rank 0's state on every rank
            start_epoch, skip = self.strategy.from_main((start_epoch, skip))
            last_epoch = start_epoch - 1
            _log.info(
                "Starting training for %d epochs (epochs %d..%d) in %s",
                t._num_epochs,
                start_epoch,
                t._num_epochs,
                t.directory,
                extra=_QUIET,
            )
            self.renderer.on_train_start(t._num_epochs, start_epoch)
            for epoch in range(start_epoch, t._num_epochs + 1):
                done = self._train_split(epoch, skip)
                skip = 0
                if self._should_stop():
                    interrupted = True
                    self._interrupt(epoch, done)
                    break
                if self.valid_loader is not None:
                    self._valid_split(epoch)
                last_epoch = epoch
                if self.checkpointer is not None:
                    actions = self.checkpointer.checkpoint(self.learner, epoch, store)
                    if any(a.kind == "save" for a in actions):
                        self.last_checkpoint = epoch
                if self.plotter is not None:
                    self.plotter.draw(store, self.numeric_names, epoch)
                if t._early_stopping is not None and self._early_stop(epoch):
                    self._message(f"Early stopping after epoch {epoch}: {t._early_stopping!r}")
                    break
                if self._should_stop():  # stopped during validation
                    interrupted = True
                    self._message(self._resume_hint(epoch, None))
                    break
            if self.checkpointer is not None:
                self.checkpointer.flush()
            summary = LearnerSummary.from_store(
                store, self.numeric_names, str(self.learner.model), last_epoch
            )
            if t._summary:
                _log.info("Learner summary\n%s", summary, extra=_QUIET)
            _log.info("Training ended.", extra=_QUIET)
            self.renderer.on_train_end(str(summary) if t._summary else None)
        except BaseException:
            _log.exception("Training failed; artifacts so far are in %s", t.directory)
            raise
        finally:
            try:
                if self.checkpointer is not None:
                    self.checkpointer.close()
            finally:
                for logger in self.loggers:
                    logger.close()
                self.renderer.close()
                self._uninstall()
        return LearningResult(
            self.learner.model.valid(),
            summary,
            self.renderer,
            last_epoch,
            interrupted,
            self._last_metrics(last_epoch),
            self.skipped_batches,
        )

    def _last_metrics(self, epoch: int) -> dict[str, dict[str, float]]:
        """``{split: {name: aggregate}}`` of ``epoch`` (the main process's; empty elsewhere)."""
        out: dict[str, dict[str, float]] = {}
        if epoch < 1:
            return out
        for split, names in self.numeric_names.items():
            values = {name: self.store.aggregate(name, epoch, split) for name in names}
            values = {name: value for name, value in values.items() if value is not None}
            if values:
                out[split] = values
        return out

    def _should_stop(self) -> bool:
        """Whether the interrupter asks to stop, in this or (distributed) any other process:
        every process then stops at the same batch. The answer is the collective's: a signal
        handled after the flag was read (e.g. as the collective's wait returns) is seen at the
        next check, by every process together, so their collectives stay paired."""
        stop = self.strategy.any_process(self.interrupter.should_stop())
        if stop and not self.interrupter.should_stop():
            self.interrupter.stop("another rank was interrupted")
        return stop

    def _early_stop(self, epoch: int) -> bool:
        """The early-stopping decision, taken on the main process (which has the metrics)."""
        stop = self.main and self.t._early_stopping.should_stop(epoch, self.store)
        return bool(self.strategy.from_main((int(stop),))[0])

    def _read_numeric(self, split: str, name: str, epoch: int) -> float | None:
        for logger in self.loggers:
            reader = getattr(logger, "read_numeric", None)
            value = reader(split, name, epoch) if callable(reader) else None
            if value is not None:
                return value
        return None

    def _resume(self, epoch: int) -> tuple[int, int]:
        state = self.checkpointer.load_checkpoint(self.learner, epoch)
        if state.partial:
            start, skip = epoch, state.iterations_done
            self.resumed_partial = ("train", epoch)
            for logger in self.loggers:
                if isinstance(logger, FileMetricLogger):
                    logger.continue_epoch("train", epoch)
            text = f"Resuming from the checkpoint of epoch {epoch} taken at batch {skip}: continuing epoch {epoch}"
        else:
            start, skip = epoch + 1, 0
            text = f"Resuming from the checkpoint of epoch {epoch}: continuing at epoch {start}"
        self.checkpointer.replay(start - 1, self.store)
        self.last_checkpoint = epoch
        stopper = self.t._early_stopping
        if stopper is not None:
            for past in range(1, start):
                if (
                    self.store.aggregate(
                        getattr(stopper, "name", ""), past, getattr(stopper, "split", "valid")
                    )
                    is not None
                ):
                    stopper.should_stop(past, self.store)
        self._message(text)
        return start, skip

    def _interrupt(self, epoch: int, done: int) -> None:
        reason = self.interrupter.get_message() or "interrupter"
        if self.checkpointer is None:
            self._message(
                f"Training stopped ({reason}) during epoch {epoch} after {done} batches; no "
                "checkpointers were set, so nothing was saved to resume from"
            )
            return
        self.checkpointer.checkpoint_partial(self.learner, epoch, done)
        self._message(
            f"Training stopped ({reason}) during epoch {epoch} after {done} batches. "
            + self._resume_hint(epoch, done)
        )

    def _resume_hint(self, epoch: int, done: int | None) -> str:
        where = f"batch {done + 1} of epoch {epoch}" if done is not None else f"epoch {epoch + 1}"
        return (
            f"The state is checkpointed in {self.t.directory / 'checkpoint'}; resume with "
            f"SupervisedTraining(...).checkpoint({epoch}) to continue at {where}."
        )

    # ---- splits ---------------------------------------------------------------------------------
    def _start_split(self, split: str, loader, epoch: int) -> None:
        for reg in self.metrics[split]:
            reg.metric.clear()
        set_epoch = getattr(loader, "set_epoch", None)
        if callable(set_epoch):  # the same epoch always gets the same order, resumed or not
            set_epoch(epoch - 1)
        num_items = loader.num_items() if callable(getattr(loader, "num_items", None)) else len(loader)
        _log.info("Starting split '%s' of epoch %d with %d items", split, epoch, num_items, extra=_QUIET)
        self.renderer.on_split_start(split, epoch, num_items)

    def _train_split(self, epoch: int, skip: int) -> int:
        learner, loader, strategy = self.learner, self.train_loader, self.strategy
        self._start_split("train", loader, epoch)
        accumulate = self.t._grad_accum if self.t._grad_accum and self.t._grad_accum > 1 else None
        accumulator = GradientsAccumulator() if accumulate else None
        in_group = 0  # batches of the current accumulation group, skipped ones included
        skipped = 0
        iteration = 0
        for batch in loader:
            iteration += 1
            if iteration <= skip:  # done before the interrupt this run resumes from
                continue
            lr = learner.lr_step()
            output = learner.train_step(batch)
            if self._non_finite_loss(output.item, epoch, iteration):  # only under skip_batch
                skipped += 1
                in_group += 1
                if accumulator is not None and in_group >= accumulate:
                    in_group = 0
                    if accumulator.num_accumulated:  # the group steps with its finite batches
                        learner.optimizer_step(accumulator.grads())
                if self._after_batch("train", loader, epoch, iteration, None, base_lr(lr)):
                    break
                continue
            grads = strategy.gradients(output.grads, learner.model, loader)
            if accumulator is None:
                learner.optimizer_step(grads)
            else:
                accumulator.accumulate(learner.model, grads)
                in_group += 1
                if in_group >= accumulate:
                    in_group = 0
                    learner.optimizer_step(accumulator.grads())
            item = strategy.metric_item(_synced(output.item), loader)
            if self._after_batch("train", loader, epoch, iteration, item, base_lr(lr)):
                break
        if skipped:
            self.skipped_batches += skipped
            self._message(
                f"Epoch {epoch}: skipped {skipped} batch(es) with a non-finite loss (no update, not "
                "in the metrics)"
            )
        if accumulator is not None and accumulator.num_accumulated:
            # the last, incomplete group of the split still counts (Burn drops it)
            learner.optimizer_step(accumulator.grads())
        self._end_split("train", epoch)
        return iteration

    def _non_finite_loss(self, item, epoch: int, iteration: int) -> bool:
        """Check the batch's loss before its update: raise under ``stop``, True (drop the
        batch) under ``skip_batch``; every process takes the same decision."""
        action = self.t._non_finite
        if action == "continue":
            return False
        value = _loss_value(item)
        bad = value is not None and not math.isfinite(value)
        if not self.strategy.any_process(bad):
            return False
        shown = f"{value}" if bad else "non-finite in another process"
        if action == "skip_batch":
            _log.warning(
                "Epoch %d batch %d: loss %s, batch skipped (on_non_finite_loss)", epoch, iteration, shown
            )
            return True
        kept = self._last_checkpoint_note()
        raise NonFiniteLossError(
            f"training loss is {shown} at epoch {epoch}, batch {iteration}; stopped before the "
            f"optimizer step, so the weights are still finite{kept}. To find the op that produced "
            "it, run again with the launch inside `with ember.detect_anomaly():` (backward then "
            "raises at the first op whose gradient is NaN or Inf, naming it and where it was "
            "created); or lower the learning rate, or choose .on_non_finite_loss('skip_batch') or "
            "('continue')"
        )

    def _last_checkpoint_note(self) -> str:
        if self.checkpointer is None:
            return " (no checkpointers were set)"
        if self.last_checkpoint is None:
            return "; no checkpoint was written yet"
        e = self.last_checkpoint
        return f"; the last checkpoint, of epoch {e}, is from before it (resume with .checkpoint({e}))"

    def _valid_split(self, epoch: int) -> None:
        loader = self.valid_loader
        model = self.learner.model.valid()
        self._start_split("valid", loader, epoch)
        lr = self.learner.lr_current()
        iteration = 0
        for batch in loader:
            iteration += 1
            item = self.strategy.metric_item(_synced(model.inference_step(batch)), loader)
            if self._after_batch("valid", loader, epoch, iteration, item, lr):
                break
        self._end_split("valid", epoch)

    def _after_batch(self, split: str, loader, epoch: int, iteration: int, item, lr) -> bool:
        """Metrics, logs and display of one batch (``item`` None: a skipped batch, display
        only); True when the interrupter asks to stop."""
        progress = _progress_of(loader, iteration)
        meta = MetricMetadata(
            progress=progress, epoch=epoch, epoch_total=self.t._num_epochs, iteration=iteration, lr=lr
        )
        if item is not None:
            self._update(split, item, meta, epoch)
        state = TrainingProgress(
            progress=progress, epoch=epoch, epoch_total=self.t._num_epochs, iteration=iteration, split=split
        )
        (self.renderer.render_train if split == "train" else self.renderer.render_valid)(state)
        for logger in self.progress_loggers:
            logger.log_progress(state)
        return self._should_stop()

    def _update(self, split: str, item, meta, epoch: int) -> None:
        update_renderer = self.renderer.update_train if split == "train" else self.renderer.update_valid
        for reg in self.metrics[split]:
            metric = reg.metric
            entry = metric.update(item, meta)
            if entry.serialized is not None:
                for logger in self.loggers:
                    logger.log(split, epoch, metric.name, entry.serialized)
            current = running = None
            if reg.numeric:
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

    def _end_split(self, split: str, epoch: int) -> None:
        # An epoch resumed mid-way: the metrics saw only the batches after the interrupt, so
        # its `final` line is the count-weighted mean of all its iteration lines, those before
        # the interrupt included (read back from the logs).
        partial = self.resumed_partial == (split, epoch)
        if partial:
            for logger in self.loggers:
                flush = getattr(logger, "flush", None)
                if callable(flush):
                    flush()
        for reg in self.metrics[split]:
            if not reg.numeric:
                continue
            final = reg.metric.running_value()
            if partial:
                read = self._read_numeric(split, reg.metric.name, epoch)
                if read is not None:
                    final = NumericEntry.Final(read)
            for logger in self.loggers:
                logger.log(split, epoch, reg.metric.name, final.serialize())
            self.store.record(split, reg.metric.name, epoch, final.current())
        for logger in self.loggers:
            logger.end_split(split, epoch)
        if partial:
            self.resumed_partial = None
        self.renderer.on_split_end(split, epoch)


def _loss_value(item) -> float | None:
    """The batch's loss as one number (its sum: non-finite exactly when an element is), or
    None when the training output has no ``loss``."""
    loss = getattr(item, "loss", None)
    if loss is None:
        return None
    return float(to_numpy(loss).astype("float64").sum())


def _synced(item):
    sync = getattr(item, "sync", None)
    return sync() if callable(sync) else item


def _progress_of(loader, iteration: int):
    progress = getattr(loader, "progress", None)
    if callable(progress):
        return progress()
    total = len(loader)
    return Progress(min(iteration, total), total)
