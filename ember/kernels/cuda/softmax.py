"""Fused softmax and log-softmax over the last axis (forward and backward) on CuPy arrays.

Every function takes a float16/32/64 CuPy array of at least one dimension (a backward: the
forward output ``y`` and the gradient of the loss ``dy`` with respect to it, of one shape and
dtype) and returns a new array of that shape and dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.kernels.backend import fused_call
from ember.kernels.cuda import launch, modules, validate
from ember.kernels.cuda.runtime import cupy_or_error

__all__ = ["log_softmax", "log_softmax_backward", "softmax", "softmax_backward"]

_SRC = "softmax.cu"


def _launch(name: str, log: bool, rows: int, cols: int, arrays: tuple) -> None:
    """The row kernel ``name`` (its log-softmax form when ``log``) on ``(*arrays, rows, cols)``,
    in the dtype of ``arrays[0]``."""
    ct = modules.ctype_of(arrays[0].dtype)
    cfg = launch.row_launch(rows, cols)
    fn = modules.kernel(_SRC, ct, name, ct, cfg.warp_arg, "true" if log else "false")
    fn(cfg.grid, cfg.block, (*arrays, np.int64(rows), np.int32(cols)))


def _forward(op: str, x: Any, log: bool) -> Any:
    cp = cupy_or_error()
    x = validate.float_array(cp, op, "x", x)
    y = cp.empty(x.shape, dtype=x.dtype)
    rows, cols = validate.rows_cols(x.shape)
    if rows == 0 or cols == 0:
        return y
    _launch("softmax_fwd", log, rows, cols, (x, y))
    return y


def _backward(op: str, y: Any, dy: Any, log: bool) -> Any:
    cp = cupy_or_error()
    y = validate.float_array(cp, op, "y", y)
    dy = validate.float_array(cp, op, "dy", dy, dtype=y.dtype)
    validate.check_same_shape(op, "y", y, "dy", dy)
    dx = cp.empty(y.shape, dtype=y.dtype)
    rows, cols = validate.rows_cols(y.shape)
    if rows == 0 or cols == 0:
        return dx
    _launch("softmax_bwd", log, rows, cols, (y, dy, dx))
    return dx


def softmax(x: Any) -> Any:
    """Softmax over the last axis: ``exp(x - max) / sum(exp(x - max))``."""
    return _forward("softmax", x, log=False)


def softmax_backward(y: Any, dy: Any) -> Any:
    """Gradient of :func:`softmax`: ``dx = y * (dy - sum(dy * y, -1))``."""
    return _backward("softmax_backward", y, dy, log=False)


def log_softmax(x: Any) -> Any:
    """Log-softmax over the last axis: ``x - logsumexp(x, -1)``."""
    return _forward("log_softmax", x, log=True)


def log_softmax_backward(y: Any, dy: Any) -> Any:
    """Gradient of :func:`log_softmax`: ``dx = dy - exp(y) * sum(dy, -1)``."""
    return _backward("log_softmax_backward", y, dy, log=True)


def _rows_fit(a: Any) -> bool:
    return launch.rows_fit(a, allow_empty=True)


class CudaSoftmaxOps:
    """The softmax family's fused kernels on ``cuda``; rows past the launch limits decline."""

    softmax = fused_call(softmax, accepts=_rows_fit)
    softmax_backward = fused_call(softmax_backward, accepts=_rows_fit)
    log_softmax = fused_call(log_softmax, accepts=_rows_fit)
    log_softmax_backward = fused_call(log_softmax_backward, accepts=_rows_fit)
