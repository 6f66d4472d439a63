"""Fused GELU, forward and backward, on CuPy arrays.

``approximate=False``: ``gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2)))``;
``approximate=True``: ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.kernels.cuda import launch, modules, validate
from ember.kernels.cuda.runtime import cupy_or_error

__all__ = ["gelu", "gelu_backward"]

_SRC = "gelu.cu"


def _flag(approximate: bool) -> str:
    return "true" if approximate else "false"


def gelu(x: Any, approximate: bool) -> Any:
    """GELU, element-wise.

    Args:
        x: float16/32/64 CuPy array.
        approximate: use the tanh approximation instead of the exact erf form.
    """
    op = "gelu"
    cp = cupy_or_error()
    x = validate.float_array(cp, op, "x", x, min_ndim=0)
    y = cp.empty(x.shape, dtype=x.dtype)
    n = int(x.size)
    if n:
        ct = modules.ctype_of(x.dtype)
        grid, block = launch.elementwise_launch(n)
        modules.kernel(_SRC, ct, "gelu_fwd", ct, _flag(approximate))(grid, block, (x, y, np.int64(n)))
    return y


def gelu_backward(x: Any, dy: Any, approximate: bool) -> Any:
    """Gradient of :func:`gelu`: ``dx = dy * gelu'(x)``.

    Args:
        x: the forward input.
        dy: gradient of the output (same shape and dtype as x).
        approximate: the form used in the forward pass.
    """
    op = "gelu_backward"
    cp = cupy_or_error()
    x = validate.float_array(cp, op, "x", x, min_ndim=0)
    dy = validate.float_array(cp, op, "dy", dy, dtype=x.dtype, min_ndim=0)
    validate.check_same_shape(op, "x", x, "dy", dy)
    dx = cp.empty(x.shape, dtype=x.dtype)
    n = int(x.size)
    if n:
        ct = modules.ctype_of(x.dtype)
        grid, block = launch.elementwise_launch(n)
        modules.kernel(_SRC, ct, "gelu_bwd", ct, _flag(approximate))(grid, block, (x, dy, dx, np.int64(n)))
    return dx
