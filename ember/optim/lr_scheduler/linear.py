"""Linear learning-rate schedule (Burn's ``LinearLrSchedulerConfig``)."""

from __future__ import annotations

from ember.optim.lr_scheduler.base import CounterLrScheduler, LrSchedulerConfig, check_int, check_range

__all__ = ["LinearLrScheduler", "LinearLrSchedulerConfig"]

_NAME = "LinearLrSchedulerConfig"


class LinearLrSchedulerConfig(LrSchedulerConfig):
    """Go from ``initial_lr`` to ``final_lr`` in equal steps over ``num_iters`` iterations.

    At the k-th call (k = 1, 2, ...)::

        lr_k = final_lr - (final_lr - initial_lr) / num_iters * max(num_iters + 1 - k, 0)

    so call 1 returns ``initial_lr`` and every call from ``num_iters + 1`` on returns
    ``final_lr``.

    Args:
        initial_lr: Rate at the first call, in (0, 1].
        final_lr: Rate reached after ``num_iters`` more calls, in [0, 1].
        num_iters: Number of iterations of the ramp, >= 1.
    """

    initial_lr: float
    final_lr: float
    num_iters: int

    def init(self) -> "LinearLrScheduler":
        """Validate the arguments and build the scheduler.

        Raises:
            ValueError: ``initial_lr`` outside (0, 1], ``final_lr`` outside [0, 1] or
                ``num_iters`` < 1.
            TypeError: An argument is not a number (``num_iters`` not an integer).
        """
        initial = check_range(_NAME, "initial_lr", self.initial_lr, 0.0, 1.0, low_open=True)
        final = check_range(_NAME, "final_lr", self.final_lr, 0.0, 1.0, low_open=False)
        num_iters = check_int(_NAME, "num_iters", self.num_iters, 1)
        return LinearLrScheduler(final, (final - initial) / num_iters, num_iters + 1)


class LinearLrScheduler(CounterLrScheduler):
    """Scheduler built by :class:`LinearLrSchedulerConfig` (formula there).

    State: ``{"remaining_iters": int}``, counting down from ``num_iters + 1`` to 0, as Burn.
    """

    counter = "remaining_iters"
    counter_min = 0

    def __init__(self, final_lr: float, step_size: float, remaining_iters: int):
        self._final_lr = final_lr
        self._step_size = step_size
        self._remaining_iters = remaining_iters

    def step(self) -> float:
        """Advance one iteration and return its learning rate."""
        if self._remaining_iters:
            self._remaining_iters -= 1
        # Same expression and evaluation order as Burn, so both produce identical floats.
        return self._final_lr - self._step_size * self._remaining_iters

    def __repr__(self) -> str:
        return (
            f"LinearLrScheduler(final_lr={self._final_lr!r}, step_size={self._step_size!r}, "
            f"remaining_iters={self._remaining_iters})"
        )
