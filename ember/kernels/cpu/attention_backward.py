"""The backward pass of the cpu attention (:mod:`.attention` has the forward and the maths):
gradients of q, k and v from the saved float64 lse, the weights recomputed tile by tile."""

from __future__ import annotations

import math

import numpy as np

from . import threadpool, vector_rows
from . import vecmath as vm
from .attention_tiles import (
    _MASK_FILL,
    _TILE_BYTES,
    _all_finite,
    _any,
    _check_shape,
    _every_key,
    _gather,
    _gather_transposed,
    _heads_first,
    _heads_last,
    _key_columns,
    _load_rows,
    _masked_rows_finite,
    _Problem,
    _scatter,
    _silent_rows_last,
)
from .checks import contiguous, float_array
from .dropout import hash_bits
from .jit import serial, serial_ordered
from .tilegemm import accumulate_at_b, rows_by_matrix

__all__ = ["attention_backward"]


@serial_ordered
def _grad_row(
    row,
    grow,
    masked,
    any_masked,
    keep,
    base,
    scale,
    use_dropout,
    seed,
    threshold,
    drop_scale,
    row_lse,
    row_delta,
):
    """Raw scores -> weights ``w`` (in ``row``) and ``dout v^T`` -> ``d(q k^T)`` (in ``grow``).

    ``ds = w * (g - delta)``; zero where masked (``any_masked``: whether any is); times ``keep / (1 - p)`` under dropout;
    times ``scale`` (the factor of ``q k^T`` in the forward).

    ``w = exp((s - hi) - lo)`` with the float64 ``lse = hi + lo`` split into two floats of
    the row's dtype: a fully masked row has ``lse = -1e4 + log(Sk)``, which one float32
    holds only to ~5e-4, the relative error its weights then had (the forward is exact:
    it normalises by the sum). ``s - hi`` is exact there (Sterbenz), and compiled without
    reassociation the subtraction of ``lo`` is not folded back into ``hi``.
    """
    sk = row.shape[0]
    fill = vm.typed(_MASK_FILL, row)
    zero = vm.typed(0.0, row)
    lse = vm.typed(row_lse, row)
    lse_lo = vm.typed(row_lse - np.float64(lse), row) if math.isfinite(row_lse) else zero
    delta = vm.typed(row_delta, row)
    if use_dropout:
        back_scale = drop_scale * scale
        for j in range(sk):
            kept = hash_bits(seed, base + keep[j]) >= threshold
            v = row[j] * scale * drop_scale if kept else zero
            v = fill if masked[j] else v
            w = vm.exp((v - lse) - lse_lo)
            row[j] = w
            d = w * (grow[j] - delta) * back_scale
            grow[j] = zero if masked[j] or not kept else d
    elif any_masked:
        for j in range(sk):
            v = fill if masked[j] else row[j] * scale
            w = vm.exp((v - lse) - lse_lo)
            row[j] = w
            d = w * (grow[j] - delta) * scale
            grow[j] = zero if masked[j] else d
    else:
        # (the product is rounded before lse is subtracted: fused into one FMA, the
        # unrounded product would not cancel exactly against the lse of rounded scores,
        # exp(+1e43) = inf for a score of 1e60)
        vector_rows.exp_grad(row, grow, scale, lse, lse_lo, delta)


@serial
def _masked_weights_vanish(qh, douth, kh, lse_h, masked):
    """Whether leaving the masked keys out of this head's backward changes nothing: every
    masked weight recomputes to exactly 0 and no 0 * inf product would have made a NaN."""
    fill = vm.typed(_MASK_FILL, qh)
    zero = vm.typed(0.0, qh)
    for i in range(lse_h.shape[0]):
        row_lse = lse_h[i]
        if not math.isfinite(row_lse):
            return False
        hi = vm.typed(row_lse, qh)
        lo = vm.typed(row_lse - np.float64(hi), qh)
        if vm.exp((fill - hi) - lo) != zero:
            return False
    return _all_finite(qh) and _all_finite(douth) and _masked_rows_finite(kh, masked)


