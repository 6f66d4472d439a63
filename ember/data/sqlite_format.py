"""Layout of ember's SQLite dataset files, shared by the writer and the reader.

One file holds every split of a dataset, one table per split (as Burn's importer does):

- each split table has an `row_id INTEGER PRIMARY KEY` column numbered from 1, so item `i`
  is the row `row_id = i + 1` (Burn's convention, so Burn can read these files too), then one
  column per field;
- the table `__ember_columns__(split, position, name, kind)` records how each field was
  encoded, so values come back with their Python type: `int`, `float`, `text`, `blob`,
  `bool` (stored as 0/1) or `json` (lists and nested records, stored as JSON text);
- the table `__ember_info__(key, value)` holds the format version and where the data came from.

Files without the two `__ember_*` tables (e.g. written by Burn) are read with SQLite's own
value types. Nothing in a file is ever executed: values are numbers, text, bytes or JSON.
"""

from __future__ import annotations

import json
import math
import operator
from typing import Any, Callable

__all__ = [
    "COLUMNS_TABLE",
    "INFO_TABLE",
    "FORMAT_VERSION",
    "KINDS",
    "ROW_ID",
    "decoder",
    "encoder",
    "infer_kind",
    "quote_identifier",
    "validate_split_name",
]

ROW_ID = "row_id"
COLUMNS_TABLE = "__ember_columns__"
INFO_TABLE = "__ember_info__"
FORMAT_VERSION = "1"

# kind -> SQLite column type
KINDS: dict[str, str] = {
    "int": "INTEGER",
    "float": "REAL",
    "text": "TEXT",
    "blob": "BLOB",
    "bool": "INTEGER",
    "json": "TEXT",
}


def quote_identifier(name: str) -> str:
    """Quote a table or column name for SQL (any text is allowed inside double quotes)."""
    if "\x00" in name:
        raise ValueError(f"SQLite identifiers cannot contain NUL characters: {name!r}")
    return '"' + name.replace('"', '""') + '"'


def validate_split_name(split: str) -> None:
    """Reject split names that would collide with SQLite's or ember's own tables."""
    if not isinstance(split, str) or not split:
        raise ValueError(f"split name must be a non-empty string, got {split!r}")
    lowered = split.lower()
    if lowered.startswith("sqlite_") or lowered.startswith("__ember_"):
        raise ValueError(
            f"split name {split!r} is reserved (names starting with 'sqlite_' or '__ember_' "
            "belong to SQLite and to ember's metadata tables)"
        )


def infer_kind(value: Any) -> str | None:
    """The storage kind for a Python value, or `None` for `None` (unknown yet)."""
    if value is None:
        return None
    if isinstance(value, bool) or _is_numpy_kind(value, "b"):
        return "bool"
    if isinstance(value, int) or _is_numpy_kind(value, "iu"):
        return "int"
    if isinstance(value, float) or _is_numpy_kind(value, "f"):
        return "float"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "blob"
    return "json"


def _is_numpy_kind(value: Any, kinds: str) -> bool:
    # numpy scalars (np.int64, np.float32, np.bool_) without importing numpy here
    dtype = getattr(value, "dtype", None)
    return getattr(value, "ndim", None) == 0 and getattr(dtype, "kind", None) in tuple(kinds)


def _json_default(value: Any) -> Any:
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return tolist()
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError("bytes inside a list or record cannot be stored as JSON")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _encode_int(value: Any) -> int:
    if isinstance(value, float) or _is_numpy_kind(value, "f"):
        if not math.isfinite(float(value)) or float(value) != int(value):
            raise TypeError(f"float {value!r} is not an integer")
        return int(value)
    return operator.index(value)


def _encode_float(value: Any) -> float:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{type(value).__name__} {value!r} is not a number")
    return float(value)


def _encode_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _encode_blob(value: Any) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{type(value).__name__} is not bytes")
    return bytes(value)


def _encode_bool(value: Any) -> int:
    if not (isinstance(value, (bool, int)) or _is_numpy_kind(value, "biu")):
        raise TypeError(f"{type(value).__name__} {value!r} is not a bool")
    return 1 if value else 0


def _encode_json(value: Any) -> str:
    return json.dumps(value, default=_json_default, ensure_ascii=False, allow_nan=True)


_ENCODERS: dict[str, Callable[[Any], Any]] = {
    "int": _encode_int,
    "float": _encode_float,
    "text": _encode_text,
    "blob": _encode_blob,
    "bool": _encode_bool,
    "json": _encode_json,
}


def encoder(kind: str) -> Callable[[Any], Any]:
    """The function turning a Python value into the SQLite value stored for `kind`."""
    try:
        return _ENCODERS[kind]
    except KeyError:
        raise ValueError(f"unknown column kind {kind!r}; expected one of {sorted(KINDS)}") from None


def _decode_bool(value: Any) -> Any:
    return None if value is None else bool(value)


def _decode_json(value: Any) -> Any:
    return None if value is None else json.loads(value)


def decoder(kind: str | None) -> Callable[[Any], Any] | None:
    """The function turning a stored SQLite value back into Python (`None`: keep as is)."""
    if kind == "bool":
        return _decode_bool
    if kind == "json":
        return _decode_json
    return None
