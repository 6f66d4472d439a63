"""``LearningCheckpointer``: model, optimizer and scheduler of an epoch saved and restored
together, plus the loop's own state (Burn's ``LearningCheckpointer``, ``strategies/base.rs``).

Beyond Burn, a fourth file ``training-<epoch>.bpk`` (scalars and metadata only) records what
an exact resume needs that the three records lack: the generators of the backends (dropout
masks, random init after resume) and, for a run interrupted mid-epoch, how many batches of
that epoch were done. It is the checkpoint's completion marker: it is written only once the
other three files are durable (each written atomically and fsynced, by its own background
thread: the marker's write waits for theirs), and deleted first. A checkpoint whose marker is
missing is treated as absent by :meth:`LearningCheckpointer.load_checkpoint`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ember.kernels.registry import rng_states, set_rng_states
from ember.nn.module_record import ModuleRecord
from ember.optim.scheduler_record import state_from_bytes, state_to_bytes
from ember.record import UInt, burnpack_reader, burnpack_writer
from ember.train.checkpoint.async_checkpointer import AsyncCheckpointer, CheckpointerError
from ember.train.checkpoint.strategy import CheckpointingStrategy
from ember.train.store import MetricsStore

__all__ = ["LearningCheckpointer", "TrainingState"]

_RECORDS = ("model", "optim", "scheduler")


def _done_marks(checkpointers) -> tuple:
    """Tickets marking the requests queued so far on ``checkpointers`` as done; one that is
    not an ``AsyncCheckpointer`` is flushed now if it can be (a plain one is synchronous)."""
    tickets = []
    for checkpointer in checkpointers:
        if isinstance(checkpointer, AsyncCheckpointer):
            tickets.append(checkpointer.ticket())
        elif callable(getattr(checkpointer, "flush", None)):
            checkpointer.flush()
    return tuple(tickets)


def _queue(checkpointer, kind: str, epoch: int, data: bytes | None, after: tuple) -> None:
    """``save``/``delete`` on ``checkpointer`` once the tickets ``after`` are done."""
    if isinstance(checkpointer, AsyncCheckpointer):
        if kind == "save":
            checkpointer.save(epoch, data, after=after)
        else:
            checkpointer.delete(epoch, after=after)
        return
    failed = [t.owner for t in after if not t.wait()]  # a synchronous one waits here
    if failed:
        raise CheckpointerError(
            f"checkpoint: {kind} of epoch {epoch} not done: the write it must follow failed "
            f"({', '.join(failed)})"
        )
    if kind == "save":
        checkpointer.save(epoch, data)
    else:
        checkpointer.delete(epoch)


@dataclass
class TrainingState:
    """What the loop needs to continue exactly where a checkpoint was taken.

    Args:
        epoch: the epoch the checkpoint belongs to.
        iterations_done: batches of ``epoch`` already trained when the checkpoint was taken
            mid-epoch (an interrupt); 0 for a checkpoint at the end of the epoch.
        rng: backend generator states (``ember.kernels.registry.rng_states()``).
    """

    epoch: int
    iterations_done: int = 0
    rng: dict = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        return self.iterations_done > 0

    def to_bytes(self) -> bytes:
        scalars = {"epoch": UInt(self.epoch), "iterations_done": UInt(self.iterations_done)}
        return burnpack_writer.to_bytes({}, {"rng": json.dumps(self.rng)}, scalars)

    @classmethod
    def from_bytes(cls, data: bytes) -> "TrainingState":
        with burnpack_reader.from_bytes(data) as record:
            scalars, metadata = dict(record.scalars), dict(record.metadata)
        try:
            return cls(int(scalars["epoch"]), int(scalars["iterations_done"]), json.loads(metadata["rng"]))
        except (KeyError, ValueError) as exc:
            raise ValueError(
                f"checkpoint: the training-state record is not one ember wrote ({exc})"
            ) from None


class LearningCheckpointer:
    """Saves and restores the learner's three records and the training state.

    Args:
        model, optim, scheduler, training: checkpointers (``save/restore/delete`` of bytes).
        strategy: decides which epochs to save and delete.
    """

    def __init__(self, model, optim, scheduler, training, strategy: CheckpointingStrategy):
        self.checkpointers = {"model": model, "optim": optim, "scheduler": scheduler, "training": training}
        self.strategy = strategy

    def _save_all(self, learner, state: TrainingState) -> None:
        # Serialise now, in the training thread: the background writer must never see a
        # model the next optimizer step is already changing.
        payloads = {
            "model": ModuleRecord.from_module(learner.model).to_bytes(),
            "optim": learner.optimizer.to_bytes(),
            "scheduler": state_to_bytes(learner.lr_scheduler),
            "training": state.to_bytes(),
        }
        records = [self.checkpointers[name] for name in _RECORDS]
        for name in _RECORDS:
            self.checkpointers[name].save(state.epoch, payloads[name])
        # The marker only once the three records are on disk (they are written by other
        # threads): a marker can never name a checkpoint that is not all there.
        _queue(
            self.checkpointers["training"], "save", state.epoch, payloads["training"], _done_marks(records)
        )

    def _delete_all(self, epoch: int) -> None:
        # The marker first, so a checkpoint half deleted reads as absent, never as complete.
        marker = self.checkpointers["training"]
        marker.delete(epoch)
        after = _done_marks([marker])
        for name in _RECORDS:
            _queue(self.checkpointers[name], "delete", epoch, None, after)

    def checkpoint(self, learner, epoch: int, store: MetricsStore) -> list:
        """Apply the strategy's actions for the end of ``epoch``; returns them."""
        actions = self.strategy.checkpointing(epoch, store)
        for action in actions:  # in order: a save always lands before a later delete
            if action.kind == "save":
                self._save_all(learner, TrainingState(epoch, 0, rng_states()))
            else:
                self._delete_all(action.epoch)
        return actions

    def checkpoint_partial(self, learner, epoch: int, iterations_done: int) -> None:
        """Save the state in the middle of ``epoch`` (after an interrupt), ignoring the strategy."""
        self._save_all(learner, TrainingState(epoch, iterations_done, rng_states()))

    def replay(self, last_epoch: int, store: MetricsStore) -> None:
        """Bring the strategy's memory up to ``last_epoch`` (a resumed run), deleting nothing."""
        for epoch in range(1, last_epoch + 1):
            self.strategy.checkpointing(epoch, store)

    def load_checkpoint(self, learner, epoch: int) -> TrainingState:
        """Restore model, optimizer, scheduler and generators of ``epoch``; returns the state."""
        try:  # the marker first: without it the checkpoint is incomplete, whatever else exists
            marker = self.checkpointers["training"].restore(epoch)
        except FileNotFoundError as exc:
            raise FileNotFoundError(
                f"checkpoint({epoch}): there is no complete checkpoint of epoch {epoch} (its "
                f"completion marker is missing: it was never finished, or was deleted). {exc}"
            ) from None
        data = {name: self.checkpointers[name].restore(epoch) for name in _RECORDS}
        state = TrainingState.from_bytes(marker)
        learner.model.load_record(ModuleRecord.from_bytes(data["model"]))
        learner.optimizer.from_bytes(data["optim"])
        state_from_bytes(data["scheduler"], learner.lr_scheduler)
        set_rng_states(state.rng)
        return state

    def flush(self) -> None:
        for checkpointer in self.checkpointers.values():
            flush = getattr(checkpointer, "flush", None)
            if callable(flush):
                flush()

    def close(self) -> None:
        errors = []
        for checkpointer in self.checkpointers.values():
            close = getattr(checkpointer, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:  # (close every one, then report)
                    errors.append(exc)
        if errors:
            raise errors[0]
