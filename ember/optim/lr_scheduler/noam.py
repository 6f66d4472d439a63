"""Noam warm-up / inverse-square-root schedule (Burn's ``NoamLrSchedulerConfig``)."""

from __future__ import annotations

from ember.optim.lr_scheduler.base import CounterLrScheduler, LrSchedulerConfig, check_int, check_real

__all__ = ["NoamLrScheduler", "NoamLrSchedulerConfig"]

_NAME = "NoamLrSchedulerConfig"


class NoamLrSchedulerConfig(LrSchedulerConfig):
    """The schedule of "Attention Is All You Need": linear warm-up, then k^-1/2 decay.

    At the k-th call (k = 1, 2, ...)::

        lr_k = factor * model_size**-0.5 * min(k**-0.5, k * warmup_steps**-1.5)

    The peak, ``factor / sqrt(model_size * warmup_steps)``, is reached at k = warmup_steps.

    Args:
        factor: Overall scale; any finite number (Burn does not restrict it).
        warmup_steps: Length of the warm-up, >= 1. Default 4000.
        model_size: Model width d_model, >= 1. Default 512.
    """

    factor: float
    warmup_steps: int = 4000
    model_size: int = 512

    def init(self) -> "NoamLrScheduler":
        """Validate the arguments and build the scheduler.

        Raises:
            ValueError: ``warmup_steps`` or ``model_size`` < 1, or ``factor`` not finite.
            TypeError: An argument is not a number (the sizes not integers).
        """
        factor = check_real(_NAME, "factor", self.factor)
        warmup = check_int(_NAME, "warmup_steps", self.warmup_steps, 1)
        model_size = check_int(_NAME, "model_size", self.model_size, 1)
        return NoamLrScheduler(factor, float(warmup), float(model_size))


class NoamLrScheduler(CounterLrScheduler):
    """Scheduler built by :class:`NoamLrSchedulerConfig` (formula there).

    State: ``{"step": float}``, the number of calls so far (a float, as in Burn).
    """

    counter = "step"
    counter_kind = float
    counter_min = 0

    def __init__(self, factor: float, warmup_steps: float, model_size: float):
        self._factor = factor
        self._warmup_steps = warmup_steps
        self._model_size = model_size
        self._step = 0.0

    def step(self) -> float:
        """Advance one iteration and return its learning rate."""
        self._step += 1.0
        decay = self._step**-0.5
        warmup = self._step * self._warmup_steps**-1.5
        return self._factor * self._model_size**-0.5 * min(decay, warmup)

    def __repr__(self) -> str:
        return (
            f"NoamLrScheduler(factor={self._factor!r}, warmup_steps={self._warmup_steps:g}, "
            f"model_size={self._model_size:g}, step={self._step:g})"
        )
