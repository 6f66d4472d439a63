"""Fused element-wise activations on CuPy arrays: GELU and the SwiGLU gate, forward and backward.

``approximate=False``: ``gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2)))``;
``approximate=True``: ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.kernels.backend import fused_call
from ember.kernels.cuda import launch, modules, validate
from ember.kernels.cuda.runtime import cupy_or_error

__all__ = ["gelu", "gelu_backward", "swiglu", "swiglu_backward"]

_SRC = "activations.cu"

# The element-wise activation kernels: 1-D grid-stride loops, accumulating in AccType<T>
# (float for half), with the helpers of common.cuh (e_tanh, e_erf, e_exp, to_acc, from_acc).
_SOURCE = r"""
template <typename A, bool APPROX> __device__ __forceinline__ A gelu_value(A x) {
  if (APPROX) {
    const A inner = (A)0.7978845608028654 * (x + (A)0.044715 * x * x * x);
    return (A)0.5 * x * ((A)1 + e_tanh(inner));
  }
  return x * (A)0.5 * ((A)1 + e_erf(x * (A)0.7071067811865476));
}

template <typename A, bool APPROX> __device__ __forceinline__ A gelu_grad(A x_in) {
  // Beyond |x| = 1e4 the derivative is exactly 0 or 1: clamping keeps x^2 finite so huge
  // and infinite inputs give that limit, not inf * 0 = NaN (as the reference); NaN propagates.
  const A bound = (A)1e4;
  const A x_hi = x_in > bound ? bound : x_in;
  const A x = x_hi < -bound ? -bound : x_hi;
  if (APPROX) {
    const A x2 = x * x;
    const A t = e_tanh((A)0.7978845608028654 * (x + (A)0.044715 * x2 * x));
    const A dinner = (A)0.7978845608028654 * ((A)1 + (A)(3 * 0.044715) * x2);
    return (A)0.5 * ((A)1 + t) + (A)0.5 * x * ((A)1 - t * t) * dinner;
  }
  const A cdf = (A)0.5 * ((A)1 + e_erf(x * (A)0.7071067811865476));
  const A pdf = (A)0.3989422804014327 * e_exp((A)-0.5 * x * x);
  return cdf + x * pdf;
}

template <typename T, bool APPROX>
__global__ void __launch_bounds__(256)
gelu_fwd(const T* __restrict__ x, T* __restrict__ y, long long n) {
  typedef typename AccType<T>::type A;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = from_acc<T>(gelu_value<A, APPROX>(to_acc(x[i])));
}

template <typename T, bool APPROX>
__global__ void __launch_bounds__(256)
gelu_bwd(const T* __restrict__ x, const T* __restrict__ dy, T* __restrict__ dx, long long n) {
  typedef typename AccType<T>::type A;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    dx[i] = from_acc<T>(to_acc(dy[i]) * gelu_grad<A, APPROX>(to_acc(x[i])));
}

template <typename A> __device__ __forceinline__ A sigmoid_value(A v) {
  // split by sign so that exp never overflows, as the reference's sigmoid; NaN propagates
  const A e = e_exp(v < (A)0 ? v : -v);
  return v >= (A)0 ? (A)1 / ((A)1 + e) : e / ((A)1 + e);
}

template <typename T>
__global__ void __launch_bounds__(256)
swiglu_fwd(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y, long long n) {
  typedef typename AccType<T>::type A;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const A v = to_acc(a[i]);
    y[i] = from_acc<T>(v * sigmoid_value(v) * to_acc(b[i]));
  }
}

template <typename T>
__global__ void __launch_bounds__(256)
swiglu_bwd(const T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ dy,
           T* __restrict__ da, T* __restrict__ db, long long n) {
  typedef typename AccType<T>::type A;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const A v = to_acc(a[i]);
    const A s = sigmoid_value(v);
    const A g = to_acc(dy[i]);
    da[i] = from_acc<T>(g * to_acc(b[i]) * (s * ((A)1 + v * ((A)1 - s))));
    db[i] = from_acc<T>(g * (v * s));
  }
}
"""
modules.register(
    _SRC,
    lambda t: (
        tuple(modules.name_expr(k, t, a) for k in ("gelu_fwd", "gelu_bwd") for a in ("true", "false"))
        + tuple(modules.name_expr(k, t) for k in ("swiglu_fwd", "swiglu_bwd"))
    ),
    text=_SOURCE,
)


def _flag(approximate: bool) -> str:
    return "true" if approximate else "false"


def _launch(op: str, kernel: str, targs: tuple, inputs: dict[str, Any], outputs: int) -> Any:
    """Check ``inputs`` (float arrays; the others of the first's shape and dtype), run the
    element-wise ``kernel<T, *targs>`` over them into ``outputs`` new arrays, and return them
    (one array, or a tuple)."""
    cp = cupy_or_error()
    (lead, lead_array), *others = inputs.items()
    first = validate.float_array(cp, op, lead, lead_array, min_ndim=0)
    arrays = [first]
    for name, array in others:
        array = validate.float_array(cp, op, name, array, dtype=first.dtype, min_ndim=0)
        validate.check_same_shape(op, lead, first, name, array)
        arrays.append(array)
    outs = [cp.empty(first.shape, dtype=first.dtype) for _ in range(outputs)]
    n = int(first.size)
    if n:
        ct = modules.ctype_of(first.dtype)
        grid, block = launch.elementwise_launch(n)
        modules.kernel(_SRC, ct, kernel, ct, *targs)(grid, block, (*arrays, *outs, np.int64(n)))
    return outs[0] if outputs == 1 else tuple(outs)


def gelu(x: Any, approximate: bool) -> Any:
    """GELU, element-wise.

    Args:
        x: float16/32/64 CuPy array.
        approximate: use the tanh approximation instead of the exact erf form.
    """
    return _launch("gelu", "gelu_fwd", (_flag(approximate),), {"x": x}, 1)


def gelu_backward(x: Any, dy: Any, approximate: bool) -> Any:
    """Gradient of :func:`gelu`: ``dx = dy * gelu'(x)``.

    Args:
        x: the forward input.
        dy: gradient of the output (same shape and dtype as x).
        approximate: the form used in the forward pass.
    """
    return _launch("gelu_backward", "gelu_bwd", (_flag(approximate),), {"x": x, "dy": dy}, 1)


def swiglu(a: Any, b: Any) -> Any:
    """The SwiGLU gate ``a * sigmoid(a) * b``, element-wise (float16 computed in float32).

    Args:
        a: float16/32/64 CuPy array.
        b: an array of ``a``'s shape and dtype.
    """
    return _launch("swiglu", "swiglu_fwd", (), {"a": a, "b": b}, 1)


def swiglu_backward(a: Any, b: Any, dy: Any) -> tuple[Any, Any]:
    """Gradients of :func:`swiglu`: ``(da, db)``.

    Args:
        a, b: the forward inputs.
        dy: gradient of the output (``a``'s shape and dtype).
    """
    return _launch("swiglu_backward", "swiglu_bwd", (), {"a": a, "b": b, "dy": dy}, 2)


class CudaActivationOps:
    """GELU and the SwiGLU gate on ``cuda`` (every size, float16 accumulated in float32)."""

    gelu = fused_call(gelu)
    gelu_backward = fused_call(gelu_backward)
    swiglu = fused_call(swiglu)
    swiglu_backward = fused_call(swiglu_backward)
