"""The backend contract.

A backend computes on its own arrays (NumPy arrays for ``reference`` and ``cpu``, CuPy arrays
for ``cuda``). ``Tensor`` wraps one array; no other layer touches raw arrays except through a
backend. A backend implements the closed list of *primitives* below. *Composites* (softmax,
norms, GELU, cross-entropy, embedding, embedding bags and their row-sparse gradients, dropout,
attention, and their backward passes; the optimizer updates, dense and row-sparse, and
gradient clipping, an op family of their own in :mod:`ember.kernels.optimizer_ops`) have a
default implementation in :class:`Backend` composed from primitives; a backend overrides them
with fused kernels that must agree with the ``reference`` backend on the conformance suite.

Fused overrides fall back, never raise, outside their limits: a fused kernel that cannot
take some input the composed default takes (a head dimension, zero keys, an empty axis, a
dtype, a memory layout, a size past its int32 arguments or launch grid) must run the
composed default instead — the :class:`Backend` method, with float16 computed in float32 as
below — so that every backend accepts what ``reference`` accepts and gives what it gives.
The forward and the backward of a composite decide from the same inputs (shapes, dtypes,
scalar arguments), so a forward that fell back is differentiated by the composed backward.
Only input the reference rejects too (and the tensor layer, which validates shapes, dtypes
and index ranges, normally rejects first) may raise, with the same error class.

Conventions for every method: inputs are never modified; outputs are new arrays; ``dtype``
arguments are :class:`ember.core.dtypes.DType`; axes are non-negative ints already
normalised by the tensor layer, which also validates shapes, dtypes and index ranges.

float16: the composites compute half-precision inputs in float32 and return float16, with
their saved statistics (mean, rstd, lse) in float32 — the reference too
(``ember.kernels.reference.HALF_VIA_SINGLE``). A fused kernel may keep a statistic wider
than that (the cpu and cuda attention keep lse in float64 for their backward); the
backward of the same backend is its only reader. An empty normalised axis gives an empty
result (the lse of an empty row is -inf), never an error.
"""

from __future__ import annotations

import math

from ember.core import dtypes as dt
from ember.core import op_table
from ember.kernels.optimizer_ops import OptimizerOps

PRIMITIVES = (
    # creation and transfer
    "empty",
    "full",
    "arange",
    "linspace",
    "eye",
    "from_host",
    "to_host",
    "uniform",
    "normal",
    "bernoulli",
    "randint",
    # element-wise
    "cast",
    "unary",
    "binary",
    "where",
    # reductions and scans
    "reduce",
    "arg_reduce",
    "cumsum",
    "sort",
    # movement
    "reshape",
    "permute",
    "expand",
    "getitem",
    "pad",
    "cat",
    "flip",
    "tile",
    # indexing
    "gather",
    "scatter_add",
    "index_select",
    "index_add",
    "index_put",
    # linear algebra
    "matmul",
)

# The op names ``unary``, ``binary`` and ``reduce`` take, from the op table (ember/core/op_table.py).
UNARY_OPS = op_table.names(op_table.UNARY)
BINARY_OPS = op_table.names(op_table.BINARY)
REDUCE_OPS = op_table.names(op_table.REDUCE)

# Dropout: a counter-based hash (SplitMix64 finaliser) so masks are regenerated in backward
# instead of stored, and are bit-identical on every backend.
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
ATTN_MASK_VALUE = -1.0e4  # Burn fills masked scores with -1e4, not -inf


