"""Fused GELU, and bias + GELU, forward and backward on CuPy arrays.

``approximate=False``: ``gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2)))``;
``approximate=True``: ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.kernels.cuda import launch, modules, validate
from ember.kernels.cuda.runtime import cupy_or_error

__all__ = ["bias_gelu", "bias_gelu_backward", "gelu", "gelu_backward"]

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


def _bias_args(cp: Any, op: str, x: Any, bias: Any) -> tuple[Any, Any, int, int]:
    x = validate.float_array(cp, op, "x", x)
    rows, cols = validate.rows_cols(x.shape)
    bias = validate.float_array(cp, op, "bias", bias, dtype=x.dtype)
    if tuple(bias.shape) != (cols,):
        raise ValueError(
            f"{op}: bias must have shape ({cols},) to match the last dimension "
            f"of x {tuple(x.shape)}, got {tuple(bias.shape)}"
        )
    return x, bias, rows, cols


def bias_gelu(x: Any, bias: Any, approximate: bool) -> Any:
    """``gelu(x + bias)`` in one pass, bias broadcast over the last axis.

    Args:
        x: float16/32/64 CuPy array ``[..., D]``.
        bias: ``[D]``, same dtype as x.
        approximate: use the tanh approximation.
    """
    op = "bias_gelu"
    cp = cupy_or_error()
    x, bias, rows, cols = _bias_args(cp, op, x, bias)
    y = cp.empty(x.shape, dtype=x.dtype)
    n = rows * cols
    if n:
        ct = modules.ctype_of(x.dtype)
        grid, block = launch.elementwise_launch(n)
        modules.kernel(_SRC, ct, "bias_gelu_fwd", ct, _flag(approximate))(
            grid, block, (x, bias, y, np.int64(n), np.int32(cols))
        )
    return y


def bias_gelu_backward(x: Any, bias: Any, dy: Any, approximate: bool) -> tuple[Any, Any]:
    """Gradients of :func:`bias_gelu`.

    ``dx = dy * gelu'(x + bias)`` and ``dbias = sum(dx)`` over all leading dimensions.

    Args:
        x: the forward input ``[..., D]``.
        bias: the forward bias ``[D]``.
        dy: gradient of the output (same shape and dtype as x).
        approximate: the form used in the forward pass.

    Returns:
        ``(dx, dbias)``.
    """
    op = "bias_gelu_backward"
    cp = cupy_or_error()
    x, bias, rows, cols = _bias_args(cp, op, x, bias)
    dy = validate.float_array(cp, op, "dy", dy, dtype=x.dtype)
    validate.check_same_shape(op, "x", x, "dy", dy)
    dx = cp.empty(x.shape, dtype=x.dtype)
    if cols == 0:
        return dx, cp.empty((0,), dtype=x.dtype)
    if rows == 0:
        return dx, cp.zeros((cols,), dtype=x.dtype)
    ct = modules.ctype_of(x.dtype)
    acc = modules.acc_dtype(x.dtype)
    grid, block, chunks, per_chunk = launch.column_launch(rows, cols)
    part = cp.empty((chunks, cols), dtype=acc)
    modules.kernel(_SRC, ct, "bias_gelu_bwd", ct, _flag(approximate))(
        grid, block, (x, bias, dy, dx, part, np.int64(rows), np.int32(cols), np.int64(per_chunk))
    )
    dbias = cp.empty((cols,), dtype=x.dtype)
    egrid, eblock = launch.elementwise_launch(cols)
    modules.kernel(_SRC, ct, "sum_partials", ct)(
        egrid, eblock, (part, np.int32(chunks), np.int64(cols), dbias)
    )
    return dx, dbias
