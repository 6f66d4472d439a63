"""Rank 0's training state on every rank: model, optimizer and learning-rate schedule.

Sent once when data-parallel training starts (after rank 0 resumed from a checkpoint, if it
did), as burnpack bytes broadcast over the communicator. Loading rank 0's model record also
gives every rank rank 0's parameter ids, so the optimizer state, keyed by them, fits.
"""

from __future__ import annotations

from ember.nn.module_record import ModuleRecord
from ember.optim.scheduler_record import state_from_bytes, state_to_bytes

from .communicator import Communicator

__all__ = ["broadcast_learner_state", "broadcast_module"]


def broadcast_module(communicator: Communicator, model, root: int = 0) -> None:
    """Overwrite ``model``'s parameters (and their ids) on every rank with ``root``'s."""
    mine = ModuleRecord.from_module(model).to_bytes() if communicator.rank == root else None
    data = communicator.broadcast_bytes(mine, root)
    if communicator.rank != root:
        model.load_record(ModuleRecord.from_bytes(data))


def broadcast_learner_state(communicator: Communicator, learner, root: int = 0) -> None:
    """Give every rank ``root``'s model, optimizer state and scheduler progress.

    Args:
        communicator: the run's communicator.
        learner: the ``ember.train.Learner`` of this rank.
        root: the rank whose state wins.
    """
    broadcast_module(communicator, learner.model, root)
    is_root = communicator.rank == root
    optim = communicator.broadcast_bytes(learner.optimizer.to_bytes() if is_root else None, root)
    schedule = communicator.broadcast_bytes(state_to_bytes(learner.lr_scheduler) if is_root else None, root)
    if not is_root:
        learner.optimizer.from_bytes(optim)
        state_from_bytes(schedule, learner.lr_scheduler)
