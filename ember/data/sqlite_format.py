"""Layout of ember's SQLite dataset files, shared by the writer and the reader.

One file holds every split of a dataset, one table per split (as Burn's importer does):

- each split table has an `row_id INTEGER PRIMARY KEY` column numbered from 1, so item `i`
  is the row `row_id = i + 1` (Burn's convention, so Burn can read these files too), then
  (format 2) the column `__ember_checksum__`, then one column per field;
- the table `__ember_columns__(split, position, name, kind)` records how each field was
  encoded, so values come back with their Python type: `int`, `float`, `text`, `blob`,
  `bool` (stored as 0/1) or `json` (lists and nested records, stored as JSON text);
- the table `__ember_info__(key, value)` holds the format version and where the data came from;
- (format 2) the table `__ember_splits__(split, rows, checksum_sum, schema, digest)` holds, per
  split, the row count, the sum of the row checksums, the fields as JSON `[[name, kind], ...]`,
  and a CRC-32 `digest` of those four, so a damaged entry is noticed too; the file header's
  `application_id` is `APPLICATION_ID`.

Integrity (format 2). Each row stores the CRC-32 of its split name, `row_id` and stored
values (`row_checksum`). Opening a split checks its `__ember_splits__` entry against its
digest and the table (one scan: row count, `row_id` range 1..rows, checksum sum); reading a
row checks that row's checksum. So a damaged file can fail, but a read that succeeds
returns the rows that were written (up to CRC-32's 1 in 2**32 chance of missing a change).
Every failure is a `DatasetCorruptError` naming the file and the split.

Files without these markers (format 1, written by earlier ember versions, or files written
by Burn) are still read, unverified: Burn's own files carry no checksums, and refusing
format-1 files would break dataset caches that still read correctly; `SqliteDataset.verified`
tells which kind a split is. A file that carries any format-2 marker is always verified, so
damage cannot turn a verified file into an unverified one. Nothing in a file is ever
executed: values are numbers, text, bytes or JSON.
"""

from __future__ import annotations

import json
import math
import operator
import os
import struct
import zlib
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "APPLICATION_ID",
    "CHECKSUM_COLUMN",
    "COLUMNS_TABLE",
    "FORMAT_VERSION",
    "INFO_TABLE",
    "KINDS",
    "ROW_ID",
    "SPLITS_TABLE",
    "DatasetCorruptError",
    "decoder",
    "encoder",
    "infer_kind",
    "quote_identifier",
    "row_checksum",
    "split_digest",
    "split_key",
    "validate_column_name",
    "validate_split_name",
]

ROW_ID = "row_id"
CHECKSUM_COLUMN = "__ember_checksum__"
COLUMNS_TABLE = "__ember_columns__"
INFO_TABLE = "__ember_info__"
SPLITS_TABLE = "__ember_splits__"
FORMAT_VERSION = "2"
APPLICATION_ID = 0x454D4244  # "EMBD" in the SQLite header: marks a format-2 ember file

_RESERVED_PREFIX = "__ember_"
_INT64 = 1 << 63


class DatasetCorruptError(ValueError):
    """An SQLite dataset file cannot be read as what it declares: not an SQLite database,
    damaged pages, a row or a split entry whose checksum does not match, values that do not
    decode. The message names the file and the split.

    Attributes:
        path: the database file.
        split: the split being read, or `None` when the whole file is unreadable.
    """

    def __init__(self, path: str | os.PathLike[str], split: str | None, detail: str) -> None:
        self.path = os.fspath(path)
        self.split = split
        self.detail = detail
        where = self.path if split is None else f"{self.path}, split {split!r}"
        super().__init__(f"SqliteDataset: {where}: {detail}")

    def __reduce__(self) -> Any:
        # DataLoader workers send exceptions to the main process by pickling them.
        return (type(self), (self.path, self.split, self.detail))


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
    if lowered.startswith(("sqlite_", _RESERVED_PREFIX)):
        raise ValueError(
            f"split name {split!r} is reserved (names starting with 'sqlite_' or '__ember_' "
            "belong to SQLite and to ember's metadata tables)"
        )


def validate_column_name(split: str, name: Any) -> None:
    """Reject column names that are not text or that belong to the row index or ember."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"SqliteDatasetWriter: invalid column name {name!r}")
    if name.lower() == ROW_ID or name.lower().startswith(_RESERVED_PREFIX):
        raise ValueError(
            f"SqliteDatasetWriter: split {split!r} has a column named {name!r}, which is "
            f"reserved for the row index ({ROW_ID!r}) or ember's checksums (names starting "
            "with '__ember_'); rename it first"
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
        number = int(value)
    else:
        number = operator.index(value)
    if not -_INT64 <= number < _INT64:
        raise OverflowError(f"{number} does not fit in SQLite's 64-bit integers")
    return int(number)


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


# -- integrity ----------------------------------------------------------------------------------

_LENGTH = struct.Struct("<Q")
_FLOAT = struct.Struct("<d")


def split_key(split: str) -> int:
    """The CRC-32 every row checksum of `split` starts from (so rows of another split with
    the same `row_id` and values do not match)."""
    return zlib.crc32(b"ember-sqlite-row\x00" + split.encode("utf-8") + b"\x00")


def row_checksum(key: int, row_id: int, values: Sequence[Any]) -> int:
    """CRC-32 of one row as SQLite stores it: `row_id` and each value with its storage class.

    `key` is `split_key(split)`. A float NaN counts as NULL and -0.0 as 0.0, because that is
    what SQLite stores for them, so the writer's checksum matches what a reader gets back.
    Values come from the writer's encoders or from SQLite: `None`, `int`, `float`, `str`,
    `bytes`.
    """
    parts = [row_id.to_bytes(8, "little", signed=True)]
    for value in values:
        if value is None:
            parts.append(b"N")
        elif isinstance(value, int):
            parts.append(b"I" + value.to_bytes(8, "little", signed=True))
        elif isinstance(value, float):
            parts.append(b"N" if value != value else b"F" + _FLOAT.pack(value + 0.0))
        elif isinstance(value, str):
            data = value.encode("utf-8")
            parts.append(b"T" + _LENGTH.pack(len(data)))
            parts.append(data)
        elif isinstance(value, bytes):
            parts.append(b"B" + _LENGTH.pack(len(value)))
            parts.append(value)
        else:
            raise TypeError(f"cannot checksum a stored value of type {type(value).__name__}")
    return zlib.crc32(b"".join(parts), key)


def split_digest(split: str, rows: int, checksum_sum: int, schema: str) -> int:
    """CRC-32 guarding one `__ember_splits__` entry."""
    text = json.dumps([split, rows, checksum_sum, schema], ensure_ascii=True)
    return zlib.crc32(text.encode("ascii"))
