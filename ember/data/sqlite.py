"""`SqliteDataset`: one split of an SQLite dataset file, rows read lazily by `row_id`.

Safe across processes: the connection is opened read-only, per process, on first use, and
is never pickled, so a `DataLoader` can send the dataset to its workers and each opens its own.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from .dataset import Dataset, check_index
from .sqlite_format import COLUMNS_TABLE, ROW_ID, decoder, quote_identifier

__all__ = ["SqliteDataset"]

_MANY_CHUNK = 500  # indices per query in get_many (SQLite limits bound parameters)


def _connect_read_only(path: str) -> sqlite3.Connection:
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


class SqliteDataset(Dataset[dict]):
    """The rows of one split (table) of an SQLite dataset file, as `dict`s.

    Items are read on demand (`get` runs one indexed query), so a split of any size costs no
    memory up front. Values come back with the Python type recorded when the file was written
    (see `sqlite_format`); the `row_id` column is not part of the items.

    Args:
        db_file: the SQLite file (e.g. from `HuggingfaceDatasetLoader.db_file()` or
            `SqliteDatasetWriter`).
        split: the split (table) name, e.g. `"train"`.
        columns: the columns to read, in this order; `None` reads all of them.

    Raises:
        FileNotFoundError: if `db_file` does not exist.
        ValueError: if the file has no table `split` (the message lists the splits), the
            table has no `row_id` column, or `columns` names an unknown column.
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
        conn = self._connection()
        try:
            splits = _list_splits(conn)
        except sqlite3.DatabaseError as error:
            raise ValueError(
                f"SqliteDataset: {self._path} is not an SQLite database ({error})"
            ) from None
        if split not in splits:
            raise ValueError(
                f"SqliteDataset: {self._path} has no split {split!r}; available splits: {splits}"
            )
        table = quote_identifier(split)
        table_columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        if ROW_ID not in table_columns:
            raise ValueError(
                f"SqliteDataset: table {split!r} in {self._path} has no {ROW_ID!r} column "
                f"(columns: {table_columns}); it was not written as a dataset split"
            )
        available = [name for name in table_columns if name != ROW_ID]
        if columns is None:
            selected = available
        else:
            selected = list(columns)
            unknown = [name for name in selected if name not in available]
            if unknown:
                raise ValueError(
                    f"SqliteDataset: split {split!r} of {self._path} has no column(s) {unknown}; "
                    f"its columns are {available}"
                )
        kinds = _column_kinds(conn, split)
        self._columns = selected
        self._decoders: list[tuple[int, Callable[[Any], Any]]] = [
            (position, fn)
            for position, name in enumerate(selected)
            if (fn := decoder(kinds.get(name))) is not None
        ]
        # Row ids are contiguous from `first` in files ember and Burn write (Burn numbers
        # from 1); other files fall back to an explicit id list.
        count, first, last = conn.execute(
            f"SELECT COUNT(*), MIN({ROW_ID}), MAX({ROW_ID}) FROM {table}"
        ).fetchone()
        self._len = int(count)
        self._first = int(first) if first is not None else 1
        self._row_ids: list[int] | None = None
        if count and last - first + 1 != count:
            self._row_ids = [
                row[0] for row in conn.execute(f"SELECT {ROW_ID} FROM {table} ORDER BY {ROW_ID}")
            ]
        selection = ", ".join(quote_identifier(name) for name in selected) or "NULL"
        self._select_one = f"SELECT {selection} FROM {table} WHERE {ROW_ID} = ?"
        self._select_many = f"SELECT {ROW_ID}, {selection} FROM {table} WHERE {ROW_ID} IN "

    @classmethod
    def from_db_file(cls, db_file: str | os.PathLike[str], split: str) -> "SqliteDataset":
        """Burn's constructor name: same as `SqliteDataset(db_file, split)`."""
        return cls(db_file, split)

    @staticmethod
    def splits(db_file: str | os.PathLike[str]) -> list[str]:
        """The split (table) names stored in `db_file`, in creation order.

        Args:
            db_file: an SQLite dataset file.
        """
        path = os.fspath(db_file)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"SqliteDataset.splits: no database file at {path}")
        conn = _connect_read_only(path)
        try:
            return _list_splits(conn)
        finally:
            conn.close()

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

    def __len__(self) -> int:
        return self._len

    def _row_id(self, position: int) -> int:
        if self._row_ids is not None:
            return self._row_ids[position]
        return self._first + position

    def _to_item(self, values: Sequence[Any]) -> dict:
        values = list(values)
        for position, decode in self._decoders:
            values[position] = decode(values[position])
        return dict(zip(self._columns, values))

    def get(self, index: int) -> dict:
        position = check_index("SqliteDataset", index, self._len)
        conn = self._connection()
        with self._lock:
            row = conn.execute(self._select_one, (self._row_id(position),)).fetchone()
        if row is None:
            raise LookupError(
                f"SqliteDataset: row {position} of split {self._split!r} disappeared from "
                f"{self._path} (was the file modified while in use?)"
            )
        return self._to_item(row)

    def get_many(self, indices: Sequence[int]) -> list[dict]:
        """Read several items with a few queries instead of one per item.

        Args:
            indices: item positions (duplicates and any order allowed).

        Returns:
            The items, in the order of `indices`.
        """
        positions = [check_index("SqliteDataset", index, self._len) for index in indices]
        row_ids = [self._row_id(position) for position in positions]
        unique = list(dict.fromkeys(row_ids))
        found: dict[int, Sequence[Any]] = {}
        conn = self._connection()
        with self._lock:
            for start in range(0, len(unique), _MANY_CHUNK):
                chunk = unique[start : start + _MANY_CHUNK]
                sql = self._select_many + "(" + ", ".join("?" for _ in chunk) + ")"
                for row in conn.execute(sql, chunk):
                    found[row[0]] = row[1:]
        missing = [row_id for row_id in unique if row_id not in found]
        if missing:
            raise LookupError(
                f"SqliteDataset: rows with {ROW_ID} {missing[:5]} of split {self._split!r} "
                f"disappeared from {self._path} (was the file modified while in use?)"
            )
        return [self._to_item(found[row_id]) for row_id in row_ids]

    def _connection(self) -> sqlite3.Connection:
        # One connection per process: SQLite connections must not cross fork(), and pickled
        # copies (DataLoader workers) arrive without one.
        pid = os.getpid()
        if self._conn is None or self._pid != pid:
            self._conn = _connect_read_only(self._path)
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
            f"SqliteDataset(db_file={self._path!r}, split={self._split!r}, len={self._len}, "
            f"columns={self._columns})"
        )


def _list_splits(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid"
    ).fetchall()
    return [
        name
        for (name,) in rows
        if not name.lower().startswith("sqlite_") and not name.lower().startswith("__ember_")
    ]


def _column_kinds(conn: sqlite3.Connection, split: str) -> dict[str, str]:
    has_metadata = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (COLUMNS_TABLE,)
    ).fetchone()
    if not has_metadata:
        return {}
    return dict(
        conn.execute(f"SELECT name, kind FROM {COLUMNS_TABLE} WHERE split = ?", (split,)).fetchall()
    )
