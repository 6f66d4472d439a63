"""Per-parameter-group learning rates (Burn's ``ModuleLrScheduler``).

A :class:`ModuleLrScheduler` holds a base scheduler, which applies to every parameter,
plus optional ``(group, scheduler)`` overrides. Each ``step()`` steps *all* of them and
returns a :class:`ModuleLearningRate`, which answers "what rate for this parameter?":
the rate of the **last** group that matches it, the base rate when none does.

A group is any object with ``matches(path, param_id) -> bool`` (``ember.nn.ParamGroup``
provides it); ``path`` is the parameter's dotted path (``"encoder.layers.0.fc.weight"``)
or ``None`` when only the id is known.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ember.optim.lr_scheduler.base import (
    ConfigBase,
    LrScheduler,
    LrSchedulerLike,
    Scalar,
    SchedulerSpec,
    load_nested,
    nest_state,
)
from ember.optim.lr_scheduler.spec import as_scheduler, build_child

__all__ = [
    "GroupLike",
    "ModuleLearningRate",
    "ModuleLrScheduler",
    "ModuleLrSchedulerConfig",
    "as_module_scheduler",
]


class GroupLike(Protocol):
    """What a parameter group must offer to receive its own schedule."""

    def matches(self, path: str | None, param_id: Any) -> bool:
        """Whether the parameter with this dotted path / id belongs to the group."""


class _AllParams:
    """The implicit group of the base scheduler: matches every parameter."""

    def matches(self, path: str | None, param_id: Any) -> bool:
        return True

    def __repr__(self) -> str:
        return "ParamGroup.all()"


_ALL = _AllParams()


def _check_group(owner: str, group: Any) -> None:
    if not callable(getattr(group, "matches", None)):
        raise TypeError(
            f"{owner}: a parameter group needs a matches(path, param_id) method, "
            f"got {type(group).__name__} ({group!r})"
        )


class ModuleLearningRate:
    """The learning rates of one iteration, resolved per parameter.

    Args:
        groups: ``(group, lr)`` pairs; the first must match every parameter (the base).
    """

    __slots__ = ("_groups",)

    def __init__(self, groups: Sequence[tuple[Any, float]]):
        if not groups:
            raise ValueError("ModuleLearningRate: needs at least the base group, got none")
        self._groups = tuple((group, float(lr)) for group, lr in groups)

    @classmethod
    def constant(cls, lr: float) -> "ModuleLearningRate":
        """A single rate for every parameter (Burn's ``From<LearningRate>``)."""
        return cls([(_ALL, lr)])

    def base(self) -> float:
        """The base rate, which applies to parameters matched by no override group."""
        return self._groups[0][1]

    @property
    def rates(self) -> list[float]:
        """Every group's rate, base first (handy for logging)."""
        return [lr for _, lr in self._groups]

    def lr_from_param(self, param_id: Any, path: str | None = None) -> float:
        """Rate for a parameter given its id and optional path (Burn's name).

        Args:
            param_id: The parameter's id (as the groups understand it).
            path: Its dotted path, if known.

        Returns:
            The rate of the last group that matches, the base rate if none.
        """
        for group, lr in reversed(self._groups):
            if group.matches(path, param_id):
                return lr
        return self.base()  # unreachable while group 0 matches everything

    def lr_for(self, path_or_param: Any, param_id: Any = None) -> float:
        """Rate for a parameter given as a dotted path, an id, or a parameter object.

        Args:
            path_or_param: A ``str`` path; or a parameter object, whose ``path`` and ``id``
                (or ``param_id``) attributes are used; or anything else, taken as an id.
            param_id: The id to pass along with a ``str`` path (default ``None``).
        """
        if isinstance(path_or_param, str):
            return self.lr_from_param(param_id, path_or_param)
        path = getattr(path_or_param, "path", None)
        if path is not None or hasattr(path_or_param, "id") or hasattr(path_or_param, "param_id"):
            ident = getattr(path_or_param, "id", None)
            if ident is None:
                ident = getattr(path_or_param, "param_id", None)
            return self.lr_from_param(ident if param_id is None else param_id, path)
        return self.lr_from_param(path_or_param, None)

    def __repr__(self) -> str:
        inner = ", ".join(f"{group!r}: {lr!r}" for group, lr in self._groups)
        return f"ModuleLearningRate({inner})"


class ModuleLrScheduler:
    """A base schedule plus per-group overrides; ``step()`` returns a ModuleLearningRate.

    Example::

        sched = ModuleLrScheduler(CosineAnnealingLrSchedulerConfig(1e-3, 10_000).init())
        sched.with_group(ParamGroup.from_predicate("lora"), 1e-2)
        lrs = sched.step()
        lr = lrs.lr_for("encoder.layers.0.query.lora.a")

    Args:
        base: The schedule of every parameter (number, scheduler or scheduler config).

    State: each scheduler's state under ``"0."`` (base), ``"1."``... in group order.
    """

    def __init__(self, base: LrSchedulerLike):
        self._groups: list[tuple[Any, LrScheduler]] = [(_ALL, as_scheduler(base))]

    def with_group(self, group: GroupLike, scheduler: LrSchedulerLike) -> "ModuleLrScheduler":
        """Give the parameters of ``group`` their own schedule; returns ``self``.

        Later groups win over earlier ones where they overlap.

        Args:
            group: An object with ``matches(path, param_id) -> bool``.
            scheduler: A number, scheduler or scheduler config.
        """
        _check_group("ModuleLrScheduler.with_group", group)
        self._groups.append((group, as_scheduler(scheduler)))
        return self

    @property
    def schedulers(self) -> list[LrScheduler]:
        """The schedulers, base first."""
        return [s for _, s in self._groups]

    def step(self) -> ModuleLearningRate:
        """Step every scheduler once and return the rates of this iteration."""
        return ModuleLearningRate([(group, s.step()) for group, s in self._groups])

    def state(self) -> dict[str, Scalar]:
        """Return every scheduler's state nested under its group index."""
        return nest_state(self.schedulers)

    def load_state(self, state: Mapping[str, Scalar]) -> None:
        """Restore every scheduler.

        Args:
            state: A mapping from ``state()`` of an identically configured scheduler.
        """
        loaded = load_nested("ModuleLrScheduler", self.schedulers, state)
        self._groups = [(group, s) for (group, _), s in zip(self._groups, loaded)]

    def clone(self) -> "ModuleLrScheduler":
        """Return an independent copy (groups shared, schedulers copied)."""
        out = ModuleLrScheduler.__new__(ModuleLrScheduler)
        out._groups = [(group, s.clone()) for group, s in self._groups]
        return out

    def __repr__(self) -> str:
        inner = ", ".join(f"{group!r}: {s!r}" for group, s in self._groups)
        return f"ModuleLrScheduler({inner})"


class ModuleLrSchedulerConfig(ConfigBase):
    """Config of a :class:`ModuleLrScheduler`.

    Args:
        base: The schedule of every parameter (number, scheduler config or scheduler).
        scheduler_groups: ``(group, schedule)`` overrides, later ones winning.
    """

    base: SchedulerSpec
    scheduler_groups: list[tuple[Any, SchedulerSpec]] = dataclasses.field(default_factory=list)

    def with_group(self, group: GroupLike, scheduler: LrSchedulerLike) -> "ModuleLrSchedulerConfig":
        """Return a copy with one more ``(group, schedule)`` override."""
        _check_group("ModuleLrSchedulerConfig.with_group", group)
        groups = [*self.scheduler_groups, (group, scheduler)]
        return dataclasses.replace(self, scheduler_groups=groups)

    def init(self) -> ModuleLrScheduler:
        """Validate and build every scheduler.

        Raises:
            ValueError: A child config has invalid arguments.
            TypeError: A group lacks ``matches`` or a schedule is not scheduler-like.
        """
        out = ModuleLrScheduler(build_child(self.base))
        for index, entry in enumerate(self.scheduler_groups):
            if not isinstance(entry, (tuple, list)) or len(entry) != 2:
                raise TypeError(
                    f"ModuleLrSchedulerConfig: `scheduler_groups[{index}]` must be a "
                    f"(group, scheduler) pair, got {entry!r}"
                )
            out.with_group(entry[0], build_child(entry[1]))
        return out


def as_module_scheduler(value: Any) -> ModuleLrScheduler:
    """Turn any learning-rate specification into a :class:`ModuleLrScheduler`.

    Args:
        value: A ``ModuleLrScheduler`` (returned as is), a ``ModuleLrSchedulerConfig``
            (initialised), or anything :func:`as_scheduler` accepts (used as the base).
    """
    if isinstance(value, ModuleLrScheduler):
        return value
    if isinstance(value, ModuleLrSchedulerConfig):
        return value.init()
    return ModuleLrScheduler(value)


def _with_group(self: LrScheduler, group: GroupLike, scheduler: LrSchedulerLike) -> ModuleLrScheduler:
    """This schedule for every parameter, ``scheduler`` for those of ``group`` (Burn's
    ``ModuleLrScheduler::with_group``); returns a :class:`ModuleLrScheduler`."""
    return ModuleLrScheduler(self).with_group(group, scheduler)


# Every scheduler's with_group, added from here so that the base class needs no per-group code.
_with_group.__qualname__ = "LrScheduler.with_group"
LrScheduler.with_group = _with_group
