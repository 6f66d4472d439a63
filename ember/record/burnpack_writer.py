"""Write burnpack (``.bpk``) containers byte-compatible with Burn's ``burn_pack::Writer``.

Tensors are written in the order the mapping gives them; the CBOR descriptor map is sorted
by name (Burn keeps it in a ``BTreeMap``). Writing streams one tensor at a time: a value that
has ``shape``, ``dtype`` and ``numpy()`` (an ember Tensor on any device) is planned from its
shape and dtype and only copied to host when the writer reaches it, so peak host memory is
bounded by the largest tensor rather than the whole model.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from . import burnpack_format as fmt
from .atomic import atomic_writer
from .cbor import CborError, encode
from .dtypes import StorageDType, float_to_bfloat16_bits, storage_dtype, storage_from_numpy
from .entries import TensorRecord, TensorView, UInt
from .errors import RecordError

__all__ = ["save", "to_bytes"]

_U64 = 1 << 64
_ZEROS = bytes(fmt.ALIGNMENT)


@dataclass
class _Entry:
    """One tensor as planned: everything but its bytes, which ``produce`` yields later."""

    name: str
    storage: StorageDType
    shape: tuple[int, ...]
    param_id: int | None
    produce: Callable[[], np.ndarray]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=object)) * self.storage.itemsize


def _to_storage(name: str, array: np.ndarray, storage: StorageDType) -> np.ndarray:
    """Convert ``array`` to contiguous little-endian storage of type ``storage``."""
    if storage.name == "bfloat16" and array.dtype.name != "bfloat16" and array.dtype != storage.storage:
        if array.dtype.kind not in "fiub":
            raise RecordError(f"tensor '{name}': cannot store {array.dtype} as bfloat16")
        return float_to_bfloat16_bits(array).reshape(array.shape)
    if array.dtype.name == "bfloat16":  # ml_dtypes: reinterpret its bits
        array = np.asarray(array, order="C").view(np.uint16)
    if array.dtype.kind == "b" and storage.storage.kind in "ui":  # bool in a u8/u32 store
        array = array.astype(storage.storage)
    # np.asarray, not ascontiguousarray, which turns 0-d arrays into 1-d ones.
    return np.asarray(array, dtype=storage.storage, order="C")


def _numpy_of(name: str, value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "numpy") and callable(value.numpy):
        out = value.numpy()
        if not isinstance(out, np.ndarray):
            out = np.asarray(out)
        return out
    try:
        out = np.asarray(value)
    except Exception as exc:
        raise RecordError(
            f"tensor '{name}': cannot convert {type(value).__name__} to an array: {exc}"
        ) from None
    if out.dtype == object:
        raise RecordError(f"tensor '{name}': {type(value).__name__} is not numeric array data")
    return out


def _deferred_spec(value: Any) -> tuple[tuple[int, ...], StorageDType] | None:
    """(shape, storage) of a tensor-like without materializing it, when it says so itself."""
    if isinstance(value, np.ndarray) or not callable(getattr(value, "numpy", None)):
        return None
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return None
    try:
        return tuple(int(d) for d in shape), storage_dtype(dtype)
    except (TypeError, ValueError):
        return None  # e.g. a torch dtype: fall back to converting it now


def _plan_entry(name: Any, value: Any, param_id: int | None) -> _Entry:
    if not isinstance(name, str):
        raise RecordError(f"tensor names must be str, got {type(name).__name__} {name!r}")
    target = None
    if isinstance(value, TensorRecord):
        target = value.dtype
        if param_id is None:
            param_id = value.param_id
        value = value.array
    if isinstance(value, TensorView) and param_id is None:
        param_id = value.param_id
    param_id = _check_param_id(name, param_id)
    try:
        target = storage_dtype(target) if target is not None else None
        if isinstance(value, TensorView):
            if target is None or target == value.storage:
                raw = value.array  # stored bytes as-is: a loaded record saves back unchanged
                return _Entry(name, value.storage, raw.shape, param_id, lambda: raw)
            value = value.numpy()
        deferred = _deferred_spec(value)
        if deferred is not None:
            shape, storage = deferred
            storage = target or storage
            return _Entry(
                name, storage, shape, param_id, lambda: _to_storage(name, _numpy_of(name, value), storage)
            )
        array = _numpy_of(name, value)
        storage = target or storage_from_numpy(array.dtype)
    except TypeError as exc:
        raise RecordError(f"tensor '{name}': {exc}") from None
    stored = _to_storage(name, array, storage)
    return _Entry(name, storage, stored.shape, param_id, lambda: stored)


def _check_param_id(name: str, param_id: Any) -> int | None:
    if param_id is None:
        return None
    if (
        isinstance(param_id, bool)
        or not isinstance(param_id, (int, np.integer))
        or not 0 <= int(param_id) < _U64
    ):
        raise RecordError(f"tensor '{name}': param_id must be an int in [0, 2**64), got {param_id!r}")
    return int(param_id)


def materialize(name: str, value: Any) -> tuple[StorageDType, np.ndarray]:
    """Turn one value accepted by :func:`save` into (storage dtype, raw storage array).

    Used by the safetensors writer, which needs every array in memory at once.
    """
    entry = _plan_entry(name, value, None)
    return entry.storage, entry.produce()


def _plan_scalar(key: Any, value: Any) -> dict:
    if not isinstance(key, str):
        raise RecordError(f"scalar keys must be str, got {type(key).__name__} {key!r}")
    if isinstance(value, (bool, np.bool_)):
        return {"Bool": bool(value)}
    if isinstance(value, (UInt, np.unsignedinteger)):
        return {"UInt": int(value)}
    if isinstance(value, (int, np.integer)):
        value = int(value)
        if -(1 << 63) <= value < 1 << 63:
            return {"Int": value}
        if 0 <= value < _U64:
            return {"UInt": value}
        raise RecordError(f"scalar '{key}': integer {value} does not fit in 64 bits")
    if isinstance(value, (float, np.floating)):
        return {"Float": float(value)}
    raise RecordError(f"scalar '{key}': expected int, float or bool, got {type(value).__name__} {value!r}")


def _plan(
    tensors: Mapping[str, Any],
    metadata: Mapping[str, str] | None,
    scalars: Mapping[str, Any] | None,
    param_ids: Mapping[str, int] | None,
) -> tuple[bytes, list[tuple[_Entry, int]]]:
    """Build the metadata blob and each entry's offset in the data section."""
    if not isinstance(tensors, Mapping):
        raise RecordError(f"tensors must be a mapping of name -> array, got {type(tensors).__name__}")
    if len(tensors) > fmt.MAX_TENSOR_COUNT:
        raise RecordError(f"{len(tensors)} tensors exceed the burnpack limit of {fmt.MAX_TENSOR_COUNT}")
    param_ids = dict(param_ids or {})
    unknown = sorted(set(param_ids) - set(tensors))
    if unknown:
        raise RecordError(f"param_ids names tensors that are not saved: {unknown}")

    placed: list[tuple[_Entry, int]] = []
    descriptors: dict[str, dict] = {}
    offset = 0
    for name, value in tensors.items():
        entry = _plan_entry(name, value, param_ids.get(name))
        if entry.nbytes > fmt.MAX_TENSOR_SIZE:
            raise RecordError(
                f"tensor '{name}': {entry.nbytes} bytes exceed the burnpack "
                f"limit of {fmt.MAX_TENSOR_SIZE} bytes per tensor"
            )
        start = fmt.align(offset)
        offset = start + entry.nbytes
        desc: dict[str, Any] = {
            "dtype": entry.storage.burn,
            "shape": list(entry.shape),
            "data_offsets": [start, offset],
        }
        if entry.param_id is not None:
            desc["param_id"] = entry.param_id
        descriptors[name] = desc
        placed.append((entry, start))

    # Field order and emptiness rules follow Burn's serde structs exactly.
    blob: dict[str, Any] = {"tensors": dict(sorted(descriptors.items()))}
    if metadata:
        for key, value in metadata.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise RecordError(f"metadata must map str -> str, got {key!r}: {value!r}")
        blob["metadata"] = dict(sorted(metadata.items()))
    if scalars:
        blob["scalars"] = {
            k: _plan_scalar(k, v) for k, v in sorted(scalars.items(), key=lambda kv: str(kv[0]))
        }
    try:
        encoded = encode(blob)
    except CborError as exc:
        raise RecordError(f"cannot encode burnpack metadata: {exc}") from None
    if len(encoded) > fmt.MAX_METADATA_SIZE:
        raise RecordError(
            f"burnpack metadata is {len(encoded)} bytes, over the limit of {fmt.MAX_METADATA_SIZE}"
        )
    return encoded, placed


