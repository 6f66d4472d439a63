"""Dynamic axes for ONNX export: which numbers of a traced forward depend on them.

The forward is traced twice, the second time with every dynamic axis of the example inputs
resized (:func:`resized_inputs`). An integer argument of a backend call (a reshape's target,
an arange's stop, a slice's end, a divisor such as a mean's count) that differs between the
two traces depends on the dynamic sizes: :func:`merge_args` turns it into a :class:`SymInt`
holding both values, and :func:`solve` finds an expression over the dynamic dims that gives
both — a dim times a constant, a product of two dims, or a dim plus a constant. The graph
computes it at run time from the inputs' ``Shape``.
"""

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


def second_sizes(sizes: list[int]) -> list[int]:
    """The sizes the dynamic axes take in the second trace: each moved by a different amount
    (two axes of one size tell apart) and all in one direction, so that every product of
    them changes too (2*6 and 3*4 would not). Smaller when all stay at least 2 (a sequence
    cannot outgrow a position table), else larger; never 1, which broadcasts."""
    if all(size - (k + 1) >= 2 for k, size in enumerate(sizes)):
        return [size - (k + 1) for k, size in enumerate(sizes)]
    return [size + (k + 1) for k, size in enumerate(sizes)]


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


def merge_args(a, b):
    """One argument structure from the two traces' (``SymInt`` where numbers differ)."""
    if type(a) is not type(b):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            return SymInt((a, b))
        raise TraceMismatch(f"{a!r} in one trace, {b!r} in the other")
    if isinstance(a, slice):
        return slice(merge_args(a.start, b.start), merge_args(a.stop, b.stop), merge_args(a.step, b.step))
    if isinstance(a, tuple) and hasattr(a, "_fields"):  # a Ref: the same value in both traces
        if a != b:
            raise TraceMismatch(f"reads {a} in one trace and {b} in the other")
        return a
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):
            raise TraceMismatch(f"{len(a)} items in one trace, {len(b)} in the other")
        return type(a)(merge_args(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        if a.keys() != b.keys():
            raise TraceMismatch(f"keywords {sorted(a)} and {sorted(b)}")
        return {k: merge_args(a[k], b[k]) for k in a}
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        return a if a == b or (a != a and b != b) else SymInt((a, b))
    if isinstance(a, np.ndarray):
        return a
    if a != b:
        raise TraceMismatch(f"{a!r} in one trace, {b!r} in the other")
    return a


def solve(sym: SymInt, dims: list[Dim]) -> Expr | None:
    """An expression over ``dims`` taking ``sym``'s value in both traces, or None."""
    v1, v2 = sym.values
    if not all(float(v).is_integer() for v in (v1, v2)):
        return None
    v1, v2 = int(v1), int(v2)
    for d in dims:  # a dim itself
        if d.sizes == (v1, v2):
            return Expr(1, (d.name,), 0)
    for d in dims:  # a dim times a constant (heads * batch, 2 * seq)
        s1, s2 = d.sizes
        if v1 % s1 == 0 and v1 // s1 * s2 == v2:
            return Expr(v1 // s1, (d.name,), 0)
    for d, e in itertools.combinations_with_replacement(dims, 2):  # a product of two, times c
        p1, p2 = d.sizes[0] * e.sizes[0], d.sizes[1] * e.sizes[1]
        if v1 % p1 == 0 and v1 // p1 * p2 == v2:
            return Expr(v1 // p1, (d.name, e.name), 0)
    for d in dims:  # a dim plus a constant (seq + 1, seq - 1)
        if v1 - d.sizes[0] == v2 - d.sizes[1]:
            return Expr(1, (d.name,), v1 - d.sizes[0])
    return None
