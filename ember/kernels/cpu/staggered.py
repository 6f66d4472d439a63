"""Output arrays placed where their stores cannot 4K-alias the kernel's loads.

A CPU compares only the low 12 bits of a load's address against the stores still in flight;
a load whose address matches a pending store's in those bits waits for it as if they were the
same memory ("4K aliasing"). glibc puts same-sized large blocks one after another in its heap,
each 16 bytes past a multiple of 4096 from the previous, so the inputs and outputs of a
streaming kernel sit a few bytes apart modulo 4096 and nearly every vector load waits: a fused
chain ran several times slower that way on an AVX-512 core. :func:`empty` places each output on a
64-byte boundary as far (modulo 4096) from the kernel's other arrays as it can.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["empty"]

_PAGE = 4096
_LINE = 64
_CANDIDATES = np.arange(0, _PAGE, _LINE)


def _offset(address: int) -> int:
    return address % _PAGE


def empty(shape: tuple, dtypes: list, neighbours: list) -> list:
    """One C-contiguous array of ``shape`` per dtype of ``dtypes``, each aligned to 64 bytes and
    placed (modulo 4096) away from the ``neighbours`` (the arrays the kernel reads) and from
    each other."""
    taken = [_offset(a.ctypes.data) for a in neighbours if a.size > 1]
    outputs = []
    for dtype in dtypes:
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        buffer = np.empty(nbytes + _PAGE, np.uint8)
        base = buffer.ctypes.data
        if taken:
            gap = np.abs(_CANDIDATES[:, None] - np.asarray(taken)[None, :])
            distance = np.minimum(gap, _PAGE - gap).min(axis=1)
            target = int(_CANDIDATES[int(distance.argmax())])
        else:
            target = 0
        start = (target - base) % _PAGE
        taken.append(target)
        outputs.append(buffer[start : start + nbytes].view(dtype).reshape(shape))
    return outputs
