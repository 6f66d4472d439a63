"""Cosine-annealing learning-rate schedule (Burn's ``CosineAnnealingLrSchedulerConfig``)."""

from __future__ import annotations

import math

from ember.optim.lr_scheduler.base import CounterLrScheduler, LrSchedulerConfig, check_int, check_range

__all__ = ["CosineAnnealingLrScheduler", "CosineAnnealingLrSchedulerConfig"]

_NAME = "CosineAnnealingLrSchedulerConfig"
# Burn keeps the counter in a usize that starts at usize::MAX and wraps to 0 on the first
# call; the same convention keeps saved states interchangeable with Burn's.
_U64 = 1 << 64
_BEFORE_FIRST_CALL = _U64 - 1


class CosineAnnealingLrSchedulerConfig(LrSchedulerConfig):
    """Cosine annealing from ``initial_lr`` down to ``min_lr``, without warm restarts.

    At the k-th call (k = 1, 2, ...)::

        lr_k = min_lr + 0.5 * (initial_lr - min_lr) * (1 + cos(pi * (k - 1) / num_iters))

    After ``num_iters`` calls the rate keeps following the cosine (rising again), exactly
    as Burn and PyTorch's ``CosineAnnealingLR`` closed form.

    Args:
        initial_lr: Rate at the first call, in (0, 1].
        num_iters: Half-period of the cosine in iterations, >= 1.
        min_lr: Lowest rate, in [0, initial_lr]. Default 0.
    """

    initial_lr: float
    num_iters: int
    min_lr: float = 0.0

    def init(self) -> "CosineAnnealingLrScheduler":
        """Validate the arguments and build the scheduler.

        Raises:
            ValueError: ``initial_lr`` outside (0, 1], ``min_lr`` outside [0, initial_lr] or
                ``num_iters`` < 1.
            TypeError: An argument is not a number (``num_iters`` not an integer).
        """
        initial = check_range(_NAME, "initial_lr", self.initial_lr, 0.0, 1.0, low_open=True)
        min_lr = check_range(_NAME, "min_lr", self.min_lr, 0.0, initial, low_open=False)
        num_iters = check_int(_NAME, "num_iters", self.num_iters, 1)
        return CosineAnnealingLrScheduler(initial, min_lr, num_iters)


class CosineAnnealingLrScheduler(CounterLrScheduler):
    """Scheduler built by :class:`CosineAnnealingLrSchedulerConfig` (formula there).

    State: ``{"current_iter": int}`` = k - 1 after k calls; before the first call it is
    2**64 - 1, Burn's wrapped ``usize::MAX`` (a record writer must store it unsigned).
    """

    counter = "current_iter"
    counter_min = 0
    counter_end = _U64
    counter_end_text = "2**64"

    def __init__(self, max_lr: float, min_lr: float, num_iters: int):
        self._max_lr = max_lr
        self._min_lr = min_lr
        self._num_iters = num_iters
        self._current_iter = _BEFORE_FIRST_CALL

    def step(self) -> float:
        """Advance one iteration and return its learning rate."""
        self._current_iter = (self._current_iter + 1) % _U64
        angle = self._current_iter / self._num_iters * math.pi
        return self._min_lr + 0.5 * (self._max_lr - self._min_lr) * (1.0 + math.cos(angle))

    def __repr__(self) -> str:
        return (
            f"CosineAnnealingLrScheduler(max_lr={self._max_lr!r}, min_lr={self._min_lr!r}, "
            f"num_iters={self._num_iters}, current_iter={self._current_iter})"
        )