class Backend(OptimizerOps):
    """Base class: declares the primitives and implements the composites from them (the
    optimizer family in :class:`~ember.kernels.optimizer_ops.OptimizerOps`)."""

    name = "abstract"

    # ---- primitives (every backend implements these) ------------------------------------
    def __getattr__(self, item):
        if item in PRIMITIVES:
            raise NotImplementedError(f"backend {self.name!r} does not implement primitive {item!r}")
        raise AttributeError(item)

    # ---- composites: softmax family -----------------------------------------------------
    def softmax(self, x):
        if x.shape[-1] == 0:  # an empty axis: nothing to normalise (NumPy's max would raise)
            return self.full(x.shape, 0.0, self.dtype_of(x))
        m = self.reduce("max", x, (x.ndim - 1,), True)
        e = self.unary("exp", self.binary("sub", x, m))
        return self.binary("div", e, self.reduce("sum", e, (x.ndim - 1,), True))

    def softmax_backward(self, y, dy):
        s = self.reduce("sum", self.binary("mul", dy, y), (y.ndim - 1,), True)
        return self.binary("mul", y, self.binary("sub", dy, s))

    def log_softmax(self, x):
        # (x - max) - log(sum(exp(x - max))), as PyTorch: exact 0 for a dominant logit at any
        # magnitude (x - logsumexp(x) rounds log(sum) away beside 3e38), and NaN for a row with
        # +inf or of -inf only, as softmax gives
        if x.shape[-1] == 0:
            return x
        return self._shifted_log_softmax(x)[0]

    def _shifted_log_softmax(self, x):
        """``(log_softmax(x), log(sum(exp(x - max))))`` over the last axis."""
        shifted = self.binary("sub", x, self.reduce("max", x, (x.ndim - 1,), True))
        log_total = self.unary("log", self.reduce("sum", self.unary("exp", shifted), (x.ndim - 1,), True))
        return self.binary("sub", shifted, log_total), log_total

    def log_softmax_backward(self, y, dy):
        s = self.reduce("sum", dy, (y.ndim - 1,), True)
        return self.binary("sub", dy, self.binary("mul", self.unary("exp", y), s))

    def logsumexp(self, x):
        """log(sum(exp(x))) over the last axis, keepdim; stable for -inf rows; -inf for an
        empty axis (the log of an empty sum)."""
        if x.shape[-1] == 0:
            return self.full(x.shape[:-1] + (1,), -math.inf, self.dtype_of(x))
        m = self.reduce("max", x, (x.ndim - 1,), True)
        m = self.where(self.unary("isfinite", m), m, self.full(m.shape, 0.0, self.dtype_of(m)))
        e = self.unary("exp", self.binary("sub", x, m))
        return self.binary("add", self.unary("log", self.reduce("sum", e, (x.ndim - 1,), True)), m)

    # ---- composites: linear layer ------------------------------------------------------
    def linear(self, x, w, b):
        """``x [N, d_in] @ w [d_in, d_out] + b [d_out]`` (``b`` None: no bias), all one dtype."""
        y = self.matmul(x, w)
        return y if b is None else self.binary("add", y, b)

    # ---- composites: normalisation ------------------------------------------------------
    def layer_norm(self, x, gamma, beta, eps):
        ax = (x.ndim - 1,)
        d = max(x.shape[-1], 1)  # an empty axis: empty output, mean 0 and var 0 (no 0 / 0)
        mean = self.binary("div", self.reduce("sum", x, ax, True), self._scalar(d, x))
        xc = self.binary("sub", x, mean)
        var = self.binary("div", self.reduce("sum", self.unary("square", xc), ax, True), self._scalar(d, x))
        rstd = self.unary("rsqrt", self.binary("add", var, self._scalar(eps, x)))
        # a variance past the dtype's range would give rstd 0 and a row of zeros that looks
        # healthy: NaN instead (as PyTorch for a row with 1e20 in float32), forward and backward
        rstd = self.where(self.unary("isinf", var), self.full(rstd.shape, math.nan, self.dtype_of(x)), rstd)
        y = self.binary("mul", xc, rstd)
        if gamma is not None:
            y = self.binary("mul", y, gamma)
        if beta is not None:
            y = self.binary("add", y, beta)
        return y, self.reshape(mean, x.shape[:-1]), self.reshape(rstd, x.shape[:-1])

    def layer_norm_backward(self, dy, x, mean, rstd, gamma):
        ax = (x.ndim - 1,)
        d = max(x.shape[-1], 1)
        mean = self.reshape(mean, mean.shape + (1,))
        rstd = self.reshape(rstd, rstd.shape + (1,))
        xhat = self.binary("mul", self.binary("sub", x, mean), rstd)
        rows = tuple(range(x.ndim - 1))
        dgamma = dbeta = None
        g = dy
        if gamma is not None:
            dgamma = self.reduce("sum", self.binary("mul", dy, xhat), rows, False)
            dbeta = self.reduce("sum", dy, rows, False)
            g = self.binary("mul", dy, gamma)
        mg = self.binary("div", self.reduce("sum", g, ax, True), self._scalar(d, x))
        mgx = self.binary(
            "div", self.reduce("sum", self.binary("mul", g, xhat), ax, True), self._scalar(d, x)
        )
        dx = self.binary(
            "mul", self.binary("sub", self.binary("sub", g, mg), self.binary("mul", xhat, mgx)), rstd
        )
        return dx, dgamma, dbeta

    def rms_norm(self, x, gamma, eps):
        ax = (x.ndim - 1,)
        ms = self.binary(
            "div", self.reduce("sum", self.unary("square", x), ax, True), self._scalar(max(x.shape[-1], 1), x)
        )
        rstd = self.unary("rsqrt", self.binary("add", ms, self._scalar(eps, x)))
        y = self.binary("mul", x, rstd)
        if gamma is not None:
            y = self.binary("mul", y, gamma)
        return y, self.reshape(rstd, x.shape[:-1])

    def rms_norm_backward(self, dy, x, rstd, gamma):
        ax = (x.ndim - 1,)
        rstd = self.reshape(rstd, rstd.shape + (1,))
        xhat = self.binary("mul", x, rstd)
        dgamma = None
        g = dy
        if gamma is not None:
            dgamma = self.reduce("sum", self.binary("mul", dy, xhat), tuple(range(x.ndim - 1)), False)
            g = self.binary("mul", dy, gamma)
        mgx = self.binary(
            "div",
            self.reduce("sum", self.binary("mul", g, xhat), ax, True),
            self._scalar(max(x.shape[-1], 1), x),
        )
        dx = self.binary("mul", self.binary("sub", g, self.binary("mul", xhat, mgx)), rstd)
        # rstd 0: the mean square overflowed; the forward's x * 0 is PyTorch's, the gradient is
        # NaN (as PyTorch's at 3e38), not a 0 that hides the overflow
        overflowed = self.binary("eq", rstd, self._scalar(0.0, rstd))
        dx = self.where(overflowed, self.full(dx.shape, math.nan, self.dtype_of(dx)), dx)
        return dx, dgamma

    # ---- composites: activations --------------------------------------------------------
    def gelu(self, x, approximate):
        half = self._scalar(0.5, x)
        if approximate:
            # 0.5 (1 + tanh z) == sigmoid(2z): no cancellation where tanh z is close to -1
            return self.binary("mul", x, self._gelu_tanh_sigmoid(x, 1.0))
        cdf = self.binary(
            "mul",
            half,
            self.binary(
                "add",
                self._scalar(1.0, x),
                self.unary("erf", self.binary("mul", x, self._scalar(1 / math.sqrt(2), x))),
            ),
        )
        return self.binary("mul", x, cdf)

    def gelu_backward(self, x, dy, approximate):
        one, half = self._scalar(1.0, x), self._scalar(0.5, x)
        # beyond |x| = 1e4 the derivative is exactly 1 (or 0): clamping keeps x² finite, so
        # huge and infinite inputs give that limit rather than inf * 0 = NaN (NaN stays NaN)
        high, low = self._scalar(1e4, x), self._scalar(-1e4, x)
        x = self.where(self.binary("gt", x, high), high, self.where(self.binary("lt", x, low), low, x))
        if approximate:
            c = math.sqrt(2 / math.pi)
            # with s = sigmoid(2z): 0.5 (1 + tanh z) = s and 0.5 (1 - tanh² z) = 2 s (1 - s),
            # where 1 - s = sigmoid(-2z) is computed directly (accurate in float32 for z << 0)
            s, s_neg = self._gelu_tanh_sigmoid(x, 1.0), self._gelu_tanh_sigmoid(x, -1.0)
            dinner = self.binary(
                "mul",
                self._scalar(c, x),
                self.binary(
                    "add", one, self.binary("mul", self._scalar(3 * 0.044715, x), self.unary("square", x))
                ),
            )
            d = self.binary(
                "add",
                s,
                self.binary(
                    "mul",
                    self.binary(
                        "mul", self.binary("mul", self._scalar(2.0, x), x), self.binary("mul", s, s_neg)
                    ),
                    dinner,
                ),
            )
            return self.binary("mul", dy, d)
        cdf = self.binary(
            "mul",
            half,
            self.binary(
                "add", one, self.unary("erf", self.binary("mul", x, self._scalar(1 / math.sqrt(2), x)))
            ),
        )
        pdf = self.binary(
            "mul",
            self._scalar(1 / math.sqrt(2 * math.pi), x),
            self.unary("exp", self.binary("mul", self._scalar(-0.5, x), self.unary("square", x))),
        )
        return self.binary("mul", dy, self.binary("add", cdf, self.binary("mul", x, pdf)))

    def _gelu_tanh_sigmoid(self, x, sign):
        """sigmoid(±2z), z the tanh-GELU inner term."""
        return self.unary(
            "sigmoid", self.binary("mul", self._scalar(2.0 * sign, x), self._gelu_tanh_inner(x))
        )

    def _gelu_tanh_inner(self, x):
        x3 = self.binary("mul", self.unary("square", x), x)
        return self.binary(
            "mul",
            self._scalar(math.sqrt(2 / math.pi), x),
            self.binary("add", x, self.binary("mul", self._scalar(0.044715, x), x3)),
        )

    # ---- composites: losses and lookups -------------------------------------------------
    def cross_entropy(self, logits, targets, smoothing):
        # -(1 - s) logp[t] - (s / C) sum_j logp[j] over logp = log_softmax(logits), as PyTorch:
        # no cancellation of lse against the logits (the loss at |logit| ~ 3e38 is exact), and
        # NaN for a row with +inf or of -inf only
        n, c = logits.shape
        if c == 0:  # no classes, so no rows either (targets index a class): nothing to reduce
            lse = self.reshape(self.logsumexp(logits), (n,))
            return lse, lse
        logp, log_total = self._shifted_log_softmax(logits)
        lse = self.reshape(self.binary("add", self.reduce("max", logits, (1,), True), log_total), (n,))
        loss = self.full((n,), 0.0, self.dtype_of(logits))
        # terms of weight 0 are left out rather than multiplied by 0: a -inf (masked) logit
        # would turn them into NaN
        if smoothing < 1.0:
            picked = self.reshape(self.gather(logp, 1, self.reshape(targets, (n, 1))), (n,))
            loss = self.binary("sub", loss, self.binary("mul", picked, self._scalar(1.0 - smoothing, logits)))
        if smoothing:
            total = self.reduce("sum", logp, (1,), False)
            loss = self.binary("sub", loss, self.binary("mul", total, self._scalar(smoothing / c, logits)))
        return loss, lse

    def cross_entropy_backward(self, logits, targets, lse, dloss, smoothing):
        n, c = logits.shape
        # exp(x - lse) normalised by its own row sum: lse = max + log(sum) rounds log(sum) away
        # at large |max| (the softmax of [1e20, 1e20] came out [1, 1]); the common error of the
        # shift cancels in the ratio
        p = self.unary("exp", self.binary("sub", logits, self.reshape(lse, (n, 1))))
        p = self.binary("div", p, self.reduce("sum", p, (1,), True))
        onehot = self.scatter_add(
            self.full((n, c), 0.0, self.dtype_of(logits)),
            1,
            self.reshape(targets, (n, 1)),
            self.full((n, 1), 1.0 - smoothing, self.dtype_of(logits)),
        )
        g = self.binary("sub", p, onehot)
        if smoothing:
            g = self.binary("sub", g, self._scalar(smoothing / c, logits))
        return self.binary("mul", g, self.reshape(dloss, (n, 1)))

    def embedding(self, weight, ids):
        flat = self.reshape(ids, (-1,))
        out = self.index_select(weight, 0, flat)
        return self.reshape(out, tuple(ids.shape) + (weight.shape[1],))

    def embedding_backward(self, dout, ids, num_embeddings):
        d = dout.shape[-1]
        flat = self.reshape(ids, (-1,))
        zeros = self.full((num_embeddings, d), 0.0, self.dtype_of(dout))
        return self.index_add(zeros, (flat,), self.reshape(dout, (-1, d)))

    # ---- composites: embedding bags and row-sparse gradients ------------------------------
    # Bags are given as flat ``indices [N]`` (int64, validated by the tensor layer) and
    # ``bounds [B + 1]`` (int64, bounds[0] = 0, non-decreasing, bounds[B] = N): bag b holds
    # positions bounds[b]:bounds[b+1]. ``mode`` is "sum", "mean" or "max". Row-sparse arrays
    # are ``rows [K]`` (int64, strictly increasing) with ``values [K, D]``.
    def _bag_ids(self, bounds, n):
        """The bag of every position (PyTorch's offset2bag), int64 ``[N]``."""
        b = bounds.shape[0] - 1
        # counted in float64 (exact to 2**53): scatter-adds of floats exist on every array library
        marks = self.index_add(
            self.full((n + 1,), 0.0, dt.float64),
            (self.getitem(bounds, slice(1, b)),),
            self.full((max(b - 1, 0),), 1.0, dt.float64),
        )
        return self.cast(self.getitem(self.cumsum(marks, 0), slice(0, n)), dt.int64)

    def _bag_counts(self, bounds):
        return self.binary("sub", self.getitem(bounds, slice(1, None)), self.getitem(bounds, slice(0, -1)))

    def embedding_bag(self, weight, indices, bounds, per_sample_weights, mode):
        """Sum / mean / max of the rows of each bag; empty bags give zeros.

        Returns ``(out [B, D], max_pos)``: ``max_pos [B, D]`` (int64, mode "max" only, else
        None) is the position in ``indices`` of the first maximum, -1 for an empty bag.
        """
        n, d, nb = indices.shape[0], weight.shape[1], bounds.shape[0] - 1
        dtype = self.dtype_of(weight)
        rows = self.index_select(weight, 0, indices)
        bag = self._bag_ids(bounds, n)
        counts = self._bag_counts(bounds)
        if mode == "max":
            if n == 0:
                return self.full((nb, d), 0.0, dtype), self.full((nb, d), -1, dt.int64)
            starts = self.getitem(bounds, slice(0, -1))
            pos = self.binary("sub", self.arange(0, n, 1, dt.int64), self.index_select(starts, 0, bag))
            longest = int(self.to_host(self.reduce("max", counts, (0,), False)))
            padded = self.index_put(self.full((nb, longest, d), -math.inf, dtype), (bag, pos), rows, False)
            out = self.reduce("max", padded, (1,), False)
            arg = self.binary(
                "add", self.arg_reduce("argmax", padded, 1, False), self.reshape(starts, (nb, 1))
            )
            empty = self.reshape(self.binary("eq", counts, self.full((), 0, dt.int64)), (nb, 1))
            out = self.where(empty, self.full((), 0.0, dtype), out)
            return out, self.where(empty, self.full((), -1, dt.int64), arg)
        if per_sample_weights is not None:
            rows = self.binary("mul", rows, self.reshape(per_sample_weights, (n, 1)))
        out = self.index_add(self.full((nb, d), 0.0, dtype), (bag,), rows)
        if mode == "mean":
            one = self.full((), 1, dt.int64)
            out = self.binary(
                "div", out, self.cast(self.reshape(self.binary("maximum", counts, one), (nb, 1)), dtype)
            )
        return out, None

    def embedding_bag_backward(self, dout, indices, bounds, per_sample_weights, mode, max_pos):
        """Gradient of :meth:`embedding_bag` w.r.t. the table, row-sparse: ``(rows, values)``
        where ``rows`` are the distinct indices of the batch (every row it touched, also
        those whose gradient is zero, e.g. not a maximum) and ``values [K, D]`` their sums."""
        n, d = indices.shape[0], dout.shape[1]
        dtype = self.dtype_of(dout)
        if n == 0:
            return self.full((0,), 0, dt.int64), self.full((0, d), 0.0, dtype)
        if mode == "max":
            valid = self.binary("ge", max_pos, self.full((), 0, dt.int64))
            pos = self.where(valid, max_pos, self.full((), 0, dt.int64))
            src = self.where(valid, dout, self.full((), 0.0, dtype))
            contrib = self.scatter_add(self.full((n, d), 0.0, dtype), 0, pos, src)
        else:
            bag = self._bag_ids(bounds, n)
            contrib = self.index_select(dout, 0, bag)
            if per_sample_weights is not None:
                contrib = self.binary("mul", contrib, self.reshape(per_sample_weights, (n, 1)))
            elif mode == "mean":
                counts = self.cast(self.index_select(self._bag_counts(bounds), 0, bag), dtype)
                contrib = self.binary("div", contrib, self.reshape(counts, (n, 1)))
        return self.coalesce_rows(indices, contrib)

    def embedding_bag_weights_backward(self, dout, weight, indices, bounds):
        """Gradient w.r.t. the per-sample weights (mode "sum"): ``dw[i] = dout[bag(i)] · weight[indices[i]]``."""
        bag = self._bag_ids(bounds, indices.shape[0])
        prod = self.binary("mul", self.index_select(dout, 0, bag), self.index_select(weight, 0, indices))
        return self.reduce("sum", prod, (1,), False)

    def coalesce_rows(self, rows, values):
        """Sort ``rows [N]`` and sum the ``values [N, D]`` of equal rows (in their order):
        ``(unique rows [K] ascending, summed values [K, D])``."""
        n = rows.shape[0]
        if n == 0:
            return rows, values
        ordered, perm = self.sort(rows, 0, False)
        new = self.binary("ne", self.getitem(ordered, slice(1, None)), self.getitem(ordered, slice(0, -1)))
        first = self.cat([self.full((1,), True, dt.bool_), new], 0)
        segment = self.binary("sub", self.cumsum(self.cast(first, dt.int64), 0), self.full((), 1, dt.int64))
        k = int(self.to_host(self.getitem(segment, n - 1))) + 1
        summed = self.index_add(
            self.full((k, values.shape[1]), 0.0, self.dtype_of(values)),
            (segment,),
            self.index_select(values, 0, perm),
        )
        return self.getitem(ordered, first), summed

    def rows_to_dense(self, rows, values, num_rows):
        """The dense ``[num_rows, D]`` array of a row-sparse one."""
        zeros = self.full((num_rows, values.shape[1]), 0.0, self.dtype_of(values))
        return self.index_put(zeros, (rows,), values, False)

    def rows_add_dense(self, dense, rows, values):
        """``dense`` plus a row-sparse array (a new array)."""
        return self.index_add(dense, (rows,), values)

    # ---- composites: dropout ------------------------------------------------------------
    def dropout_keep_mask(self, shape, p, seed):
        """Boolean keep-mask of the counter-based hash (see module docstring)."""
        raise NotImplementedError(f"backend {self.name!r} must implement dropout_keep_mask")

    def dropout(self, x, p, seed):
        if p <= 0.0:
            return self.binary("mul", x, self._scalar(1.0, x))
        if p >= 1.0:
            return self.full(x.shape, 0.0, self.dtype_of(x))
        keep = self.dropout_keep_mask(x.shape, p, seed)
        return self.where(
            keep,
            self.binary("mul", x, self._scalar(1.0 / (1.0 - p), x)),
            self.full((), 0.0, self.dtype_of(x)),
        )

    def dropout_backward(self, dy, p, seed):
        return self.dropout(dy, p, seed)

    # ---- composites: attention ----------------------------------------------------------
    def attention_scores(self, q, k, mask_pad, scale, dropout_p, seed):
        s = self.binary("mul", self.matmul(q, self.permute(k, (0, 1, 3, 2))), self._scalar(scale, q))
        if dropout_p > 0.0:
            s = self.dropout(s, dropout_p, seed)
        if mask_pad is not None:
            b, sk = mask_pad.shape
            m = self.reshape(mask_pad, (b, 1, 1, sk))
            s = self.where(m, self.full((), ATTN_MASK_VALUE, self.dtype_of(s)), s)
        return s

    def attention(self, q, k, v, mask_pad, scale, quiet, dropout_p, seed):
        s = self.attention_scores(q, k, mask_pad, scale, dropout_p, seed)
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

    def attention_backward(self, dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed):
        s = self.attention_scores(q, k, mask_pad, scale, dropout_p, seed)
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

    # ---- helpers ------------------------------------------------------------------------
    def dtype_of(self, x) -> dt.DType:
        return dt.dtype_from_numpy(x.dtype)

    def _scalar(self, value, like):
        return self.full((), value, self.dtype_of(like))
