"""The learning-rate scheduler contract, shared validation and state helpers.

A scheduler is stepped once per training iteration, *before* the optimizer step, and
returns the learning rate to use for that iteration (Burn's ``LrScheduler::step``). Its
state is a flat mapping of scalars (``int``/``float``/``bool``) named like Burn's
``LrSchedulerRecord``: a leaf scheduler uses its field names (``"remaining_iters"``),
a composite nests each child's keys under ``"0."``, ``"1."``... so the dictionary can be
written as the scalars of a burnpack record and read back by either framework.
"""

from __future__ import annotations

import abc
import copy
import math
import numbers
from collections.abc import Mapping
from typing import Any, Union

from ember._deprecation import renamed_method
from ember.record.config import Config as ConfigBase

__all__ = [
    "ConfigBase",
    "CounterLrScheduler",
    "LrScheduler",
    "LrSchedulerConfig",
    "LrSchedulerLike",
    "Scalar",
    "SchedulerSpec",
]

Scalar = Union[int, float, bool]


class LrScheduler(abc.ABC):
    """A learning-rate schedule: ``step()`` returns the rate for the next iteration."""

    @abc.abstractmethod
    def step(self) -> float:
        """Advance the schedule by one iteration and return its learning rate."""

    @abc.abstractmethod
    def state(self) -> dict[str, Scalar]:
        """Return the scheduler's progress as a flat ``{name: scalar}`` mapping."""

    @abc.abstractmethod
    def load_state(self, state: Mapping[str, Scalar]) -> None:
        """Restore progress saved by :meth:`state` so the run continues exactly.

        Args:
            state: A mapping produced by ``state()`` of a scheduler built from the same
                configuration.

        Raises:
            ValueError: A key is missing or unexpected, or a value has the wrong type.
        """

    def clone(self) -> "LrScheduler":
        """Return an independent copy (same configuration and progress)."""
        return copy.deepcopy(self)


class CounterLrScheduler(LrScheduler):
    """A leaf scheduler whose whole progress is one counter, saved as ``{counter: kind}``
    and kept in the attribute ``_<counter>``. ``load_state`` refuses a value below
    ``counter_min`` (or at/after ``counter_end``, spelled ``counter_end_text``)."""

    counter: str
    counter_kind: type = int
    counter_min: Scalar | None = None
    counter_end: int | None = None
    counter_end_text = ""

    def state(self) -> dict[str, Scalar]:
        """Return ``{counter: value}``."""
        return {self.counter: getattr(self, "_" + self.counter)}

    def load_state(self, state: Mapping[str, Scalar]) -> None:
        """Restore the counter.

        Args:
            state: A mapping from ``state()``.
        """
        value = read_counter(
            type(self).__name__,
            state,
            self.counter,
            self.counter_kind,
            self.counter_min,
            end=self.counter_end,
            end_text=self.counter_end_text,
        )
        setattr(self, "_" + self.counter, value)


class LrSchedulerConfig(ConfigBase):
    """Base of every scheduler config (Burn's ``LrSchedulerConfig`` enum).

    A field annotated ``SchedulerSpec`` (a number or any ``LrSchedulerConfig``) is saved
    as JSON tagged with the concrete class, ``{"LinearLrSchedulerConfig": {...}}``, so
    composed, sequential and per-group configs load back with the right child types.
    """

    def init(self) -> LrScheduler:
        """Validate the arguments and build the scheduler."""
        raise NotImplementedError(f"{type(self).__name__} does not implement init()")

    # A second name for init(), and one that means "the bare optimizer" on optimizer configs:
    # one release, then gone.
    build = renamed_method("build", "init")


SchedulerSpec = Union[float, LrSchedulerConfig]
"""A child schedule inside a config: a constant rate or a scheduler config."""

LrSchedulerLike = Union[float, int, LrScheduler, LrSchedulerConfig]
"""Anything :func:`as_scheduler` accepts: a number, a scheduler or a scheduler config."""


# --- argument validation -----------------------------------------------------------------


def check_real(owner: str, name: str, value: Any) -> float:
    """Return ``value`` as a finite float or raise naming ``owner`` and ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: `{name}` must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{owner}: `{name}` must be finite, got {value!r}")
    return value


def check_range(
    owner: str,
    name: str,
    value: Any,
    low: float,
    high: float,
    *,
    low_open: bool,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a float inside the given interval or raise a clear error."""
    value = check_real(owner, name, value)
    above = value > low if low_open else value >= low
    below = value < high if high_open else value <= high
    if not (above and below):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{owner}: `{name}` must be in {interval}, got {value!r}")
    return value


