"""Attention op family: scaled dot-product attention with a key-padding mask, and its backward.

``q, k, v`` are ``[B, H, S, Dh]``; ``mask_pad [B, Sk]`` (True: a padded key) or None; ``quiet``
adds a 0 logit to the softmax (quiet softmax). The forward returns ``(out, lse)``; the
backward recomputes the weights. Masked scores are filled with :data:`ATTN_MASK_VALUE`, as Burn.
"""

from __future__ import annotations

import math

from ember.kernels.families.declare import composite

ATTN_MASK_VALUE = -1.0e4  # Burn fills masked scores with -1e4, not -inf


class AttentionOps:
    """Scaled dot-product attention, forward and backward."""

    def _attention_scores(self, q, k, mask_pad, scale, dropout_p, seed):
        s = self.binary("mul", self.matmul(q, self.permute(k, (0, 1, 3, 2))), self._scalar(scale, q))
        if dropout_p > 0.0:
            s = self.dropout(s, dropout_p, seed)
        if mask_pad is not None:
            b, sk = mask_pad.shape
            m = self.reshape(mask_pad, (b, 1, 1, sk))
            s = self.where(m, self.full((), ATTN_MASK_VALUE, self.dtype_of(s)), s)
        return s

    @composite(half=(1,))
    def attention(self, q, k, v, mask_pad, scale, quiet, dropout_p, seed):
        """``(softmax(q kᵀ · scale, masked) v, lse [B, H, Sq])``, dropout on the weights when ``dropout_p``."""
        s = self._attention_scores(q, k, mask_pad, scale, dropout_p, seed)
        w, lse = self._attention_weights(s, quiet)
        out = self.matmul(w, v)
        return out, self.reshape(lse, lse.shape[:-1])

    def _attention_weights(self, s, quiet):
        """``(softmax weights, lse keepdim)`` of the scores ``s``; quiet softmax adds a 0 logit.

        The weights are divided by their sum rather than rebuilt as ``exp(s - lse)``: for a
        fully masked row ``lse = -1e4 + log n`` loses ``log n`` to rounding (all of it in
        float16), and the row would no longer average the values."""
        dtype = self.dtype_of(s)
        if s.shape[-1] == 0:  # no keys: the output is 0; lse of the empty row (or of the 0 logit)
            return s, self.full(s.shape[:-1] + (1,), 0.0 if quiet else -math.inf, dtype)
        ax = (s.ndim - 1,)
        m = self.reduce("max", s, ax, True)
        if quiet:  # exp(s) / (1 + sum exp(s)): the scores and a 0 logit
            m = self.binary("maximum", m, self._scalar(0.0, s))
        else:
            # a row of -inf scores has no max to shift by (exp(-inf - -inf) would be NaN); a
            # +inf (or NaN) score makes the whole row NaN, as the fused kernels' online softmax
            m = self.where(self.binary("eq", m, self._scalar(-math.inf, m)), self.full((), 0.0, dtype), m)
        e = self.unary("exp", self.binary("sub", s, m))
        total = self.reduce("sum", e, ax, True)
        if quiet:
            total = self.binary("add", total, self.unary("exp", self.unary("neg", m)))
        return self.binary("div", e, total), self.binary("add", self.unary("log", total), m)

    @composite(half=())
    def attention_backward(self, dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed):
        """``(dq, dk, dv)`` of :meth:`attention`, the weights recomputed from ``q`` and ``k``."""
        s = self._attention_scores(q, k, mask_pad, scale, dropout_p, seed)
        w, _ = self._attention_weights(s, quiet)  # recomputed as in the forward, not from lse
        dv = self.matmul(self.permute(w, (0, 1, 3, 2)), dout)
        dw = self.matmul(dout, self.permute(v, (0, 1, 3, 2)))
        rowdot = self.reduce("sum", self.binary("mul", dout, out), (3,), True)
        ds = self.binary("mul", w, self.binary("sub", dw, rowdot))
        if mask_pad is not None:
            b, sk = mask_pad.shape
            ds = self.where(self.reshape(mask_pad, (b, 1, 1, sk)), self.full((), 0.0, self.dtype_of(ds)), ds)
        if dropout_p > 0.0:
            ds = self.dropout_backward(ds, dropout_p, seed)
        ds = self.binary("mul", ds, self._scalar(scale, q))
        dq = self.matmul(ds, k)
        dk = self.matmul(self.permute(ds, (0, 1, 3, 2)), q)
        return dq, dk, dv
