"""`SqliteDatasetWriter`: write dataset splits into one SQLite file, atomically.

The file is built under a temporary name beside the target and renamed into place only when
every split is written, so an interrupted import never leaves a half-written file that a
later run would mistake for a finished one.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .sqlite_format import (
    COLUMNS_TABLE,
    FORMAT_VERSION,
    INFO_TABLE,
    KINDS,
    ROW_ID,
    encoder,
    infer_kind,
    quote_identifier,
    validate_split_name,
)

__all__ = ["SqliteDatasetWriter"]

_INFER_ROWS = 1000  # rows looked at to infer column kinds when none are given
_CHUNK_ROWS = 4096  # rows per executemany call


class SqliteDatasetWriter:
    """Write splits (tables of rows) into a new SQLite dataset file.

    Use it as a context manager: the file appears at `db_file` when the block ends without
    an exception, and nothing is left behind otherwise.

    Args:
        db_file: the file to create.
        overwrite: replace an existing file at `db_file` (otherwise `FileExistsError`).
        source: a free-text description of where the data came from, stored in the file.

    Example:
        >>> with SqliteDatasetWriter("news.db") as writer:
        ...     writer.write_split("train", [{"text": "a", "label": 0}])
    """

    def __init__(
        self,
        db_file: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        source: str = "",
    ) -> None:
        self.db_file = Path(db_file)
        if self.db_file.exists() and not overwrite:
            raise FileExistsError(
                f"SqliteDatasetWriter: {self.db_file} already exists; pass overwrite=True to "
                "replace it"
            )
        self.db_file.parent.mkdir(parents=True, exist_ok=True)
        self._partial = self.db_file.with_name(
            f".{self.db_file.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial"
        )
        self._conn: sqlite3.Connection | None = sqlite3.connect(self._partial)
        # The partial file is discarded on any failure, so durability features only cost time.
        self._conn.execute("PRAGMA journal_mode = OFF")
        self._conn.execute("PRAGMA synchronous = OFF")
        self._conn.execute(
            f"CREATE TABLE {COLUMNS_TABLE} (split TEXT NOT NULL, position INTEGER NOT NULL, "
            "name TEXT NOT NULL, kind TEXT NOT NULL, PRIMARY KEY (split, name))"
        )
        self._conn.execute(f"CREATE TABLE {INFO_TABLE} (key TEXT PRIMARY KEY, value TEXT)")
        self._conn.executemany(
            f"INSERT INTO {INFO_TABLE} VALUES (?, ?)",
            [("format", "ember-sqlite-dataset"), ("version", FORMAT_VERSION), ("source", source)],
        )
        self._splits: dict[str, dict[str, Any]] = {}

    # -- splits -------------------------------------------------------------------------------

    def create_split(self, split: str, columns: Mapping[str, str]) -> None:
        """Create the table for `split` with the given columns.

        Args:
            split: the split (table) name, e.g. `"train"`.
            columns: column name -> kind (`"int"`, `"float"`, `"text"`, `"blob"`, `"bool"`,
                `"json"`), in column order.

        Raises:
            ValueError: for a reserved or duplicate split name, a column called `row_id`,
                no columns, or an unknown kind.
        """
        conn = self._connection()
        validate_split_name(split)
        if split in self._splits:
            raise ValueError(f"SqliteDatasetWriter: split {split!r} was already written")
        if not columns:
            raise ValueError(f"SqliteDatasetWriter: split {split!r} needs at least one column")
        for name, kind in columns.items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"SqliteDatasetWriter: invalid column name {name!r}")
            if name.lower() == ROW_ID:
                raise ValueError(
                    f"SqliteDatasetWriter: split {split!r} has a column named {name!r}, which is "
                    "reserved for the row index; rename it first"
                )
            if kind not in KINDS:
                raise ValueError(
                    f"SqliteDatasetWriter: column {name!r} of split {split!r} has unknown kind "
                    f"{kind!r}; expected one of {sorted(KINDS)}"
                )
        definitions = ", ".join(
            f"{quote_identifier(name)} {KINDS[kind]}" for name, kind in columns.items()
        )
        table = quote_identifier(split)
        conn.execute(f"CREATE TABLE {table} ({ROW_ID} INTEGER PRIMARY KEY, {definitions})")
        conn.executemany(
            f"INSERT INTO {COLUMNS_TABLE} VALUES (?, ?, ?, ?)",
            [(split, pos, name, kind) for pos, (name, kind) in enumerate(columns.items())],
        )
        placeholders = ", ".join("?" for _ in range(len(columns) + 1))
        self._splits[split] = {
            "names": list(columns),
            "kinds": list(columns.values()),
            "encoders": [encoder(kind) for kind in columns.values()],
            "insert": f"INSERT INTO {table} VALUES ({placeholders})",
            "rows": 0,
        }

    def append_rows(self, split: str, rows: Iterable[Sequence[Any]]) -> int:
        """Append rows (value sequences in column order) to a split made by `create_split`.

        Args:
            split: the split name.
            rows: one sequence of values per row, in the column order of `create_split`.

        Returns:
            The number of rows appended.

        Raises:
            KeyError: if `split` was not created.
            ValueError: if a row has the wrong length.
            TypeError: if a value does not fit its column's kind (the message names the split,
                column and row).
        """
        conn = self._connection()
        try:
            state = self._splits[split]
        except KeyError:
            raise KeyError(
                f"SqliteDatasetWriter: split {split!r} does not exist; call create_split first"
            ) from None
        names, kinds, encoders = state["names"], state["kinds"], state["encoders"]
        width = len(names)
        appended = 0
        iterator = iter(rows)
        while True:
            chunk = list(itertools.islice(iterator, _CHUNK_ROWS))
            if not chunk:
                break
            encoded = []
            for offset, row in enumerate(chunk):
                row_number = state["rows"] + appended + offset
                if len(row) != width:
                    raise ValueError(
                        f"SqliteDatasetWriter: row {row_number} of split {split!r} has "
                        f"{len(row)} values, expected {width} ({names})"
                    )
                values: list[Any] = [row_number + 1]  # row_id is 1-based
                for name, kind, encode, value in zip(names, kinds, encoders, row):
                    if value is None:
                        values.append(None)
                        continue
                    try:
                        values.append(encode(value))
                    except (TypeError, ValueError, OverflowError) as error:
                        raise TypeError(
                            f"SqliteDatasetWriter: split {split!r}, row {row_number}, column "
                            f"{name!r} (kind {kind!r}): cannot store {type(value).__name__} "
                            f"value {value!r:.80}: {error}"
                        ) from None
                encoded.append(values)
            conn.executemany(state["insert"], encoded)
            appended += len(chunk)
        state["rows"] += appended
        return appended

    def write_split(
        self,
        split: str,
        rows: Iterable[Mapping[str, Any]],
        *,
        columns: Mapping[str, str] | None = None,
    ) -> int:
        """Write a whole split from `dict`-like rows.

        Column kinds are taken from `columns`, or inferred from the first non-`None` value of
        each column among the first rows (a column with only `None` there becomes `json`).

        Args:
            split: the split (table) name.
            rows: mappings of column name -> value; every row must have the same keys.
            columns: optional column name -> kind, in column order.

        Returns:
            The number of rows written.
        """
        iterator: Iterator[Mapping[str, Any]] = iter(rows)
        head = list(itertools.islice(iterator, _INFER_ROWS))
        if columns is None:
            if not head:
                raise ValueError(
                    f"SqliteDatasetWriter: split {split!r} has no rows, so its columns cannot be "
                    "inferred; pass columns={name: kind}"
                )
            inferred: dict[str, str | None] = {name: None for name in head[0]}
            for row in head:
                for name in inferred:
                    if inferred[name] is None and name in row:
                        inferred[name] = infer_kind(row[name])
            columns = {name: kind or "json" for name, kind in inferred.items()}
        names = list(columns)

        def ordered(source: Iterable[Mapping[str, Any]], start: int) -> Iterator[list[Any]]:
            for number, row in enumerate(source, start=start):
                if len(row) != len(names) or any(name not in row for name in names):
                    raise ValueError(
                        f"SqliteDatasetWriter: row {number} of split {split!r} has keys "
                        f"{sorted(row)}, expected {sorted(names)}"
                    )
                yield [row[name] for name in names]

        self.create_split(split, columns)
        written = self.append_rows(split, ordered(head, 0))
        written += self.append_rows(split, ordered(iterator, written))
        return written

    # -- lifecycle ----------------------------------------------------------------------------

    def finish(self) -> Path:
        """Commit, close and move the file into place. Returns the final path."""
        conn = self._connection()
        if not self._splits:
            self.abort()
            raise ValueError(f"SqliteDatasetWriter: no split was written to {self.db_file}")
        conn.commit()
        conn.close()
        self._conn = None
        os.replace(self._partial, self.db_file)
        return self.db_file

    def abort(self) -> None:
        """Discard everything written so far (no file is created)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        try:
            os.unlink(self._partial)
        except FileNotFoundError:
            pass

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(
                f"SqliteDatasetWriter for {self.db_file} is closed (finish() or abort() was called)"
            )
        return self._conn

    def __enter__(self) -> "SqliteDatasetWriter":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.finish()
        else:
            self.abort()

    def __del__(self) -> None:
        if getattr(self, "_conn", None) is not None:
            self.abort()