@serial
def _backward_pairs(
    dout,
    q,
    k,
    v,
    out,
    lse,
    mask,
    block,
    scale,
    use_dropout,
    seed,
    threshold,
    drop_scale,
    dq,
    dk,
    dv,
    first,
    step,
):
    """``dq``, ``dk``, ``dv`` (``[B, S, H, D]``, as the inputs), recomputing the weights
    from ``lse``, for the (batch, head) pairs ``first, first + step, ...``; the keys left
    out (as in the forward) get ``dk = dv = 0``."""
    n_b, sq, heads, dh = q.shape
    sk = k.shape[1]
    d_v = v.shape[3]
    keep = np.empty(sk, dtype=np.int64)
    kept_mask = np.empty(sk, dtype=np.bool_)
    q_rows = np.empty((block, dh), dtype=q.dtype)
    dout_rows = np.empty((block, d_v), dtype=q.dtype)
    dq_rows = np.empty((block, dh), dtype=q.dtype)
    rows_idx = np.empty(sq, dtype=np.int64)
    for bh in range(first, n_b * heads, step):
        b, h = bh // heads, bh % heads
        masked = mask[b]
        lse_h = lse[b, h]
        n = _key_columns(masked, keep, kept_mask)
        if n == 0 or not _masked_weights_vanish(
            q[b, :, h, :], dout[b, :, h, :], k[b, :, h, :], lse_h, masked
        ):
            n = _every_key(masked, keep, kept_mask)
        any_masked = _any(kept_mask, n)
        kt = np.empty((dh, n), dtype=q.dtype)
        kc = np.empty((n, dh), dtype=q.dtype)
        vt = np.empty((d_v, n), dtype=q.dtype)
        # dk and dv of the kept keys, one row per key: [n, D] products of two vectors of
        # columns exactly (no masked block), and a plain row copy into dk and dv
        dkc = np.zeros((n, dh), dtype=q.dtype)
        dvc = np.zeros((n, d_v), dtype=q.dtype)
        s_tile = np.empty((block, n), dtype=q.dtype)
        g_tile = np.empty((block, n), dtype=q.dtype)
        _gather_transposed(k[b, :, h, :], keep, n, kt)
        _gather(k[b, :, h, :], keep, n, kc)
        _gather_transposed(v[b, :, h, :], keep, n, vt)
        # A row whose output gradient is all zero (a padded position token packing discards)
        # adds exactly nothing to dk and dv, and its dq row is 0, when its weights are finite
        # and 0 * v is 0: it is left out of the products.
        n_rows = sq
        if _all_finite(kt) and _all_finite(vt):
            n_rows = _silent_rows_last(dout[b, :, h, :], q[b, :, h, :], lse_h, True, rows_idx)
            for t in range(n_rows, sq):
                dst = dq[b, rows_idx[t], h]
                for d in range(dh):
                    dst[d] = 0
        else:
            for t in range(sq):
                rows_idx[t] = t
        for c0 in range(0, n_rows, block):
            rows = min(n_rows, c0 + block) - c0
            at = rows_idx[c0 : c0 + rows]
            _load_rows(q, b, h, at, rows, q_rows)
            _load_rows(dout, b, h, at, rows, dout_rows)
            s = s_tile[:rows]
            g = g_tile[:rows]
            rows_by_matrix(q_rows[:rows], kt, s)
            rows_by_matrix(dout_rows[:rows], vt, g)
            for r in range(rows):
                i = at[r]
                out_r = out[b, i, h]
                dout_r = dout_rows[r]
                delta = 0.0
                for d in range(d_v):
                    delta += dout_r[d] * out_r[d]
                _grad_row(
                    s[r],
                    g[r],
                    kept_mask,
                    any_masked,
                    keep,
                    bh * sq * sk + i * sk,
                    scale,
                    use_dropout,
                    seed,
                    threshold,
                    drop_scale,
                    lse_h[i],
                    delta,
                )
            rows_by_matrix(g, kc, dq_rows[:rows])
            for r in range(rows):
                dst = dq[b, at[r], h]
                for d in range(dh):
                    dst[d] = dq_rows[r, d]
            accumulate_at_b(dkc, g, q_rows[:rows])
            accumulate_at_b(dvc, s, dout_rows[:rows])
        _scatter(dkc, keep, n, dk[b, :, h, :])
        _scatter(dvc, keep, n, dv[b, :, h, :])


def attention_backward(
    dout: np.ndarray,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    out: np.ndarray,
    lse: np.ndarray,
    mask_pad: np.ndarray | None,
    scale: float,
    quiet: bool,
    dropout_p: float,
    seed: int,
    tile_bytes: int = _TILE_BYTES,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of :func:`attention` with respect to ``q``, ``k`` and ``v``.

    With ``w = exp(s - lse)`` recomputed per tile: ``dw = dout @ v^T``,
    ``ds = w * (dw - rowsum(dout * out))`` (0 where masked, times ``keep / (1 - p)``
    under dropout), ``dq = ds @ k * scale``, ``dk = ds^T @ q * scale``,
    ``dv = w^T @ dout``. ``quiet`` needs no extra term: it is folded into ``lse``.

    Args:
        dout: gradient of ``out`` ``[B, H, Sq, Dv]``.
        q: the forward queries.
        k: the forward keys.
        v: the forward values.
        out: the forward output.
        lse: the forward ``lse`` ``[B, H, Sq]``.
        mask_pad: the forward padding mask or None.
        scale: the forward scale.
        quiet: the forward quiet flag (accepted for symmetry; ``lse`` already has it).
        dropout_p: the forward dropout probability.
        seed: the forward seed.

    Returns:
        ``(dq, dk, dv)`` shaped like ``q``, ``k`` and ``v``.
    """
    op = "attention_backward"
    pb = _Problem(op, q, k, v, mask_pad, scale, dropout_p, seed)
    out_shape = (pb.b, pb.h, pb.sq, pb.dv)
    _check_shape(op, "dout", dout, out_shape)
    _check_shape(op, "out", out, out_shape)
    dout4 = _heads_last(op, "dout", dout, pb.dtype)
    out4 = _heads_last(op, "out", out, pb.dtype)
    _check_shape(op, "lse", lse, (pb.b, pb.h, pb.sq))
    lse3 = contiguous(float_array(op, "lse", lse).astype(np.float64, copy=False))
    del quiet  # folded into lse by the forward
    # Every element is written by the kernel unless there is nothing to attend.
    alloc = np.zeros if pb.empty else np.empty
    dq = alloc((pb.b, pb.sq, pb.h, pb.dh), dtype=pb.dtype)
    dk = alloc((pb.b, pb.sk, pb.h, pb.dh), dtype=pb.dtype)
    dv = alloc((pb.b, pb.sk, pb.h, pb.dv), dtype=pb.dtype)
    if not pb.empty:
        threadpool.run(
            _backward_pairs,
            dout4,
            pb.q,
            pb.k,
            pb.v,
            out4,
            lse3,
            pb.mask,
            pb.block_rows(tile_bytes),
            pb.scale,
            pb.use_dropout,
            pb.seed,
            pb.threshold,
            pb.drop_scale,
            dq,
            dk,
            dv,
        )
    return _heads_first(dq), _heads_first(dk), _heads_first(dv)
