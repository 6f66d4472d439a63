"""Fused scaled-dot-product attention core (Burn's ``MultiHeadAttention``), fwd and bwd.

Semantics (see the backend contract)::

    s = (q @ k^T) * scale                     # [B, H, Sq, Sk]
    s = dropout(s, p, seed)                   # pre-softmax; flat index over [B,H,Sq,Sk]
    s[mask_pad[b, j]] = -1e4                  # after dropout
    lse = log(sum_j exp(s))                   # (+ exp(0) inside the sum when quiet)
    out = exp(s - lse) @ v

Each of ember's threads (:mod:`.threadpool`) runs one serial kernel call over its share of
the (batch, head) pairs and walks their query rows in blocks sized to stay in cache
(``_TILE_BYTES``). Per block it forms the score tile with the register-blocked products of
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

import math

import numpy as np

from ember.kernels.backend import DECLINED, fused

from . import threadpool, vector_rows
from . import vecmath as vm
from .checks import contiguous, float_array, probability, seed_u64
from .dropout import hash_bits, keep_threshold
from .jit import serial, serial_ordered
from .tilegemm import accumulate_at_b, rows_by_matrix

__all__ = ["attention", "attention_backward"]

#: Bytes of one score tile (query rows x Sk); the backward keeps two per thread, plus
#: the head's gathered k and v (row and column layouts) and its dk and dv, in L2. Timings
#: at B=32, H=4, S=256, Dh=32 were flat from 16 to 256 KiB (and from 8 to 128 query rows
#: with AVX-512).
_TILE_BYTES = 64 << 10
_MASK_FILL = -1.0e4


@serial
def _gather_transposed(src, keep, n, dst):
    """``dst[d, c] = src[keep[c], d]`` for ``c < n`` (``src [S, D]``, ``dst [D, n]``)."""
    cols = src.shape[1]
    for c in range(n):
        row = src[keep[c]]
        for d in range(cols):
            dst[d, c] = row[d]


@serial
def _gather(src, keep, n, dst):
    """``dst[c] = src[keep[c]]`` for ``c < n`` (``src [S, D]``, ``dst [n, D]``)."""
    cols = src.shape[1]
    for c in range(n):
        row = src[keep[c]]
        out = dst[c]
        for d in range(cols):
            out[d] = row[d]


@serial
def _scatter(src, keep, n, dst):
    """``dst[keep[c]] = src[c]`` for ``c < n`` (``src [n, D]``, ``dst [S, D]``); the other rows
    of ``dst`` become 0."""
    rows, cols = dst.shape
    zero = vm.typed(0.0, dst)
    if n < rows:
        for j in range(rows):
            for d in range(cols):
                dst[j, d] = zero
    for c in range(n):
        row = dst[keep[c]]
        values = src[c]
        for d in range(cols):
            row[d] = values[d]


@serial
def _all_finite(a):
    # A count of the elements not within the finite range (NaN fails the comparison): one
    # vectorised loop instead of a test and early exit per element.
    big = vm.typed(np.finfo(a.dtype).max, a)
    bad = 0
    for i in range(a.shape[0]):
        for x in a[i]:
            bad += 0 if abs(x) <= big else 1
    return bad == 0


@serial
def _key_columns(masked, keep, kept_mask):
    """The keys a head's scores are formed for: the unmasked ones, in order (``keep``, with
    ``kept_mask`` all False). Returns their count, or 0 when no key or every key is masked
    (the caller then takes every key)."""
    n = 0
    for j in range(masked.shape[0]):
        if not masked[j]:
            keep[n] = j
            kept_mask[n] = False
            n += 1
    return n if 0 < n < masked.shape[0] else 0


@serial
def _every_key(masked, keep, kept_mask):
    sk = masked.shape[0]
    for j in range(sk):
        keep[j] = j
        kept_mask[j] = masked[j]
    return sk


@serial
def _any(flags, n):
    for j in range(n):
        if flags[j]:
            return True
    return False


@serial
def _load_rows(x, b, h, rows, count, dst):
    """``dst[r] = x[b, rows[r], h]`` for ``r < count`` (``x [B, S, H, D]``)."""
    for r in range(count):
        src = x[b, rows[r], h]
        row = dst[r]
        for d in range(src.shape[0]):
            row[d] = src[d]


@serial
def _is_zero(row):
    for x in row:
        if x != 0:  # NaN too
            return False
    return True


@serial
def _silent_rows_last(x, q, lse, guarded, rows):
    """Row indices into ``rows``: first, in order, those of the rows of ``x [S, D]`` that
    take part in the products, then (in any order) the all-zero rows that need not. Returns
    the first count.

    Forward (``x`` the queries, not ``guarded``): an all-zero query scores 0 against every
    finite key. Backward (``x`` the output gradient, ``guarded``): an all-zero row sends no
    gradient back when its query and ``lse`` are finite too, so that its weights are finite
    and ``w * 0`` is exactly 0.
    """
    live, dead = 0, x.shape[0]
    for i in range(x.shape[0]):
        silent = _is_zero(x[i])
        if silent and guarded:
            silent = math.isfinite(lse[i]) and _all_finite_row(q[i])
        if silent:
            dead -= 1
            rows[dead] = i
        else:
            rows[live] = i
            live += 1
    return live


@serial
def _all_finite_row(row):
    for x in row:
        if not math.isfinite(x):
            return False
    return True


@serial
def _masked_rows_finite(x, masked):
    for j in range(masked.shape[0]):
        if masked[j]:
            for d in range(x.shape[1]):
                if not math.isfinite(x[j, d]):
                    return False
    return True


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


def _heads_last(op: str, name: str, x: object, dtype: np.dtype | None) -> np.ndarray:
    """``x [B, H, S, D]`` as a C-contiguous ``[B, S, H, D]`` array: free for the heads split
    off a ``[B, S, H * D]`` projection (the usual case), one copy otherwise."""
    if isinstance(x, np.ndarray) and x.ndim == 4:
        return float_array(op, name, x.transpose(0, 2, 1, 3), dtype=dtype)
    float_array(op, name, x, dtype=dtype, min_ndim=4)  # the error for a non-array, dtype or ndim < 4
    raise ValueError(f"{op}: {name} must have shape [B, H, S, Dh], got {x.shape}")


def _heads_first(x: np.ndarray) -> np.ndarray:
    """The ``[B, H, S, D]`` view of a ``[B, S, H, D]`` result (merging the heads back is free)."""
    return x.transpose(0, 2, 1, 3)


class _Problem:
    """Validated inputs shared by the forward and the backward, heads last (``[B, S, H, D]``)."""

    def __init__(self, op, q, k, v, mask_pad, scale, dropout_p, seed):
        self.q = _heads_last(op, "q", q, None)
        self.dtype = self.q.dtype
        self.k = _heads_last(op, "k", k, self.dtype)
        self.v = _heads_last(op, "v", v, self.dtype)
        b, sq, h, dh = self.q.shape
        sk = self.k.shape[1]
        if (self.k.shape[0], self.k.shape[2], self.k.shape[3]) != (b, h, dh):
            raise ValueError(
                f"{op}: k must have shape [B, H, Sk, Dh] = [{b}, {h}, Sk, {dh}] to match "
                f"q {np.shape(q)}, got {np.shape(k)}"
            )
        if self.v.shape[:3] != (b, sk, h):
            raise ValueError(
                f"{op}: v must have shape [B, H, Sk, Dv] = [{b}, {h}, {sk}, Dv] to match "
                f"k {np.shape(k)}, got {np.shape(v)}"
            )
        self.b, self.h, self.sq, self.sk, self.dh = b, h, sq, sk, dh
        self.dv = self.v.shape[3]
        self.bh = b * h
        if mask_pad is None:
            self.mask = np.zeros((b, sk), dtype=np.bool_)
        else:
            if not isinstance(mask_pad, np.ndarray) or mask_pad.dtype != np.bool_:
                raise TypeError(
                    f"{op}: mask_pad must be a bool numpy.ndarray or None, got "
                    f"{getattr(mask_pad, 'dtype', type(mask_pad).__name__)}"
                )
            if mask_pad.shape != (b, sk):
                raise ValueError(
                    f"{op}: mask_pad must have shape [B, Sk] = [{b}, {sk}], got {mask_pad.shape}"
                )
            self.mask = contiguous(mask_pad)
        self.scale = self.dtype.type(float(scale))
        p = probability(op, "dropout_p", dropout_p)
        self.use_dropout = p > 0.0
        self.seed = seed_u64(op, seed)
        self.threshold = keep_threshold(p)
        # p == 1 drops every score to 0 (then softmax is uniform); the scale is unused.
        self.drop_scale = self.dtype.type(1.0 / (1.0 - p) if p < 1.0 else 0.0)
        self.empty = self.bh == 0 or sq == 0 or sk == 0

    def block_rows(self) -> int:
        """Query rows per tile: ``_TILE_BYTES`` of scores, at least one row."""
        row_bytes = max(1, self.sk) * self.dtype.itemsize
        return max(1, min(max(1, self.sq), _TILE_BYTES // row_bytes))


def _check_shape(op: str, name: str, arr: object, shape: tuple) -> None:
    if isinstance(arr, np.ndarray) and arr.shape != shape:
        raise ValueError(f"{op}: {name} must have shape {list(shape)}, got {arr.shape}")


def attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask_pad: np.ndarray | None,
    scale: float,
    quiet: bool,
    dropout_p: float,
    seed: int,
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
            pb.block_rows(),
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
            pb.block_rows(),
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


class CpuAttentionOps:
    """Flash-style attention on ``cpu`` (padded keys skipped)."""

    @fused(half=True)
    def attention(self, q, k, v, mask_pad, scale, quiet, dropout_p, seed):
        return attention(q, k, v, mask_pad, scale, quiet, dropout_p, seed)

    @fused(half=True)
    def attention_backward(self, dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed):
        if lse.dtype != np.float64:
            # the forward ran composed (its kernels were still compiling): its float32 lse is
            # not the float64 one this kernel splits, so the composed backward (which
            # recomputes the weights) matches it
            return DECLINED
        return attention_backward(dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed)
