"""Scalar forms of the element-wise ops whose NumPy expression is more than one call, for the
kernels :mod:`.fused_chain` generates: each gives what the ``cpu`` backend's array op gives for
one element (NaN propagation included)."""

from __future__ import annotations

import numba
from numba.extending import register_jitable

from . import vecmath as vm
from .vecmath import sigmoid

__all__ = ["accumulate", "erf", "exp", "maximum", "minimum", "relu", "sigmoid", "sign", "tanh"]


@numba.njit(cache=True, nogil=True, fastmath={"reassoc"})
def accumulate(acc, v):
    """``acc + v`` for a sum's running total: the one addition LLVM may reassociate (so the loop
    keeps one partial sum per vector lane, as np.sum's pairwise sums do). A separate function,
    inlined by LLVM with its own flags: fastmath on the whole kernel would let LLVM reassociate
    the chain's ops too (``-g * y * y`` as ``-g * (y * y)``: 0 * inf, NaN, where eager gives 0)."""
    return acc + v


@register_jitable(inline="always")
def exp(v):
    return vm.exp(v)  # vectorises (libm's exp does not without SVML)


@register_jitable(inline="always")
def tanh(v):
    # vectorisable: 1 - 2 / (e^2|v| + 1) with v's sign, and the odd Taylor series to v^9 below
    # |v| = 1/16, where that form would cancel (relative error there below 1e-13); NaN fails
    # both comparisons and propagates
    one = vm.typed(1.0, v)
    a = abs(v)
    if a < vm.typed(0.0625, v):
        s = v * v
        series = vm.typed(-17.0 / 315.0, v) + s * vm.typed(62.0 / 2835.0, v)
        series = vm.typed(-1.0 / 3.0, v) + s * (vm.typed(2.0 / 15.0, v) + s * series)
        return v + v * s * series
    t = one - vm.typed(2.0, v) / (vm.exp(a + a) + one)
    return t if v >= vm.typed(0.0, v) else -t


@register_jitable(inline="always")
def relu(v):
    # NaN stays NaN; -0.0 gives +0.0, as the backends' maximum(x, 0) (the second operand on a tie)
    return vm.typed(0.0, v) if v <= vm.typed(0.0, v) else v


@register_jitable(inline="always")
def sign(v):
    # ±0 gives +0.0 and NaN stays NaN, as np.sign (Numba's np.sign keeps -0.0)
    zero = vm.typed(0.0, v)
    one = vm.typed(1.0, v)
    return one if v > zero else (-one if v < zero else v + zero)


@register_jitable(inline="always")
def maximum(a, b):
    # NaN in either operand gives NaN, and a tie (-0.0, 0.0) gives b, as np.maximum
    return a if a > b or a != a else b


@register_jitable(inline="always")
def minimum(a, b):
    return a if a < b or a != a else b


@register_jitable(inline="always")
def erf(v):
    return vm.erf(v)  # the kernel the cpu backend's erf runs
