"""Element types a record file can hold, and their names in burnpack and safetensors.

Each :class:`StorageDType` ties together the name ember uses (NumPy style, ``"float32"``),
the value Burn's serde writes into the CBOR metadata (``"F32"``, or ``{"Bool": "Native"}``
for booleans), the safetensors name (``"F32"``), the NumPy dtype of the raw little-endian
bytes on disk, and the NumPy dtype :meth:`TensorView.numpy` returns.

bfloat16 has no NumPy dtype. Its raw storage is read and written as ``uint16`` bit patterns
(exact, zero-copy), and converted to ``float32`` (exact: every bfloat16 is a float32) when a
tensor is read with ``numpy()``. Writing a float array with ``dtype="bfloat16"`` rounds each
value to the nearest bfloat16, ties to even, as PyTorch and Burn's ``half`` crate do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "STORAGE_DTYPES",
    "StorageDType",
    "bfloat16_bits_to_float32",
    "float_to_bfloat16_bits",
    "storage_dtype",
    "storage_from_burn",
    "storage_from_numpy",
]


@dataclass(frozen=True)
class StorageDType:
    """One element type as stored in a record file.

    Attributes:
        name: ember / NumPy style name (``"float32"``, ``"bfloat16"``, ``"bool"``).
        burn: the CBOR value Burn's serde writes for this ``DType``.
        safetensors: the safetensors header name, or None when safetensors lacks it.
        storage: NumPy dtype of the raw little-endian bytes.
        logical: NumPy dtype returned by ``TensorView.numpy()``.
    """

    name: str
    burn: Any
    safetensors: str | None
    storage: np.dtype
    logical: np.dtype

    @property
    def itemsize(self) -> int:
        return self.storage.itemsize

    @property
    def burn_name(self) -> str:
        """Burn's variant name as text, e.g. ``"F32"`` or ``"Bool(Native)"``."""
        if isinstance(self.burn, dict):
            ((variant, store),) = self.burn.items()
            return f"{variant}({store})"
        return self.burn


def _spec(name, burn, st, storage, logical=None) -> StorageDType:
    storage = np.dtype(storage)
    return StorageDType(name, burn, st, storage, np.dtype(logical or storage).newbyteorder("="))


STORAGE_DTYPES: tuple[StorageDType, ...] = (
    _spec("float64", "F64", "F64", "<f8"),
    _spec("float32", "F32", "F32", "<f4"),
    _spec("float16", "F16", "F16", "<f2"),
    _spec("bfloat16", "BF16", "BF16", "<u2", np.float32),
    _spec("int64", "I64", "I64", "<i8"),
    _spec("int32", "I32", "I32", "<i4"),
    _spec("int16", "I16", "I16", "<i2"),
    _spec("int8", "I8", "I8", "i1"),
    _spec("uint64", "U64", "U64", "<u8"),
    _spec("uint32", "U32", "U32", "<u4"),
    _spec("uint16", "U16", "U16", "<u2"),
    _spec("uint8", "U8", "U8", "u1"),
    _spec("bool", {"Bool": "Native"}, "BOOL", "?"),
)
# Read-only variants Burn may write: Flex32 is stored as plain f32; booleans may be stored
# as u8 or u32 words. ember reads them and writes them back unchanged.
_READ_ONLY = (
    _spec("flex32", "Flex32", None, "<f4", np.float32),
    _spec("bool", {"Bool": "U8"}, None, "u1", np.bool_),
    _spec("bool", {"Bool": "U32"}, None, "<u4", np.bool_),
)

_BY_NAME = {s.name: s for s in STORAGE_DTYPES}
_BY_NAME.update(
    {
        "bf16": _BY_NAME["bfloat16"],
        "f64": _BY_NAME["float64"],
        "f32": _BY_NAME["float32"],
        "f16": _BY_NAME["float16"],
        "half": _BY_NAME["float16"],
        "bool_": _BY_NAME["bool"],
    }
)
_BY_NUMPY = {s.storage.newbyteorder("="): s for s in STORAGE_DTYPES if s.name != "bfloat16"}
_BY_BURN_TEXT = {s.burn: s for s in STORAGE_DTYPES + _READ_ONLY if isinstance(s.burn, str)}
_BY_BOOL_STORE = {s.burn["Bool"]: s for s in STORAGE_DTYPES + _READ_ONLY if isinstance(s.burn, dict)}
SAFETENSORS_NAMES = {s.safetensors: s for s in STORAGE_DTYPES}


def storage_dtype(value: Any) -> StorageDType:
    """Resolve a dtype given by name, NumPy dtype or ember DType.

    Args:
        value: ``"float32"``, ``"bf16"``, ``np.float16``, ``ember.int64``...

    Raises:
        TypeError: the dtype cannot be stored in a record file.
    """
    if isinstance(value, StorageDType):
        return value
    name = value if isinstance(value, str) else getattr(value, "name", None)
    if isinstance(name, str) and name.lower() in _BY_NAME:
        return _BY_NAME[name.lower()]
    return storage_from_numpy(getattr(value, "numpy", value))


def storage_from_numpy(np_dtype: Any) -> StorageDType:
    """The storage type for a NumPy dtype (any byte order).

    Raises:
        TypeError: complex, object, string and other non-numeric dtypes.
    """
    try:
        dt = np.dtype(np_dtype)
    except TypeError:
        raise TypeError(
            f"{np_dtype!r} is not a dtype a record file can hold; expected one of "
            f"{sorted({s.name for s in STORAGE_DTYPES})}"
        ) from None
    if dt.name == "bfloat16":  # ml_dtypes' bfloat16, if the user has it
        return _BY_NAME["bfloat16"]
    found = _BY_NUMPY.get(dt.newbyteorder("="))
    if found is None:
        raise TypeError(
            f"NumPy dtype {dt} cannot be stored in a record file; expected one of "
            f"{sorted({s.name for s in STORAGE_DTYPES})}"
        )
    return found


def storage_from_burn(value: Any) -> StorageDType:
    """Decode Burn's serialized ``DType`` (``"F32"`` or ``{"Bool": "Native"}``).

    Raises:
        ValueError: an unknown or unsupported (quantized) dtype.
    """
    if isinstance(value, str) and value in _BY_BURN_TEXT:
        return _BY_BURN_TEXT[value]
    if isinstance(value, dict) and len(value) == 1:
        ((variant, inner),) = value.items()
        if variant == "Bool" and isinstance(inner, str) and inner in _BY_BOOL_STORE:
            return _BY_BOOL_STORE[inner]
        if variant == "QFloat":
            raise ValueError("quantized (QFloat) tensors are not supported by ember")
    known = sorted(_BY_BURN_TEXT) + ['{"Bool": "Native"|"U8"|"U32"}']
    raise ValueError(f"unknown dtype {value!r}; expected one of {known}")


def float_to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """Round float values to bfloat16, returned as uint16 bit patterns.

    Rounds to nearest, ties to even; NaN stays a (quiet) NaN with its sign.
    """
    f32 = np.ascontiguousarray(values, dtype=np.float32)
    bits = f32.view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    out = (rounded >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(f32)
    if nan.any():
        out[nan] = ((bits[nan] >> np.uint32(16)) | np.uint32(0x0040)).astype(np.uint16)
    return out


def bfloat16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Widen bfloat16 bit patterns (uint16) to float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)
