"""Fused GELU (exact and tanh forms), forward and backward, and an element-wise erf.

Both forms are written so that no libm call sits in the element loop (float32), and
so that the negative tail keeps its relative accuracy:

* exact: ``gelu(x) = x * Phi(x) = max(x, 0) - |x| T(x)`` with the tail of the normal CDF
  ``T(x) = erfc(|x| / sqrt2) / 2``, which avoids the cancellation in
  ``1 + erf(x / sqrt2)`` for large negative ``x`` (the backward takes ``Phi`` as ``T`` for
  ``x < 0`` and ``1 - T`` otherwise);
* tanh: ``0.5 x (1 + tanh(u)) = x / (1 + exp(-2u))`` with
  ``u = sqrt(2/pi) (x + 0.044715 x^3)``, one exponential and no cancellation.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange
from numba.extending import register_jitable

from ember.kernels import native_ops
from ember.kernels.backend import DECLINED, fused, fused_call

from . import vecmath as vm
from .checks import FLOAT_DTYPES, check_same_shape, float_array
from .jit import kernel

__all__ = ["erf", "gelu", "gelu_backward", "swiglu", "swiglu_backward"]

_INV_SQRT_2PI = 0.3989422804014327
_SQRT_2_OVER_PI = 0.7978845608028654
_CUBIC = 0.044715
_GRAD_BOUND = 1e4


@kernel
def _gelu_exact(x, y):
    zero = vm.typed(0.0, x)
    for i in prange(x.shape[0]):
        v = x[i]
        # v Phi(v) = max(v, 0) - |v| T(v): no 1 - T rounded before the product, and no
        # select between the two sides of 0. |v| is clamped where T is already 0 (the same
        # clamp as T's, so one operation), so that no product overflows whatever order
        # fast-math gives them and +inf gives inf; -inf gives -inf * 0 = NaN, as the formula
        # (and the reference backend); NaN propagates.
        bound = vm.typed(vm.NORMAL_TAIL_ARG_MAX, v)
        magnitude = abs(v)
        magnitude = bound if magnitude > bound else magnitude
        relu = zero if v < zero else v
        relu = vm.typed(math.nan, v) if v == vm.typed(-math.inf, v) else relu
        y[i] = relu - magnitude * vm.normal_tail(v)


@register_jitable(inline="always")
def _grad_arg(v):
    # Beyond |x| = 1e4 every GELU derivative is exactly 0 or 1; clamping there keeps x^2
    # finite so huge and infinite inputs give that limit instead of inf * 0 = NaN (as the
    # reference). NaN fails both comparisons and propagates.
    bound = vm.typed(_GRAD_BOUND, v)
    v = bound if v > bound else v
    return -bound if v < -bound else v


@kernel
def _gelu_exact_backward(x, dy, dx):
    one = vm.typed(1.0, x)
    zero = vm.typed(0.0, x)
    for i in prange(x.shape[0]):
        v = _grad_arg(x[i])
        tail, density = vm.normal_tail_density(v)
        phi = one - tail if v >= zero else tail
        dx[i] = dy[i] * (phi + v * density)


@kernel
def _gelu_tanh(x, y):
    one = vm.typed(1.0, x)
    a = vm.typed(-2.0 * _SQRT_2_OVER_PI, x)
    b = vm.typed(_CUBIC, x)
    for i in prange(x.shape[0]):
        v = x[i]
        y[i] = v / (one + vm.exp(a * (v + b * v * v * v)))


@kernel
def _gelu_tanh_backward(x, dy, dx):
    one = vm.typed(1.0, x)
    half = vm.typed(0.5, x)
    a = vm.typed(-2.0 * _SQRT_2_OVER_PI, x)
    b = vm.typed(_CUBIC, x)
    b3 = vm.typed(3.0 * _CUBIC, x)
    for i in prange(x.shape[0]):
        v = _grad_arg(x[i])
        e = vm.exp(a * (v + b * v * v * v))
        s = one / (one + e)
        # 1 - s = e s; take whichever form does not cancel (e * s is inf * 0 once e
        # overflows, but then s < 1/2 and 1 - s is exact enough).
        s_neg = one - s if s < half else e * s
        # d/dv [v s(2u)] = s + v s (1 - s) 2u'(v), 2u' = -a (1 + 3b v^2)
        dx[i] = dy[i] * (s - v * s * s_neg * a * (one + b3 * v * v))


@kernel
def _erf_flat(x, y):
    for i in prange(x.shape[0]):
        y[i] = vm.erf(x[i])


def erf(x: np.ndarray) -> np.ndarray:
    """Element-wise error function (the ``erf`` unary primitive of the cpu backend).

    float32: relative error below 2e-7 (no libm call, vectorised); float64: libm.

    Args:
        x: float32/float64 array of any shape.

    Returns:
        A new array of ``x``'s shape and dtype.
    """
    x = float_array("erf", "x", x, min_ndim=0)
    y = np.empty_like(x)
    if x.size:
        _erf_flat(x.reshape(-1), y.reshape(-1))
    return y


def gelu(x: np.ndarray, approximate: bool) -> np.ndarray:
    """GELU activation.

    ``approximate=False``: ``x * 0.5 * (1 + erf(x / sqrt2))``;
    ``approximate=True``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    Args:
        x: float32/float64 array of any shape.
        approximate: use the tanh approximation.

    Returns:
        A new array of ``x``'s shape and dtype.
    """
    x = float_array("gelu", "x", x, min_ndim=0)
    y = np.empty_like(x)
    if x.size:
        (_gelu_tanh if approximate else _gelu_exact)(x.reshape(-1), y.reshape(-1))
    return y


def gelu_backward(x: np.ndarray, dy: np.ndarray, approximate: bool) -> np.ndarray:
    """Gradient of :func:`gelu` with respect to its input.

    exact: ``dx = dy * (Phi(x) + x * phi(x))`` (``phi`` the standard normal density);
    tanh: ``dx = dy * (s + x s (1 - s) 2 u'(x))`` with ``s = sigmoid(2u)``.

    Args:
        x: the forward input.
        dy: gradient of the output (same shape and dtype as ``x``).
        approximate: whether the forward used the tanh approximation.

    Returns:
        ``dx``, a new array of ``x``'s shape and dtype.
    """
    x = float_array("gelu_backward", "x", x, min_ndim=0)
    dy = float_array("gelu_backward", "dy", dy, dtype=x.dtype, min_ndim=0)
    check_same_shape("gelu_backward", "x", x, "dy", dy)
    dx = np.empty_like(x)
    if x.size:
        fn = _gelu_tanh_backward if approximate else _gelu_exact_backward
        fn(x.reshape(-1), dy.reshape(-1), dx.reshape(-1))
    return dx


@register_jitable(inline="always")
def _gate_arg(v):
    # Below -1e4 sigmoid is exactly 0, so a * sigmoid(a) is -0: clamping there keeps the
    # products finite whatever order fast-math gives them (a * b first would overflow to
    # -inf * 0 = NaN); -inf stays -inf (its product is NaN, as the formula's) and NaN fails
    # the comparison and propagates.
    bound = vm.typed(-_GRAD_BOUND, v)
    return bound if v < bound and v != vm.typed(-math.inf, v) else v


@kernel
def _swiglu(a, b, y):
    for i in prange(a.shape[0]):
        v = _gate_arg(a[i])
        y[i] = v * vm.sigmoid(v) * b[i]


@kernel
def _swiglu_backward(a, b, dy, da, db):
    one = vm.typed(1.0, a)
    for i in prange(a.shape[0]):
        v = _gate_arg(a[i])
        s = vm.sigmoid(v)
        g = dy[i]
        da[i] = g * b[i] * (s * (one + v * (one - s)))
        db[i] = g * (v * s)


def swiglu(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The SwiGLU gate ``a * sigmoid(a) * b``, element-wise, in one pass.

    Args:
        a: float32/float64 array of any shape (the gate's input).
        b: an array of ``a``'s shape and dtype.

    Returns:
        A new array of ``a``'s shape and dtype.
    """
    a = float_array("swiglu", "a", a, min_ndim=0)
    b = float_array("swiglu", "b", b, dtype=a.dtype, min_ndim=0)
    check_same_shape("swiglu", "a", a, "b", b)
    y = np.empty_like(a)
    if a.size:
        _swiglu(a.reshape(-1), b.reshape(-1), y.reshape(-1))
    return y


def swiglu_backward(a: np.ndarray, b: np.ndarray, dy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradients of :func:`swiglu`: ``(da, db)``, in one pass.

    Args:
        a, b: the forward inputs.
        dy: gradient of the output (``a``'s shape and dtype).

    Returns:
        ``(da, db)``, new arrays of ``a``'s shape and dtype.
    """
    op = "swiglu_backward"
    a = float_array(op, "a", a, min_ndim=0)
    b = float_array(op, "b", b, dtype=a.dtype, min_ndim=0)
    dy = float_array(op, "dy", dy, dtype=a.dtype, min_ndim=0)
    check_same_shape(op, "a", a, "b", b)
    check_same_shape(op, "a", a, "dy", dy)
    da, db = np.empty_like(a), np.empty_like(a)
    if a.size:
        _swiglu_backward(a.reshape(-1), b.reshape(-1), dy.reshape(-1), da.reshape(-1), db.reshape(-1))
    return da, db


class CpuActivationOps:
    """GELU and the SwiGLU gate on ``cpu``: Numba kernels, and for GELU the C++ kernel where
    it measures faster (float64 exact GELU) or while the Numba kernels compile."""

    @fused(half=True, ready_arg=None)
    def gelu(self, x, approximate):
        native = self._native and x.dtype in FLOAT_DTYPES
        ready = self.kernels_ready(x, "gelu")
        if native and (not ready or (not approximate and x.dtype == np.float64)):
            return native_ops.gelu(x, approximate)
        if not ready:
            return DECLINED
        return gelu(x, approximate)

    @fused(half=True, ready_arg=None)
    def gelu_backward(self, x, dy, approximate):
        native = self._native and x.dtype in FLOAT_DTYPES
        ready = self.kernels_ready(x, "gelu_backward")
        if native and (not ready or (not approximate and x.dtype == np.float64)):
            return native_ops.gelu_backward(x, dy, approximate)
        if not ready:
            return DECLINED
        return gelu_backward(x, dy, approximate)

    swiglu = fused_call(swiglu, half=True)
    swiglu_backward = fused_call(swiglu_backward, half=True)
