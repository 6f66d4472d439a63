"""Fused layer norm and RMS norm over the last axis (forward and backward) on CuPy arrays.

The per-row statistics (``mean``, ``rstd``) are returned in the accumulation dtype:
float32 for float16/float32 inputs, float64 for float64 inputs. The backward passes accept
them in any float dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.kernels.backend import DECLINED, fused
from ember.kernels.cuda import launch, modules, validate
from ember.kernels.cuda.runtime import cupy_or_error

__all__ = ["layer_norm", "layer_norm_backward", "rms_norm", "rms_norm_backward"]

_SRC = "norms.cu"


def _stats(cp: Any, op: str, name: str, a: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """Validate a per-row statistic and return it C-contiguous in the accumulation dtype."""
    a = validate.float_array(cp, op, name, a, min_ndim=0)
    if tuple(a.shape) != tuple(shape):
        raise ValueError(
            f"{op}: {name} must have shape {tuple(shape)} (the input's leading "
            f"dimensions), got {tuple(a.shape)}"
        )
    acc = modules.acc_dtype(dtype)
    return a if a.dtype == acc else validate.contiguous(cp, a.astype(acc))


def _param_grads(
    cp: Any, x: Any, dy: Any, mean: Any, rstd: Any, rms: bool, rows: int, cols: int
) -> tuple[Any, Any]:
    """Column sums of dy * xhat (dgamma) and of dy (dbeta; None when rms)."""
    ct = modules.ctype_of(x.dtype)
    acc = modules.acc_dtype(x.dtype)
    grid, block, chunks, per_chunk = launch.column_launch(rows, cols)
    part_g = cp.empty((chunks, cols), dtype=acc)
    part_b = part_g if rms else cp.empty((chunks, cols), dtype=acc)
    fn = modules.kernel(_SRC, ct, "norm_param_grad", ct, "true" if rms else "false")
    fn(
        grid,
        block,
        (
            dy,
            x,
            rstd if rms else mean,
            rstd,
            np.int64(rows),
            np.int32(cols),
            np.int64(per_chunk),
            part_g,
            part_b,
        ),
    )
    sum_fn = modules.kernel(_SRC, ct, "sum_partials", ct)
    egrid, eblock = launch.elementwise_launch(cols)
    dgamma = cp.empty((cols,), dtype=x.dtype)
    sum_fn(egrid, eblock, (part_g, np.int32(chunks), np.int64(cols), dgamma))
    if rms:
        return dgamma, None
    dbeta = cp.empty((cols,), dtype=x.dtype)
    sum_fn(egrid, eblock, (part_b, np.int32(chunks), np.int64(cols), dbeta))
    return dgamma, dbeta


def _rows(cp: Any, op: str, x: Any, dy: Any = None) -> tuple[Any, Any, int, int]:
    """``(x, dy, rows, cols)``: the checked input (and, for a backward, its gradient of the
    same shape), seen as rows of a non-empty normalised axis."""
    x = validate.float_array(cp, op, "x", x)
    if dy is not None:
        dy = validate.float_array(cp, op, "dy", dy, dtype=x.dtype)
        validate.check_same_shape(op, "dy", dy, "x", x)
    rows, cols = validate.rows_cols(x.shape)
    if cols == 0:
        raise ValueError(f"{op}: the normalised (last) axis of x has size 0, shape {tuple(x.shape)}")
    return x, dy, rows, cols


def _launch(name: str, dtype: Any, rows: int, cols: int, args: tuple) -> None:
    """One row-per-block launch of the norm kernel ``name`` for ``dtype``."""
    ct = modules.ctype_of(dtype)
    cfg = launch.row_launch(rows, cols)
    modules.kernel(_SRC, ct, name, ct, cfg.warp_arg)(cfg.grid, cfg.block, args)


def _launch_backward(
    name: str, dy: Any, x: Any, stats: tuple, gamma: Any, dx: Any, rows: int, cols: int
) -> None:
    """The backward kernel ``name`` on ``(dy, x, *stats, gamma, dx, rows, cols, has_gamma)``; an
    absent gamma is passed as ``x``, a pointer the kernel never reads."""
    gamma_arg = x if gamma is None else gamma
    args = (dy, x, *stats, gamma_arg, dx, np.int64(rows), np.int32(cols), np.int32(gamma is not None))
    _launch(name, x.dtype, rows, cols, args)


def layer_norm(x: Any, gamma: Any, beta: Any, eps: float) -> tuple[Any, Any, Any]:
    """Layer norm over the last axis with biased variance.

    ``y = (x - mean) * rstd * gamma + beta`` with ``rstd = 1 / sqrt(var + eps)``.

    Args:
        x: float16/32/64 CuPy array ``[..., D]``.
        gamma: scale ``[D]`` (same dtype as x) or None.
        beta: shift ``[D]`` (same dtype as x) or None.
        eps: added to the variance, >= 0.

    Returns:
        ``(y, mean, rstd)``; mean and rstd have shape ``x.shape[:-1]``.
    """
    op = "layer_norm"
    cp = cupy_or_error()
    x, _, rows, cols = _rows(cp, op, x)
    gamma = validate.optional_vector(cp, op, "gamma", gamma, cols, x.dtype)
    beta = validate.optional_vector(cp, op, "beta", beta, cols, x.dtype)
    eps = validate.finite_scalar(op, "eps", eps, minimum=0.0)
    acc = modules.acc_dtype(x.dtype)
    y = cp.empty(x.shape, dtype=x.dtype)
    mean = cp.empty(x.shape[:-1], dtype=acc)
    rstd = cp.empty(x.shape[:-1], dtype=acc)
    if rows == 0:
        return y, mean, rstd
    _launch(
        "layer_norm_fwd",
        x.dtype,
        rows,
        cols,
        (
            x,
            x if gamma is None else gamma,
            x if beta is None else beta,
            y,
            mean,
            rstd,
            np.int64(rows),
            np.int32(cols),
            modules.acc_scalar(x.dtype, eps),
            np.int32(gamma is not None),
            np.int32(beta is not None),
        ),
    )
    return y, mean, rstd


def layer_norm_backward(
    dy: Any, x: Any, mean: Any, rstd: Any, gamma: Any
) -> tuple[Any, Any | None, Any | None]:
    """Gradients of :func:`layer_norm`.

    ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))`` with ``g = dy * gamma`` and
    ``xhat = (x - mean) * rstd``; ``dgamma = sum(dy * xhat)``, ``dbeta = sum(dy)`` over all rows.

    Args:
        dy: gradient of the output, same shape and dtype as x.
        x: the forward input.
        mean: per-row mean from the forward pass.
        rstd: per-row 1/std from the forward pass.
        gamma: the forward scale or None.

    Returns:
        ``(dx, dgamma, dbeta)``; dgamma and dbeta are None when gamma is None.
    """
    op = "layer_norm_backward"
    cp = cupy_or_error()
    x, dy, rows, cols = _rows(cp, op, x, dy)
    mean = _stats(cp, op, "mean", mean, x.shape[:-1], x.dtype)
    rstd = _stats(cp, op, "rstd", rstd, x.shape[:-1], x.dtype)
    gamma = validate.optional_vector(cp, op, "gamma", gamma, cols, x.dtype)
    dx = cp.empty(x.shape, dtype=x.dtype)
    if rows == 0:
        if gamma is None:
            return dx, None, None
        return dx, cp.zeros((cols,), dtype=x.dtype), cp.zeros((cols,), dtype=x.dtype)
    _launch_backward("layer_norm_bwd", dy, x, (mean, rstd), gamma, dx, rows, cols)
    if gamma is None:
        return dx, None, None
    dgamma, dbeta = _param_grads(cp, x, dy, mean, rstd, False, rows, cols)
    return dx, dgamma, dbeta


def rms_norm(x: Any, gamma: Any, eps: float) -> tuple[Any, Any]:
    """RMS norm over the last axis: ``y = x * rstd * gamma``, ``rstd = 1/sqrt(mean(x^2) + eps)``.

    Args:
        x: float16/32/64 CuPy array ``[..., D]``.
        gamma: scale ``[D]`` (same dtype as x) or None.
        eps: added to the mean square, >= 0.

    Returns:
        ``(y, rstd)``; rstd has shape ``x.shape[:-1]``.
    """
    op = "rms_norm"
    cp = cupy_or_error()
    x, _, rows, cols = _rows(cp, op, x)
    gamma = validate.optional_vector(cp, op, "gamma", gamma, cols, x.dtype)
    eps = validate.finite_scalar(op, "eps", eps, minimum=0.0)
    y = cp.empty(x.shape, dtype=x.dtype)
    rstd = cp.empty(x.shape[:-1], dtype=modules.acc_dtype(x.dtype))
    if rows == 0:
        return y, rstd
    _launch(
        "rms_norm_fwd",
        x.dtype,
        rows,
        cols,
        (
            x,
            x if gamma is None else gamma,
            y,
            rstd,
            np.int64(rows),
            np.int32(cols),
            modules.acc_scalar(x.dtype, eps),
            np.int32(gamma is not None),
        ),
    )
    return y, rstd


def rms_norm_backward(dy: Any, x: Any, rstd: Any, gamma: Any) -> tuple[Any, Any | None]:
    """Gradients of :func:`rms_norm`.

    ``dx = rstd * (g - xhat * mean(g * xhat))`` with ``g = dy * gamma``, ``xhat = x * rstd``;
    ``dgamma = sum(dy * xhat)`` over all rows.

    Args:
        dy: gradient of the output, same shape and dtype as x.
        x: the forward input.
        rstd: per-row 1/rms from the forward pass.
        gamma: the forward scale or None.

    Returns:
        ``(dx, dgamma)``; dgamma is None when gamma is None.
    """
    op = "rms_norm_backward"
    cp = cupy_or_error()
    x, dy, rows, cols = _rows(cp, op, x, dy)
    rstd = _stats(cp, op, "rstd", rstd, x.shape[:-1], x.dtype)
    gamma = validate.optional_vector(cp, op, "gamma", gamma, cols, x.dtype)
    dx = cp.empty(x.shape, dtype=x.dtype)
    if rows == 0:
        return dx, (None if gamma is None else cp.zeros((cols,), dtype=x.dtype))
    _launch_backward("rms_norm_bwd", dy, x, (rstd,), gamma, dx, rows, cols)
    if gamma is None:
        return dx, None
    dgamma, _ = _param_grads(cp, x, dy, rstd, rstd, True, rows, cols)
    return dx, dgamma


class CudaNormOps:
    """Layer norm and RMS norm on ``cuda``; an empty axis or rows past the launch limits decline."""

    @fused
    def layer_norm(self, x, gamma, beta, eps):
        return layer_norm(x, gamma, beta, eps) if launch.rows_fit(x) else DECLINED

    @fused
    def layer_norm_backward(self, dy, x, mean, rstd, gamma):
        return layer_norm_backward(dy, x, mean, rstd, gamma) if launch.rows_fit(x) else DECLINED

    @fused
    def rms_norm(self, x, gamma, eps):
        return rms_norm(x, gamma, eps) if launch.rows_fit(x) else DECLINED

    @fused
    def rms_norm_backward(self, dy, x, rstd, gamma):
        return rms_norm_backward(dy, x, rstd, gamma) if launch.rows_fit(x) else DECLINED
