"""``TrainingSettings``: everything ``SupervisedTraining`` was told, as one frozen object that
the run reads (the builder configures; the run, in ``training_run.py``, acts).

The builder fills it field by field and never runs anything; the run never reads the builder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from ember.train.interrupter import Interrupter
from ember.train.strategy import SingleDevice, TrainingStrategy

__all__ = [
    "NON_FINITE_LOSS_ACTIONS",
    "NonFiniteLossAction",
    "RecordCheckpointers",
    "RegisteredMetric",
    "TrainingSettings",
]

# What the loop does at a non-finite training loss (``on_non_finite_loss``).
NonFiniteLossAction = Literal["stop", "skip_batch", "continue"]
NON_FINITE_LOSS_ACTIONS: tuple[str, ...] = ("stop", "skip_batch", "continue")


@dataclass(frozen=True)
class RegisteredMetric:
    """A metric of one split.

    Args:
        metric: the metric (``name``, ``update(item, metadata)``, ``clear()``).
        numeric: whether it is numeric (``running_value()``): then also plotted, summarised
            and given a ``final`` line per epoch.
    """

    metric: Any
    numeric: bool


class RecordCheckpointers(NamedTuple):
    """The checkpointers of the learner's three records (``save``/``restore``/``delete`` of
    bytes per epoch)."""

    model: Any
    optim: Any
    scheduler: Any


@dataclass(frozen=True)
class TrainingSettings:
    """The configuration of one supervised training run (see ``SupervisedTraining`` for what
    each setting does).

    Args:
        directory: the artifact directory.
        dataloader_train: the training loader.
        dataloader_valid: the validation loader, or None to skip validation.
        num_epochs: the last epoch to train.
        train_metrics, valid_metrics: the metrics of each split, in registration order.
        metric_loggers: the metric loggers (none: a ``FileMetricLogger`` on ``directory``).
        progress_loggers: objects whose ``log_progress(TrainingProgress)`` sees every batch.
        renderer: the display; None for the default one.
        application_logger: the ``experiment.log`` installer; None writes no such file.
        plots: whether ``plots/<Metric>.png`` is drawn after every epoch.
        print_summary: whether the learner summary is printed at the end.
        grads_accumulation: batches whose gradients are summed per optimizer step (None: 1).
        non_finite_loss: what a NaN/Inf training loss does.
        resume_from_epoch: the checkpoint to resume from, or None to start afresh.
        checkpointers: the record checkpointers, or None to checkpoint nothing.
        checkpointing_strategy: which epochs are saved and deleted.
        early_stopping: the early-stopping strategy, or None.
        interrupter: the stop flag of the run.
        training_strategy: how this process takes part in the run.
        handle_sigint, handle_sigterm: whether Ctrl-C / SIGTERM stop the run with a checkpoint.
    """

    directory: Path
    dataloader_train: Any
    dataloader_valid: Any = None
    num_epochs: int = 1
    train_metrics: tuple[RegisteredMetric, ...] = ()
    valid_metrics: tuple[RegisteredMetric, ...] = ()
    metric_loggers: tuple = ()
    progress_loggers: tuple = ()
    renderer: Any = None
    application_logger: Any = None
    plots: bool = True
    print_summary: bool = False
    grads_accumulation: int | None = None
    non_finite_loss: NonFiniteLossAction = "stop"
    resume_from_epoch: int | None = None
    checkpointers: RecordCheckpointers | None = None
    checkpointing_strategy: Any = None
    early_stopping: Any = None
    interrupter: Interrupter = field(default_factory=Interrupter)
    training_strategy: TrainingStrategy = field(default_factory=SingleDevice)
    handle_sigint: bool = True
    handle_sigterm: bool = True

    def metrics_of(self, split: str) -> tuple[RegisteredMetric, ...]:
        """The metrics registered on ``split`` (``"train"`` or ``"valid"``)."""
        if split == "train":
            return self.train_metrics
        if split == "valid":
            return self.valid_metrics
        raise ValueError(f"TrainingSettings.metrics_of: split must be 'train' or 'valid', got {split!r}")
