"""Fused softmax and log-softmax over the last axis, forward and backward.

Each row is processed by one thread in three short passes over data that stays in L1
(max, exponentiate-and-sum, scale), so the input is read from memory once and the
output written once.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from . import vecmath as vm
from .checks import as_rows, check_same_shape, float_array
from .jit import kernel

__all__ = ["log_softmax", "log_softmax_backward", "softmax", "softmax_backward"]


@kernel
def _softmax_rows(x, y):
    n, d = x.shape
    for i in prange(n):
        xi = x[i]
        yi = y[i]
        # From -inf over every element, not from xi[0] over the rest: a loop of d - 1 leaves
        # a remainder of up to 63 elements (16 lanes x 4) to a scalar loop.
        m = vm.typed(-np.inf, x)
        for j in range(d):
            m = vm.vmax(m, xi[j])
        # Summed in x's dtype (terms in [0, 1], many partial sums): a float64 sum made
        # this loop ~45% slower; log_softmax, whose output is a log, keeps float64.
        total = vm.typed(0.0, x)
        for j in range(d):
            e = vm.exp(xi[j] - m)
            yi[j] = e
            total += e
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


@kernel
def _log_softmax_rows(x, y):
    n, d = x.shape
    for i in prange(n):
        xi = x[i]
        # From -inf over every element, not from xi[0] over the rest: a loop of d - 1 leaves
        # a remainder of up to 63 elements (16 lanes x 4) to a scalar loop.
        m = vm.typed(-np.inf, x)
        for j in range(d):
            m = vm.vmax(m, xi[j])
        if not math.isfinite(m):
            m = vm.typed(0.0, x)  # as the reference: a +-inf row gives +-inf, not NaN
        total = 0.0
        for j in range(d):
            total += vm.exp(xi[j] - m)
        log_total = vm.typed(math.log(total), x)
        yi = y[i]
        for j in range(d):
            yi[j] = (xi[j] - m) - log_total


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


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis: ``y = exp(x - max) / sum(exp(x - max))``.

    Args:
        x: float32/float64 array with at least one dimension.

    Returns:
        A new array of ``x``'s shape and dtype.
    """
    x = float_array("softmax", "x", x)
    y = np.empty_like(x)
    if x.size:
        _softmax_rows(as_rows(x), as_rows(y))
    return y


def softmax_backward(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Gradient of softmax: ``dx = y * (dy - sum(dy * y, -1))``.

    Args:
        y: the forward output.
        dy: gradient with respect to ``y`` (same shape and dtype).

    Returns:
        ``dx``, a new array of ``y``'s shape and dtype.
    """
    y = float_array("softmax_backward", "y", y)
    dy = float_array("softmax_backward", "dy", dy, dtype=y.dtype)
    check_same_shape("softmax_backward", "y", y, "dy", dy)
    dx = np.empty_like(y)
    if y.size:
        _softmax_backward_rows(as_rows(y), as_rows(dy), as_rows(dx))
    return dx


def log_softmax(x: np.ndarray) -> np.ndarray:
    """Log-softmax over the last axis: ``y = x - max - log(sum(exp(x - max)))``.

    Args:
        x: float32/float64 array with at least one dimension.

    Returns:
        A new array of ``x``'s shape and dtype.
    """
    x = float_array("log_softmax", "x", x)
    y = np.empty_like(x)
    if x.size:
        _log_softmax_rows(as_rows(x), as_rows(y))
    return y


def log_softmax_backward(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Gradient of log-softmax: ``dx = dy - exp(y) * sum(dy, -1)``.

    Args:
        y: the forward output.
        dy: gradient with respect to ``y`` (same shape and dtype).

    Returns:
        ``dx``, a new array of ``y``'s shape and dtype.
    """
    y = float_array("log_softmax_backward", "y", y)
    dy = float_array("log_softmax_backward", "dy", dy, dtype=y.dtype)
    check_same_shape("log_softmax_backward", "y", y, "dy", dy)
    dx = np.empty_like(y)
    if y.size:
        _log_softmax_backward_rows(as_rows(y), as_rows(dy), as_rows(dx))
    return dx
