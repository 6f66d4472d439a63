"""Step-decay learning-rate schedule (Burn's ``StepLrSchedulerConfig``)."""

from __future__ import annotations

import logging

from ember.optim.lr_scheduler.base import CounterLrScheduler, LrSchedulerConfig, check_int, check_real

__all__ = ["StepLrScheduler", "StepLrSchedulerConfig"]

_NAME = "StepLrSchedulerConfig"
_log = logging.getLogger(__name__)


class StepLrSchedulerConfig(LrSchedulerConfig):
    """Keep the rate for ``step_size`` calls, then multiply it by ``gamma``; repeat.

    At the k-th call (k = 1, 2, ...)::

        lr_k = initial_lr * gamma ** floor((k - 1) / step_size)

    Like Burn, an ``initial_lr`` <= 0 or a ``gamma`` outside (0, 1) is accepted (useful
    when debugging) but logged as a warning.

    Args:
        initial_lr: Rate of the first ``step_size`` calls; any finite number.
        step_size: Calls between two decays, >= 1.
        gamma: Decay factor; any finite number. Default 0.1.
    """

    initial_lr: float
    step_size: int
    gamma: float = 0.1

    def init(self) -> "StepLrScheduler":
        """Validate the arguments and build the scheduler.

        Raises:
            ValueError: ``step_size`` < 1, or ``initial_lr``/``gamma`` not finite.
            TypeError: An argument is not a number (``step_size`` not an integer).
        """
        step_size = check_int(_NAME, "step_size", self.step_size, 1)
        initial = check_real(_NAME, "initial_lr", self.initial_lr)
        gamma = check_real(_NAME, "gamma", self.gamma)
        if initial <= 0.0:
            _log.warning(
                "%s: initial_lr=%r is not positive; ignore this warning if it is intended.",
                _NAME,
                initial,
            )
        if not 0.0 < gamma < 1.0:
            _log.warning(
                "%s: gamma=%r is outside (0, 1); ignore this warning if it is intended.",
                _NAME,
                gamma,
            )
        return StepLrScheduler(initial, step_size, gamma)


class StepLrScheduler(CounterLrScheduler):
    """Scheduler built by :class:`StepLrSchedulerConfig` (formula there).

    State: ``{"iter_idx": int}`` = k - 1 after k calls (-1 before the first call), as Burn.
    """

    counter = "iter_idx"
    counter_min = -1

    def __init__(self, initial_lr: float, step_size: int, gamma: float):
        self._initial_lr = initial_lr
        self._step_size = step_size
        self._gamma = gamma
        self._iter_idx = -1

    def step(self) -> float:
        """Advance one iteration and return its learning rate."""
        self._iter_idx += 1
        return self._initial_lr * self._gamma ** (self._iter_idx // self._step_size)

    def __repr__(self) -> str:
        return (
            f"StepLrScheduler(initial_lr={self._initial_lr!r}, step_size={self._step_size}, "
            f"gamma={self._gamma!r}, iter_idx={self._iter_idx})"
        )
