"""Several schedules combined at every step (Burn's ``ComposedLrSchedulerConfig``)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence

from ember.optim.lr_scheduler.base import (
    LrScheduler,
    LrSchedulerConfig,
    LrSchedulerLike,
    Scalar,
    SchedulerSpec,
    load_nested,
    nest_state,
)
from ember.optim.lr_scheduler.spec import build_child

__all__ = ["ComposedLrScheduler", "ComposedLrSchedulerConfig", "SchedulerReduction"]

_NAME = "ComposedLrSchedulerConfig"


class SchedulerReduction(str, enum.Enum):
    """How a composed scheduler combines its children's rates."""

    Avg = "Avg"
    """Mean of the rates."""
    Sum = "Sum"
    """Sum of the rates."""
    Prod = "Prod"
    """Product of the rates (e.g. a warm-up factor times a decay)."""

    @classmethod
    def parse(cls, value: "SchedulerReduction | str") -> "SchedulerReduction":
        """Accept a member or its name in any case (``"prod"``, ``"Avg"``...)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            for member in cls:
                if member.value.lower() == value.lower():
                    return member
        raise ValueError(f"{_NAME}: `reduction` must be one of {[m.value for m in cls]}, got {value!r}")


class ComposedLrSchedulerConfig(LrSchedulerConfig):
    """Step every child scheduler each iteration and combine their rates.

    At the k-th call, with r_i the k-th rate of child i (i = 1..n)::

        Prod: lr_k = r_1 * r_2 * ... * r_n
        Sum:  lr_k = r_1 + ... + r_n
        Avg:  lr_k = r_1 / n + ... + r_n / n

    Args:
        schedulers: The children: numbers (constant rates), scheduler configs or schedulers
            (copied on ``init()``). At least one (Burn allows none and then returns 1 or 0;
            that is always a mistake, so ember rejects it).
        reduction: A :class:`SchedulerReduction` or its name. Default ``Prod``.
    """

    schedulers: list[SchedulerSpec] = dataclasses.field(default_factory=list)
    reduction: SchedulerReduction = SchedulerReduction.Prod

    def __post_init__(self) -> None:
        # Store a name such as "sum" as the member so the config saves as Burn's "Sum";
        # an unknown name is left for init() to report.
        if isinstance(self.reduction, str) and not isinstance(self.reduction, SchedulerReduction):
            try:
                self.reduction = SchedulerReduction.parse(self.reduction)
            except ValueError:
                pass

    def add(self, scheduler: LrSchedulerLike) -> "ComposedLrSchedulerConfig":
        """Return a copy with one more child appended (Burn's ``constant``/``linear``/...)."""
        return dataclasses.replace(self, schedulers=[*self.schedulers, scheduler])

    # Burn's per-kind builder names, all equivalent to add().
    constant = linear = cosine = exponential = noam = step = composed = add

    def init(self) -> "ComposedLrScheduler":
        """Validate and build every child, then the composed scheduler.

        Raises:
            ValueError: No child, an unknown reduction, or an invalid child config.
            TypeError: A child is not a number, scheduler or config.
        """
        if not isinstance(self.schedulers, Sequence) or isinstance(self.schedulers, str):
            raise TypeError(f"{_NAME}: `schedulers` must be a list, got {type(self.schedulers).__name__}")
        if not self.schedulers:
            raise ValueError(f"{_NAME}: `schedulers` must hold at least one scheduler, got []")
        reduction = SchedulerReduction.parse(self.reduction)
        return ComposedLrScheduler([build_child(s) for s in self.schedulers], reduction)


class ComposedLrScheduler(LrScheduler):
    """Scheduler built by :class:`ComposedLrSchedulerConfig` (formula there).

    State: each child's state under ``"0."``, ``"1."``... (no keys of its own), as Burn.
    """

    def __init__(self, schedulers: list[LrScheduler], reduction: SchedulerReduction):
        self._schedulers = list(schedulers)
        self._reduction = reduction

    @property
    def schedulers(self) -> list[LrScheduler]:
        """The children, in order."""
        return list(self._schedulers)

    def with_custom_scheduler(self, scheduler: LrScheduler) -> "ComposedLrScheduler":
        """Append an already-built scheduler as one more child and return ``self``.

        Args:
            scheduler: Any :class:`LrScheduler`; the composed scheduler owns it from now on
                (``load_state`` replaces children with restored copies).
        """
        if not isinstance(scheduler, LrScheduler):
            raise TypeError(
                "ComposedLrScheduler.with_custom_scheduler: expected an LrScheduler, "
                f"got {type(scheduler).__name__}"
            )
        self._schedulers.append(scheduler)
        return self

    def step(self) -> float:
        """Step every child and return their combined rate."""
        reduction = self._reduction
        count = float(len(self._schedulers))
        out = 1.0 if reduction is SchedulerReduction.Prod else 0.0
        for child in self._schedulers:
            lr = child.step()
            if reduction is SchedulerReduction.Prod:
                out *= lr
            elif reduction is SchedulerReduction.Sum:
                out += lr
            else:  # Avg accumulates lr / n term by term, in Burn's order
                out += lr / count
        return out

    def state(self) -> dict[str, Scalar]:
        """Return the children's states nested under their index."""
        return nest_state(self._schedulers)

    def load_state(self, state: Mapping[str, Scalar]) -> None:
        """Restore every child from its nested keys.

        Args:
            state: A mapping from ``state()`` of an identically configured scheduler.
        """
        self._schedulers = load_nested("ComposedLrScheduler", self._schedulers, state)

    def __repr__(self) -> str:
        return f"ComposedLrScheduler({self._schedulers!r}, reduction={self._reduction.value})"
