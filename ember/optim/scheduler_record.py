"""Save and load learning-rate scheduler progress as a scalar-only burnpack (``.bpk``) file.

Burn's ``LrSchedulerRecord`` is a burnpack container with no tensors whose scalars are the
scheduler's state (``"remaining_iters"``; children of composed schedulers under ``"0."``,
``"1."``...). Every ember scheduler exposes that state as ``state()`` / ``load_state()``;
these helpers write and read it, storing integer counters as Burn's ``Scalar::UInt``::

    save_state("checkpoint/scheduler-3", scheduler)      # writes scheduler-3.bpk
    load_state("checkpoint/scheduler-3", scheduler)      # same configuration, progress restored
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ember.record import UInt
from ember.record import from_bytes as _from_bytes
from ember.record import load as _load
from ember.record import save as _save
from ember.record import to_bytes as _to_bytes

__all__ = ["load_state", "save_state", "state_from_bytes", "state_to_bytes"]


def _state_of(owner: str, scheduler) -> dict[str, Any]:
    state_fn = getattr(scheduler, "state", None)
    if not callable(state_fn) or not callable(getattr(scheduler, "load_state", None)):
        raise TypeError(
            f"{owner}: expected a learning-rate scheduler with state()/load_state() "
            f"(an ember.optim.lr_scheduler scheduler), got {type(scheduler).__name__}"
        )
    return state_fn()


def _scalars(state: Mapping[str, Any]) -> dict[str, Any]:
    """Burn's scalar variants: non-negative ints (usize counters) as UInt, floats, bools."""
    out = {}
    for key, value in state.items():
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            value = UInt(value)
        out[str(key)] = value
    return out


def _restore(scheduler, scalars: Mapping[str, Any]):
    # UInt is an int subclass; hand the scheduler plain ints so its type checks stay exact
    state = {key: int(v) if isinstance(v, UInt) else v for key, v in scalars.items()}
    scheduler.load_state(state)
    return scheduler


def save_state(path: str | os.PathLike, scheduler) -> Path:
    """Write ``scheduler.state()`` as the scalars of a burnpack file.

    Args:
        path: destination (``.bpk`` appended when it has no extension).
        scheduler: any ember scheduler (``ModuleLrScheduler`` included).

    Returns:
        The path written.
    """
    return _save(path, {}, None, _scalars(_state_of("save_state", scheduler)))


def load_state(path: str | os.PathLike, scheduler):
    """Restore progress saved by :func:`save_state` (or Burn) into ``scheduler``; returns it.

    Args:
        path: the file (``.bpk`` tried when the path has no extension and does not exist).
        scheduler: a scheduler built from the same configuration.

    Raises:
        ValueError: the saved keys do not match the scheduler's (raised by the scheduler).
    """
    _state_of("load_state", scheduler)
    with _load(path) as record:
        scalars = dict(record.scalars)
    return _restore(scheduler, scalars)


def state_to_bytes(scheduler) -> bytes:
    """``scheduler.state()`` as burnpack bytes."""
    return _to_bytes({}, None, _scalars(_state_of("state_to_bytes", scheduler)))


def state_from_bytes(data: bytes, scheduler):
    """Restore progress from :func:`state_to_bytes` output into ``scheduler``; returns it."""
    _state_of("state_from_bytes", scheduler)
    with _from_bytes(data) as record:
        scalars = dict(record.scalars)
    return _restore(scheduler, scalars)
