"""`SqliteDataset`: one split of an SQLite dataset file, rows read lazily by `row_id`.

Safe across processes: the connection is opened read-only, per process, on first use, and
is never pickled, so a `DataLoader` can send the dataset to its workers and each opens its own.

Integrity: in files ember writes (format 2, see `sqlite_format`) opening a split checks its
row count, `row_id` range and checksum sum, and every row read is checked against its own
checksum, so a damaged file raises `DatasetCorruptError` instead of giving wrong rows. Files
written by Burn or by earlier ember versions carry no checksums and are read unverified
(`verified` is False). Every failure to read the file, whatever SQLite, JSON or text
decoding raised, is a `DatasetCorruptError` naming the file and the split.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .dataset import Dataset, check_index
from .sqlite_format import (
    APPLICATION_ID,
    CHECKSUM_COLUMN,
    COLUMNS_TABLE,
    INFO_TABLE,
    KINDS,
    ROW_ID,
    SPLITS_TABLE,
    DatasetCorruptError,
    decoder,
    quote_identifier,
    row_checksum,
    split_digest,
    split_key,
)

__all__ = ["DatasetCorruptError", "SqliteDataset"]

_MANY_CHUNK = 500  # indices per query in get_many (SQLite limits bound parameters)
# What reading a damaged file can raise besides DatasetCorruptError: SQLite's errors (text
# that is not UTF-8 included), JSON's (a ValueError), and values of an unexpected type.
_READ_ERRORS = (sqlite3.Error, ValueError, TypeError, OverflowError)
# The same while opening, where a ValueError is ours (no such split) and JSON is parsed apart.
_OPEN_ERRORS = (sqlite3.Error, UnicodeError, TypeError, OverflowError)


def _connect_read_only(path: str, immutable: bool) -> sqlite3.Connection:
    # `immutable` (files ember writes: never changed once renamed into place) also keeps
    # SQLite from creating -wal/-shm files beside a file whose damaged header claims WAL mode.
    uri = Path(path).resolve().as_uri() + ("?mode=ro&immutable=1" if immutable else "?mode=ro")
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    # Check each page's cells as it is loaded: damaged pages fail early and cheaply.
    conn.execute("PRAGMA cell_size_check = ON")
    return conn


@dataclass(frozen=True)
class _Layout:
    """How one split is stored, as found (and checked) when the dataset is opened."""

    verified: bool
    count: int
    first: int  # row_id of item 0 when ids are contiguous
    row_ids: list[int] | None  # explicit ids (unverified files with gaps)
    stored: list[str]  # field columns in table order, after row_id (and the checksum)
    kinds: dict[str, str]


class SqliteDataset(Dataset[dict]):
    """The rows of one split (table) of an SQLite dataset file, as `dict`s.

    Items are read on demand (`get` runs one indexed query), so a split of any size costs no
    memory up front. Values come back with the Python type recorded when the file was written
    (see `sqlite_format`); the `row_id` column is not part of the items.

    Opening a split of a file ember wrote scans the table once (row count and checksum sum);
    each read checks its rows' checksums, which needs every column of the row, so selecting
    fewer `columns` saves decoding but not reading.

    Args:
        db_file: the SQLite file (e.g. from `HuggingfaceDatasetLoader.db_file()` or
            `SqliteDatasetWriter`).
        split: the split (table) name, e.g. `"train"`.
        columns: the columns to read, in this order; `None` reads all of them.

    Raises:
        FileNotFoundError: if `db_file` does not exist.
        ValueError: if the file has no table `split` (the message lists the splits), the
            table has no `row_id` column, or `columns` names an unknown column.
        DatasetCorruptError: (a `ValueError`) if the file is not an SQLite database or is
            damaged; reads (`get`, `get_many`) raise it too when a row is damaged.
    """

    def __init__(
        self,
        db_file: str | os.PathLike[str],
        split: str,
        columns: Sequence[str] | None = None,
    ) -> None:
        self._path = os.fspath(db_file)
        self._split = split
        if not os.path.isfile(self._path):
            raise FileNotFoundError(f"SqliteDataset: no database file at {self._path}")
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._immutable = _check_header(self._path, split)
        try:
            conn = self._connection()
        except sqlite3.Error as error:
            raise self._corrupt(f"cannot be opened ({_describe(error)})") from None
        try:
            layout = _inspect(conn, self._path, split)
        except BaseException:
            self.close()
            raise
        available = layout.stored
        if columns is None:
            selected = list(available)
        else:
            selected = list(columns)
            unknown = [name for name in selected if name not in available]
            if unknown:
                self.close()
                raise ValueError(
                    f"SqliteDataset: split {split!r} of {self._path} has no column(s) {unknown}; "
                    f"its columns are {available}"
                )
        self._layout = layout
        self._columns = selected
        self._decoders: list[tuple[int, Callable[[Any], Any]]] = [
            (position, fn)
            for position, name in enumerate(selected)
            if (fn := decoder(layout.kinds.get(name))) is not None
        ]
        table = quote_identifier(split)
        self._key = split_key(split)
        if layout.verified:
            # Every stored column is read, so the row's checksum can be checked.
            read = [CHECKSUM_COLUMN] + [quote_identifier(name) for name in available]
            self._picks = [available.index(name) for name in selected]
        else:
            read = [quote_identifier(name) for name in selected] or ["NULL"]
            self._picks = list(range(len(selected)))
        self._select_one = f"SELECT {', '.join(read)} FROM {table} WHERE {ROW_ID} = ?"
        self._select_many = f"SELECT {ROW_ID}, {', '.join(read)} FROM {table} WHERE {ROW_ID} IN "

    @classmethod
    def from_db_file(cls, db_file: str | os.PathLike[str], split: str) -> "SqliteDataset":
        """Burn's constructor name: same as `SqliteDataset(db_file, split)`."""
        return cls(db_file, split)

    @staticmethod
    def splits(db_file: str | os.PathLike[str]) -> list[str]:
        """The split (table) names stored in `db_file`, in creation order.

        Args:
            db_file: an SQLite dataset file.

        Raises:
            FileNotFoundError: if `db_file` does not exist.
            DatasetCorruptError: if it is not an SQLite database or its schema is damaged.
        """
        path = os.fspath(db_file)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"SqliteDataset.splits: no database file at {path}")
        immutable = _check_header(path, None)
        try:
            conn = _connect_read_only(path, immutable)
        except sqlite3.Error as error:
            detail = f"cannot be opened ({_describe(error)})"
            raise DatasetCorruptError(path, None, detail) from None
        try:
            splits = _list_splits(conn)
            tables = _tables(conn)
            application_id = conn.execute("PRAGMA application_id").fetchone()[0]
            columns = [
                [row[1] for row in conn.execute(f"PRAGMA table_info({quote_identifier(name)})")]
                for name in splits
            ]
            declared = None
            if _is_format_2(conn, tables, application_id, columns):
                if SPLITS_TABLE not in tables:
                    raise DatasetCorruptError(
                        path, None, f"is an ember format-2 dataset but has no {SPLITS_TABLE} table"
                    )
                declared = [row[0] for row in conn.execute(f"SELECT split FROM {SPLITS_TABLE}")]
        except _OPEN_ERRORS as error:
            raise DatasetCorruptError(path, None, _not_a_database(error)) from None
        finally:
            conn.close()
        # Format 2: the split tables must be those the file records (damage can hide one).
        if declared is not None and sorted(declared, key=str) != sorted(splits):
            raise DatasetCorruptError(
                path, None, f"holds the split tables {splits} but records the splits {declared}"
            )
        return splits

    @property
    def db_file(self) -> str:
        """Path of the SQLite file."""
        return self._path

    @property
    def split(self) -> str:
        """The split (table) this dataset reads."""
        return self._split

    @property
    def columns(self) -> list[str]:
        """The columns each item holds, in order."""
        return list(self._columns)

    @property
    def verified(self) -> bool:
        """Whether the split carries ember's checksums (format 2), checked on open and on
        every read; False for files written by Burn or by earlier ember versions."""
        return self._layout.verified

    def __len__(self) -> int:
        return self._layout.count

    def _row_id(self, position: int) -> int:
        if self._layout.row_ids is not None:
            return self._layout.row_ids[position]
        return self._layout.first + position

    def _corrupt(self, detail: str) -> DatasetCorruptError:
        return DatasetCorruptError(self._path, self._split, detail)

    def _to_item(self, position: int, row_id: int, values: Sequence[Any]) -> dict:
        """Check a fetched row (checksum first) and decode it into an item."""
        if self._layout.verified:
            stored, fields = values[0], values[1:]
            try:
                actual = row_checksum(self._key, row_id, fields)
            except (TypeError, UnicodeError) as error:
                detail = f"item {position} (row_id {row_id}) is damaged: {error}"
                raise self._corrupt(detail) from None
            if actual != stored:
                raise self._corrupt(
                    f"item {position} (row_id {row_id}) is damaged: its checksum is {actual}, "
                    f"the file records {stored!r}"
                )
        else:
            fields = values
        item = [fields[pick] for pick in self._picks]
        for index, decode in self._decoders:
            try:
                item[index] = decode(item[index])
            except _READ_ERRORS as error:
                raise self._corrupt(
                    f"item {position} (row_id {row_id}), column {self._columns[index]!r}: "
                    f"cannot decode the stored value ({_describe(error)})"
                ) from None
        return dict(zip(self._columns, item))

    def get(self, index: int) -> dict:
        position = check_index("SqliteDataset", index, len(self))
        row_id = self._row_id(position)
        try:
            conn = self._connection()
            with self._lock:
                row = conn.execute(self._select_one, (row_id,)).fetchone()
        except _READ_ERRORS as error:
            raise self._corrupt(
                f"reading item {position} (row_id {row_id}) failed: {_describe(error)}"
            ) from None
        if row is None:
            raise self._corrupt(
                f"item {position} (row_id {row_id}) is missing (the file is damaged, or was "
                "modified while in use)"
            )
        return self._to_item(position, row_id, row)

    def get_many(self, indices: Sequence[int]) -> list[dict]:
        """Read several items with a few queries instead of one per item.

        Args:
            indices: item positions (duplicates and any order allowed).

        Returns:
            The items, in the order of `indices`.
        """
        positions = [check_index("SqliteDataset", index, len(self)) for index in indices]
        row_ids = [self._row_id(position) for position in positions]
        unique = list(dict.fromkeys(row_ids))
        found: dict[int, Sequence[Any]] = {}
        try:
            conn = self._connection()
            with self._lock:
                for start in range(0, len(unique), _MANY_CHUNK):
                    chunk = unique[start : start + _MANY_CHUNK]
                    sql = self._select_many + "(" + ", ".join("?" for _ in chunk) + ")"
                    for row in conn.execute(sql, chunk):
                        found[row[0]] = row[1:]
        except _READ_ERRORS as error:
            raise self._corrupt(f"reading {len(unique)} items failed: {_describe(error)}") from None
        missing = [row_id for row_id in unique if row_id not in found]
        if missing:
            raise self._corrupt(
                f"rows with {ROW_ID} {missing[:5]} are missing (the file is damaged, or was "
                "modified while in use)"
            )
        return [
            self._to_item(position, row_id, found[row_id]) for position, row_id in zip(positions, row_ids)
        ]

    def _connection(self) -> sqlite3.Connection:
        # One connection per process: SQLite connections must not cross fork(), and pickled
        # copies (DataLoader workers) arrive without one.
        pid = os.getpid()
        if self._conn is None or self._pid != pid:
            self._conn = _connect_read_only(self._path, self._immutable)
            self._pid = pid
        return self._conn

    def close(self) -> None:
        """Close this process's connection (it reopens on the next read)."""
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def __del__(self) -> None:
        # Close explicitly (newer Pythons warn about connections left to the collector).
        if getattr(self, "_conn", None) is not None:
            self.close()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_conn"] = None
        state["_pid"] = -1
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"SqliteDataset(db_file={self._path!r}, split={self._split!r}, len={len(self)}, "
            f"columns={self._columns}, verified={self.verified})"
        )


