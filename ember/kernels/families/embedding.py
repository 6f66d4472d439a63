"""Embedding op family: lookups, embedding bags, and row-sparse gradients.

Bags are given as flat ``indices [N]`` (int64, validated by the tensor layer) and ``bounds
[B + 1]`` (int64, bounds[0] = 0, non-decreasing, bounds[B] = N): bag b holds positions
bounds[b]:bounds[b+1]. ``mode`` is "sum", "mean" or "max". Row-sparse arrays are ``rows [K]``
(int64, strictly increasing) with ``values [K, D]``.
"""

from __future__ import annotations

import math

from ember.core import dtypes as dt
from ember.kernels.families.declare import composite


class EmbeddingOps:
    """Embedding lookups, embedding bags, and the row-sparse arrays of their gradients."""

    @composite(half=())
    def embedding(self, weight, ids):
        """The rows of ``weight [V, D]`` at ``ids`` (any shape): ``[*ids.shape, D]``."""
        flat = self.reshape(ids, (-1,))
        out = self.index_select(weight, 0, flat)
        return self.reshape(out, tuple(ids.shape) + (weight.shape[1],))

    @composite(half=())
    def embedding_backward(self, dout, ids, num_embeddings):
        """The dense gradient ``[num_embeddings, D]``: ``dout``'s rows summed at their ids."""
        d = dout.shape[-1]
        flat = self.reshape(ids, (-1,))
        zeros = self.full((num_embeddings, d), 0.0, self.dtype_of(dout))
        return self.index_add(zeros, (flat,), self.reshape(dout, (-1, d)))

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

    @composite(half=(1,))
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

    @composite(half=(0,))
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

    @composite(half=())
    def embedding_bag_weights_backward(self, dout, weight, indices, bounds):
        """Gradient w.r.t. the per-sample weights (mode "sum"): ``dw[i] = dout[bag(i)] · weight[indices[i]]``."""
        bag = self._bag_ids(bounds, indices.shape[0])
        prod = self.binary("mul", self.index_select(dout, 0, bag), self.index_select(weight, 0, indices))
        return self.reduce("sum", prod, (1,), False)

    @composite(half=(0,))
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

    @composite(half=())
    def rows_to_dense(self, rows, values, num_rows):
        """The dense ``[num_rows, D]`` array of a row-sparse one."""
        zeros = self.full((num_rows, values.shape[1]), 0.0, self.dtype_of(values))
        return self.index_put(zeros, (rows,), values, False)

    @composite
    def rows_add_dense(self, dense, rows, values):
        """``dense`` plus a row-sparse array (a new array)."""
        return self.index_add(dense, (rows,), values)
