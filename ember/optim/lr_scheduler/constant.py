"""A constant learning rate (Burn's ``ConstantLr`` and the plain ``f64`` scheduler)."""

from __future__ import annotations

from collections.abc import Mapping

from ember.optim.lr_scheduler.base import LrScheduler, Scalar, check_real, read_state

__all__ = ["ConstantLr"]


class ConstantLr(LrScheduler):
    """Returns the same learning rate at every step: ``lr_k = lr``.

    A plain ``float`` is accepted wherever a scheduler is (see ``as_scheduler``); this class
    is what it becomes. It is also its own config: ``init()`` returns a fresh copy, so it can
    sit in the ``schedulers`` list of a composed or sequential config.

    Args:
        lr: The learning rate; any finite number (Burn does not restrict it).
    """

    def __init__(self, lr: float):
        self.lr = check_real("ConstantLr", "lr", lr)

    def init(self) -> "ConstantLr":
        """Return a new scheduler with the same rate (config-style construction)."""
        return ConstantLr(self.lr)

    def step(self) -> float:
        """Return ``lr``."""
        return self.lr

    def state(self) -> dict[str, Scalar]:
        """A constant schedule has no progress: the state is empty."""
        return {}

    def load_state(self, state: Mapping[str, Scalar]) -> None:
        """Accept only the empty state.

        Args:
            state: The mapping from ``state()``; must be empty.
        """
        read_state("ConstantLr", state, {})

    def __repr__(self) -> str:
        return f"ConstantLr(lr={self.lr!r})"