def check_int(owner: str, name: str, value: Any, minimum: int) -> int:
    """Return ``value`` as an int ``>= minimum`` or raise a clear error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: `{name}` must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{owner}: `{name}` must be an integer >= {minimum}, got {value!r}")
    return value


# --- state helpers ------------------------------------------------------------------------


def read_state(owner: str, state: Mapping[str, Scalar], fields: Mapping[str, type]) -> dict[str, Scalar]:
    """Check that ``state`` holds exactly ``fields`` (name -> int or float) and return the
    values converted (an int is accepted where a float is stored)."""
    if not isinstance(state, Mapping):
        raise TypeError(f"{owner}.load_state: expected a mapping, got {type(state).__name__}")
    missing = sorted(set(fields) - set(state))
    unexpected = sorted(set(state) - set(fields))
    if missing or unexpected:
        raise ValueError(
            f"{owner}.load_state: state keys do not match; missing {missing}, "
            f"unexpected {unexpected} (expected exactly {sorted(fields)})"
        )
    out: dict[str, Scalar] = {}
    for key, kind in fields.items():
        value = state[key]
        if kind is float and isinstance(value, numbers.Real) and not isinstance(value, bool):
            out[key] = float(value)
        elif kind is int and isinstance(value, numbers.Integral) and not isinstance(value, bool):
            out[key] = int(value)
        else:
            raise ValueError(f"{owner}.load_state: `{key}` must be {kind.__name__}, got {value!r}")
    return out


def read_counter(
    owner: str,
    state: Mapping[str, Scalar],
    key: str,
    kind: type,
    minimum: Scalar | None = None,
    *,
    end: int | None = None,
    end_text: str = "",
) -> Scalar:
    """Read the one field of a leaf scheduler's state, ``{key: kind}``, and check that it lies
    at or above ``minimum`` (and below ``end``, spelled ``end_text`` in the message), so a
    state that could not have come from ``state()`` is refused before anything changes."""
    value = read_state(owner, state, {key: kind})[key]
    if end is not None:
        if not minimum <= value < end:
            raise ValueError(f"{owner}.load_state: `{key}` must be in [{minimum}, {end_text}), got {value}")
    elif minimum is not None and value < minimum:
        raise ValueError(f"{owner}.load_state: `{key}` must be >= {minimum}, got {value}")
    return value


def nest_state(children: list[LrScheduler], own: Mapping[str, Scalar] | None = None) -> dict[str, Scalar]:
    """Merge children's states under ``"0."``, ``"1."``... (Burn's ``with_record``)."""
    out: dict[str, Scalar] = dict(own or {})
    for index, child in enumerate(children):
        for key, value in child.state().items():
            out[f"{index}.{key}"] = value
    return out


def split_state(
    owner: str, state: Mapping[str, Scalar], num_children: int, own_keys: tuple[str, ...] = ()
) -> tuple[dict[str, Scalar], list[dict[str, Scalar]]]:
    """Inverse of :func:`nest_state`: split into own keys and one mapping per child."""
    if not isinstance(state, Mapping):
        raise TypeError(f"{owner}.load_state: expected a mapping, got {type(state).__name__}")
    own: dict[str, Scalar] = {}
    children: list[dict[str, Scalar]] = [{} for _ in range(num_children)]
    for key, value in state.items():
        if key in own_keys:
            own[key] = value
            continue
        head, dot, rest = key.partition(".")
        if not dot or not head.isdigit() or int(head) >= num_children:
            raise ValueError(
                f"{owner}.load_state: unexpected key {key!r} (this scheduler has "
                f"{num_children} children, keyed '0.'..'{num_children - 1}.'"
                + (f", and own keys {list(own_keys)}" if own_keys else "")
                + ")"
            )
        children[int(head)][rest] = value
    return own, children


def load_children(children: list[LrScheduler], states: list[dict[str, Scalar]]) -> list[LrScheduler]:
    """Load ``states`` into copies of ``children`` and return the copies, so a state that
    fails half-way leaves the original children untouched."""
    loaded = [child.clone() for child in children]
    for child, child_state in zip(loaded, states):
        child.load_state(child_state)
    return loaded


def load_nested(owner: str, children: list[LrScheduler], state: Mapping[str, Scalar]) -> list[LrScheduler]:
    """Copies of ``children`` restored from a :func:`nest_state` mapping with no own keys."""
    _, states = split_state(owner, state, len(children))
    return load_children(children, states)
