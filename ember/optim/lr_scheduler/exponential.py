"""Exponential learning-rate decay (Burn's ``ExponentialLrSchedulerConfig``)."""

from __future__ import annotations

from ember.optim.lr_scheduler.base import CounterLrScheduler, LrSchedulerConfig, check_range

__all__ = ["ExponentialLrScheduler", "ExponentialLrSchedulerConfig"]

_NAME = "ExponentialLrSchedulerConfig"


class ExponentialLrSchedulerConfig(LrSchedulerConfig):
    """Multiply the rate by ``gamma`` at every call after the first.

    At the k-th call (k = 1, 2, ...)::

        lr_k = initial_lr * gamma ** (k - 1)

    (computed, like Burn, by repeated multiplication of the previous rate).

    Args:
        initial_lr: Rate at the first call, in (0, 1].
        gamma: Decay factor per iteration, in (0, 1].
    """

    initial_lr: float
    gamma: float

    def init(self) -> "ExponentialLrScheduler":
        """Validate the arguments and build the scheduler.

        Raises:
            ValueError: ``initial_lr`` or ``gamma`` outside (0, 1].
            TypeError: An argument is not a number.
        """
        initial = check_range(_NAME, "initial_lr", self.initial_lr, 0.0, 1.0, low_open=True)
        gamma = check_range(_NAME, "gamma", self.gamma, 0.0, 1.0, low_open=True)
        return ExponentialLrScheduler(initial / gamma, gamma)


class ExponentialLrScheduler(CounterLrScheduler):
    """Scheduler built by :class:`ExponentialLrSchedulerConfig` (formula there).

    State: ``{"previous_lr": float}``, the rate returned by the last call
    (``initial_lr / gamma`` before the first call), as Burn.
    """

    counter = "previous_lr"
    counter_kind = float

    def __init__(self, previous_lr: float, gamma: float):
        self._previous_lr = previous_lr
        self._gamma = gamma

    def step(self) -> float:
        """Advance one iteration and return its learning rate."""
        self._previous_lr *= self._gamma
        return self._previous_lr

    def __repr__(self) -> str:
        return f"ExponentialLrScheduler(previous_lr={self._previous_lr!r}, gamma={self._gamma!r})"
