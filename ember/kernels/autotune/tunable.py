"""A kernel with several ways to run, and the choice among them: measured on first use for an
input class, kept in the cache, reused by every later call and process.

A tuned op declares its candidates (functions taking the same arguments and giving the same
result up to rounding) and the default the untuned code used; each call passes a key, the
input class the winner is valid for (dtype, shapes anchored to powers of two, layout, thread
count: :func:`key`). The first call for a key measures the candidates the level allows on the
call's own arguments, keeps the winner, and returns the winner's result; the other calls of
the process pay one dictionary look-up.

Levels (``[autotune] level``, ``EMBER_AUTOTUNE_LEVEL``), each measuring more than the one
before and accepting decisions measured at its level or a higher one:

=========== ==================================================================================
minimal     measure nothing: a cached decision if there is one (any level), else the default
balanced    the candidates declared ``balanced``, a few samples each, a candidate well behind
            the best after two samples dropped, a short time budget per key (the default)
extensive   also the ``extensive`` candidates, more samples, a looser drop, a longer budget
full        every candidate, the most samples, none dropped early, the longest budget
=========== ==================================================================================

The sample counts, drop ratios and budgets are :data:`_PLANS`.

Tuning on first use is paced (:class:`_Pacing`): measuring may take at most about as long as
the process has spent doing anything else since its first decision, so a training loop's first
steps run at most about twice as slow as warm ones; a key that comes while the allowance is
spent runs the default and is measured on a later call. Ahead-of-time tuning
(``python -m ember.autotune``) turns the pacing off.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import math
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ember import config

from .cache import Store, cache_folder
from .log import LOG

__all__ = [
    "LEVELS",
    "Candidate",
    "Tunable",
    "anchor",
    "defer_while",
    "forced",
    "key",
    "leveled",
    "measured_count",
    "paced",
    "remeasured",
    "reset",
    "store",
    "tunables",
]

LEVELS = ("minimal", "balanced", "extensive", "full")


@dataclass(frozen=True)
class _Plan:
    samples: int
    drop_above: float  # a candidate this many times the best median is dropped (inf: never)
    budget_s: float  # sampling stops when the key's measuring has taken this long


_PLANS = {
    "balanced": _Plan(3, 1.3, 1.0),
    "extensive": _Plan(5, 1.5, 4.0),
    "full": _Plan(10, math.inf, 15.0),
}

#: ``EMBER_AUTOTUNE_FORCE="op=candidate,op=candidate"``: run those candidates whatever was
#: measured (tests run the conformance suite once per candidate this way). Not a setting:
#: an escape hatch, like ``EMBER_DISABLE_NATIVE``.
FORCE_VARIABLE = "EMBER_AUTOTUNE_FORCE"


@dataclass(frozen=True)
class Candidate:
    """One way to run an op: ``run`` takes the op's arguments; ``level`` is the lowest
    tuning level that measures it."""

    name: str
    run: Callable
    level: str = "balanced"

    def __post_init__(self):
        if self.level not in LEVELS[1:]:
            raise ValueError(
                f"autotune candidate {self.name!r}: level must be one of {LEVELS[1:]}, got {self.level!r}"
            )


def anchor(n: int) -> int:
    """``n`` rounded up to a power of two (0 stays 0): sizes that tune alike share a key."""
    return 0 if n <= 0 else 1 << (int(n) - 1).bit_length()


def key(*parts) -> str:
    """A key from its parts: shapes (tuples, anchored dimension by dimension), dtypes and
    other words as written: ``key("float32", (8192, 128), threads)`` → ``"float32|8192x128|2"``."""
    words = []
    for part in parts:
        if isinstance(part, tuple):
            words.append("x".join(str(anchor(d)) for d in part) or "scalar")
        else:
            words.append(str(getattr(part, "name", part)))
    return "|".join(words)


class _Pacing:
    """The time first-use tuning may take: what the process spent on other work since its
    first decision, plus :attr:`GRACE_S` (so the first step may tune its largest keys); and
    nothing while :attr:`busy` says the machine is busy compiling kernels."""

    GRACE_S = 0.5

    def __init__(self):
        self.on = True
        self.start: float | None = None
        self.spent = 0.0  # seconds measured so far
        self.busy: Callable[[], bool] | None = None

    def allows(self) -> bool:
        if not self.on:
            return True
        if self.busy is not None and self.busy():
            return False
        now = time.perf_counter()
        if self.start is None:
            self.start = now
        return self.spent <= (now - self.start - self.spent) + self.GRACE_S


_TUNABLES: dict[str, Tunable] = {}
_STORE: list = [None]
_FORCED: dict[str, str] = {}
_PACING = _Pacing()


@dataclass
class _Overrides:
    """What ahead-of-time tuning changes for every decision: measure again, at another level."""

    remeasure: bool = False
    level: str | None = None


_OVERRIDES = _Overrides()


def tunables() -> dict[str, Tunable]:
    """Every tuned op declared so far, by name."""
    return dict(_TUNABLES)


def store() -> Store:
    """The cache this process reads and appends to (from ``[autotune] cache``)."""
    if _STORE[0] is None:
        _STORE[0] = Store(cache_folder())
    return _STORE[0]


def reset() -> None:
    """Forget every decision of this process and the cache folder (the configuration is read
    again on the next decision): tests, or after changing ``[autotune]``."""
    _STORE[0] = None
    _PACING.start, _PACING.spent = None, 0.0
    for tunable in _TUNABLES.values():
        tunable._chosen.clear()
        tunable._seen.clear()
        tunable._waiting.clear()
        tunable.measured = 0


def measured_count() -> int:
    """How many keys this process has measured (0 when every decision came from the cache)."""
    return sum(tunable.measured for tunable in _TUNABLES.values())


@contextlib.contextmanager
def _overriding(**change):
    before = {name: getattr(_OVERRIDES, name) for name in change}
    for name, value in change.items():
        setattr(_OVERRIDES, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(_OVERRIDES, name, value)


def remeasured():
    """Measure every key met inside the block again, whatever the cache holds (the new line
    replaces the old decision: the last line of a key wins)."""
    return _overriding(remeasure=True)


def leveled(level: str):
    """Decide at ``level`` inside the block, whatever ``[autotune] level`` says (ahead-of-time
    tuning measures even where the configuration says ``minimal``)."""
    if level not in LEVELS:
        raise ValueError(f"autotune: level must be one of {LEVELS}, got {level!r}")
    return _overriding(level=level)


@contextlib.contextmanager
def paced(on: bool):
    """Turn the pacing of first-use tuning on or off inside the block (ahead-of-time tuning
    measures every key as it comes)."""
    before = _PACING.on
    _PACING.on = on
    try:
        yield
    finally:
        _PACING.on = before


def defer_while(busy: Callable[[], bool] | None) -> None:
    """Measure no key while ``busy()`` is true (the keys met meanwhile run their default and are
    measured on a later call): the ``cpu`` backend passes "kernels are compiling in the
    background", whose processes would time themselves into every candidate and whose stand-ins
    are not the kernels to tune. ``None`` removes the check. Ahead-of-time tuning
    (``paced(False)``) measures regardless."""
    _PACING.busy = busy


@contextlib.contextmanager
def forced(op: str, candidate: str):
    """Run ``candidate`` for every call of ``op`` inside the block (tests)."""
    tunable = _TUNABLES.get(op)
    if tunable is None or candidate not in tunable.candidates:
        raise KeyError(f"autotune: no candidate {candidate!r} of op {op!r}")
    before = _FORCED.get(op)
    _FORCED[op] = candidate
    try:
        yield
    finally:
        if before is None:
            _FORCED.pop(op, None)
        else:
            _FORCED[op] = before


def _forced_by_env(op: str) -> str | None:
    raw = os.environ.get(FORCE_VARIABLE, "")
    for item in raw.split(","):
        name, _, candidate = item.partition("=")
        if name.strip() == op:
            return candidate.strip()
    return None


def _source_text(run) -> str:
    """What identifies ``run``'s code across processes: its name and its module's source (a
    partial: its function's, with the bound arguments; a Numba dispatcher: its Python
    function's); never anything with an address."""
    if isinstance(run, functools.partial):
        bound = ", ".join(
            [repr(a) for a in run.args] + [f"{k}={v!r}" for k, v in sorted(run.keywords.items())]
        )
        return f"{_source_text(run.func)}({bound})"
    run = getattr(run, "py_func", run)
    name = f"{getattr(run, '__module__', '')}.{getattr(run, '__qualname__', type(run).__qualname__)}"
    module = inspect.getmodule(run)
    try:  # the whole module: the kernels a candidate calls usually live beside it
        return name + inspect.getsource(module if module is not None else run)
    except (OSError, TypeError):  # a builtin or a compiled function: its name
        return name


class Tunable:
    """An op with ``candidates``, of which ``default`` runs where nothing is measured.

    ``sync`` is called after each timed call (a GPU backend waits for its stream there)."""

    def __init__(self, op: str, candidates: Sequence[Candidate], default: str, sync: Callable | None = None):
        names = [c.name for c in candidates]
        if default not in names or len(set(names)) != len(names):
            raise ValueError(
                f"autotune {op}: the default {default!r} must be one of distinct candidates {names}"
            )
        if op in _TUNABLES:
            raise ValueError(f"autotune: op {op!r} is declared twice")
        self.op = op
        self.candidates = {c.name: c for c in candidates}
        self.default = default
        self.sync = sync
        self._chosen: dict[str, str] = {}  # key -> winner, for this process
        self._seen: dict = {}  # the parts of each call seen -> winner (no key to make again)
        self._waiting: dict = {}  # parts whose measuring the pacing put off -> the default meanwhile
        self.measured = 0  # keys measured by this process
        self._lock = threading.Lock()
        self._source: str | None = None
        _TUNABLES[op] = self

    @property
    def source(self) -> str:
        """A hash of the candidates' source code: a changed kernel matches no old decision."""
        if self._source is None:
            digest = hashlib.sha256()
            for candidate in self.candidates.values():
                digest.update(_source_text(candidate.run).encode())
            self._source = digest.hexdigest()[:16]
        return self._source

    def __call__(self, parts, *args, only: Sequence[str] | None = None, default: str | None = None):
        """Run the candidate chosen for ``parts`` on ``args``.

        ``parts`` are the key's parts as :func:`key` takes them (a tuple: dtype, shapes,
        layout, threads), or a key already made; a call with parts seen before costs one
        dictionary look-up (the key, with its shapes anchored, is made once per new input).
        ``only`` narrows the candidates to those that can take these arguments (it becomes
        part of the key); ``default`` replaces the declared default for this input (the untuned
        code's choice depended on it: a size threshold, a dtype)."""
        seen = parts if only is None else (parts, tuple(only))
        name = _FORCED.get(self.op) if _FORCED else None
        if name is None:
            name = self._seen.get(seen)
        if name is not None:
            return self.candidates[name].run(*args)
        if self._waiting and seen in self._waiting and not _PACING.allows():
            return self.candidates[self._waiting[seen]].run(*args)
        with self._lock:
            k = parts if isinstance(parts, str) else key(*parts)
            if only is not None:
                k = f"{k}|{'+'.join(only)}"
            name = self._chosen.get(k)
            if name is None:
                return self._decide(seen, k, args, only, default or self.default)
            self._seen[seen] = name
        return self.candidates[name].run(*args)

    def decisions(self) -> dict[str, str]:
        """Every key this process has decided, with the candidate it runs."""
        return dict(self._chosen)

    def choice(self, key: str) -> str | None:
        """The candidate this process runs for ``key`` (made by :func:`key`), or None before
        its first call."""
        return self._chosen.get(key)

    # ---- deciding ------------------------------------------------------------------------
    def _decide(self, seen, key: str, args: tuple, only, default: str):
        forced_name = _forced_by_env(self.op)
        if forced_name is not None:
            if forced_name not in self.candidates:
                raise ValueError(
                    f"{FORCE_VARIABLE}: op {self.op!r} has no candidate {forced_name!r}; "
                    f"its candidates are {', '.join(self.candidates)}"
                )
            return self._settle(seen, key, forced_name, "forced", {}, args)
        level = _OVERRIDES.level or config.get("autotune.level")
        cache = store()
        entry = None if _OVERRIDES.remeasure else cache.lookup(self.op, key, self.source)
        if entry is None or not self._good(entry, level, only):
            if level == "minimal":
                return self._settle(seen, key, default, "default", {}, args)
            if not _PACING.allows():  # measured on a later call
                self._waiting[seen] = default
                return self.candidates[default].run(*args)
            with cache.locked(self.op):  # another process may be measuring this key: wait for it
                entry = None if _OVERRIDES.remeasure else cache.lookup(self.op, key, self.source, fresh=True)
                if entry is None or not self._good(entry, level, only):
                    began = time.perf_counter()
                    winner, times, result = self._measure(key, args, level, only, default)
                    _PACING.spent += time.perf_counter() - began
                    self.measured += 1
                    self._waiting.pop(seen, None)
                    cache.append(
                        self.op,
                        {
                            "key": key,
                            "source": self.source,
                            "winner": winner,
                            "level": level,
                            "times_ms": times,
                        },
                    )
                    self._chosen[key] = self._seen[seen] = winner
                    if LOG.basic:
                        LOG.decision(self.op, key, winner, "measured", times)
                    return result
        return self._settle(seen, key, entry["winner"], "cache", entry.get("times_ms", {}), args)

    def _good(self, entry: dict, level: str, only) -> bool:
        """Whether a stored decision serves ``level``: its winner still exists (and may take
        these arguments) and it was measured at least as thoroughly."""
        winner = entry["winner"]
        if winner not in self.candidates or (only is not None and winner not in only):
            return False
        return entry["level"] in LEVELS and LEVELS.index(entry["level"]) >= LEVELS.index(level)

    def _settle(self, seen, key: str, winner: str, source: str, times: dict, args: tuple):
        self._chosen[key] = self._seen[seen] = winner
        self._waiting.pop(seen, None)
        if LOG.basic:
            LOG.decision(self.op, key, winner, source, times)
        return self.candidates[winner].run(*args)

    def _measure(self, key: str, args: tuple, level: str, only, default: str):
        plan = _PLANS[level]
        rank = LEVELS.index(level)
        names = [
            c.name
            for c in self.candidates.values()
            if (c.name == default or LEVELS.index(c.level) <= rank) and (only is None or c.name in only)
        ]
        if not names:  # `only` excludes the default and every measured candidate
            names = [n for n in self.candidates if only is None or n in only][:1]
        outputs, samples = {}, {n: [] for n in names}
        start = time.perf_counter()
        for name in names:  # warm-up: compiles, fills caches; its output stands if nothing else runs
            outputs[name] = self._timed(name, args)[0]
        alive = list(names)
        for round_ in range(plan.samples):
            for name in alive:
                outputs[name], seconds = self._timed(name, args)
                samples[name].append(seconds * 1e3)
            if round_ >= 1 and len(alive) > 1:
                best = min(statistics.median(samples[n]) for n in alive)
                kept = [n for n in alive if statistics.median(samples[n]) <= plan.drop_above * best]
                if LOG.full:
                    for n in set(alive) - set(kept):
                        LOG.samples(self.op, key, n, samples[n], True)
                alive = kept
            if time.perf_counter() - start > plan.budget_s:
                break
        times = {n: round(statistics.median(s), 6) for n, s in samples.items() if s}
        winner = min(alive, key=lambda n: times.get(n, math.inf))
        if LOG.full:
            for n in alive:
                LOG.samples(self.op, key, n, samples[n], False)
        return winner, times, outputs[winner]

    def _timed(self, name: str, args: tuple):
        run = self.candidates[name].run
        start = time.perf_counter()
        out = run(*args)
        if self.sync is not None:
            self.sync()
        return out, time.perf_counter() - start
