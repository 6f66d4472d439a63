"""``ParamGroup``: select module parameters by id or dotted path (Burn's ``ParamGroup``).

A group answers one question, :meth:`ParamGroup.matches` ``(path, param_id) -> bool``, and is
used wherever parameters are routed: per-group optimizers (``ModuleOptimizer.with_group``),
per-group learning rates (``ModuleLrScheduler.with_group``), ``Module.freeze(group)`` and
LoRA's ``Lora.with_param_group``. ``path`` is the parameter's dotted path as yielded by
``Module.named_parameters()`` (``"encoder.layers.0.mha.query.weight"``), or ``None`` when
only the id is known; path matchers never match a ``None`` path.

Matching rules, as Burn:

* ``all()`` matches everything; ``from_ids`` matches listed ids;
* ``from_path(s)`` matches exact paths; ``from_predicate(s)`` matches paths containing
  every given substring (AND); ``from_any_predicates`` any of them (OR);
* ``from_regex(es)`` matches paths where every pattern is found (``re.search``, AND);
  ``from_any_regexes`` any of them (OR);
* ``a.fuse(b)`` matches what either matches (its exclusions are dropped, as Burn);
  ``a.exclude(b)`` removes what ``b`` matches.

One deliberate difference: Burn's ``from_any_predicates([])`` / ``from_any_regexes([])``
match every path (an empty "contains all of" list); here an empty OR matches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ember.nn.param import ParamId

__all__ = ["ParamGroup", "ParamGroupError"]


class ParamGroupError(ValueError):
    """Invalid group definition (Burn's ``ParamGroupError``), e.g. a bad regex pattern."""


# --- matchers ------------------------------------------------------------------------------
# Immutable; each has matches(path, id_value) and a repr used by ParamGroup.__repr__.


class _All:
    __slots__ = ()

    def matches(self, path: str | None, pid: int | None) -> bool:
        return True

    def __repr__(self) -> str:
        return "all()"


class _Ids:
    __slots__ = ("ids",)

    def __init__(self, ids: frozenset):
        self.ids = ids

    def matches(self, path: str | None, pid: int | None) -> bool:
        return pid is not None and pid in self.ids

    def __repr__(self) -> str:
        return f"from_ids({sorted(str(ParamId(i)) for i in self.ids)})"


class _Exact:
    __slots__ = ("paths",)

    def __init__(self, paths: tuple):
        self.paths = paths

    def matches(self, path: str | None, pid: int | None) -> bool:
        return path is not None and path in self.paths

    def __repr__(self) -> str:
        return f"from_paths({list(self.paths)})"


class _Include:
    __slots__ = ("parts",)

    def __init__(self, parts: tuple):
        self.parts = parts

    def matches(self, path: str | None, pid: int | None) -> bool:
        return path is not None and all(part in path for part in self.parts)

    def __repr__(self) -> str:
        return f"from_predicates({list(self.parts)})"


class _Regex:
    __slots__ = ("patterns",)

    def __init__(self, patterns: tuple):
        self.patterns = patterns

    def matches(self, path: str | None, pid: int | None) -> bool:
        return path is not None and all(p.search(path) for p in self.patterns)

    def __repr__(self) -> str:
        return f"from_regexes({[p.pattern for p in self.patterns]})"


class _AnyOf:
    __slots__ = ("matchers",)

    def __init__(self, matchers: tuple):
        self.matchers = matchers

    def matches(self, path: str | None, pid: int | None) -> bool:
        return any(m.matches(path, pid) for m in self.matchers)

    def __repr__(self) -> str:
        return " | ".join(repr(m) for m in self.matchers) if self.matchers else "none()"


def _fuse(a, b):
    """OR of two matchers, flattened; ``all`` absorbs everything (Burn's ``fuse``)."""
    if isinstance(a, _All) or isinstance(b, _All):
        return _All()
    left = a.matchers if isinstance(a, _AnyOf) else (a,)
    right = b.matchers if isinstance(b, _AnyOf) else (b,)
    return _AnyOf(left + right)


def _strings(owner: str, values: Any, what: str) -> tuple:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise TypeError(f"ParamGroup.{owner}: expected a list of {what} strings, got {values!r}")
    out = tuple(values)
    for value in out:
        if not isinstance(value, str):
            raise TypeError(f"ParamGroup.{owner}: every {what} must be a str, got {value!r}")
    return out


def _compile(owner: str, patterns: tuple) -> tuple:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ParamGroupError(f"ParamGroup.{owner}: invalid regex pattern {pattern!r}: {exc}") from None
    return tuple(compiled)


def _id_value(owner: str, value: Any) -> int:
    if isinstance(value, ParamId):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(ParamId(value))  # validates the u64 range
    pid = getattr(value, "id", None)  # a Param
    if isinstance(pid, ParamId):
        return int(pid)
    raise TypeError(f"ParamGroup.{owner}: expected ParamIds (or ints, or Params), got {value!r}")


# --- the group -----------------------------------------------------------------------------


class ParamGroup:
    """A set of parameters defined by ids and/or dotted paths; build with the class methods.

    Example::

        encoder = ParamGroup.from_predicate("encoder").exclude(ParamGroup.from_predicate("bias"))
        encoder.matches("encoder.layers.0.fc.weight", pid)   # True
        encoder.matches("encoder.layers.0.fc.bias", pid)     # False
    """

    __slots__ = ("_excludes", "_matcher")

    def __init__(self, _matcher=None, _excludes=None):
        self._matcher = _All() if _matcher is None else _matcher
        self._excludes = _excludes

    # ---- constructors ---------------------------------------------------------------------
    @classmethod
    def all(cls) -> "ParamGroup":
        """Every parameter."""
        return cls(_All())

    @classmethod
    def from_ids(cls, ids: Iterable) -> "ParamGroup":
        """Exactly the listed parameters.

        Args:
            ids: ParamIds (ints and Params are accepted too).
        """
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            raise TypeError(f"ParamGroup.from_ids: expected a list of ParamIds, got {ids!r}")
        return cls(_Ids(frozenset(_id_value("from_ids", i) for i in ids)))

    @classmethod
    def ids_from_module(cls, module) -> "ParamGroup":
        """Every parameter currently in ``module``, by id (parameters added later do not match).

        Args:
            module: an ``ember.nn.Module``.
        """
        return cls(_Ids(frozenset(int(p.id) for _, p in module.named_parameters())))

    @classmethod
    def from_path(cls, path: str) -> "ParamGroup":
        """The parameter whose dotted path is exactly ``path``."""
        return cls.from_paths([path])

    @classmethod
    def from_paths(cls, paths: Iterable[str]) -> "ParamGroup":
        """Parameters whose dotted path is exactly one of ``paths``."""
        return cls(_Exact(_strings("from_paths", paths, "path")))

    @classmethod
    def from_predicate(cls, predicate: str) -> "ParamGroup":
        """Parameters whose path contains ``predicate`` (e.g. ``"encoder"``)."""
        return cls.from_predicates([predicate])

    @classmethod
    def from_predicates(cls, predicates: Iterable[str]) -> "ParamGroup":
        """Parameters whose path contains **every** predicate (AND)."""
        return cls(_Include(_strings("from_predicates", predicates, "predicate")))

    @classmethod
    def from_any_predicates(cls, predicates: Iterable[str]) -> "ParamGroup":
        """Parameters whose path contains **any** predicate (OR); an empty list matches nothing."""
        parts = _strings("from_any_predicates", predicates, "predicate")
        return cls(_AnyOf(tuple(_Include((p,)) for p in parts)))

    @classmethod
    def from_regex(cls, pattern: str) -> "ParamGroup":
        """Parameters whose path matches ``pattern`` (``re.search``; anchor with ``^``/``$``).

        Raises:
            ParamGroupError: the pattern does not compile.
        """
        return cls.from_regexes([pattern])

    @classmethod
    def from_regexes(cls, patterns: Iterable[str]) -> "ParamGroup":
        """Parameters whose path matches **every** pattern (AND).

        Raises:
            ParamGroupError: a pattern does not compile.
        """
        return cls(_Regex(_compile("from_regexes", _strings("from_regexes", patterns, "pattern"))))

    @classmethod
    def from_any_regexes(cls, patterns: Iterable[str]) -> "ParamGroup":
        """Parameters whose path matches **any** pattern (OR); an empty list matches nothing.

        Raises:
            ParamGroupError: a pattern does not compile.
        """
        compiled = _compile("from_any_regexes", _strings("from_any_regexes", patterns, "pattern"))
        return cls(_AnyOf(tuple(_Regex((p,)) for p in compiled)))

    # ---- combinators ----------------------------------------------------------------------
    def fuse(self, other: "ParamGroup") -> "ParamGroup":
        """A group matching what ``self`` or ``other`` matches.

        As in Burn, exclusions of both groups are dropped: fuse first, then ``exclude``.
        """
        if not isinstance(other, ParamGroup):
            raise TypeError(f"ParamGroup.fuse: expected a ParamGroup, got {type(other).__name__}")
        return ParamGroup(_fuse(self._matcher, other._matcher))

    def exclude(self, group: "ParamGroup") -> "ParamGroup":
        """A copy of this group without the parameters ``group`` matches (its own
        exclusions are ignored, as Burn)."""
        if not isinstance(group, ParamGroup):
            raise TypeError(f"ParamGroup.exclude: expected a ParamGroup, got {type(group).__name__}")
        excludes = group._matcher if self._excludes is None else _fuse(self._excludes, group._matcher)
        return ParamGroup(self._matcher, excludes)

    # ---- matching -------------------------------------------------------------------------
    def matches(self, path: str | None, param_id: Any = None) -> bool:
        """Whether the parameter with this dotted path and id belongs to the group.

        Args:
            path: the dotted path, or None when unknown (then only id matchers can match).
            param_id: the parameter's ParamId (an int is accepted), or None.
        """
        if path is not None and not isinstance(path, str):
            raise TypeError(
                f"ParamGroup.matches: `path` must be a dotted path str or None, got "
                f"{type(path).__name__} ({path!r}); the order is matches(path, param_id)"
            )
        pid = None if param_id is None else _id_value("matches", param_id)
        if not self._matcher.matches(path, pid):
            return False
        return self._excludes is None or not self._excludes.matches(path, pid)

    def __call__(self, path: str | None, param_id: Any = None) -> bool:
        return self.matches(path, param_id)

    def is_all(self) -> bool:
        """True for ``ParamGroup.all()`` without exclusions."""
        return isinstance(self._matcher, _All) and self._excludes is None

    def __repr__(self) -> str:
        text = f"ParamGroup.{self._matcher!r}"
        if self._excludes is not None:
            text += f".exclude({self._excludes!r})"
        return text
