"""Fused layer-norm and RMS-norm over the last axis, forward and backward.

Forward: one thread per row computes the statistics (float64 accumulators) and writes
the normalised, scaled and shifted row in the same sweep. Backward: rows are split into
one contiguous chunk per thread; each chunk produces its rows of ``dx`` and its own
partial sums of ``dgamma``/``dbeta`` (blocks of rows summed in the input dtype, then
added into float64), which are added up afterwards, so there are no races and the
result does not depend on scheduling.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ember.kernels import native_ops
from ember.kernels.backend import DECLINED, fused

from . import vecmath as vm
from .checks import FLOAT_DTYPES, as_rows, check_same_shape, float_array, optional_param
from .jit import kernel, num_threads, serial

__all__ = ["layer_norm", "layer_norm_backward", "rms_norm", "rms_norm_backward"]


@kernel
def _layer_norm_rows(x, gamma, beta, eps, y, mean, rstd):
    n, d = x.shape
    for i in prange(n):
        xi = x[i]
        total = 0.0
        for j in range(d):
            total += xi[j]
        mu = vm.typed(total / d, x)
        sq = 0.0
        for j in range(d):
            c = xi[j] - mu
            sq += c * c
        r = vm.typed(1.0 / math.sqrt(sq / d + eps), x)
        if math.isinf(vm.typed(sq, x)):
            # squares past x's range (a row with 1e20 in float32): NaN, as the reference,
            # not the row of zeros that rstd = 0 would give
            r = vm.typed(np.nan, x)
        yi = y[i]
        for j in range(d):
            yi[j] = (xi[j] - mu) * r * gamma[j] + beta[j]
        mean[i] = mu
        rstd[i] = r


@serial
def _chunk_bounds(n, chunks, c):
    """Rows ``[start, stop)`` of chunk ``c`` when ``n`` rows are split ``chunks`` ways."""
    per = (n + chunks - 1) // chunks
    return c * per, min(n, (c + 1) * per)


#: Rows whose parameter-gradient terms are summed in the input dtype before being
#: added to the float64 per-thread partials (fast float32 adds, bounded error growth).
_FLUSH_ROWS = 32


@kernel
def _layer_norm_backward_chunks(dy, x, mean, rstd, gamma, dx, dgamma_part, dbeta_part):
    n, d = x.shape
    chunks = dgamma_part.shape[0]
    zero = vm.typed(0.0, x)
    inv_d = vm.typed(1.0 / d, x)
    for c in prange(chunks):
        start, stop = _chunk_bounds(n, chunks, c)
        pg = dgamma_part[c]
        pb = dbeta_part[c]
        bg = np.zeros(d, dtype=x.dtype)
        bb = np.zeros(d, dtype=x.dtype)
        for i in range(start, stop):
            xi = x[i]
            dyi = dy[i]
            mu = mean[i]
            r = rstd[i]
            sum_g = zero
            sum_gx = zero
            dxi = dx[i]
            for j in range(d):
                xhat = (xi[j] - mu) * r
                g = dyi[j] * gamma[j]
                # g goes through memory so that the second sweep subtracts the mean from the
                # same rounded g the mean was taken of: with `contract`, recomputing
                # dy * gamma there fuses into an FMA of the unrounded product, whose
                # rounding error (times rstd) replaced the exact 0 of a 1-wide row
                dxi[j] = g
                sum_g += g
                sum_gx += g * xhat
                bg[j] += dyi[j] * xhat
                bb[j] += dyi[j]
            a = sum_g * inv_d
            b = sum_gx * inv_d
            for j in range(d):
                xhat = (xi[j] - mu) * r
                dxi[j] = r * (dxi[j] - a - xhat * b)
            if (i - start) % _FLUSH_ROWS == _FLUSH_ROWS - 1 or i == stop - 1:
                for j in range(d):
                    pg[j] += bg[j]
                    pb[j] += bb[j]
                    bg[j] = zero
                    bb[j] = zero


@kernel
def _rms_norm_rows(x, gamma, eps, y, rstd):
    n, d = x.shape
    for i in prange(n):
        xi = x[i]
        sq = 0.0
        for j in range(d):
            sq += xi[j] * xi[j]
        r = vm.typed(1.0 / math.sqrt(sq / d + eps), x)
        yi = y[i]
        for j in range(d):
            yi[j] = xi[j] * r * gamma[j]
        rstd[i] = r


@kernel
def _rms_norm_backward_chunks(dy, x, rstd, gamma, dx, dgamma_part):
    n, d = x.shape
    chunks = dgamma_part.shape[0]
    zero = vm.typed(0.0, x)
    inv_d = vm.typed(1.0 / d, x)
    for c in prange(chunks):
        start, stop = _chunk_bounds(n, chunks, c)
        pg = dgamma_part[c]
        bg = np.zeros(d, dtype=x.dtype)
        for i in range(start, stop):
            xi = x[i]
            dyi = dy[i]
            r = rstd[i]
            sum_gx = zero
            dxi = dx[i]
            for j in range(d):
                g = dyi[j] * gamma[j]
                xhat = xi[j] * r
                dxi[j] = g  # through memory, as in the layer-norm backward (no FMA of it)
                sum_gx += g * xhat
                bg[j] += dyi[j] * xhat
            # d/dx_j of x_j r gamma_j with r = (mean(x^2) + eps)^-1/2, written with xhat = x r
            # rather than x r^3, which overflowed (to an infinite dx) for tiny x and eps = 0
            b = sum_gx * inv_d
            for j in range(d):
                dxi[j] = r * (dxi[j] - xi[j] * r * b)
            if r == zero:
                # the mean square overflowed: the forward's x * 0 is PyTorch's, the gradient
                # is NaN (as PyTorch's at 3e38), not a 0 that hides the overflow
                for j in range(d):
                    dxi[j] = vm.typed(np.nan, x)
            if (i - start) % _FLUSH_ROWS == _FLUSH_ROWS - 1 or i == stop - 1:
                for j in range(d):
                    pg[j] += bg[j]
                    bg[j] = zero


def _row_stats_shape(op: str, name: str, stat: object, x: np.ndarray) -> np.ndarray:
    stat = float_array(op, name, stat, dtype=x.dtype, min_ndim=0)
    if stat.shape != x.shape[:-1]:
        raise ValueError(f"{op}: {name} must have shape {x.shape[:-1]} (x.shape[:-1]), got {stat.shape}")
    return stat.reshape(-1)


def _eps(op: str, eps: object) -> float:
    value = float(eps)
    if not value >= 0.0:
        raise ValueError(f"{op}: eps must be a non-negative number, got {eps!r}")
    return value


def _nonempty_features(op: str, x: np.ndarray) -> None:
    if x.shape[-1] == 0:
        raise ValueError(f"{op}: the normalised (last) axis of x is empty, shape {x.shape}")


def _partials(rows: int, d: int) -> np.ndarray:
    chunks = max(1, min(num_threads(), rows))
    return np.zeros((chunks, d), dtype=np.float64)


def _backward_inputs(op: str, x: object, dy: object) -> tuple[np.ndarray, np.ndarray]:
    """The checked ``x`` and ``dy`` of a norm's backward (float, same shape, features > 0)."""
    x = float_array(op, "x", x)
    _nonempty_features(op, x)
    dy = float_array(op, "dy", dy, dtype=x.dtype)
    check_same_shape(op, "dy", dy, "x", x)
    return x, dy


