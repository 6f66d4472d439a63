"""Device-side range check of index arrays, run before any kernel that indexes with them.

One grid-stride reduction finds the first out-of-range position (one launch and a single
8-byte device-to-host copy when everything is in range); only on failure is the offending
value fetched to build the error message.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.kernels.cuda import launch, modules

__all__ = ["check_range"]

_NONE = (1 << 64) - 1


def check_range(cp: Any, op: str, name: str, ids: Any, limit: int, source: str, variant: str) -> None:
    """Raise IndexError unless every value of ``ids`` lies in ``[0, limit)``.

    Args:
        cp: the array module (cupy).
        op: name of the op, for the message.
        name: name of the index argument, for the message.
        ids: C-contiguous int64/int32 device array.
        limit: exclusive upper bound (number of classes / embeddings).
        source: kernel source whose module provides ``index_check``.
        variant: module variant of that source (the op's float C type).

    Raises:
        IndexError: naming the op, the first bad value, its position and the valid range.
    """
    n = int(ids.size)
    if n == 0:
        return
    first_bad = cp.asarray(np.array([_NONE], dtype=np.uint64))
    fn = modules.kernel(source, variant, "index_check", modules.index_ctype_of(ids.dtype))
    grid, block = launch.elementwise_launch(n)
    fn(grid, block, (ids, np.int64(n), np.int64(limit), first_bad))
    pos = int(cp.asnumpy(first_bad)[0])
    if pos == _NONE:
        return
    bad = int(cp.asnumpy(ids.reshape(-1)[pos : pos + 1])[0])
    where = tuple(int(i) for i in np.unravel_index(pos, tuple(ids.shape)))
    raise IndexError(
        f"{op}: {name} value {bad} at position {where} is out of range; valid range is [0, {limit})"
    )
