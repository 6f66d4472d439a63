"""Embedding lookup and its scatter-add gradient.

The backward must add the gradient rows of repeated ids into the same row of
``dweight`` without races. It first buckets the positions by id with a counting sort
(serial, O(N + V), stable), then gives each thread a disjoint range of vocabulary rows:
a thread writes every row of its range exactly once, zero for unused ids and the sum of
the id's gradient rows (in their original order, so results are reproducible) for the
others. This also replaces the separate zero-fill of the large ``[V, D]`` output.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ember.kernels.arg_checks import table_size
from ember.kernels.backend import fused_call

from .checks import float_array, float_table, index_array
from .jit import kernel, serial

__all__ = ["embedding", "embedding_backward"]


@kernel
def _gather_rows(weight, ids, out):
    d = weight.shape[1]
    for i in prange(ids.shape[0]):
        src = weight[ids[i]]
        dst = out[i]
        for j in range(d):
            dst[j] = src[j]


@serial
def _bucket_by_id(ids, num_ids):
    """Stable counting sort: positions ``order[starts[v]:starts[v+1]]`` hold id ``v``."""
    n = ids.shape[0]
    starts = np.zeros(num_ids + 1, dtype=np.int64)
    for i in range(n):
        starts[ids[i] + 1] += 1
    for v in range(num_ids):
        starts[v + 1] += starts[v]
    fill = starts[:-1].copy()
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        v = ids[i]
        order[fill[v]] = i
        fill[v] += 1
    return starts, order


@kernel
def _sum_rows_by_id(dout, starts, order, dweight):
    num_ids, d = dweight.shape
    for v in prange(num_ids):
        dst = dweight[v]
        begin = starts[v]
        end = starts[v + 1]
        if begin == end:
            for j in range(d):
                dst[j] = 0
            continue
        first = dout[order[begin]]
        for j in range(d):
            dst[j] = first[j]
        for k in range(begin + 1, end):
            src = dout[order[k]]
            for j in range(d):
                dst[j] += src[j]


def embedding(weight: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Look up rows of ``weight``: ``out[..., :] = weight[ids[...], :]``.

    Args:
        weight: float32/float64 table ``[V, D]``.
        ids: int64/int32 array of any shape with values in ``[0, V)``.

    Returns:
        A new array ``[*ids.shape, D]`` in ``weight``'s dtype.

    Raises:
        IndexError: if an id lies outside ``[0, V)``.
    """
    op = "embedding"
    weight = float_table(op, "weight", weight)
    ids = index_array(op, "ids", ids, weight.shape[0])
    out = np.empty(ids.shape + (weight.shape[1],), dtype=weight.dtype)
    if out.size:
        _gather_rows(weight, ids.reshape(-1), out.reshape(ids.size, weight.shape[1]))
    return out


def embedding_backward(dout: np.ndarray, ids: np.ndarray, num_embeddings: int) -> np.ndarray:
    """Gradient of :func:`embedding` with respect to the table (scatter-add).

    ``dweight[v] = sum of dout[p] over positions p with ids[p] == v`` (zero for ids
    that do not occur).

    Args:
        dout: float32/float64 ``[*ids.shape, D]``.
        ids: the forward ids.
        num_embeddings: ``V``, the number of rows of the table.

    Returns:
        A new ``[V, D]`` array in ``dout``'s dtype.

    Raises:
        IndexError: if an id lies outside ``[0, V)``.
    """
    op = "embedding_backward"
    num_ids = table_size(op, "num_embeddings", num_embeddings)
    dout = float_array(op, "dout", dout)
    ids = index_array(op, "ids", ids, num_ids)
    if dout.shape[:-1] != ids.shape:
        raise ValueError(
            f"{op}: dout must have shape [*ids.shape, D] = {ids.shape + ('D',)}, got {dout.shape}"
        )
    d = dout.shape[-1]
    dweight = np.empty((num_ids, d), dtype=dout.dtype)
    if dweight.size:
        starts, order = _bucket_by_id(ids.reshape(-1), num_ids)
        _sum_rows_by_id(dout.reshape(ids.size, d), starts, order, dweight)
    return dweight


class CpuEmbeddingOps:
    """Embedding lookups and their dense gradient on ``cpu``."""

    embedding = fused_call(embedding, half=True)
    embedding_backward = fused_call(embedding_backward, half=True)
