"""Tables of arrays for the ``cpu`` backend's multi-tensor optimizer kernels.

A parameter group (or one of its state buffers) reaches the kernels as an :class:`ArrayTable`:
the arrays, validated once (one float dtype, C-contiguous, writeable when updated in place),
with their data addresses and sizes. An optimizer packs its parameters and state buffers once
(``optim_pack``: they never move), so a step skips re-validation and pointer look-up; lists
passed to an update are packed on each call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Union

import numpy as np

__all__ = ["FLOATS", "ArrayTable", "Arrays", "matching", "pack_arrays"]

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
"""The dtypes the kernels compute in."""


@dataclasses.dataclass(frozen=True, slots=True, repr=False)
class ArrayTable:
    """A validated list of same-dtype, C-contiguous arrays with their data addresses.

    Build it with :func:`pack_arrays`. It keeps the arrays alive, so the addresses it holds
    stay valid for its lifetime.
    """

    arrays: list
    addresses: np.ndarray  # int64 data pointers
    sizes: np.ndarray  # int64 element counts
    shapes: list
    dtype: np.dtype
    writeable: bool

    def __len__(self) -> int:
        return len(self.arrays)

    def __repr__(self) -> str:
        return (
            f"ArrayTable({len(self.arrays)} arrays, dtype={self.dtype}, "
            f"elements={int(self.sizes.sum())}, writeable={self.writeable})"
        )


Arrays = Union[Sequence[np.ndarray], ArrayTable]


def pack_arrays(
    arrays: Arrays, *, writeable: bool = True, op: str = "pack_arrays", what: str = "arrays"
) -> ArrayTable:
    """Validate a list of arrays once and record their addresses for the kernels.

    Args:
        arrays: NumPy float32/float64 arrays, all of one dtype (or an ``ArrayTable``).
        writeable: If true the arrays will be updated in place: they must be C-contiguous
            and writeable. If false, non-contiguous arrays are copied to contiguous ones.
        op: Name of the calling operation, for error messages.
        what: Name of the argument, for error messages.

    Returns:
        The table.

    Raises:
        TypeError: An entry is not a NumPy array, or its dtype is not float32/float64 or
            differs from the first entry's.
        ValueError: ``writeable`` is requested for a read-only or non-contiguous array.
    """
    if isinstance(arrays, ArrayTable):
        if writeable and not arrays.writeable:
            raise ValueError(f"{op}: `{what}` is a read-only ArrayTable but is updated in place")
        return arrays
    if isinstance(arrays, np.ndarray) or not isinstance(arrays, (list, tuple)):
        raise TypeError(
            f"{op}: `{what}` must be a list of NumPy arrays or an ArrayTable, got {type(arrays).__name__}"
        )
    kept, addresses, sizes, shapes = [], [], [], []
    dtype = None
    for index, array in enumerate(arrays):
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{op}: `{what}[{index}]` must be a NumPy array, got {type(array).__name__}")
        if dtype is None:
            dtype = array.dtype
            if dtype not in FLOATS:
                raise TypeError(f"{op}: `{what}` must be float32 or float64 arrays, got {dtype}")
        elif array.dtype != dtype:
            raise TypeError(
                f"{op}: `{what}[{index}]` has dtype {array.dtype} but `{what}[0]` has {dtype}; "
                "one call updates one dtype"
            )
        if not array.flags.c_contiguous:
            if writeable:
                raise ValueError(
                    f"{op}: `{what}[{index}]` (shape {array.shape}) is updated in place and "
                    "must be C-contiguous"
                )
            array = np.ascontiguousarray(array)
        if writeable and not array.flags.writeable:
            raise ValueError(f"{op}: `{what}[{index}]` (shape {array.shape}) is read-only")
        kept.append(array)
        addresses.append(array.ctypes.data)
        sizes.append(array.size)
        shapes.append(array.shape)
    return ArrayTable(
        kept,
        np.array(addresses, dtype=np.int64),
        np.array(sizes, dtype=np.int64),
        shapes,
        np.dtype(np.float32) if dtype is None else dtype,
        writeable,
    )


def matching(
    op: str,
    what: str,
    arrays: Arrays | None,
    like: ArrayTable,
    *,
    writeable: bool = True,
    like_name: str = "params",
) -> ArrayTable:
    """Pack ``arrays`` and check they pair one-to-one with ``like`` (shape and dtype)."""
    if arrays is None:
        raise ValueError(f"{op}: `{what}` is required with these settings, got None")
    table = pack_arrays(arrays, writeable=writeable, op=op, what=what)
    if len(table) != len(like):
        raise ValueError(f"{op}: `{what}` has {len(table)} arrays but `{like_name}` has {len(like)}")
    if table.shapes != like.shapes:
        index = next(i for i, (a, b) in enumerate(zip(table.shapes, like.shapes)) if a != b)
        raise ValueError(
            f"{op}: `{what}[{index}]` has shape {table.shapes[index]} but "
            f"`{like_name}[{index}]` has shape {like.shapes[index]}"
        )
    if len(table) and table.dtype != like.dtype:
        raise TypeError(f"{op}: `{what}` has dtype {table.dtype} but `{like_name}` has {like.dtype}")
    return table
