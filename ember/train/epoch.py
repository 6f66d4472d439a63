"""``EpochLoop``: one training or validation epoch — iterate the loader, step, accumulate the
gradients, guard against a non-finite loss, report every batch (Burn's ``TrainEpoch`` and
``ValidEpoch``, ``learner/epoch.rs``).

One training iteration, as in Burn: the scheduler is stepped (before every batch, the first
one included), ``train_step`` runs, its loss is checked for NaN/Inf (``on_non_finite_loss``,
beyond Burn), then the optimizer steps — or the gradients are summed until
``grads_accumulation`` batches are in — and the batch is handed to the
:class:`~ember.train.event_processor.EventProcessor`. After every batch the loop asks
:meth:`RunControl.should_stop` and ends the epoch early when told to.
"""

from __future__ import annotations

import logging
import math

from ember.data import Progress
from ember.optim import GradientsAccumulator
from ember.train.event_processor import EventProcessor, LearnerItem
from ember.train.learner import Learner, base_lr
from ember.train.metric._array import to_numpy
from ember.train.run_control import RunControl
from ember.train.settings import NonFiniteLossAction
from ember.train.strategy import TrainingStrategy

__all__ = ["EpochLoop", "NonFiniteLossError"]

_log = logging.getLogger("ember.train")


class NonFiniteLossError(FloatingPointError):
    """The training loss was NaN or infinite and ``on_non_finite_loss("stop")`` (the default)
    ended the run before the optimizer step that would have used it."""


class EpochLoop:
    """Runs the epochs of one process.

    Args:
        learner: the learner trained.
        strategy: the training strategy (gradients and outputs pass through its hooks).
        events: receives every batch and the edges of every split.
        control: says when to stop; names the last checkpoint in errors.
        train_loader, valid_loader: this process's loaders (``valid_loader`` may be None).
        num_epochs: the last epoch of the run (reported with every batch).
        grads_accumulation: batches per optimizer step (None or 1: every batch steps).
        non_finite_loss: ``"stop"``, ``"skip_batch"`` or ``"continue"``.
    """

    def __init__(
        self,
        learner: Learner,
        strategy: TrainingStrategy,
        events: EventProcessor,
        control: RunControl,
        train_loader,
        valid_loader,
        num_epochs: int,
        grads_accumulation: int | None = None,
        non_finite_loss: NonFiniteLossAction = "stop",
    ):
        self.learner = learner
        self.strategy = strategy
        self.events = events
        self.control = control
        self.train_loader = train_loader
        self.valid_loader = valid_loader
        self.num_epochs = num_epochs
        self.grads_accumulation = (
            grads_accumulation if grads_accumulation and grads_accumulation > 1 else None
        )
        self.non_finite_loss = non_finite_loss
        self.skipped_batches = 0  # over the whole run

    def train(self, epoch: int, skip: int = 0) -> int:
        """Train ``epoch``, leaving out its first ``skip`` batches (done before the interrupt
        this run resumes from); returns the batches of the epoch done."""
        learner, loader, strategy = self.learner, self.train_loader, self.strategy
        self._start_split("train", loader, epoch)
        accumulate = self.grads_accumulation
        accumulator = GradientsAccumulator() if accumulate else None
        in_group = 0  # batches of the current accumulation group, skipped ones included
        skipped = 0
        iteration = 0
        for batch in loader:
            iteration += 1
            if iteration <= skip:
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
            self.events.message(
                f"Epoch {epoch}: skipped {skipped} batch(es) with a non-finite loss (no update, not "
                "in the metrics)"
            )
        if accumulator is not None and accumulator.num_accumulated:
            # the last, incomplete group of the split still counts (Burn drops it)
            learner.optimizer_step(accumulator.grads())
        self.events.end_split("train", epoch)
        return iteration

    def valid(self, epoch: int) -> None:
        """Validate ``epoch`` on ``model.valid()`` (dropout off, no graph)."""
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
        self.events.end_split("valid", epoch)

    def _start_split(self, split: str, loader, epoch: int) -> None:
        set_epoch = getattr(loader, "set_epoch", None)
        if callable(set_epoch):  # the same epoch always gets the same order, resumed or not
            set_epoch(epoch - 1)
        num_items = loader.num_items() if callable(getattr(loader, "num_items", None)) else len(loader)
        self.events.start_split(split, epoch, num_items)

    def _after_batch(self, split: str, loader, epoch: int, iteration: int, output, lr) -> bool:
        """Report one batch (``output`` None: a skipped batch, display only); True when the
        run must stop."""
        self.events.process_item(
            LearnerItem(split, output, _progress_of(loader, iteration), epoch, self.num_epochs, iteration, lr)
        )
        return self.control.should_stop()

    def _non_finite_loss(self, item, epoch: int, iteration: int) -> bool:
        """Check the batch's loss before its update: raise under ``stop``, True (drop the
        batch) under ``skip_batch``; every process takes the same decision."""
        action = self.non_finite_loss
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
        kept = self.control.last_checkpoint_note()
        raise NonFiniteLossError(
            f"training loss is {shown} at epoch {epoch}, batch {iteration}; stopped before the "
            f"optimizer step, so the weights are still finite{kept}. To find the op that produced "
            "it, run again with the launch inside `with ember.detect_anomaly():` (backward then "
            "raises at the first op whose gradient is NaN or Inf, naming it and where it was "
            "created); or lower the learning rate, or choose .on_non_finite_loss('skip_batch') or "
            "('continue')"
        )


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


def _progress_of(loader, iteration: int) -> Progress:
    progress = getattr(loader, "progress", None)
    if callable(progress):
        return progress()
    total = len(loader)
    return Progress(min(iteration, total), total)
