"""Embedding bags (sum / mean / max of table rows over ragged bags) and their row-sparse
gradient, plus the row-sparse helpers (coalescing, densifying) of the ``cpu`` backend.

Bags come as flat ``indices [N]`` and ``bounds [B + 1]`` (bag b = positions
``bounds[b]:bounds[b+1]``). The forward pass runs one parallel loop over bags, each bag
reading its rows once and writing its output row once. The backward pass never touches
the table's untouched rows: the positions are sorted by index (one NumPy sort of
``index·N + position`` keys, so equal indices keep their position order), cut into one
segment per distinct index, and a parallel loop over the segments sums each row's
contributions straight from ``dout`` (no ``[N, D]`` temporary), in position order, so
results are reproducible. Indices, bounds and saved arg-max positions are validated
before any unchecked loop runs.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ember.kernels.backend import DECLINED, fused

from .checks import FLOAT_DTYPES, float_array, float_table, index_array
from .jit import kernel, serial

__all__ = [
    "coalesce_rows",
    "embedding_bag",
    "embedding_bag_backward",
    "embedding_bag_weights_backward",
    "rows_add_dense",
    "rows_to_dense",
]

_MODES = {"sum": 0, "mean": 1, "max": 2}


@kernel
def _bag_forward(weight, indices, bounds, psw, has_psw, mode, out, max_pos):
    d = weight.shape[1]
    for b in prange(bounds.shape[0] - 1):
        start, end = bounds[b], bounds[b + 1]
        dst = out[b]
        if mode == 2:
            arg = max_pos[b]
            if start == end:
                for j in range(d):
                    dst[j] = 0
                    arg[j] = -1
                continue
            src = weight[indices[start]]
            for j in range(d):
                dst[j] = src[j]
                arg[j] = start
            for p in range(start + 1, end):
                src = weight[indices[p]]
                for j in range(d):
                    # strict: the first maximum wins, as PyTorch; a NaN beats every number
                    # (the first NaN stays), as NumPy's max and argmax and the reference
                    v = src[j]
                    if v > dst[j] or (v != v and dst[j] == dst[j]):
                        dst[j] = v
                        arg[j] = p
            continue
        for j in range(d):
            dst[j] = 0
        for p in range(start, end):
            src = weight[indices[p]]
            if has_psw:
                s = psw[p]
                for j in range(d):
                    dst[j] += s * src[j]
            else:
                for j in range(d):
                    dst[j] += src[j]
        if mode == 1 and end > start:
            count = np.float64(end - start)
            for j in range(d):
                dst[j] = dst[j] / count


@serial
def _offset2bag(bounds, n):
    bag = np.empty(n, np.int64)
    for b in range(bounds.shape[0] - 1):
        for p in range(bounds[b], bounds[b + 1]):
            bag[p] = b
    return bag


@serial
def _segments(keys, order):
    """Distinct values of ``keys[order]`` (sorted) and the start of each run in ``order``."""
    n = order.shape[0]
    k = 1
    for i in range(1, n):
        if keys[order[i]] != keys[order[i - 1]]:
            k += 1
    rows = np.empty(k, np.int64)
    starts = np.empty(k + 1, np.int64)
    rows[0] = keys[order[0]]
    starts[0] = 0
    s = 1
    for i in range(1, n):
        if keys[order[i]] != keys[order[i - 1]]:
            rows[s] = keys[order[i]]
            starts[s] = i
            s += 1
    starts[k] = n
    return rows, starts


@kernel
def _bag_backward_rows(dout, order, starts, bag, bounds, psw, has_psw, mode, max_pos, values):
    k_rows, d = values.shape
    for k in prange(k_rows):
        dst = values[k]
        for j in range(d):
            dst[j] = 0
        for s in range(starts[k], starts[k + 1]):
            p = order[s]
            b = bag[p]
            src = dout[b]
            if mode == 2:
                arg = max_pos[b]
                for j in range(d):
                    if arg[j] == p:
                        dst[j] += src[j]
            elif has_psw:
                w = psw[p]
                for j in range(d):
                    dst[j] += w * src[j]
            elif mode == 1:
                count = np.float64(bounds[b + 1] - bounds[b])
                for j in range(d):
                    dst[j] += src[j] / count
            else:
                for j in range(d):
                    dst[j] += src[j]


@kernel
def _weights_backward(dout, weight, indices, bag, out):
    d = weight.shape[1]
    for p in prange(indices.shape[0]):
        g = dout[bag[p]]
        w = weight[indices[p]]
        acc = 0.0
        for j in range(d):
            acc += g[j] * w[j]
        out[p] = acc


@kernel
def _sum_segments(values, order, starts, out):
    d = values.shape[1]
    for k in prange(out.shape[0]):
        dst = out[k]
        first = values[order[starts[k]]]
        for j in range(d):
            dst[j] = first[j]
        for s in range(starts[k] + 1, starts[k + 1]):
            src = values[order[s]]
            for j in range(d):
                dst[j] += src[j]


def _position_order(keys: np.ndarray, upper: int) -> np.ndarray:
    """Positions sorted by ``keys`` (values in ``[0, upper)``), equal keys in position order."""
    n = keys.shape[0]
    if upper * n < (1 << 62):
        combined = keys.astype(np.int64) * n + np.arange(n, dtype=np.int64)
        combined.sort()
        return combined % n
    return np.argsort(keys, kind="stable")


def _bounds(op: str, bounds: object, n: int) -> np.ndarray:
    if not isinstance(bounds, np.ndarray) or bounds.dtype != np.int64 or bounds.ndim != 1 or bounds.size < 1:
        raise TypeError(
            f"{op}: bounds must be a 1-D int64 array [B + 1], got "
            f"{getattr(bounds, 'dtype', type(bounds).__name__)} {getattr(bounds, 'shape', '')}"
        )
    bounds = np.ascontiguousarray(bounds)
    if bounds[0] != 0 or bounds[-1] != n or np.any(bounds[1:] < bounds[:-1]):
        raise ValueError(
            f"{op}: bounds must start at 0, never decrease and end at N={n}, got "
            f"{bounds[:8].tolist()}{'...' if bounds.size > 8 else ''}"
        )
    return bounds


def _mode(op: str, mode: str) -> int:
    if mode not in _MODES:
        raise ValueError(f"{op}: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    return _MODES[mode]


def _weights(op: str, psw, n: int, dtype) -> tuple[np.ndarray, bool]:
    if psw is None:
        return np.zeros(1, dtype=dtype), False
    psw = float_array(op, "per_sample_weights", psw, dtype=dtype)
    if psw.shape != (n,):
        raise ValueError(f"{op}: per_sample_weights must have shape ({n},) like indices, got {psw.shape}")
    return psw, True


def embedding_bag(weight, indices, bounds, per_sample_weights, mode):
    """Sum, mean or max of the rows of each bag (zeros for an empty bag).

    Args:
        weight: float32/float64 table ``[V, D]``.
        indices: int64/int32 ``[N]``, values in ``[0, V)``.
        bounds: int64 ``[B + 1]``: 0, non-decreasing, ending at N.
        per_sample_weights: ``[N]`` factors of the rows (mode "sum"), or None.
        mode: "sum", "mean" or "max".

    Returns:
        ``(out [B, D], max_pos)``; ``max_pos [B, D]`` int64 (mode "max", else None) is the
        position of each first maximum, -1 in empty bags.

    Raises:
        IndexError: if an index lies outside ``[0, V)``.
    """
    op = "embedding_bag"
    weight = float_table(op, "weight", weight)
    code = _mode(op, mode)
    indices = index_array(op, "indices", indices, weight.shape[0]).reshape(-1)
    bounds = _bounds(op, bounds, indices.shape[0])
    psw, has_psw = _weights(op, per_sample_weights, indices.shape[0], weight.dtype)
    nb, d = bounds.shape[0] - 1, weight.shape[1]
    out = np.empty((nb, d), dtype=weight.dtype)
    max_pos = np.empty((nb, d) if code == 2 else (1, 1), dtype=np.int64)
    if out.size:
        _bag_forward(weight, indices, bounds, psw, has_psw, code, out, max_pos)
    return out, (max_pos if code == 2 else None)


def embedding_bag_backward(dout, indices, bounds, per_sample_weights, mode, max_pos):
    """Row-sparse gradient of :func:`embedding_bag` w.r.t. the table.

    Args:
        dout: ``[B, D]`` gradient of the output.
        indices, bounds, per_sample_weights, mode: the forward arguments.
        max_pos: the forward's arg-max positions (mode "max"), else None.

    Returns:
        ``(rows [K], values [K, D])``: the distinct indices, ascending, and the sum of their
        contributions (zero for a row that is in a bag but nowhere its maximum).
    """
    op = "embedding_bag_backward"
    dout = float_array(op, "dout", dout, min_ndim=2)
    code = _mode(op, mode)
    if not isinstance(indices, np.ndarray) or indices.ndim != 1:
        raise TypeError(f"{op}: indices must be a 1-D index array")
    indices = index_array(op, "indices", indices, np.iinfo(np.int64).max)
    n, d = indices.shape[0], dout.shape[1]
    bounds = _bounds(op, bounds, n)
    if dout.shape != (bounds.shape[0] - 1, d):
        raise ValueError(f"{op}: dout must have shape [B, D] = [{bounds.shape[0] - 1}, D], got {dout.shape}")
    psw, has_psw = _weights(op, per_sample_weights, n, dout.dtype)
    if code == 2:
        if not isinstance(max_pos, np.ndarray) or max_pos.dtype != np.int64 or max_pos.shape != dout.shape:
            raise ValueError(f"{op}: mode 'max' needs the forward's int64 max_pos of shape {dout.shape}")
        max_pos = np.ascontiguousarray(max_pos)
        if max_pos.size and (max_pos.min() < -1 or max_pos.max() >= n):
            raise IndexError(f"{op}: max_pos holds positions outside [-1, {n})")
    else:
        max_pos = np.empty((1, 1), dtype=np.int64)
    if n == 0:
        return np.empty(0, dtype=np.int64), np.empty((0, d), dtype=dout.dtype)
    order = _position_order(indices, int(indices.max()) + 1)
    rows, starts = _segments(indices, order)
    bag = _offset2bag(bounds, n)
    values = np.empty((rows.shape[0], d), dtype=dout.dtype)
    if values.size:
        _bag_backward_rows(dout, order, starts, bag, bounds, psw, has_psw, code, max_pos, values)
    return rows, values


def embedding_bag_weights_backward(dout, weight, indices, bounds):
    """Gradient w.r.t. the per-sample weights: ``dw[p] = dout[bag(p)] · weight[indices[p]]``."""
    op = "embedding_bag_weights_backward"
    weight = float_array(op, "weight", weight, min_ndim=2)
    dout = float_array(op, "dout", dout, dtype=weight.dtype, min_ndim=2)
    indices = index_array(op, "indices", indices, weight.shape[0]).reshape(-1)
    bounds = _bounds(op, bounds, indices.shape[0])
    if dout.shape != (bounds.shape[0] - 1, weight.shape[1]):
        raise ValueError(
            f"{op}: dout must have shape [B, D] = [{bounds.shape[0] - 1}, {weight.shape[1]}], "
            f"got {dout.shape}"
        )
    out = np.empty(indices.shape[0], dtype=weight.dtype)
    if out.size:
        _weights_backward(dout, weight, indices, _offset2bag(bounds, indices.shape[0]), out)
    return out


def coalesce_rows(rows, values):
    """Sort ``rows [N]`` (non-negative) and sum the ``values [N, D]`` of equal rows.

    Returns:
        ``(unique rows [K] ascending int64, summed values [K, D])``.
    """
    op = "coalesce_rows"
    values = float_array(op, "values", values, min_ndim=2)
    rows = index_array(op, "rows", rows, np.iinfo(np.int64).max).reshape(-1)
    if values.ndim != 2 or values.shape[0] != rows.shape[0]:
        raise ValueError(f"{op}: values must have shape [{rows.shape[0]}, D], got {values.shape}")
    if rows.shape[0] == 0:
        return rows.astype(np.int64), values.copy()
    rows = rows.astype(np.int64, copy=False)
    if rows.shape[0] == 1 or np.all(rows[1:] > rows[:-1]):
        return rows.copy(), values.copy()  # already coalesced (the usual case)
    order = _position_order(rows, int(rows.max()) + 1)
    unique, starts = _segments(rows, order)
    out = np.empty((unique.shape[0], values.shape[1]), dtype=values.dtype)
    if out.size:
        _sum_segments(values, order, starts, out)
    return unique, out


def rows_to_dense(rows, values, num_rows):
    """The dense ``[num_rows, D]`` array of strictly increasing ``rows`` and their ``values``."""
    values = float_array("rows_to_dense", "values", values, min_ndim=2)
    rows = index_array("rows_to_dense", "rows", rows, int(num_rows))
    out = np.zeros((int(num_rows), values.shape[1]), dtype=values.dtype)
    out[rows] = values
    return out


def rows_add_dense(dense, rows, values):
    """``dense + rows_to_dense(rows, values)`` as a new array (``rows`` strictly increasing)."""
    dense = float_array("rows_add_dense", "dense", dense, min_ndim=2)
    rows = index_array("rows_add_dense", "rows", rows, dense.shape[0])
    out = np.array(dense, copy=True)
    out[rows] += values.astype(out.dtype, copy=False)
    return out


class CpuEmbeddingBagOps:
    """Embedding bags and row-sparse arrays on ``cpu``."""

    @fused(half=True)
    def embedding_bag(self, weight, indices, bounds, per_sample_weights, mode):
        return embedding_bag(weight, indices, bounds, per_sample_weights, mode)

    @fused(half=True)
    def embedding_bag_backward(self, dout, indices, bounds, per_sample_weights, mode, max_pos):
        return embedding_bag_backward(dout, indices, bounds, per_sample_weights, mode, max_pos)

    @fused(half=True)
    def embedding_bag_weights_backward(self, dout, weight, indices, bounds):
        return embedding_bag_weights_backward(dout, weight, indices, bounds)

    @fused(half=True, ready_arg=1)
    def coalesce_rows(self, rows, values):
        return coalesce_rows(rows, values)

    @fused(half=True, ready_arg=1)
    def rows_to_dense(self, rows, values, num_rows):
        return rows_to_dense(rows, values, num_rows)

    @fused
    def rows_add_dense(self, dense, rows, values):
        return DECLINED if dense.dtype not in FLOAT_DTYPES else rows_add_dense(dense, rows, values)
