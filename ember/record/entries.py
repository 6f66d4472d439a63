"""Values that go into and come out of record files.

- :class:`TensorRecord` wraps an array to be saved with a parameter id and/or a storage
  dtype other than its own (``"bfloat16"``).
- :class:`TensorView` is one tensor of a loaded record: a read-only, zero-copy view of the
  file's bytes (through a memory map for files) plus its name, dtype and parameter id.
- :class:`UInt` marks an integer scalar that Burn stores as ``Scalar::UInt`` (``usize``
  counters such as an optimizer's ``__rank``); plain ints are stored as ``Scalar::Int``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .dtypes import StorageDType, bfloat16_bits_to_float32

__all__ = ["TensorRecord", "TensorView", "UInt"]


class UInt(int):
    """An integer scalar stored with Burn's ``Scalar::UInt`` variant (0 <= value < 2**64).

    It behaves as a plain ``int``; loading a file gives ``UInt`` back for such scalars, so a
    loaded record saves back byte for byte.
    """

    def __new__(cls, value: int = 0):
        self = super().__new__(cls, value)
        if not 0 <= self < 1 << 64:
            raise ValueError(f"UInt scalar must be in [0, 2**64), got {int(self)}")
        return self

    def __repr__(self) -> str:
        return f"UInt({int(self)})"


@dataclass(frozen=True)
class TensorRecord:
    """An array to save together with its parameter id and storage dtype.

    Args:
        array: a NumPy array, anything with ``.numpy()`` (an ember Tensor), a
            :class:`TensorView`, or anything ``np.asarray`` accepts.
        param_id: Burn ``ParamId`` (unsigned 64-bit) to store with the tensor, or None.
        dtype: store as this dtype instead of the array's own, e.g. ``"bfloat16"`` or
            ``"float16"`` (values are cast on write); None keeps the array's dtype.
    """

    array: Any
    param_id: int | None = None
    dtype: Any = None


class TensorView:
    """One tensor of a loaded record.

    ``array`` is the raw storage as a read-only NumPy array that shares memory with the
    source (the memory-mapped file, or the bytes given to ``from_bytes``): nothing is read
    from disk until its elements are touched. For bfloat16 tensors ``array`` holds the raw
    ``uint16`` bit patterns; :meth:`numpy` and ``np.asarray(view)`` give float32 values.

    Attributes:
        name: the tensor's name in the record (a dotted module path for module records).
        storage: the :class:`~ember.record.dtypes.StorageDType` on disk.
        param_id: the stored Burn ``ParamId``, or None.
    """

    __slots__ = ("_raw", "name", "param_id", "storage")

    def __init__(self, name: str, storage: StorageDType, raw: np.ndarray, param_id: int | None = None):
        self.name = name
        self.storage = storage
        self.param_id = param_id
        self._raw = raw

    @property
    def array(self) -> np.ndarray:
        """Read-only zero-copy view of the stored elements (bfloat16 as uint16 bits)."""
        return self._raw

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._raw.shape)

    @property
    def dtype(self) -> np.dtype:
        """NumPy dtype of :meth:`numpy` (float32 for bfloat16, bool for any bool store)."""
        return self.storage.logical

    @property
    def dtype_name(self) -> str:
        """The stored element type's name: ``"float32"``, ``"bfloat16"``, ``"bool"``..."""
        return self.storage.name

    @property
    def nbytes(self) -> int:
        return self._raw.nbytes

    @property
    def ndim(self) -> int:
        return self._raw.ndim

    def numpy(self) -> np.ndarray:
        """Return a new, writable, native-byte-order array with the tensor's values."""
        raw = self._raw
        if self.storage.name == "bfloat16":
            return bfloat16_bits_to_float32(raw).reshape(raw.shape)
        if self.storage.logical != raw.dtype:  # bool stored as u8/u32 words, byte order
            return (raw != 0) if self.storage.logical == np.bool_ else raw.astype(self.storage.logical)
        return np.array(raw, copy=True)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if self.storage.logical == self._raw.dtype and not copy:
            out = self._raw  # zero-copy, read-only
        else:
            out = self.numpy()
        if dtype is not None and np.dtype(dtype) != out.dtype:
            out = out.astype(dtype)
        return out

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        pid = "" if self.param_id is None else f", param_id={self.param_id}"
        return f"TensorView({self.name!r}, shape={self.shape}, dtype={self.dtype_name}{pid})"
