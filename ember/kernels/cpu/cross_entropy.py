"""Fused cross-entropy with label smoothing over logits ``[N, C]``, forward and backward.

Forward reads each row of logits once (max and plain sum in one sweep, then the
exponential sum) and keeps only ``lse`` for the backward; the backward rebuilds the
softmax from ``lse`` instead of storing ``[N, C]`` probabilities. Targets are checked
to lie in ``[0, C)`` before the kernels run, since they index without bounds checks.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from . import vecmath as vm
from .checks import float_array, index_array
from .jit import kernel

__all__ = ["cross_entropy", "cross_entropy_backward"]


@kernel
def _cross_entropy_rows(logits, targets, smoothing, loss, lse):
    n, c = logits.shape
    keep = 1.0 - smoothing
    spread = smoothing / c
    for i in prange(n):
        li = logits[i]
        m = li[0]
        plain = 0.0
        for j in range(c):
            m = vm.vmax(m, li[j])
            plain += li[j]
        if not math.isfinite(m):
            m = vm.typed(0.0, logits)  # as the reference: lse of a -inf row is -inf
        total = 0.0
        for j in range(c):
            total += vm.exp(li[j] - m)
        row_lse = m + math.log(total)
        lse[i] = row_lse
        # a term whose weight is 0 is left out, not multiplied: 0 * -inf (a masked logit in
        # the sum, or a masked target with s = 1) would make the loss NaN
        value = row_lse
        if keep != 0.0:
            value -= keep * li[targets[i]]
        if spread != 0.0:
            value -= spread * plain
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

    ``lse_i = logsumexp(logits_i)``,
    ``loss_i = lse_i - (1 - s) logits[i, t_i] - (s / C) sum_j logits[i, j]``.

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
    softmax rebuilt as ``exp(logits_ij - lse_i)``.

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
    return dlogits
