"""Embedding lookup and its scatter-add backward on CuPy arrays.

Ids are range-checked on the device before the unchecked kernels run. The backward pass
accumulates with atomics in float32 (float64 for float64 weights), so repeated ids add up
and float16 gradients do not lose precision while accumulating.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.kernels.arg_checks import table_size
from ember.kernels.backend import fused_call
from ember.kernels.cuda import indexing, launch, modules, validate
from ember.kernels.cuda.runtime import cupy_or_error

__all__ = ["embedding", "embedding_backward"]

_SRC = "embedding.cu"


def embedding(weight: Any, ids: Any) -> Any:
    """Rows of ``weight`` selected by ``ids``.

    Args:
        weight: float16/32/64 CuPy array ``[V, D]``.
        ids: int64/int32 CuPy array of any shape, values in ``[0, V)``.

    Returns:
        ``[*ids.shape, D]`` with the weight's dtype.

    Raises:
        IndexError: an id lies outside ``[0, V)``.
    """
    op = "embedding"
    cp = cupy_or_error()
    weight = validate.float_array(cp, op, "weight", weight, min_ndim=2)
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight must be 2-D [V, D], got shape {tuple(weight.shape)}")
    ids = validate.index_array(cp, op, "ids", ids)
    v, d = (int(s) for s in weight.shape)
    out = cp.empty(tuple(ids.shape) + (d,), dtype=weight.dtype)
    n_ids = int(ids.size)
    if n_ids == 0 or d == 0:
        return out
    ct = modules.ctype_of(weight.dtype)
    indexing.check_range(cp, op, "ids", ids, v, _SRC, ct)
    grid, block = launch.elementwise_launch(n_ids * d)
    modules.kernel(_SRC, ct, "embedding_fwd", ct, modules.index_ctype_of(ids.dtype))(
        grid, block, (weight, ids, out, np.int64(n_ids), np.int32(d))
    )
    return out


def embedding_backward(dout: Any, ids: Any, num_embeddings: int) -> Any:
    """Gradient of :func:`embedding` with respect to the weight (scatter-add).

    Args:
        dout: gradient of the output ``[*ids.shape, D]``.
        ids: the forward ids.
        num_embeddings: V, the number of weight rows.

    Returns:
        ``dweight [V, D]`` with dout's dtype; rows of repeated ids are summed.

    Raises:
        IndexError: an id lies outside ``[0, V)``.
    """
    op = "embedding_backward"
    cp = cupy_or_error()
    dout = validate.float_array(cp, op, "dout", dout)
    ids = validate.index_array(cp, op, "ids", ids)
    v = table_size(op, "num_embeddings", num_embeddings)
    if tuple(dout.shape[:-1]) != tuple(ids.shape):
        raise ValueError(
            f"{op}: dout must have shape ids.shape + (D,) = {tuple(ids.shape)} + "
            f"(D,), got {tuple(dout.shape)}"
        )
    d = int(dout.shape[-1])
    n_ids = int(ids.size)
    acc = modules.acc_dtype(dout.dtype)
    if n_ids == 0 or d == 0 or v == 0:
        if n_ids and d and v == 0:
            indexing.check_range(cp, op, "ids", ids, v, _SRC, modules.ctype_of(dout.dtype))
        return cp.zeros((v, d), dtype=dout.dtype)
    ct = modules.ctype_of(dout.dtype)
    indexing.check_range(cp, op, "ids", ids, v, _SRC, ct)
    dweight = cp.zeros((v, d), dtype=acc)
    grid, block = launch.elementwise_launch(n_ids * d)
    modules.kernel(_SRC, ct, "embedding_bwd", ct, modules.index_ctype_of(ids.dtype))(
        grid, block, (dout, ids, dweight, np.int64(n_ids), np.int32(d))
    )
    if dweight.dtype == dout.dtype:
        return dweight
    out = cp.empty((v, d), dtype=dout.dtype)
    egrid, eblock = launch.elementwise_launch(v * d)
    modules.kernel(_SRC, ct, "sum_partials", ct)(egrid, eblock, (dweight, np.int32(1), np.int64(v * d), out))
    return out


class CudaEmbeddingOps:
    """Embedding lookups and their dense gradient on ``cuda``."""

    embedding = fused_call(embedding)
    embedding_backward = fused_call(embedding_backward)
