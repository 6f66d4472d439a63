"""Dynamic axes for ONNX export: which numbers of a traced forward depend on them.

The forward is traced three times, the second and third with every dynamic axis of the
example inputs resized (:func:`other_sizes`, :func:`resized_inputs`). An integer argument of a
backend call (a reshape's target, an arange's stop, a slice's end, a divisor such as a mean's
count) that differs between the traces depends on the dynamic sizes: :func:`merge_args` turns
it into a :class:`SymInt` holding its values, and :func:`solve` finds an expression over the
dynamic dims that gives all of them (a dim, a product of two, times a constant, plus a
constant). The graph computes it at run time from the inputs' ``Shape``."""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np


class Dim(NamedTuple):
    """A dynamic axis: its name, the input and axis it is read from, its size in each trace."""

    name: str
    input: int
    axis: int
    sizes: tuple


class SymInt(NamedTuple):
    """A number that differs between the two traces: its values there."""

    values: tuple


class Expr(NamedTuple):
    """``coef * prod(dims) + offset`` over dynamic dims (by name)."""

    coef: int
    dims: tuple
    offset: int


def other_sizes(sizes: list[int]) -> list[list[int]]:
    """The sizes the dynamic axes take in the second and third traces. In the second, each
    moves by a different amount (two axes of one size tell apart) and all in one direction,
    so that every product of them changes too (2*6 and 3*4 would not): smaller when all stay
    at least 2 (a sequence cannot outgrow a position table), else larger. The third moves
    twice as far (the other way for an axis that would drop below 2) and checks the
    expressions the first two suggest. Never 1, which broadcasts."""
    steps = [k + 1 for k in range(len(sizes))]
    down = all(size - step >= 2 for size, step in zip(sizes, steps))
    second = [size - step if down else size + step for size, step in zip(sizes, steps)]
    third = [
        size - 2 * step if down and size - 2 * step >= 2 else size + 2 * step
        for size, step in zip(sizes, steps)
    ]
    return [second, third]


def resized_inputs(arrays: list[np.ndarray], axes: dict[int, dict[int, str]], sizes: dict[str, int]):
    """``arrays`` with each dynamic axis cut or grown (rows repeated cyclically) to ``sizes``."""
    out = []
    for i, a in enumerate(arrays):
        for axis, name in axes.get(i, {}).items():
            n = sizes[name]
            a = np.take(a, np.arange(n) % a.shape[axis], axis=axis)
        out.append(np.ascontiguousarray(a))
    return out


class TraceMismatch(Exception):
    """The two traces differ in something other than numbers."""


def merge_args(*traced):
    """One argument structure from the traces' (a ``SymInt`` where their numbers differ)."""
    a = traced[0]
    rest = traced[1:]
    if any(type(b) is not type(a) for b in rest):
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in traced):
            return SymInt(tuple(traced))
        raise TraceMismatch(" vs ".join(repr(v) for v in traced))
    if isinstance(a, slice):
        return slice(
            merge_args(*(v.start for v in traced)),
            merge_args(*(v.stop for v in traced)),
            merge_args(*(v.step for v in traced)),
        )
    if isinstance(a, tuple) and hasattr(a, "_fields"):  # a Ref: the same value in every trace
        if any(b != a for b in rest):
            raise TraceMismatch("reads " + " vs ".join(str(v) for v in traced))
        return a
    if isinstance(a, (tuple, list)):
        if any(len(b) != len(a) for b in rest):
            raise TraceMismatch(" vs ".join(f"{len(v)} items" for v in traced))
        return type(a)(merge_args(*items) for items in zip(*traced))
    if isinstance(a, dict):
        if any(b.keys() != a.keys() for b in rest):
            raise TraceMismatch(" vs ".join(f"keywords {sorted(v)}" for v in traced))
        return {k: merge_args(*(v[k] for v in traced)) for k in a}
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        same = all(b == a or (a != a and b != b) for b in rest)
        return a if same else SymInt(tuple(traced))
    if isinstance(a, np.ndarray):
        return a
    if any(b != a for b in rest):
        raise TraceMismatch(" vs ".join(repr(v) for v in traced))
    return a


def solve(sym: SymInt, dims: list[Dim]) -> Expr | None:
    """An expression over ``dims`` taking ``sym``'s value in every trace, or None. Tried in
    order: a dim; a dim or a product of two times a constant; a dim plus a constant; any of
    those monomials times a constant plus a constant (what the first traces fit, the last checks)."""
    if not all(float(v).is_integer() for v in sym.values):
        return None
    values = tuple(int(v) for v in sym.values)
    singles = [(d.name,) for d in dims]
    pairs = [(d.name, e.name) for d, e in itertools.combinations_with_replacement(dims, 2)]
    sizes = {d.name: d.sizes for d in dims}

    def at(names):
        return tuple(int(np.prod([sizes[n][t] for n in names])) for t in range(len(values)))

    def fits(coef, names, offset):
        return all(coef * m + offset == v for m, v in zip(at(names), values))

    for names in singles + pairs:  # coef * monomial
        m0 = at(names)[0]
        if m0 and values[0] % m0 == 0 and fits(values[0] // m0, names, 0):
            return Expr(values[0] // m0, names, 0)
    for names in singles:  # monomial + offset
        if fits(1, names, values[0] - at(names)[0]):
            return Expr(1, names, values[0] - at(names)[0])
    for names in singles + pairs:  # coef * monomial + offset
        m = at(names)
        if m[0] != m[1] and (values[0] - values[1]) % (m[0] - m[1]) == 0:
            coef = (values[0] - values[1]) // (m[0] - m[1])
            if coef and fits(coef, names, values[0] - coef * m[0]):
                return Expr(coef, names, values[0] - coef * m[0])
    return None