# -- opening a split ------------------------------------------------------------------------------


_SQLITE_MAGIC = b"SQLite format 3\x00"


def _check_header(path: str, split: str | None) -> bool:
    """Refuse a file that does not start with SQLite's header: SQLite itself reads an empty
    (or nearly empty) file as an empty database, which would make a truncated dataset file
    look like one without splits. Returns whether the header marks a format-2 ember file."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(100)
    except OSError as error:
        raise DatasetCorruptError(path, split, f"cannot be read ({_describe(error)})") from None
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        size = os.path.getsize(path)
        detail = f"is not an SQLite database ({size} bytes, without SQLite's 100-byte header)"
        raise DatasetCorruptError(path, split, detail)
    return int.from_bytes(head[68:72], "big") == APPLICATION_ID


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _not_a_database(error: sqlite3.Error) -> str:
    return f"is not an SQLite database, or its schema is damaged ({_describe(error)})"


def _list_splits(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid").fetchall()
    return [
        name
        for (name,) in rows
        if not name.lower().startswith("sqlite_") and not name.lower().startswith("__ember_")
    ]


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _inspect(conn: sqlite3.Connection, path: str, split: str) -> _Layout:
    """Find how `split` is stored and, for format-2 files, check it against its entry."""
    try:
        splits = _list_splits(conn)
        tables = _tables(conn)
        application_id = conn.execute("PRAGMA application_id").fetchone()[0]
    except _OPEN_ERRORS as error:
        raise DatasetCorruptError(path, split, _not_a_database(error)) from None
    try:
        return _inspect_split(conn, path, split, splits, tables, application_id)
    except _OPEN_ERRORS as error:
        raise DatasetCorruptError(path, split, f"cannot be read ({_describe(error)})") from None


def _inspect_split(
    conn: sqlite3.Connection,
    path: str,
    split: str,
    splits: list[str],
    tables: set[str],
    application_id: int,
) -> _Layout:
    corrupt = lambda detail: DatasetCorruptError(path, split, detail)
    table_columns: list[str] = []
    if split in splits:
        table = quote_identifier(split)
        table_columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    verified = _is_format_2(conn, tables, application_id, [table_columns])
    if not verified:
        return _inspect_unverified(conn, path, split, splits, tables, table_columns)

    if SPLITS_TABLE not in tables:
        raise corrupt(f"the file is an ember format-2 dataset but has no {SPLITS_TABLE} table")
    entry = conn.execute(
        f"SELECT rows, checksum_sum, schema, digest FROM {SPLITS_TABLE} WHERE split = ?", (split,)
    ).fetchone()
    if entry is None:
        if split not in splits:
            raise ValueError(f"SqliteDataset: {path} has no split {split!r}; available splits: {splits}")
        raise corrupt(f"the split has no entry in {SPLITS_TABLE}")
    rows, checksum_sum, schema, digest = entry
    if not (
        type(rows) is int
        and type(checksum_sum) is int
        and isinstance(schema, str)
        and type(digest) is int
        and split_digest(split, rows, checksum_sum, schema) == digest
    ):
        raise corrupt(f"its {SPLITS_TABLE} entry is damaged (digest mismatch)")
    fields = _parse_schema(schema)
    if fields is None:
        raise corrupt(f"its {SPLITS_TABLE} entry holds an invalid schema {schema!r:.200}")
    if split not in splits:
        raise corrupt("the split's table is missing")
    expected = [ROW_ID, CHECKSUM_COLUMN] + [name for name, _ in fields]
    if table_columns != expected:
        raise corrupt(f"the table has columns {table_columns}, the file records {expected}")
    table = quote_identifier(split)
    count, first, last, total = conn.execute(
        f"SELECT COUNT(*), MIN({ROW_ID}), MAX({ROW_ID}), SUM({CHECKSUM_COLUMN}) FROM {table}"
    ).fetchone()
    found_state = (count, first, last, total)
    wanted = (rows, 1, rows, checksum_sum) if rows else (0, None, None, None)
    if found_state != wanted:
        raise corrupt(
            f"the table holds {count} rows (row_id {first}..{last}, checksum sum {total}), the "
            f"file records {rows} rows (row_id 1..{rows}, checksum sum {checksum_sum})"
        )
    return _Layout(True, rows, 1, None, [name for name, _ in fields], dict(fields))


def _is_format_2(
    conn: sqlite3.Connection, tables: set[str], application_id: int, columns: list[list[str]]
) -> bool:
    """Whether the file carries any format-2 marker (`columns`: some split tables' columns).

    Any one marker is enough, so damage cannot downgrade a checked file to an unchecked read
    by erasing one of them."""
    if application_id == APPLICATION_ID or SPLITS_TABLE in tables:
        return True
    if any(CHECKSUM_COLUMN in names for names in columns):
        return True
    if INFO_TABLE in tables:
        found = conn.execute(f"SELECT value FROM {INFO_TABLE} WHERE key = 'version'").fetchone()
        return found is not None and found[0] != "1"
    return False


def _parse_schema(schema: str) -> list[tuple[str, str]] | None:
    try:
        fields = json.loads(schema)
    except ValueError:
        return None
    if not isinstance(fields, list) or not fields:
        return None
    parsed = []
    for field in fields:
        if not (
            isinstance(field, list) and len(field) == 2 and isinstance(field[0], str) and field[1] in KINDS
        ):
            return None
        parsed.append((field[0], field[1]))
    if len({name for name, _ in parsed}) != len(parsed):
        return None
    return parsed


def _inspect_unverified(
    conn: sqlite3.Connection,
    path: str,
    split: str,
    splits: list[str],
    tables: set[str],
    table_columns: list[str],
) -> _Layout:
    """Format-1 and Burn files: no checksums, row ids as found."""
    if split not in splits:
        raise ValueError(f"SqliteDataset: {path} has no split {split!r}; available splits: {splits}")
    if ROW_ID not in table_columns:
        raise ValueError(
            f"SqliteDataset: table {split!r} in {path} has no {ROW_ID!r} column "
            f"(columns: {table_columns}); it was not written as a dataset split"
        )
    kinds: dict[str, str] = {}
    if COLUMNS_TABLE in tables:
        kinds = dict(conn.execute(f"SELECT name, kind FROM {COLUMNS_TABLE} WHERE split = ?", (split,)))
    table = quote_identifier(split)
    # Row ids are contiguous from `first` in files ember and Burn write (Burn numbers from
    # 1); other files fall back to an explicit id list.
    count, first, last = conn.execute(
        f"SELECT COUNT(*), MIN({ROW_ID}), MAX({ROW_ID}) FROM {table}"
    ).fetchone()
    row_ids = None
    if count and last - first + 1 != count:
        query = f"SELECT {ROW_ID} FROM {table} ORDER BY {ROW_ID}"
        row_ids = [row[0] for row in conn.execute(query)]
    stored = [name for name in table_columns if name != ROW_ID]
    start = int(first) if first is not None else 1
    return _Layout(False, int(count), start, row_ids, stored, kinds)
