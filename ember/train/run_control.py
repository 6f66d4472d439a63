"""``RunControl``: when a training run stops and how it picks up again — the interrupter,
Ctrl-C and SIGTERM, the stop decision shared by every process, the checkpoints taken at the
end of an epoch or at an interrupt, resume from one, and early stopping (Burn's
``Interrupter`` and ``LearningCheckpointer`` use in ``strategies/base.rs``).

Under a strategy whose process is not the main one, there is no checkpointer (only the main
process writes) but the stop decisions are still taken together with the main process.
"""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ember.train.event_processor import EventProcessor
from ember.train.interrupter import Interrupter
from ember.train.learner import Learner
from ember.train.strategy import TrainingStrategy

__all__ = ["RunControl"]


@dataclass(eq=False, repr=False)
class RunControl:
    """Stops, checkpoints and resumes one run.

    Args:
        learner: the learner being trained.
        strategy: the training strategy (its ``any_process``/``from_main`` are the collectives).
        interrupter: the run's stop flag.
        events: where messages go.
        directory: the artifact directory (named in the resume hints).
        checkpointer: a ``LearningCheckpointer``, or None (nothing is saved).
        early_stopping: a strategy with ``should_stop(epoch, store)``, or None.
        is_main: whether this process holds the metrics (early stopping is decided there).
    """

    learner: Learner
    strategy: TrainingStrategy
    interrupter: Interrupter
    events: EventProcessor
    directory: Path
    checkpointer: Any = None
    early_stopping: Any = None
    is_main: bool = True
    # the newest epoch checkpointed (or resumed from)
    last_checkpoint: int | None = field(default=None, init=False)
    _previous_handlers: dict[int, Any] = field(default_factory=dict, init=False)

    # ---- signals ----------------------------------------------------------------------------
    def install_signal_handlers(self, sigint: bool, sigterm: bool) -> None:
        """Make Ctrl-C (``sigint``) and SIGTERM (``sigterm``) stop the run after the batch."""
        if threading.current_thread() is not threading.main_thread():  # (Python's rule for signals)
            return
        for signum, enabled in ((signal.SIGINT, sigint), (signal.SIGTERM, sigterm)):
            if enabled:
                self._previous_handlers[signum] = signal.getsignal(signum)
                signal.signal(signum, self._on_signal)

    def restore_signal_handlers(self) -> None:
        for signum, previous in self._previous_handlers.items():
            # (None: a handler not set from Python; the default is the closest to restore)
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)
        self._previous_handlers = {}

    def _on_signal(self, signum, frame) -> None:
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        if self.interrupter.should_stop():  # a second one: stop now
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise SystemExit(128 + signum)
        self.interrupter.stop(name)
        again = "press Ctrl-C" if signum == signal.SIGINT else f"send {name}"
        self.events.notice(
            f"{name}: stopping after this batch and saving a checkpoint ({again} again to abort at once)"
        )

    # ---- decisions every process takes together --------------------------------------------------
    def should_stop(self) -> bool:
        """Whether the interrupter asks to stop, in this or (distributed) any other process:
        every process then stops at the same batch. The answer is the collective's: a signal
        handled after the flag was read (e.g. as the collective's wait returns) is seen at the
        next check, by every process together, so their collectives stay paired."""
        stop = self.strategy.any_process(self.interrupter.should_stop())
        if stop and not self.interrupter.should_stop():
            self.interrupter.stop("another rank was interrupted")
        return stop

    def should_stop_early(self, epoch: int) -> bool:
        """The early-stopping decision after ``epoch``, taken on the main process (which has
        the metrics) and shared with every other."""
        if self.early_stopping is None:
            return False
        stop = self.is_main and self.early_stopping.should_stop(epoch, self.events.store)
        if bool(self.strategy.from_main((int(stop),))[0]):
            self.events.message(f"Early stopping after epoch {epoch}: {self.early_stopping!r}")
            return True
        return False

    # ---- checkpoints ----------------------------------------------------------------------------
    def checkpoint_epoch(self, epoch: int) -> None:
        """The checkpointing strategy's actions at the end of ``epoch``."""
        if self.checkpointer is None:
            return
        actions = self.checkpointer.checkpoint(self.learner, epoch, self.events.store)
        if any(action.kind == "save" for action in actions):
            self.last_checkpoint = epoch

    def interrupt(self, epoch: int, done: int) -> None:
        """The run stops after ``done`` batches of ``epoch``: save the state to resume from."""
        reason = self.interrupter.get_message() or "interrupter"
        if self.checkpointer is None:
            self.events.message(
                f"Training stopped ({reason}) during epoch {epoch} after {done} batches; no "
                "checkpointers were set, so nothing was saved to resume from"
            )
            return
        self.checkpointer.checkpoint_partial(self.learner, epoch, done)
        self.events.message(
            f"Training stopped ({reason}) during epoch {epoch} after {done} batches. "
            + self.resume_hint(epoch, done)
        )

    def resume_hint(self, epoch: int, done: int | None) -> str:
        """How to continue after a stop in ``epoch`` (``done`` batches in; None: at its end)."""
        where = f"batch {done + 1} of epoch {epoch}" if done is not None else f"epoch {epoch + 1}"
        return (
            f"The state is checkpointed in {self.directory / 'checkpoint'}; resume with "
            f"SupervisedTraining(...).checkpoint({epoch}) to continue at {where}."
        )

    def last_checkpoint_note(self) -> str:
        """Where the newest checkpoint stands, for an error that ends the run."""
        if self.checkpointer is None:
            return " (no checkpointers were set)"
        if self.last_checkpoint is None:
            return "; no checkpoint was written yet"
        epoch = self.last_checkpoint
        return (
            f"; the last checkpoint, of epoch {epoch}, is from before it (resume with .checkpoint({epoch}))"
        )

    def flush(self) -> None:
        """Wait until every checkpoint asked for is written."""
        if self.checkpointer is not None:
            self.checkpointer.flush()

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.close()

    # ---- resume -----------------------------------------------------------------------------------
    def resume(self, epoch: int) -> tuple[int, int]:
        """Restore the checkpoint of ``epoch``; returns (first epoch to train, batches of it
        already done)."""
        state = self.checkpointer.load_checkpoint(self.learner, epoch)
        if state.partial:
            start, skip = epoch, state.iterations_done
            self.events.continue_epoch("train", epoch)
            text = f"Resuming from the checkpoint of epoch {epoch} taken at batch {skip}: continuing epoch {epoch}"
        else:
            start, skip = epoch + 1, 0
            text = f"Resuming from the checkpoint of epoch {epoch}: continuing at epoch {start}"
        store = self.events.store
        self.checkpointer.replay(start - 1, store)
        self.last_checkpoint = epoch
        stopper = self.early_stopping
        if stopper is not None:  # its memory (best value, epochs without progress) replayed
            for past in range(1, start):
                name, split = getattr(stopper, "name", ""), getattr(stopper, "split", "valid")
                if store.aggregate(name, past, split) is not None:
                    stopper.should_stop(past, store)
        self.events.message(text)
        return start, skip