def _backward_buffers(op: str, x: np.ndarray, gamma: object) -> tuple:
    """``(gamma, has_gamma, dx, x_rows, dgamma_part)`` for a norm's backward kernel."""
    d = x.shape[-1]
    gamma_arr, has_gamma = optional_param(op, "gamma", gamma, d, x.dtype, 1.0)
    x_rows = as_rows(x)
    return gamma_arr, has_gamma, np.empty_like(x), x_rows, _partials(x_rows.shape[0], d)


def layer_norm(
    x: np.ndarray, gamma: np.ndarray | None, beta: np.ndarray | None, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layer normalisation over the last axis (biased variance).

    ``y = (x - mean) * rstd * gamma + beta`` with ``rstd = 1 / sqrt(var + eps)``.

    Args:
        x: float32/float64 input ``[..., D]``.
        gamma: scale ``[D]`` or None (no scaling).
        beta: shift ``[D]`` or None (no shift).
        eps: added to the variance.

    Returns:
        ``(y, mean, rstd)``: ``y`` of ``x``'s shape; ``mean`` and ``rstd`` of shape
        ``x.shape[:-1]``, all in ``x``'s dtype.
    """
    op = "layer_norm"
    x = float_array(op, "x", x)
    _nonempty_features(op, x)
    d = x.shape[-1]
    gamma_arr, _ = optional_param(op, "gamma", gamma, d, x.dtype, 1.0)
    beta_arr, _ = optional_param(op, "beta", beta, d, x.dtype, 0.0)
    y = np.empty_like(x)
    mean = np.empty(x.shape[:-1], dtype=x.dtype)
    rstd = np.empty(x.shape[:-1], dtype=x.dtype)
    if x.size:
        _layer_norm_rows(
            as_rows(x),
            gamma_arr,
            beta_arr,
            _eps(op, eps),
            as_rows(y),
            mean.reshape(-1),
            rstd.reshape(-1),
        )
    return y, mean, rstd


def layer_norm_backward(
    dy: np.ndarray,
    x: np.ndarray,
    mean: np.ndarray,
    rstd: np.ndarray,
    gamma: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Gradients of :func:`layer_norm`.

    With ``xhat = (x - mean) * rstd`` and ``g = dy * gamma``:
    ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))``,
    ``dgamma = sum_rows(dy * xhat)``, ``dbeta = sum_rows(dy)``.

    Args:
        dy: gradient of the output, shape of ``x``.
        x: the forward input.
        mean: the forward ``mean`` (shape ``x.shape[:-1]``).
        rstd: the forward ``rstd`` (shape ``x.shape[:-1]``).
        gamma: the forward scale ``[D]`` or None.

    Returns:
        ``(dx, dgamma, dbeta)``; ``dgamma`` and ``dbeta`` are None when ``gamma`` is None.
    """
    op = "layer_norm_backward"
    x, dy = _backward_inputs(op, x, dy)
    mean_rows = _row_stats_shape(op, "mean", mean, x)
    rstd_rows = _row_stats_shape(op, "rstd", rstd, x)
    gamma_arr, has_gamma, dx, x_rows, dgamma_part = _backward_buffers(op, x, gamma)
    dbeta_part = np.zeros_like(dgamma_part)
    if x.size:
        _layer_norm_backward_chunks(
            as_rows(dy),
            x_rows,
            mean_rows,
            rstd_rows,
            gamma_arr,
            as_rows(dx),
            dgamma_part,
            dbeta_part,
        )
    if not has_gamma:
        return dx, None, None
    dgamma = dgamma_part.sum(axis=0).astype(x.dtype)
    dbeta = dbeta_part.sum(axis=0).astype(x.dtype)
    return dx, dgamma, dbeta


def rms_norm(x: np.ndarray, gamma: np.ndarray | None, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """RMS normalisation over the last axis.

    ``y = x * rstd * gamma`` with ``rstd = 1 / sqrt(mean(x^2) + eps)``.

    Args:
        x: float32/float64 input ``[..., D]``.
        gamma: scale ``[D]`` or None (no scaling).
        eps: added to the mean square.

    Returns:
        ``(y, rstd)``: ``y`` of ``x``'s shape, ``rstd`` of shape ``x.shape[:-1]``.
    """
    op = "rms_norm"
    x = float_array(op, "x", x)
    _nonempty_features(op, x)
    d = x.shape[-1]
    gamma_arr, _ = optional_param(op, "gamma", gamma, d, x.dtype, 1.0)
    y = np.empty_like(x)
    rstd = np.empty(x.shape[:-1], dtype=x.dtype)
    if x.size:
        _rms_norm_rows(as_rows(x), gamma_arr, _eps(op, eps), as_rows(y), rstd.reshape(-1))
    return y, rstd


def rms_norm_backward(
    dy: np.ndarray, x: np.ndarray, rstd: np.ndarray, gamma: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Gradients of :func:`rms_norm`.

    With ``g = dy * gamma`` and ``xhat = x * rstd``: ``dx = rstd * (g - xhat * mean(g * xhat))``,
    ``dgamma = sum_rows(dy * xhat)``.

    Args:
        dy: gradient of the output, shape of ``x``.
        x: the forward input.
        rstd: the forward ``rstd`` (shape ``x.shape[:-1]``).
        gamma: the forward scale ``[D]`` or None.

    Returns:
        ``(dx, dgamma)``; ``dgamma`` is None when ``gamma`` is None.
    """
    op = "rms_norm_backward"
    x, dy = _backward_inputs(op, x, dy)
    rstd_rows = _row_stats_shape(op, "rstd", rstd, x)
    gamma_arr, has_gamma, dx, x_rows, dgamma_part = _backward_buffers(op, x, gamma)
    if x.size:
        _rms_norm_backward_chunks(as_rows(dy), x_rows, rstd_rows, gamma_arr, as_rows(dx), dgamma_part)
    if not has_gamma:
        return dx, None
    return dx, dgamma_part.sum(axis=0).astype(x.dtype)


class CpuNormOps:
    """Layer norm and RMS norm on ``cpu``: Numba kernels (the C++ layer norm where it measures
    faster: float32 forward, and while the Numba kernels compile); an empty axis declines."""

    @fused(half=True, ready_arg=None)
    def layer_norm(self, x, gamma, beta, eps):
        if x.shape[-1] == 0:
            return DECLINED
        native = self._native and x.dtype in FLOAT_DTYPES
        ready = self.kernels_ready(x, "layer_norm")
        if native and (x.dtype == np.float32 or not ready):
            return native_ops.layer_norm(x, gamma, beta, eps)
        if not ready:
            return DECLINED
        return layer_norm(x, gamma, beta, eps)

    @fused(half=True, ready_arg=None)
    def layer_norm_backward(self, dy, x, mean, rstd, gamma):
        if x.shape[-1] == 0:
            return DECLINED
        if not self.kernels_ready(x, "layer_norm_backward"):
            if self._native and x.dtype in FLOAT_DTYPES:
                return native_ops.layer_norm_backward(dy, x, mean, rstd, gamma)
            return DECLINED
        return layer_norm_backward(dy, x, mean, rstd, gamma)

    @fused(half=True)
    def rms_norm(self, x, gamma, eps):
        return DECLINED if x.shape[-1] == 0 else rms_norm(x, gamma, eps)

    @fused(half=True)
    def rms_norm_backward(self, dy, x, rstd, gamma):
        return DECLINED if x.shape[-1] == 0 else rms_norm_backward(dy, x, rstd, gamma)
