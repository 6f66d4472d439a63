"""`SqliteDatasetWriter`: write dataset splits into one SQLite file, atomically.

The file is built under a scratch name `<name>.<pid>-<n>.tmp` beside the target, fsynced and
renamed into place only when every split is written, so an interrupted import never leaves a
half-written file that a later run would mistake for a finished one. A writer killed outright
(SIGKILL, power loss) can strand its scratch file; the next writer of the same path removes
the scratch files whose process is gone. Each row gets its checksum and each split its row
count and checksum sum (see `sqlite_format`), which `SqliteDataset` verifies.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ember.record.atomic import fsync_path, remove_stale_scratch

from .sqlite_format import (
    APPLICATION_ID,
    CHECKSUM_COLUMN,
    COLUMNS_TABLE,
    FORMAT_VERSION,
    INFO_TABLE,
    KINDS,
    ROW_ID,
    SPLITS_TABLE,
    encoder,
    infer_kind,
    quote_identifier,
    row_checksum,
    split_digest,
    split_key,
    validate_column_name,
    validate_split_name,
)

__all__ = ["SqliteDatasetWriter"]

_INFER_ROWS = 1000  # rows looked at to infer column kinds when none are given
_CHUNK_ROWS = 4096  # rows per executemany call
_SCRATCH_COUNTER = itertools.count()


def _create_scratch(target: Path) -> Path:
    """A new empty file `<name>.<pid>-<n>.tmp` beside `target`, after removing the scratch
    files of writers that were killed (the naming `ember.record.atomic` uses and cleans)."""
    remove_stale_scratch(target)
    while True:
        scratch = target.with_name(f"{target.name}.{os.getpid()}-{next(_SCRATCH_COUNTER)}.tmp")
        try:
            # O_EXCL: never write into a file that is already there (SQLite would reuse it).
            os.close(os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return scratch


def _bad_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _cannot_store(
    split: str, row_number: int, name: str, kind: str, value: Any, error: Exception
) -> TypeError:
    return TypeError(
        f"SqliteDatasetWriter: split {split!r}, row {row_number}, column {name!r} (kind "
        f"{kind!r}): cannot store {type(value).__name__} value {value!r:.80}: {error}"
    )


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
                f"SqliteDatasetWriter: {self.db_file} already exists; pass overwrite=True to replace it"
            )
        self.db_file.parent.mkdir(parents=True, exist_ok=True)
        self._partial = _create_scratch(self.db_file)
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
            validate_column_name(split, name)
            if kind not in KINDS:
                raise ValueError(
                    f"SqliteDatasetWriter: column {name!r} of split {split!r} has unknown kind "
                    f"{kind!r}; expected one of {sorted(KINDS)}"
                )
        definitions = ", ".join(f"{quote_identifier(name)} {KINDS[kind]}" for name, kind in columns.items())
        table = quote_identifier(split)
        conn.execute(
            f"CREATE TABLE {table} ({ROW_ID} INTEGER PRIMARY KEY, "
            f"{CHECKSUM_COLUMN} INTEGER NOT NULL, {definitions})"
        )
        conn.executemany(
            f"INSERT INTO {COLUMNS_TABLE} VALUES (?, ?, ?, ?)",
            [(split, pos, name, kind) for pos, (name, kind) in enumerate(columns.items())],
        )
        placeholders = ", ".join("?" for _ in range(len(columns) + 2))
        self._splits[split] = {
            "names": list(columns),
            "kinds": list(columns.values()),
            "encoders": [encoder(kind) for kind in columns.values()],
            "insert": f"INSERT INTO {table} VALUES ({placeholders})",
            "key": split_key(split),
            "rows": 0,
            "checksum_sum": 0,
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
        key = state["key"]
        width = len(names)
        appended = 0
        iterator = iter(rows)
        while True:
            chunk = list(itertools.islice(iterator, _CHUNK_ROWS))
            if not chunk:
                break
            encoded = []
            checksum_sum = 0
            for offset, row in enumerate(chunk):
                row_number = state["rows"] + offset
                if len(row) != width:
                    raise ValueError(
                        f"SqliteDatasetWriter: row {row_number} of split {split!r} has "
                        f"{len(row)} values, expected {width} ({names})"
                    )
                values: list[Any] = []
                for name, kind, encode, value in zip(names, kinds, encoders, row):
                    if value is None:
                        values.append(None)
                        continue
                    try:
                        values.append(encode(value))
                    except (TypeError, ValueError, OverflowError) as error:
                        raise _cannot_store(split, row_number, name, kind, value, error) from None
                row_id = row_number + 1  # row_id is 1-based
                try:
                    checksum = row_checksum(key, row_id, values)
                except UnicodeEncodeError as error:  # text SQLite could not store either
                    column = next(i for i, v in enumerate(values) if isinstance(v, str) and _bad_utf8(v))
                    raise _cannot_store(
                        split, row_number, names[column], kinds[column], row[column], error
                    ) from None
                checksum_sum += checksum
                encoded.append([row_id, checksum, *values])
            conn.executemany(state["insert"], encoded)
            # Counted per chunk: a chunk that fails is not inserted at all.
            state["rows"] += len(chunk)
            state["checksum_sum"] += checksum_sum
            appended += len(chunk)
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
            inferred: dict[str, str | None] = dict.fromkeys(head[0])
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
        conn.execute(
            f"CREATE TABLE {SPLITS_TABLE} (split TEXT PRIMARY KEY, rows INTEGER NOT NULL, "
            "checksum_sum INTEGER NOT NULL, schema TEXT NOT NULL, digest INTEGER NOT NULL)"
        )
        entries = []
        for split, state in self._splits.items():
            schema = json.dumps([[n, k] for n, k in zip(state["names"], state["kinds"])])
            digest = split_digest(split, state["rows"], state["checksum_sum"], schema)
            entries.append((split, state["rows"], state["checksum_sum"], schema, digest))
        conn.executemany(f"INSERT INTO {SPLITS_TABLE} VALUES (?, ?, ?, ?, ?)", entries)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.commit()
        conn.close()
        self._conn = None
        try:
            fsync_path(self._partial)
            os.replace(self._partial, self.db_file)
        except BaseException:
            self.abort()
            raise
        fsync_path(self.db_file.parent, directory=True)
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
