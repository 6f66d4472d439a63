"""Hypothesis strategies for the inputs of the differential test: shapes, dtypes, values and
memory layouts.

Values come in two regimes: *tame* (small floats and small integers, ties included) and
*wild* (tame plus ±inf, NaN, -0.0, huge values near the dtype's overflow, subnormals). A
layout says how a tensor of the wanted shape is built from a host array, so that ops see
non-contiguous inputs: a transposed copy viewed back, or every other element of a wider
array (stride 2). An :class:`Operand` is such an array plus its layout; it builds the same
tensor on every backend.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember

FLOATS = ("float16", "float32", "float64")
INTS = ("int32", "int64")
DTYPES = FLOATS + INTS + ("bool",)
INF, NAN = math.inf, math.nan

_SPECIALS = {
    # huge: close to where squares, exponentials or sums overflow; tiny: subnormal
    "float16": [0.0, -0.0, INF, -INF, NAN, 6.0e4, -6.0e4, 65504.0, 300.0, 6e-8, -6e-8, 1e-5],
    "float32": [0.0, -0.0, INF, -INF, NAN, 1e30, -1e30, 3e38, 1e20, 1e-40, -1e-40, 1.2e-38],
    "float64": [0.0, -0.0, INF, -INF, NAN, 1e30, -1e30, 1e300, 1e20, 1e-310, -1e-310, 2.3e-308],
    "int32": [0, -1, 2**31 - 1, -(2**31), 2**16],
    "int64": [0, -1, 2**62, -(2**63), 2**31],
}


def np_dtype(name: str) -> np.dtype:
    return ember.dtype(name).numpy


# The strategies are cached by their (hashable) arguments: building and validating a fresh
# Hypothesis strategy for every drawn array costs more than drawing from it.
@functools.cache
def elements(name: str, wild: bool):
    """A strategy for one element of dtype ``name`` (every value exactly representable)."""
    if name == "bool":
        return st.booleans()
    if name in INTS:
        tame = st.integers(-5, 5)
    else:
        width = {"float16": 16, "float32": 32, "float64": 64}[name]
        tame = st.one_of(st.integers(-3, 3).map(float), st.floats(-4.0, 4.0, width=width))
    if not wild:
        return tame
    specials = np.array(_SPECIALS[name], dtype=np_dtype(name)).tolist()  # rounded to the dtype
    return st.one_of(tame, st.sampled_from(specials))


@functools.cache
def arrays(name: str, shape: tuple, wild: bool):
    return hnp.arrays(np_dtype(name), shape, elements=elements(name, wild))


def sides(max_side: int = 4):
    return st.integers(1, max_side)


@st.composite
def shapes(draw, min_dims: int = 0, max_dims: int = 4, max_side: int = 4):
    """A shape whose dims are 1..max_side; about one in eight has a zero-size dim."""
    shape = draw(st.lists(sides(max_side), min_size=min_dims, max_size=max_dims))
    if shape and draw(st.integers(0, 7)) == 0:
        shape[draw(st.integers(0, len(shape) - 1))] = 0
    return tuple(shape)


def broadcast_partner(draw, shape) -> tuple:
    """A shape that broadcasts with ``shape``: each trailing dim equal or 1 (or anything
    where ``shape`` has a 1), possibly fewer or one more leading dim."""
    out = []
    for s in shape:
        choice = draw(st.integers(0, 3))
        if s == 1:
            out.append(draw(st.integers(0, 3)) if choice == 0 else 1)
        else:
            out.append(1 if choice == 0 else s)
    drop = draw(st.integers(0, len(out))) if draw(st.booleans()) else 0
    out = out[drop:]
    if draw(st.integers(0, 5)) == 0:
        out = [draw(st.integers(1, 3))] + out
    return tuple(out)


LAYOUTS = ("contiguous", "transposed", "strided")


@dataclass(eq=False)
class Operand:
    """A host array and the layout of the tensor built from it on every backend."""

    values: np.ndarray
    layout: str = "contiguous"

    @property
    def dtype(self):
        return ember.dtype_from_numpy(self.values.dtype)

    def build(self, device, grad: bool):
        """``(leaf, tensor)``: the leaf created from host memory (requiring grad when ``grad``
        and float) and the tensor with this layout (a view of the leaf)."""
        a = self.values
        if self.layout == "transposed":
            base = np.ascontiguousarray(np.transpose(a))
        elif self.layout == "strided":
            base = np.repeat(a, 2, axis=-1)  # a == base[..., ::2]
        else:
            base = a
        leaf = ember.tensor(base, dtype=self.dtype, device=device)
        if grad and leaf.dtype.is_float:
            leaf.require_grad()
        if self.layout == "transposed":
            return leaf, leaf.permute(tuple(reversed(range(a.ndim))))
        if self.layout == "strided":
            return leaf, leaf[(Ellipsis, slice(None, None, 2))]
        return leaf, leaf

    def __repr__(self) -> str:
        body = np.array2string(self.values, separator=", ", threshold=64, precision=8, floatmode="maxprec")
        view = {"contiguous": "", "transposed": " (transposed view)", "strided": " (stride-2 view)"}[
            self.layout
        ]
        return f"{self.dtype}{list(self.values.shape)}{view} {body}".replace("\n", "")

    def _repr_pretty_(self, printer, cycle):  # how Hypothesis prints a failing case's draws
        printer.text(repr(self))


@functools.cache
def operands(name: str, shape: tuple, wild: bool, layout: bool = True):
    """An Operand of dtype ``name`` and ``shape``, in a random layout when ``layout``."""
    return _operands(name, tuple(shape), wild, layout)


@st.composite
def _operands(draw, name: str, shape: tuple, wild: bool, layout: bool):
    values = draw(arrays(name, shape, wild))
    choices = ["contiguous"]
    if layout and len(shape) >= 2:
        choices.append("transposed")
    if layout and len(shape) >= 1:
        choices.append("strided")
    return Operand(values, draw(st.sampled_from(choices)))


@functools.cache
def index_operand(shape: tuple, upper: int, low: int = 0, dtype: str | None = None):
    """An int Operand of ``shape`` with values in [low, upper) (0 when that range is empty:
    an invalid index, which every backend must reject alike)."""
    return _index_operand(tuple(shape), upper, low, dtype)


@st.composite
def _index_operand(draw, shape: tuple, upper: int, low: int, dtype: str | None):
    name = dtype or draw(st.sampled_from(INTS))
    if upper <= low:
        return Operand(np.zeros(shape, dtype=np_dtype(name)))
    values = draw(hnp.arrays(np_dtype(name), shape, elements=st.integers(low, upper - 1)))
    return Operand(values)


@st.composite
def leaves(draw, dtypes=DTYPES, min_dims: int = 0, max_dims: int = 4):
    """The input of a program: ``(operand, wild)``."""
    wild = draw(st.booleans())
    name = draw(st.sampled_from(dtypes))
    shape = draw(shapes(min_dims, max_dims))
    return draw(operands(name, shape, wild)), wild
