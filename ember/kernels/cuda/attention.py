"""Fused scaled-dot-product attention (Burn's MultiHeadAttention core) on CuPy arrays.

Tiled online-softmax kernels (``kernels/attention.cu``): the ``[B, H, Sq, Sk]`` scores are
never stored; the backward pass recomputes them from q, k and the saved log-sum-exp::

    s = (q @ k^T) * scale
    if dropout_p > 0: s = dropout(s, dropout_p, seed)   # pre-softmax, flat index over [B,H,Sq,Sk]
    s[mask_pad[b, j]] = -1e4
    lse = log(sum_j exp(s) [+ 1 when quiet]);  w = exp(s - lse);  out = w @ v

Head dimensions up to 128 and at least one key are supported (:func:`fits` says exactly
what); the cuda backend runs the composed attention for anything else. float16 inputs
accumulate in float32.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.kernels.backend import DECLINED, fused
from ember.kernels.cuda import launch, modules, validate
from ember.kernels.cuda.runtime import cupy_or_error

__all__ = ["MAX_HEAD_DIM", "attention", "attention_backward", "fits", "supports"]

_SRC = "attention.cu"
MAX_HEAD_DIM = launch.ATTENTION_MAX_DH


def supports(head_dim: int) -> bool:
    """Whether the fused kernels handle this head dimension (1..128).

    Args:
        head_dim: Dh.
    """
    return 1 <= int(head_dim) <= MAX_HEAD_DIM


def fits(q_shape: tuple, k_shape: tuple, scale: float) -> bool:
    """Whether :func:`attention` and :func:`attention_backward` take these inputs (else they
    raise): 1 <= Dh <= 128, at least one key, a finite scale, and every query and key row
    within the launch grid.

    Args:
        q_shape: ``[B, H, Sq, Dh]``.
        k_shape: ``[B, H, Sk, Dh]``.
        scale: the multiplier of ``q @ k^T``.
    """
    b, h, sq, dh = (int(s) for s in q_shape)
    return math.isfinite(float(scale)) and launch.attention_fits(b * h, sq, int(k_shape[2]), dh)


def _check_qkv(cp: Any, op: str, q: Any, k: Any, v: Any) -> tuple[Any, Any, Any]:
    q = validate.float_array(cp, op, "q", q, min_ndim=4)
    k = validate.float_array(cp, op, "k", k, dtype=q.dtype, min_ndim=4)
    v = validate.float_array(cp, op, "v", v, dtype=q.dtype, min_ndim=4)
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(
            f"{op}: q, k, v must be 4-D [B, H, S, Dh], got shapes "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    b, h, _, dh = (int(s) for s in q.shape)
    if tuple(k.shape[:2]) != (b, h) or int(k.shape[3]) != dh or tuple(v.shape) != tuple(k.shape):
        raise ValueError(
            f"{op}: expected k and v of shape [B={b}, H={h}, Sk, Dh={dh}] (equal), "
            f"got k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    if not supports(dh):
        raise ValueError(
            f"{op}: head dimension Dh={dh} is not supported by the fused CUDA "
            f"kernel (1 <= Dh <= {MAX_HEAD_DIM})"
        )
    if int(k.shape[2]) == 0:
        raise ValueError(f"{op}: attention over 0 keys (k shape {tuple(k.shape)})")
    return q, k, v


def _check_mask(cp: Any, op: str, mask_pad: Any, b: int, sk: int) -> Any:
    if mask_pad is None:
        return None
    if not isinstance(mask_pad, cp.ndarray):
        raise TypeError(
            f"{op}: mask_pad must be a {cp.__name__}.ndarray or None, got {type(mask_pad).__name__}"
        )
    if mask_pad.dtype != np.bool_:
        raise TypeError(f"{op}: mask_pad must be bool (True = padded key), got dtype {mask_pad.dtype}")
    if tuple(mask_pad.shape) != (b, sk):
        raise ValueError(f"{op}: mask_pad must have shape (B={b}, Sk={sk}), got {tuple(mask_pad.shape)}")
    return validate.contiguous(cp, mask_pad)


def _mask_arg(cp: Any, mask: Any) -> Any:
    # The kernels never read the mask pointer when has_mask = 0; pass a 1-byte stand-in.
    return cp.zeros((1,), dtype=np.bool_) if mask is None else mask


def _scalars(op: str, dtype: Any, scale: float, dropout_p: float, seed: int) -> tuple:
    scale = float(scale)
    if not np.isfinite(scale):
        raise ValueError(f"{op}: scale must be finite, got {scale!r}")
    p = validate.probability(op, "dropout_p", dropout_p)
    seed64 = validate.seed_u64(op, seed)
    threshold = validate.dropout_threshold(p) if p > 0.0 else np.uint32(0)
    inv_keep = 1.0 / (1.0 - p) if p < 1.0 else 0.0  # unused when every score is dropped
    return (modules.acc_scalar(dtype, scale), seed64, threshold, modules.acc_scalar(dtype, inv_keep))


def attention(
    q: Any, k: Any, v: Any, mask_pad: Any, scale: float, quiet: bool, dropout_p: float, seed: int
) -> tuple[Any, Any]:
    """Attention forward without materialising the score matrix.

    Args:
        q: ``[B, H, Sq, Dh]`` float16/32/64 CuPy array.
        k: ``[B, H, Sk, Dh]``, same dtype.
        v: ``[B, H, Sk, Dh]``, same dtype.
        mask_pad: bool ``[B, Sk]`` (True = padded key, score set to -1e4) or None.
        scale: multiplier of ``q @ k^T``.
        quiet: quiet softmax (an extra 1 in the denominator).
        dropout_p: dropout probability applied to the pre-softmax scores.
        seed: dropout seed (modulo 2**64).

    Returns:
        ``(out [B, H, Sq, Dh], lse [B, H, Sq])``; lse is float64 whatever the inputs' dtype
        (the backward needs more than a float32 holds of a fully masked row's lse).
    """
    op = "attention"
    cp = cupy_or_error()
    q, k, v = _check_qkv(cp, op, q, k, v)
    b, h, sq, dh = (int(s) for s in q.shape)
    sk = int(k.shape[2])
    mask = _check_mask(cp, op, mask_pad, b, sk)
    scale_a, seed64, threshold, inv_keep = _scalars(op, q.dtype, scale, dropout_p, seed)
    out = cp.empty((b, h, sq, dh), dtype=q.dtype)
    lse = cp.empty((b, h, sq), dtype=np.float64)
    if b * h * sq == 0:
        return out, lse
    ct = modules.ctype_of(q.dtype)
    dpad = launch.attention_dpad(dh)
    grid, block = launch.attention_launch(b * h, sq, dpad)
    fn = modules.kernel(_SRC, modules.attention_variant(ct, dpad), "attention_fwd", ct, dpad)
    fn(
        grid,
        block,
        (
            q,
            k,
            v,
            _mask_arg(cp, mask),
            out,
            lse,
            np.int32(h),
            np.int32(sq),
            np.int32(sk),
            np.int32(dh),
            scale_a,
            np.int32(bool(quiet)),
            np.int32(mask is not None),
            seed64,
            threshold,
            inv_keep,
        ),
    )
    return out, lse


def attention_backward(
    dout: Any,
    q: Any,
    k: Any,
    v: Any,
    out: Any,
    lse: Any,
    mask_pad: Any,
    scale: float,
    quiet: bool,
    dropout_p: float,
    seed: int,
) -> tuple[Any, Any, Any]:
    """Gradients of :func:`attention` with respect to q, k and v (scores recomputed).

    ``dw = dout @ v^T``; ``ds = w * (dw - rowsum(dout * out))``, 0 at padded keys, times
    ``keep / (1 - p)`` under dropout; ``dq = ds @ k * scale``, ``dk = ds^T @ q * scale``,
    ``dv = w^T @ dout``.

    Args:
        dout: gradient of ``out``, ``[B, H, Sq, Dh]``.
        q: forward query.
        k: forward key.
        v: forward value.
        out: forward output.
        lse: forward log-sum-exp ``[B, H, Sq]`` (any float dtype).
        mask_pad: the forward padding mask or None.
        scale: the forward scale.
        quiet: the forward quiet flag (already folded into lse).
        dropout_p: the forward dropout probability.
        seed: the forward seed.

    Returns:
        ``(dq, dk, dv)`` with the inputs' dtype.
    """
    op = "attention_backward"
    cp = cupy_or_error()
    q, k, v = _check_qkv(cp, op, q, k, v)
    b, h, sq, dh = (int(s) for s in q.shape)
    sk = int(k.shape[2])
    dout = validate.float_array(cp, op, "dout", dout, dtype=q.dtype)
    out = validate.float_array(cp, op, "out", out, dtype=q.dtype)
    validate.check_same_shape(op, "dout", dout, "q", q)
    validate.check_same_shape(op, "out", out, "q", q)
    acc = modules.acc_dtype(q.dtype)
    lse = validate.float_array(cp, op, "lse", lse)
    if tuple(lse.shape) != (b, h, sq):
        raise ValueError(f"{op}: lse must have shape {(b, h, sq)}, got {tuple(lse.shape)}")
    if lse.dtype != np.float64:
        lse = validate.contiguous(cp, lse.astype(np.float64))
    mask = _check_mask(cp, op, mask_pad, b, sk)
    scale_a, seed64, threshold, inv_keep = _scalars(op, q.dtype, scale, dropout_p, seed)
    del quiet  # folded into lse by the forward pass; the gradient formula is the same
    dq = cp.empty(q.shape, dtype=q.dtype)
    dk = cp.empty(k.shape, dtype=q.dtype)
    dv = cp.empty(v.shape, dtype=q.dtype)
    if b * h == 0:
        return dq, dk, dv
    if sq == 0:
        return dq, cp.zeros(k.shape, dtype=q.dtype), cp.zeros(v.shape, dtype=q.dtype)
    ct = modules.ctype_of(q.dtype)
    dpad = launch.attention_dpad(dh)
    variant = modules.attention_variant(ct, dpad)
    rows = b * h * sq
    delta = cp.empty((b, h, sq), dtype=acc)
    modules.kernel(_SRC, variant, "attention_bwd_delta", ct)(
        ((rows + 3) // 4,), (128,), (dout, out, delta, np.int64(rows), np.int32(dh))
    )
    mask_arg = _mask_arg(cp, mask)
    common = (
        np.int32(h),
        np.int32(sq),
        np.int32(sk),
        np.int32(dh),
        scale_a,
        np.int32(mask is not None),
        seed64,
        threshold,
        inv_keep,
    )
    grid, block = launch.attention_launch(b * h, sq, dpad)
    modules.kernel(_SRC, variant, "attention_bwd_dq", ct, dpad)(
        grid, block, (q, k, v, mask_arg, dout, lse, delta, dq) + common
    )
    grid, block = launch.attention_launch(b * h, sk, dpad)
    modules.kernel(_SRC, variant, "attention_bwd_dkv", ct, dpad)(
        grid, block, (q, k, v, mask_arg, dout, lse, delta, dk, dv) + common
    )
    return dq, dk, dv


class CudaAttentionOps:
    """Flash attention on ``cuda``; head dimensions over 128, no keys, a non-finite scale or
    sequences past the launch grid decline."""

    @fused
    def attention(self, q, k, v, mask_pad, scale, quiet, dropout_p, seed):
        if not fits(q.shape, k.shape, scale):
            return DECLINED
        return attention(q, k, v, mask_pad, scale, quiet, dropout_p, seed)

    @fused
    def attention_backward(self, dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed):
        if not fits(q.shape, k.shape, scale):
            return DECLINED
        return attention_backward(dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed)
