"""Fused cross-entropy with label smoothing over logits ``[N, C]``, forward and backward.

Forward reads each row of logits twice (its max, then the exponential sum and the sum of
the shifted logits in one sweep) and keeps only ``lse`` for the backward; the backward
rebuilds the softmax as ``exp(x - lse)`` instead of storing ``[N, C]`` probabilities, and
normalises it by its own sum in the rare rows where ``lse`` is too large for that to be
exact. Targets are checked to lie in ``[0, C)`` before the kernels run, since they index
without bounds checks.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ember.kernels.backend import DECLINED, fused

from . import vecmath as vm
from .checks import float_array, index_array
from .jit import kernel, serial_ordered

__all__ = ["cross_entropy", "cross_entropy_backward"]


@serial_ordered
def _log_prob(x, m, log_total):
    # in this order: reassociated to x - (m + log_total), the rounding of the sum at |m|'s
    # scale swamps a log-probability near 0 (the loss at logits ~3e38 came out ~1e31)
    return (x - m) - log_total


@kernel
def _cross_entropy_rows(logits, targets, smoothing, loss, lse):
    n, c = logits.shape
    keep = vm.typed(1.0 - smoothing, logits)
    spread = vm.typed(smoothing / c, logits)
    for i in prange(n):
        li = logits[i]
        m = li[0]
        for j in range(c):
            m = vm.vmax(m, li[j])
        # no stand-in for a maximum of +-inf: a row with +inf, or of -inf only, gives NaN
        # (inf - inf), as the reference and PyTorch do
        total = 0.0
        shifted_sum = vm.typed(0.0, logits)
        for j in range(c):
            shifted = li[j] - m
            total += vm.exp(shifted)
            shifted_sum += shifted
        log_total = vm.typed(math.log(total), logits)
        lse[i] = m + log_total
        # -(1 - s) logp[t] - (s / C) sum_j logp[j] with logp = (x - max) - log_total, each in
        # the logits' dtype, as the reference: no cancellation of lse against the logits
        value = vm.typed(0.0, logits)
        # a term whose weight is 0 is left out, not multiplied: 0 * -inf (a masked logit in
        # the sum, or a masked target with s = 1) would make the loss NaN
        if keep != 0.0:
            value -= keep * _log_prob(li[targets[i]], m, log_total)
        if spread != 0.0:
            # sum_j logp[j] = sum_j (x_j - max) - C log_total: two sums of terms of one sign
            # (no cancellation), in float64, then past the dtype's range (-inf once cast)
            # only where the reference's sum of logp is too
            value -= spread * vm.typed(shifted_sum - c * float(log_total), logits)
        loss[i] = value


@kernel
def _cross_entropy_backward_rows(logits, targets, lse, dloss, smoothing, dlogits):
    n, c = logits.shape
    keep = vm.typed(1.0 - smoothing, logits)
    spread = vm.typed(smoothing / c, logits)
    for i in prange(n):
        li = logits[i]
        di = dlogits[i]
        g = dloss[i]
        row_lse = lse[i]
        for j in range(c):
            di[j] = g * (vm.exp(li[j] - row_lse) - spread)
        di[targets[i]] -= g * keep


@kernel
def _cross_entropy_backward_normalised_rows(logits, targets, lse, dloss, smoothing, rows, dlogits):
    # exp(x - lse) normalised by its own row sum: lse = max + log(sum) rounds log(sum) away at
    # large |max| (the softmax of [1e20, 1e20] came out [1, 1]); the common error of the shift
    # cancels in the ratio
    c = logits.shape[1]
    keep = vm.typed(1.0 - smoothing, logits)
    spread = vm.typed(smoothing / c, logits)
    for k in prange(rows.shape[0]):
        i = rows[k]
        li = logits[i]
        di = dlogits[i]
        g = dloss[i]
        row_lse = lse[i]
        total = 0.0
        for j in range(c):
            e = vm.exp(li[j] - row_lse)
            di[j] = e
            total += e
        scale = vm.typed(1.0 / total, logits)
        for j in range(c):
            di[j] = g * (di[j] * scale - spread)
        di[targets[i]] -= g * keep


def _smoothing(op: str, smoothing: object) -> float:
    value = float(smoothing)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{op}: smoothing must lie in [0, 1], got {smoothing!r}")
    return value


def _logits(op: str, logits: object) -> np.ndarray:
    logits = float_array(op, "logits", logits, min_ndim=2)
    if logits.ndim != 2 or logits.shape[1] == 0:
        raise ValueError(f"{op}: logits must have shape [N, C] with C >= 1, got {logits.shape}")
    return logits


def _targets(op: str, targets: object, logits: np.ndarray) -> np.ndarray:
    n, c = logits.shape
    if isinstance(targets, np.ndarray) and targets.shape != (n,):
        raise ValueError(
            f"{op}: targets must have shape ({n},) to match logits {logits.shape}, got {targets.shape}"
        )
    return index_array(op, "targets", targets, c)


def _per_row(op: str, name: str, arr: object, logits: np.ndarray) -> np.ndarray:
    arr = float_array(op, name, arr, dtype=logits.dtype)
    if arr.shape != (logits.shape[0],):
        raise ValueError(
            f"{op}: {name} must have shape ({logits.shape[0]},) to match logits "
            f"{logits.shape}, got {arr.shape}"
        )
    return arr


def cross_entropy(logits: np.ndarray, targets: np.ndarray, smoothing: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-row cross-entropy with label smoothing ``s``.

    ``logp_i = log_softmax(logits_i)``, ``lse_i = logsumexp(logits_i)``,
    ``loss_i = -(1 - s) logp[i, t_i] - (s / C) sum_j logp[i, j]`` (NaN for a row with +inf
    or of -inf only).

    Args:
        logits: float32/float64 ``[N, C]``.
        targets: int64/int32 ``[N]`` class indices in ``[0, C)``.
        smoothing: label smoothing ``s`` in ``[0, 1]``.

    Returns:
        ``(loss [N], lse [N])`` in the dtype of ``logits``.

    Raises:
        IndexError: if a target lies outside ``[0, C)``.
    """
    op = "cross_entropy"
    logits = _logits(op, logits)
    targets = _targets(op, targets, logits)
    s = _smoothing(op, smoothing)
    n = logits.shape[0]
    loss = np.empty(n, dtype=logits.dtype)
    lse = np.empty(n, dtype=logits.dtype)
    if n:
        _cross_entropy_rows(logits, targets, s, loss, lse)
    return loss, lse


