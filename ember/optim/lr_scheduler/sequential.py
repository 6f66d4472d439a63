"""Schedules run one after another (Burn's ``SequentialLrSchedulerConfig``)."""

from __future__ import annotations

import bisect
import numbers
from collections.abc import Mapping, Sequence

from ember.optim.lr_scheduler.base import (
    LrScheduler,
    LrSchedulerConfig,
    Scalar,
    SchedulerSpec,
    load_children,
    nest_state,
    read_counter,
    split_state,
)
from ember.optim.lr_scheduler.spec import build_child

__all__ = ["SequentialLrScheduler", "SequentialLrSchedulerConfig"]

_NAME = "SequentialLrSchedulerConfig"


class SequentialLrSchedulerConfig(LrSchedulerConfig):
    """Hand over from one scheduler to the next at given milestones.

    A milestone is a number of completed calls: child i (0-based) answers every call made
    while ``milestones[i-1] <= calls_so_far < milestones[i]``. Only the active child is
    stepped, so each child starts from its own first rate when it takes over. Example:
    ``[linear warm-up over 100, cosine over 900]`` with ``milestones=[100]``.

    Args:
        schedulers: N >= 1 children (numbers, configs or schedulers, copied on ``init()``).
        milestones: N - 1 integers, each > 0 and strictly increasing.
    """

    schedulers: list[SchedulerSpec]
    milestones: list[int]

    def init(self) -> "SequentialLrScheduler":
        """Validate the arguments and children and build the scheduler.

        Raises:
            ValueError: No child, ``len(milestones) != len(schedulers) - 1``, a milestone
                <= 0 or not strictly increasing, or an invalid child config.
            TypeError: A milestone is not an integer, or a child is not a scheduler-like.
        """
        for name in ("schedulers", "milestones"):
            value = getattr(self, name)
            if not isinstance(value, Sequence) or isinstance(value, str):
                raise TypeError(f"{_NAME}: `{name}` must be a list, got {type(value).__name__}")
        if not self.schedulers:
            raise ValueError(f"{_NAME}: `schedulers` must hold at least one scheduler, got []")
        if len(self.milestones) + 1 != len(self.schedulers):
            raise ValueError(
                f"{_NAME}: `milestones` must hold one less entry than `schedulers` "
                f"({len(self.schedulers) - 1}), got {len(self.milestones)}: {list(self.milestones)}"
            )
        milestones: list[int] = []
        for index, milestone in enumerate(self.milestones):
            if isinstance(milestone, bool) or not isinstance(milestone, numbers.Integral):
                raise TypeError(f"{_NAME}: `milestones[{index}]` must be an integer, got {milestone!r}")
            if milestone <= 0 or (milestones and milestone <= milestones[-1]):
                raise ValueError(
                    f"{_NAME}: `milestones` must be > 0 and strictly increasing, got {list(self.milestones)}"
                )
            milestones.append(int(milestone))
        return SequentialLrScheduler([build_child(s) for s in self.schedulers], milestones)


class SequentialLrScheduler(LrScheduler):
    """Scheduler built by :class:`SequentialLrSchedulerConfig` (rule there).

    State: ``{"step": int}`` (calls so far) plus each child's state under ``"0."``,
    ``"1."``..., as Burn.
    """

    def __init__(self, schedulers: list[LrScheduler], milestones: list[int]):
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self._step = 0

    @property
    def active_index(self) -> int:
        """Index of the child that will answer the next call."""
        return bisect.bisect_right(self._milestones, self._step)

    def step(self) -> float:
        """Step the active child and return its rate."""
        lr = self._schedulers[self.active_index].step()
        self._step += 1
        return lr

    def state(self) -> dict[str, Scalar]:
        """Return ``{"step": int}`` and the children's nested states."""
        return nest_state(self._schedulers, {"step": self._step})

    def load_state(self, state: Mapping[str, Scalar]) -> None:
        """Restore the call counter and every child.

        Args:
            state: A mapping from ``state()`` of an identically configured scheduler.
        """
        own, children = split_state("SequentialLrScheduler", state, len(self._schedulers), own_keys=("step",))
        step = read_counter("SequentialLrScheduler", own, "step", int, 0)
        self._schedulers = load_children(self._schedulers, children)
        self._step = step

    def __repr__(self) -> str:
        return (
            f"SequentialLrScheduler({self._schedulers!r}, milestones={self._milestones}, step={self._step})"
        )
