"""Fused scaled-dot-product attention core (Burn's ``MultiHeadAttention``), fwd and bwd.

Semantics (see the backend contract)::

    s = (q @ k^T) * scale                     # [B, H, Sq, Sk]
    s = dropout(s, p, seed)                   # pre-softmax; flat index over [B,H,Sq,Sk]
    s[mask_pad[b, j]] = -1e4                  # after dropout
    lse = log(sum_j exp(s))                   # (+ exp(0) inside the sum when quiet)
    out = exp(s - lse) @ v

Each of ember's threads (:mod:`.threadpool`) runs one serial kernel call over its share of
the (batch, head) pairs and walks their query rows in blocks sized to stay in cache
(``attention_tiles._TILE_BYTES``). Per block it forms the score tile with the register-blocked products of
:mod:`.tilegemm`, turns it into exponentials in place (scale, dropout hash, mask and max in
one sweep, then exponentials and their sum), multiplies by ``v`` and normalises the output
rows, so the ``[B, H, Sq, Sk]`` score array is never materialised. The backward recomputes
each tile from ``q``, ``k`` and ``lse``, and accumulates ``dk`` and ``dv`` for its head in
thread-private buffers (no races, no atomics). Keeping the GEMMs inside the kernel avoids
handing the cores back and forth between BLAS and the kernel threads, which on a 2-core
machine cost more than the products (a NumPy-matmul + Numba-softmax version of this kernel
was several times slower); serial calls on ember's threads instead of a Numba ``prange``
region compile in about half the time (a fresh install's first step waits for it).

Padded (masked) keys are left out of both passes whenever that changes nothing (see
``_forward_pairs``), so a batch padded to three times its text length costs about a third.
Padded *queries* cost next to nothing too, when they look like what token packing
(:mod:`ember.nn.token_packing`) scatters in and discards: all-zero query rows share one
output per head (they score 0 against every finite key), and rows of zero output gradient are
left out of the backward (they add exactly 0 to ``dk`` and ``dv``).
The kernels work on ``[B, S, H, D]`` arrays, the layout of heads split off a projection,
so neither the inputs nor the outputs (nor their gradients) are copied between the
projections and the kernel. Thread ``t`` of ``T`` takes pairs ``t, t + T, ...``: with the
heads of one batch row spread over the threads, a long row does not land on one thread.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ember.kernels import autotune
from ember.kernels.backend import DECLINED, fused

from . import threadpool, vector_rows
from . import vecmath as vm
from .attention_backward import attention_backward
from .attention_tiles import (
    _MASK_FILL,
    _TILE_BYTES,
    _all_finite,
    _any,
    _every_key,
    _gather,
    _gather_transposed,
    _heads_first,
    _key_columns,
    _load_rows,
    _masked_rows_finite,
    _Problem,
    _silent_rows_last,
)
from .dropout import hash_bits
from .jit import serial
from .tilegemm import rows_by_matrix

__all__ = ["attention", "attention_backward"]


@serial
def _exp_scores_row(
    row, masked, any_masked, keep, base, scale, quiet, use_dropout, seed, threshold, drop_scale
):
    """Raw scores of one query row (over the keys ``keep``; ``masked`` is per column) ->
    ``exp(s - max)`` in place.

    ``any_masked`` says whether ``masked`` has a True (the loop without the mask's selects
    is the faster one). Returns ``(lse, 1 / sum, max)``; the caller scales the row's
    output (``Dv`` values) by ``1 / sum`` instead of normalising the weights.
    """
    sk = row.shape[0]
    fill = vm.typed(_MASK_FILL, row)
    zero = vm.typed(0.0, row)
    m = vm.typed(-np.inf, row)
    if use_dropout:
        for j in range(sk):
            kept = hash_bits(seed, base + keep[j]) >= threshold
            v = row[j] * scale * drop_scale if kept else zero
            v = fill if masked[j] else v
            row[j] = v
            m = vm.vmax(m, v)
    elif any_masked:
        for j in range(sk):
            v = fill if masked[j] else row[j] * scale
            row[j] = v
            m = vm.vmax(m, v)
    else:
        m = vector_rows.scale_max(row, scale)
    if quiet:
        m = vm.vmax(m, zero)
    # Summed in the row's dtype: a float64 sum would halve the lanes of this loop, and float32
    # lanes summing terms in [0, 1] lose < 1e-6 relative for rows of thousands.
    total = vector_rows.exp_sum(row, m)
    if quiet:
        total += vm.exp(-m)
    # lse in float64 whatever the input dtype: see _grad_row
    return np.float64(m) + math.log(np.float64(total)), 1.0 / total, m


@serial
def _forward_pairs(
    q,
    k,
    v,
    mask,
    block,
    scale,
    quiet,
    use_dropout,
    seed,
    threshold,
    drop_scale,
    out,
    lse,
    first,
    step,
):
    """``out`` (``[B, Sq, H, Dv]``) and ``lse [B, H, Sq]`` from ``q``, ``k``, ``v``
    (``[B, S, H, D]``: the layout the heads' projections produce, read without copies), for
    the (batch, head) pairs ``first, first + step, ...`` (one call per thread)."""
    n_b, sq, heads, dh = q.shape
    sk = k.shape[1]
    dv = v.shape[3]
    keep = np.empty(sk, dtype=np.int64)
    kept_mask = np.empty(sk, dtype=np.bool_)
    q_rows = np.empty((block, dh), dtype=q.dtype)
    o_rows = np.empty((block, dv), dtype=q.dtype)
    inv = np.empty(block, dtype=q.dtype)
    rows_idx = np.empty(sq, dtype=np.int64)
    fill = vm.typed(_MASK_FILL, q)
    zero = vm.typed(0.0, q)
    for bh in range(first, n_b * heads, step):
        b, h = bh // heads, bh % heads
        masked = mask[b]
        base0 = bh * sq * sk
        # Padded keys get weight exp(-1e4 - max) = 0 exactly, so leaving them out changes
        # nothing (a padded batch does the work of its text only) - unless a padded value is
        # not finite (0 * inf is NaN in the full product) or a row's scores are near -1e4:
        # then (found while computing) the pair is redone over every key.
        n = _key_columns(masked, keep, kept_mask)
        compact = n > 0 and _masked_rows_finite(v[b, :, h, :], masked)
        if not compact:
            n = _every_key(masked, keep, kept_mask)
        # An all-zero query row (the padded positions token packing scatters in) scores 0
        # against every finite key, whatever the dropout, so all such rows of the pair share
        # one output and lse: it is computed for the first of them only.
        live = _silent_rows_last(q[b, :, h, :], q[b, :, h, :], lse[b, h], False, rows_idx)
        done = False
        while not done:
            any_masked = _any(kept_mask, n)
            kt = np.empty((dh, n), dtype=q.dtype)
            vc = np.empty((n, dv), dtype=q.dtype)
            tile = np.empty((block, n), dtype=q.dtype)
            _gather_transposed(k[b, :, h, :], keep, n, kt)
            _gather(v[b, :, h, :], keep, n, vc)
            shared = live < sq - 1 and _all_finite(kt)
            n_rows = live + 1 if shared else sq
            done = True
            for c0 in range(0, n_rows, block):
                rows = min(n_rows, c0 + block) - c0
                at = rows_idx[c0 : c0 + rows]
                _load_rows(q, b, h, at, rows, q_rows)
                s = tile[:rows]
                rows_by_matrix(q_rows[:rows], kt, s)
                for r in range(rows):
                    lse[b, h, at[r]], inv[r], m = _exp_scores_row(
                        s[r],
                        kept_mask,
                        any_masked,
                        keep,
                        base0 + at[r] * sk,
                        scale,
                        quiet,
                        use_dropout,
                        seed,
                        threshold,
                        drop_scale,
                    )
                    if compact and vm.exp(fill - m) != zero:
                        done = False
                        break
                if not done:
                    break
                o = o_rows[:rows]
                rows_by_matrix(s, vc, o)
                for r in range(rows):
                    dst = out[b, at[r], h]
                    o_r = o[r]
                    c = inv[r]
                    for d in range(dv):
                        dst[d] = o_r[d] * c
            if not done:
                compact = False
                n = _every_key(masked, keep, kept_mask)
            elif shared:
                first_zero = rows_idx[live]
                for t in range(live + 1, sq):
                    i = rows_idx[t]
                    lse[b, h, i] = lse[b, h, first_zero]
                    out[b, i, h] = out[b, first_zero, h]


def attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask_pad: np.ndarray | None,
    scale: float,
    quiet: bool,
    dropout_p: float,
    seed: int,
    tile_bytes: int = _TILE_BYTES,
) -> tuple[np.ndarray, np.ndarray]:
    """Attention core: ``out = softmax(mask(dropout(q k^T * scale))) @ v``.

    Args:
        q: queries ``[B, H, Sq, Dh]`` (float32/float64).
        k: keys ``[B, H, Sk, Dh]``.
        v: values ``[B, H, Sk, Dv]``.
        mask_pad: bool ``[B, Sk]``, True for padded keys (their scores become -1e4),
            or None.
        scale: factor applied to ``q k^T`` (usually ``1 / sqrt(Dh)``).
        quiet: quiet softmax, ``exp(s) / (1 + sum exp(s))``.
        dropout_p: probability of dropping a pre-softmax score (set to 0).
        seed: seed of the dropout hash RNG.

    Returns:
        ``(out [B, H, Sq, Dv], lse [B, H, Sq])``: ``out`` in ``q``'s dtype, ``lse`` in
        float64 (the backward needs more than float32 holds of a fully masked row's).
    """
    pb = _Problem("attention", q, k, v, mask_pad, scale, dropout_p, seed)
    out = np.empty((pb.b, pb.sq, pb.h, pb.dv), dtype=pb.dtype)
    lse = np.empty((pb.b, pb.h, pb.sq), dtype=np.float64)  # float64 for the backward's precision
    if pb.empty:
        out.fill(0)
        lse.fill(0.0 if quiet else -np.inf)
    else:
        threadpool.run(
            _forward_pairs,
            pb.q,
            pb.k,
            pb.v,
            pb.mask,
            pb.block_rows(tile_bytes),
            pb.scale,
            bool(quiet),
            pb.use_dropout,
            pb.seed,
            pb.threshold,
            pb.drop_scale,
            out,
            lse,
        )
    return _heads_first(out), lse


def _tile_candidates(kernel):
    """The tile sizes autotune measures for ``kernel``: the score tile should stay in the
    core's L1 or L2, whose sizes differ from machine to machine."""
    sizes = {16: "balanced", 32: "balanced", 64: "balanced", 128: "balanced", 256: "extensive"}
    return [
        autotune.Candidate(f"tile{kib}k", functools.partial(kernel, tile_bytes=kib << 10), level)
        for kib, level in sizes.items()
    ]


_ATTENTION = autotune.Tunable("cpu.attention", _tile_candidates(attention), default="tile64k")
_ATTENTION_BACKWARD = autotune.Tunable(
    "cpu.attention_backward", _tile_candidates(attention_backward), default="tile64k"
)


def _attention_class(q, k, mask_pad, dropout_p) -> tuple:
    """The key parts of an attention: the shapes, whether keys are masked or dropped, threads."""
    return (q.dtype, q.shape, k.shape[2:], mask_pad is not None, dropout_p > 0, threadpool.pool().threads)


class CpuAttentionOps:
    """Flash-style attention on ``cpu`` (padded keys skipped)."""

    @fused(half=True)
    def attention(self, q, k, v, mask_pad, scale, quiet, dropout_p, seed):
        parts = _attention_class(q, k, mask_pad, dropout_p)
        return _ATTENTION(parts, q, k, v, mask_pad, scale, quiet, dropout_p, seed)

    @fused(half=True)
    def attention_backward(self, dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed):
        if lse.dtype != np.float64:
            # the forward ran composed (its kernels were still compiling): its float32 lse is
            # not the float64 one this kernel splits, so the composed backward (which
            # recomputes the weights) matches it
            return DECLINED
        parts = _attention_class(q, k, mask_pad, dropout_p)
        return _ATTENTION_BACKWARD(parts, dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed)