def cross_entropy_backward(
    logits: np.ndarray,
    targets: np.ndarray,
    lse: np.ndarray,
    dloss: np.ndarray,
    smoothing: float,
) -> np.ndarray:
    """Gradient of :func:`cross_entropy` with respect to the logits.

    ``dlogits_ij = dloss_i * (softmax_ij - (1 - s) onehot_ij - s / C)`` with the
    softmax rebuilt as ``exp(logits_ij - lse_i)`` divided by its row sum.

    Args:
        logits: the forward logits ``[N, C]``.
        targets: the forward targets ``[N]``.
        lse: the forward ``lse`` ``[N]``.
        dloss: gradient of the per-row loss ``[N]``.
        smoothing: the forward label smoothing.

    Returns:
        ``dlogits``, a new ``[N, C]`` array.

    Raises:
        IndexError: if a target lies outside ``[0, C)``.
    """
    op = "cross_entropy_backward"
    logits = _logits(op, logits)
    targets = _targets(op, targets, logits)
    lse = _per_row(op, "lse", lse, logits)
    dloss = _per_row(op, "dloss", dloss, logits)
    s = _smoothing(op, smoothing)
    dlogits = np.empty_like(logits)
    if logits.shape[0]:
        _cross_entropy_backward_rows(logits, targets, lse, dloss, s, dlogits)
        # past |lse| = 2^-18 / eps (32 in float32) the rounding of lse moves exp(x - lse) by
        # more than 2e-6 relative: those rows (a NaN lse too) are redone normalised
        with np.errstate(invalid="ignore"):
            redo = np.flatnonzero(~(np.abs(lse) < 2.0**-18 / float(np.finfo(logits.dtype).eps)))
        if redo.size:
            _cross_entropy_backward_normalised_rows(logits, targets, lse, dloss, s, redo, dlogits)
    return dlogits


class CpuLossOps:
    """Cross-entropy on ``cpu``; no classes (so no rows either) declines."""

    @fused(half=True)
    def cross_entropy(self, logits, targets, smoothing):
        return DECLINED if logits.shape[1] == 0 else cross_entropy(logits, targets, smoothing)

    @fused(half=True)
    def cross_entropy_backward(self, logits, targets, lse, dloss, smoothing):
        if logits.shape[1] == 0:
            return DECLINED
        return cross_entropy_backward(logits, targets, lse, dloss, smoothing)
