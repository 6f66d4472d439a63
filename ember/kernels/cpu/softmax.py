"""Fused softmax and log-softmax over the last axis, forward and backward.

Each row is processed by one thread in three short passes over data that stays in L1
(max, exponentiate-and-sum, scale), so the input is read from memory once and the
output written once.

Every function takes a float32/float64 array of at least one dimension (a backward: the
forward output ``y`` and the gradient ``dy`` with respect to it, of one shape and dtype) and
returns a new array of that shape and dtype.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange
from numba.extending import register_jitable

from ember.kernels.backend import fused_call

from . import vecmath as vm
from .checks import as_rows, check_same_shape, float_array
from .jit import kernel, serial_ordered

__all__ = ["log_softmax", "log_softmax_backward", "softmax", "softmax_backward"]


@register_jitable(inline="always")
def _exp_shifted(xi, yi):
    """``yi = exp(xi - m)`` with ``m = max(xi)``; returns ``(m, sum(yi))``."""
    d = xi.shape[0]
    # From -inf over every element, not from xi[0] over the rest: a loop of d - 1 leaves
    # a remainder of up to 63 elements (16 lanes x 4) to a scalar loop.
    m = vm.typed(-np.inf, xi)
    for j in range(d):
        m = vm.vmax(m, xi[j])
    # Summed in x's dtype (terms in [0, 1], many partial sums): a float64 sum would halve the
    # lanes of this loop.
    total = vm.typed(0.0, xi)
    for j in range(d):
        e = vm.exp(xi[j] - m)
        yi[j] = e
        total += e
    return m, total


@kernel
def _softmax_rows(x, y):
    n, d = x.shape
    for i in prange(n):
        yi = y[i]
        _, total = _exp_shifted(x[i], yi)
        inv = vm.typed(1.0, x) / total
        for j in range(d):
            yi[j] *= inv


@kernel
def _softmax_backward_rows(y, dy, dx):
    n, d = y.shape
    for i in prange(n):
        yi = y[i]
        dyi = dy[i]
        dot = 0.0
        for j in range(d):
            dot += dyi[j] * yi[j]
        c = vm.typed(dot, y)
        dxi = dx[i]
        for j in range(d):
            dxi[j] = yi[j] * (dyi[j] - c)


@serial_ordered
def _subtract_log_total(xi, m, log_total, yi):
    # (x - m) - log_total in this order: reassociated to x - (m + log_total), the rounding
    # of the sum at |m|'s scale swamps a log-probability near 0 (p = 1 - 1e-6 read as 0).
    for j in range(xi.shape[0]):
        yi[j] = (xi[j] - m) - log_total


@kernel
def _log_softmax_rows(x, y):
    n, d = x.shape
    for i in prange(n):
        xi = x[i]
        yi = y[i]
        # no stand-in for a maximum of +-inf: a row with +inf, or of -inf only, gives NaN
        # (inf - inf), as softmax, the reference and PyTorch do.
        # The terms kept in y: the maximum's term is exactly 1, and when the total is below 2
        # (one dominant logit) its log is near 0 and carried by the rest, which a float32 sum
        # holding that 1 rounds away; the rest is then summed again alone and goes through
        # log1p (cheaper than a float64 sum of every term).
        m, total = _exp_shifted(xi, yi)
        if vm.typed(1.0, x) <= total < vm.typed(2.0, x):
            rest = vm.typed(0.0, x)
            for j in range(d):
                rest += yi[j] if xi[j] < m else vm.typed(0.0, x)
            log_total = vm.typed(math.log1p(rest), x)
        else:
            log_total = vm.typed(math.log(total), x)
        _subtract_log_total(xi, m, log_total, yi)


@kernel
def _log_softmax_backward_rows(y, dy, dx):
    n, d = y.shape
    for i in prange(n):
        dyi = dy[i]
        total = 0.0
        for j in range(d):
            total += dyi[j]
        c = vm.typed(total, y)
        yi = y[i]
        dxi = dx[i]
        for j in range(d):
            dxi[j] = dyi[j] - vm.exp(yi[j]) * c


def _over_rows(op: str, kernel, x: object) -> np.ndarray:
    """``kernel(x_rows, y_rows)`` on the checked ``x`` into a new ``y`` (nothing runs when empty)."""
    x = float_array(op, "x", x)
    y = np.empty_like(x)
    if x.size:
        kernel(as_rows(x), as_rows(y))
    return y


def _backward_over_rows(op: str, kernel, y: object, dy: object) -> np.ndarray:
    """``kernel(y_rows, dy_rows, dx_rows)`` on the checked ``y``/``dy`` into a new ``dx``."""
    y = float_array(op, "y", y)
    dy = float_array(op, "dy", dy, dtype=y.dtype)
    check_same_shape(op, "y", y, "dy", dy)
    dx = np.empty_like(y)
    if y.size:
        kernel(as_rows(y), as_rows(dy), as_rows(dx))
    return dx


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis: ``y = exp(x - max) / sum(exp(x - max))``."""
    return _over_rows("softmax", _softmax_rows, x)


def softmax_backward(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Gradient of softmax: ``dx = y * (dy - sum(dy * y, -1))``."""
    return _backward_over_rows("softmax_backward", _softmax_backward_rows, y, dy)


def log_softmax(x: np.ndarray) -> np.ndarray:
    """Log-softmax over the last axis: ``y = x - max - log(sum(exp(x - max)))``."""
    return _over_rows("log_softmax", _log_softmax_rows, x)


def log_softmax_backward(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Gradient of log-softmax: ``dx = dy - exp(y) * sum(dy, -1)``."""
    return _backward_over_rows("log_softmax_backward", _log_softmax_backward_rows, y, dy)


class CpuSoftmaxOps:
    """The softmax family's fused kernels on ``cpu`` (float16 computed in float32)."""

    softmax = fused_call(softmax, half=True)
    softmax_backward = fused_call(softmax_backward, half=True)
    log_softmax = fused_call(log_softmax, half=True)
    log_softmax_backward = fused_call(log_softmax_backward, half=True)
