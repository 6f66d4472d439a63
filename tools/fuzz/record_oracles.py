"""The record oracles: what a `.bpk` or safetensors file declares, read independently of
ember (`cbor_model`, `json`), compared with what ember loaded from it.

A loaded record is right when it holds exactly the declared tensors, each with its declared
dtype and shape, a byte range inside the file that no other tensor shares, and the file's own
bytes in that range; and the declared metadata (and burnpack scalars) unchanged. Each
function returns the differences found, empty when there are none.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import numpy as np

from . import cbor_model

__all__ = [
    "BURN_DTYPES",
    "FLOAT_DTYPES",
    "INTEGER_DTYPES",
    "align",
    "bpk_problems",
    "dtype_key",
    "safetensors_problems",
]

# The float and integer dtype names burnpack and safetensors both use, in the same order, with
# the little-endian layouts their bytes have (bfloat16 read as raw 16-bit words).
FLOAT_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "BF16": "<u2",
}
INTEGER_DTYPES = {
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U64": "<u8",
    "U32": "<u4",
    "U16": "<u2",
    "U8": "u1",
}
BURN_DTYPES = {
    **FLOAT_DTYPES,
    "Flex32": "<f4",
    **INTEGER_DTYPES,
    ("Bool", "Native"): "?",
    ("Bool", "U8"): "u1",
    ("Bool", "U32"): "<u4",
}
_SAFETENSORS_DTYPES = {**FLOAT_DTYPES, **INTEGER_DTYPES, "BOOL": "?"}


def _is_uint(value: Any) -> bool:
    return type(value) is int and 0 <= value < 1 << 64


def _check_tensor(
    record: Any,
    name: str,
    storage: str | None,
    shape: Any,
    offsets: Any,
    data: bytes,
    data_start: int,
    problems: list[str],
) -> tuple[int, int] | None:
    """Compare one loaded tensor with its declaration; returns its byte range."""
    if storage is None:
        problems.append(f"{name}: accepted although its dtype is unknown")
        return None
    if not (isinstance(shape, list) and all(_is_uint(d) for d in shape)):
        problems.append(f"{name}: accepted although its shape {shape!r:.60} is not a list of uints")
        return None
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_uint(o) for o in offsets)):
        problems.append(f"{name}: accepted although its offsets {offsets!r:.60} are not a pair of uints")
        return None
    start, end = offsets
    dtype = np.dtype(storage)
    if end - start != math.prod(shape) * dtype.itemsize or data_start + end > len(data):
        problems.append(
            f"{name}: accepted with offsets {offsets} that do not fit shape {shape} "
            f"{storage} in a {len(data)}-byte file"
        )
        return None
    view = record.tensors[name]
    array = view.array
    if tuple(view.shape) != tuple(shape) or array.shape != tuple(shape):
        problems.append(f"{name}: shape {view.shape}, declared {shape}")
    if array.dtype != dtype:
        problems.append(f"{name}: dtype {array.dtype}, declared {storage}")
    if array.tobytes() != data[data_start + start : data_start + end]:
        problems.append(f"{name}: its bytes are not the file's bytes {start}..{end}")
    values = view.numpy()  # what users call: must work and keep the shape
    if values.shape != tuple(shape):
        problems.append(f"{name}: numpy() has shape {values.shape}, declared {shape}")
    return start, end


def _check_disjoint(ranges: dict[str, tuple[int, int]], problems: list[str]) -> None:
    spans = sorted((start, end, name) for name, (start, end) in ranges.items() if end > start)
    for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
        if start < end:
            problems.append(f"accepted overlapping byte ranges of {first} and {second}")


def align(offset: int) -> int:
    return -(-offset // 256) * 256


def dtype_key(dtype: Any) -> Any:
    if isinstance(dtype, dict) and len(dtype) == 1:
        ((variant, store),) = dtype.items()
        return (variant, store)
    return dtype if isinstance(dtype, str) else None


def bpk_problems(record: Any, data: bytes) -> list[str]:
    """How a loaded record differs from what the file declares (empty: it does not)."""
    magic, _version, size = struct.unpack("<IHI", data[:10])
    if magic != 0x4255524E:
        return [f"accepted magic 0x{magic:08X}"]
    try:
        meta = cbor_model.decode(data[10 : 10 + size])
    except cbor_model.CborFormatError as error:
        return [f"accepted metadata the oracle cannot parse: {error}"]
    if not isinstance(meta, dict) or not isinstance(meta.get("tensors"), dict):
        return ["accepted metadata without a tensors map"]
    declared = meta["tensors"]
    problems: list[str] = []
    if set(record.tensors) != set(declared):
        return [f"tensors {sorted(record.tensors)}, declared {sorted(map(str, declared))}"]
    data_start = align(10 + size)
    ranges = {}
    for name, desc in declared.items():
        if not isinstance(desc, dict):
            problems.append(f"{name}: accepted a descriptor that is not a map")
            continue
        storage = BURN_DTYPES.get(dtype_key(desc.get("dtype")))
        span = _check_tensor(
            record, name, storage, desc.get("shape"), desc.get("data_offsets"), data, data_start, problems
        )
        if span is not None:
            ranges[name] = span
        if record.tensors[name].param_id != desc.get("param_id"):
            problems.append(
                f"{name}: param_id {record.tensors[name].param_id}, declared {desc.get('param_id')!r}"
            )
    _check_disjoint(ranges, problems)
    if record.metadata != (meta.get("metadata") or {}):
        problems.append("metadata differs from the file's")
    for key, value in (meta.get("scalars") or {}).items():
        loaded = record.scalars.get(key)
        ((_variant, raw),) = value.items() if isinstance(value, dict) and len(value) == 1 else ((None, None),)
        if loaded is None or not (
            loaded == raw or (isinstance(raw, float) and math.isnan(raw) and math.isnan(loaded))
        ):
            problems.append(f"scalar {key!r}: {loaded!r}, declared {value!r:.60}")
    return problems


def _no_duplicates(pairs: list) -> dict:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate keys {sorted(k for k in keys if keys.count(k) > 1)}")
    return dict(pairs)


def safetensors_problems(record: Any, data: bytes) -> list[str]:
    size = int.from_bytes(data[:8], "little")
    if 8 + size > len(data):
        return [f"accepted a header length {size} past the end of a {len(data)}-byte file"]
    try:
        header = json.loads(
            data[8 : 8 + size].decode("utf-8"),
            object_pairs_hook=_no_duplicates,
            parse_constant=_refuse_constant,
        )
    except ValueError as error:
        return [f"accepted a header the oracle cannot parse: {error}"]
    if not isinstance(header, dict):
        return ["accepted a header that is not an object"]
    declared = {k: v for k, v in header.items() if k != "__metadata__"}
    if set(record.tensors) != set(declared):
        return [f"tensors {sorted(record.tensors)}, declared {sorted(declared)}"]
    problems: list[str] = []
    data_start = 8 + size
    ranges = {}
    for name, desc in declared.items():
        if not isinstance(desc, dict):
            problems.append(f"{name}: accepted an entry that is not an object")
            continue
        storage = _SAFETENSORS_DTYPES.get(desc.get("dtype")) if isinstance(desc.get("dtype"), str) else None
        span = _check_tensor(
            record, name, storage, desc.get("shape"), desc.get("data_offsets"), data, data_start, problems
        )
        if span is not None:
            ranges[name] = span
    _check_disjoint(ranges, problems)
    metadata = header.get("__metadata__") or {}
    if record.metadata != metadata:
        problems.append(f"metadata {record.metadata!r:.60}, declared {metadata!r:.60}")
    return problems


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
