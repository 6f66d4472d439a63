"""A learning-rate specification (a number, a scheduler or a scheduler config) made a scheduler."""

from __future__ import annotations

import numbers

from ember.optim.lr_scheduler.base import LrScheduler, LrSchedulerLike
from ember.optim.lr_scheduler.constant import ConstantLr

__all__ = ["as_scheduler", "build_child"]


def as_scheduler(value: LrSchedulerLike) -> LrScheduler:
    """Turn a learning-rate specification into a scheduler.

    Args:
        value: A plain number (a constant learning rate, like Burn's ``f64`` scheduler),
            an :class:`LrScheduler` (returned as is) or a scheduler config exposing
            ``init()`` (initialised, which validates it).

    Returns:
        The scheduler.

    Raises:
        TypeError: ``value`` is none of the above.
        ValueError: ``value`` is a config with invalid arguments, or a non-finite number.
    """
    if isinstance(value, LrScheduler):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return ConstantLr(float(value))
    init = getattr(value, "init", None)
    if callable(init):
        scheduler = init()
        if not isinstance(scheduler, LrScheduler):
            raise TypeError(
                f"as_scheduler: {type(value).__name__}.init() returned "
                f"{type(scheduler).__name__}, expected an LrScheduler"
            )
        return scheduler
    raise TypeError(
        "as_scheduler: expected a learning rate (float), an LrScheduler or a scheduler "
        f"config with init(), got {type(value).__name__} ({value!r})"
    )


def build_child(value: LrSchedulerLike) -> LrScheduler:
    """Build a fresh child scheduler for a composite; scheduler instances are copied so
    initialising the same config twice never shares progress."""
    if isinstance(value, LrScheduler):
        return value.clone()
    return as_scheduler(value)
