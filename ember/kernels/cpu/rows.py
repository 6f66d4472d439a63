"""Rows put into (or added to) a copy of an array in one parallel sweep.

``index_put`` / ``index_add`` with one integer index array (``out = x.copy(); out[rows] = values``)
is what token packing does around every attention: it scatters the packed real tokens into the
padded ``[B, S, D]`` layout, and its gradient gathers them back. NumPy makes that two passes over
the result (the copy, then the fancy assignment) on one core; here each output row is written
once, from ``values`` or from ``x``, by all threads. Repeated rows keep NumPy's semantics: the
last value put wins (``put``); ``add`` is only called with distinct rows (repeats accumulate
through ``np.add.at`` in the caller).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .jit import kernel

__all__ = ["put_rows"]


@kernel
def _put_rows(x, source, values, add, out):
    width = x.shape[1]
    for r in prange(x.shape[0]):
        s = source[r]
        dst = out[r]
        src = x[r]
        if s < 0:
            for j in range(width):
                dst[j] = src[j]
        elif add:
            put = values[s]
            for j in range(width):
                dst[j] = src[j] + put[j]
        else:
            put = values[s]
            for j in range(width):
                dst[j] = put[j]


def put_rows(x: np.ndarray, rows: np.ndarray, values: np.ndarray, add: bool) -> np.ndarray:
    """A copy of ``x`` with ``out[rows] = values`` (``add``: ``out[rows] += values``).

    Args:
        x: C-contiguous float32/float64 array ``[n, ...]``.
        rows: 1-D integer array of row numbers in ``[0, n)`` (distinct when ``add``).
        values: C-contiguous array ``[len(rows), ...]`` of ``x``'s dtype and trailing shape.
        add: add to the rows instead of replacing them.

    Returns:
        A new array of ``x``'s shape and dtype.
    """
    n = x.shape[0]
    source = np.full(n, -1, dtype=np.int64)
    # NumPy's assignment keeps the last of repeated rows, as out[rows] = values does
    source[rows] = np.arange(rows.shape[0], dtype=np.int64)
    out = np.empty_like(x)
    width = x.size // n if n else 0
    if n and width:
        _put_rows(
            x.reshape(n, width), source, values.reshape(rows.shape[0], width), add, out.reshape(n, width)
        )
    return out
