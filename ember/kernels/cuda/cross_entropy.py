"""Fused cross-entropy with label smoothing (forward and backward) on CuPy arrays.

``logp_i = log_softmax(logits_i)``, ``lse_i = logsumexp(logits_i)``,
``loss_i = -(1 - s) * logp[i, t_i] - (s / C) * sum_j logp[i, j]`` (NaN for a row with +inf or
of -inf only, as PyTorch),
``dlogits_ij = dloss_i * (softmax_ij - (1 - s) * [j == t_i] - s / C)``.
Targets are range-checked on the device before the unchecked kernels run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.kernels.backend import DECLINED, fused
from ember.kernels.cuda import indexing, launch, modules, validate
from ember.kernels.cuda.runtime import cupy_or_error

__all__ = ["cross_entropy", "cross_entropy_backward"]

_SRC = "cross_entropy.cu"


def _inputs(cp: Any, op: str, logits: Any, targets: Any, smoothing: float) -> tuple[Any, Any, float]:
    logits = validate.float_array(cp, op, "logits", logits, min_ndim=2)
    if logits.ndim != 2:
        raise ValueError(f"{op}: logits must be 2-D [N, C], got shape {tuple(logits.shape)}")
    targets = validate.index_array(cp, op, "targets", targets)
    n, c = (int(s) for s in logits.shape)
    if tuple(targets.shape) != (n,):
        raise ValueError(
            f"{op}: targets must have shape ({n},) to match logits "
            f"{tuple(logits.shape)}, got {tuple(targets.shape)}"
        )
    if c == 0 and n > 0:
        raise ValueError(f"{op}: logits have 0 classes, shape {tuple(logits.shape)}")
    smoothing = validate.probability(op, "smoothing", smoothing)
    return logits, targets, smoothing


def _launch(cp: Any, op: str, name: str, logits: Any, targets: Any, arrays: tuple, smoothing: float) -> None:
    """Range-check ``targets`` on the device, then run the row kernel ``name`` on
    ``(logits, targets, *arrays, rows, classes, smoothing)``."""
    n, c = (int(s) for s in logits.shape)
    ct = modules.ctype_of(logits.dtype)
    indexing.check_range(cp, op, "targets", targets, c, _SRC, ct)
    cfg = launch.row_launch(n, c)
    fn = modules.kernel(_SRC, ct, name, ct, modules.index_ctype_of(targets.dtype), cfg.warp_arg)
    smoothing = modules.acc_scalar(logits.dtype, smoothing)
    fn(cfg.grid, cfg.block, (logits, targets, *arrays, np.int64(n), np.int32(c), smoothing))


def cross_entropy(logits: Any, targets: Any, smoothing: float) -> tuple[Any, Any]:
    """Per-row cross-entropy loss and log-sum-exp.

    Args:
        logits: float16/32/64 CuPy array ``[N, C]``.
        targets: int64/int32 CuPy array ``[N]`` with values in ``[0, C)``.
        smoothing: label smoothing ``s`` in [0, 1].

    Returns:
        ``(loss [N], lse [N])``; loss has the logits' dtype, lse the accumulation dtype
        (float32, or float64 for float64 logits).

    Raises:
        IndexError: a target lies outside ``[0, C)``.
    """
    op = "cross_entropy"
    cp = cupy_or_error()
    logits, targets, smoothing = _inputs(cp, op, logits, targets, smoothing)
    n = int(logits.shape[0])
    loss = cp.empty((n,), dtype=logits.dtype)
    lse = cp.empty((n,), dtype=modules.acc_dtype(logits.dtype))
    if n == 0:
        return loss, lse
    _launch(cp, op, "cross_entropy_fwd", logits, targets, (loss, lse), smoothing)
    return loss, lse


def cross_entropy_backward(logits: Any, targets: Any, lse: Any, dloss: Any, smoothing: float) -> Any:
    """Gradient of :func:`cross_entropy` with respect to the logits.

    Args:
        logits: the forward logits ``[N, C]``.
        targets: the forward targets ``[N]``.
        lse: the forward log-sum-exp ``[N]`` (any float dtype).
        dloss: gradient of each row's loss ``[N]`` (any float dtype).
        smoothing: the forward label smoothing.

    Returns:
        ``dlogits [N, C]`` with the logits' dtype.

    Raises:
        IndexError: a target lies outside ``[0, C)``.
    """
    op = "cross_entropy_backward"
    cp = cupy_or_error()
    logits, targets, smoothing = _inputs(cp, op, logits, targets, smoothing)
    n, c = (int(s) for s in logits.shape)
    acc = modules.acc_dtype(logits.dtype)
    lse = validate.float_array(cp, op, "lse", lse)
    dloss = validate.float_array(cp, op, "dloss", dloss)
    for name, a in (("lse", lse), ("dloss", dloss)):
        if tuple(a.shape) != (n,):
            raise ValueError(f"{op}: {name} must have shape ({n},), got {tuple(a.shape)}")
    if lse.dtype != acc:
        lse = validate.contiguous(cp, lse.astype(acc))
    if dloss.dtype != logits.dtype:
        dloss = validate.contiguous(cp, dloss.astype(logits.dtype))
    dlogits = cp.empty((n, c), dtype=logits.dtype)
    if n == 0:
        return dlogits
    _launch(cp, op, "cross_entropy_bwd", logits, targets, (lse, dloss, dlogits), smoothing)
    return dlogits


class CudaLossOps:
    """Cross-entropy on ``cuda``; rows past the launch limits decline (no rows run the kernel)."""

    @fused
    def cross_entropy(self, logits, targets, smoothing):
        if not launch.rows_fit(logits, allow_empty=logits.shape[0] == 0):
            return DECLINED
        return cross_entropy(logits, targets, smoothing)

    @fused
    def cross_entropy_backward(self, logits, targets, lse, dloss, smoothing):
        if not launch.rows_fit(logits, allow_empty=logits.shape[0] == 0):
            return DECLINED
        return cross_entropy_backward(logits, targets, lse, dloss, smoothing)