def _write_container(out: BinaryIO, encoded: bytes, placed: list[tuple[_Entry, int]]) -> None:
    out.write(fmt.pack_header(len(encoded)))
    out.write(encoded)
    start = fmt.data_section_start(len(encoded))
    out.write(_ZEROS[: start - fmt.HEADER_SIZE - len(encoded)])
    position = 0  # within the data section
    for entry, offset in placed:
        out.write(_ZEROS[: offset - position])
        array = entry.produce()
        if tuple(array.shape) != tuple(entry.shape) or array.dtype != entry.storage.storage:
            raise RecordError(
                f"tensor '{entry.name}': numpy() returned shape "
                f"{tuple(array.shape)} {array.dtype}, but the tensor reported "
                f"shape {entry.shape} {entry.storage.name}"
            )
        if array.size:
            out.write(array.reshape(-1).view(np.uint8).data)
        position = offset + entry.nbytes


def to_bytes(
    tensors: Mapping[str, Any],
    metadata: Mapping[str, str] | None = None,
    scalars: Mapping[str, Any] | None = None,
    *,
    param_ids: Mapping[str, int] | None = None,
) -> bytes:
    """Serialize tensors into burnpack bytes (what :func:`save` writes to a file).

    Args:
        tensors: name -> NumPy array, ember Tensor (anything with ``.numpy()``),
            :class:`TensorView` or :class:`TensorRecord`; written in this order.
        metadata: str -> str pairs stored in the CBOR metadata.
        scalars: str -> int, float or bool (``UInt`` for Burn's unsigned variant).
        param_ids: name -> Burn ``ParamId``; overrides ids carried by the values.

    Returns:
        The complete container.

    Raises:
        RecordError: unsupported dtype, bad names or values, or a limit exceeded.
    """
    encoded, placed = _plan(tensors, metadata, scalars, param_ids)
    out = io.BytesIO()
    _write_container(out, encoded, placed)
    return out.getvalue()


def save(
    path: str | os.PathLike,
    tensors: Mapping[str, Any],
    metadata: Mapping[str, str] | None = None,
    scalars: Mapping[str, Any] | None = None,
    *,
    param_ids: Mapping[str, int] | None = None,
) -> Path:
    """Atomically write a burnpack file that Burn's ``Reader`` (and :func:`load`) reads.

    ``.bpk`` is appended when ``path`` has no extension. The file is written to a scratch
    sibling, fsynced and renamed over ``path``: a failure at any point leaves ``path``
    untouched and no scratch file behind.

    Args:
        path: destination file.
        tensors: name -> array-like, as for :func:`to_bytes`.
        metadata: str -> str pairs.
        scalars: str -> int, float or bool.
        param_ids: name -> Burn ``ParamId``.

    Returns:
        The path actually written (with ``.bpk`` appended if it was).

    Raises:
        RecordError: invalid content (nothing is written).
        OSError: the file could not be written (nothing is left behind).
    """
    target = fmt.resolve_write_path(path)
    encoded, placed = _plan(tensors, metadata, scalars, param_ids)
    with atomic_writer(target) as out:
        _write_container(out, encoded, placed)
    return target
