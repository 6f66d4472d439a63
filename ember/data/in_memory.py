"""`InMemDataset`: items held in a Python list, built from a list, JSON lines or CSV."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from .dataset import Dataset, check_index

T = TypeVar("T")

__all__ = ["InMemDataset"]


class InMemDataset(Dataset[T], Generic[T]):
    """A dataset whose items all live in memory (Burn's `InMemDataset`).

    Args:
        items: the items, in order. Any iterable; it is copied into a list.

    Example:
        >>> ds = InMemDataset([{"text": "hello", "label": 0}, {"text": "bye", "label": 1}])
        >>> len(ds), ds[1]["label"]
        (2, 1)
    """

    def __init__(self, items: Iterable[T]) -> None:
        self._items: list[T] = list(items)

    def __len__(self) -> int:
        return len(self._items)

    def get(self, index: int) -> T:
        return self._items[check_index("InMemDataset", index, len(self._items))]

    def items(self) -> list[T]:
        """A shallow copy of the item list."""
        return list(self._items)

    @classmethod
    def from_dataset(cls, dataset: Any) -> "InMemDataset[Any]":
        """Materialise any dataset (e.g. a `SqliteDataset` split) into memory.

        Args:
            dataset: an object with `__len__` and `__getitem__`.
        """
        return cls(dataset[index] for index in range(len(dataset)))

    @classmethod
    def from_json_rows(
        cls,
        path: str | os.PathLike[str],
        *,
        encoding: str = "utf-8",
    ) -> "InMemDataset[Any]":
        """Read a JSON-lines file: one JSON value (usually an object) per non-blank line.

        Args:
            path: the file to read.
            encoding: text encoding of the file.

        Raises:
            FileNotFoundError: if `path` does not exist.
            ValueError: if a line is not valid JSON (the message gives the line number).
        """
        items: list[Any] = []
        with open(path, encoding=encoding) as handle:
            for line_number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise ValueError(
                        f"InMemDataset.from_json_rows: {os.fspath(path)}:{line_number} is not "
                        f"valid JSON ({error.msg} at column {error.colno})"
                    ) from None
        return cls(items)

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        *,
        column_types: Mapping[str, Callable[[str], Any]] | None = None,
        delimiter: str = ",",
        fieldnames: Sequence[str] | None = None,
        encoding: str = "utf-8",
    ) -> "InMemDataset[dict[str, Any]]":
        r"""Read a CSV file into a dataset of `dict` rows (column name -> value).

        CSV cells are strings; `column_types` converts the named columns (e.g.
        `{"label": int}`). A cell that fails its conversion raises with the row number.

        Args:
            path: the file to read.
            column_types: optional converters, by column name, applied to every row.
            delimiter: the field separator (`","`, `"\t"`, ...).
            fieldnames: column names when the file has no header row; when `None` the first
                row is the header.
            encoding: text encoding of the file.

        Raises:
            FileNotFoundError: if `path` does not exist.
            ValueError: if `column_types` names a column the file lacks, a row has a different
                number of fields than the header, or a conversion fails.
        """
        converters = dict(column_types or {})
        rows: list[dict[str, Any]] = []
        with open(path, encoding=encoding, newline="") as handle:
            reader = csv.DictReader(handle, fieldnames=fieldnames, delimiter=delimiter)
            columns = list(reader.fieldnames or [])
            missing = [name for name in converters if name not in columns]
            if missing:
                raise ValueError(
                    f"InMemDataset.from_csv: {os.fspath(path)} has no column(s) {missing}; "
                    f"its columns are {columns}"
                )
            for row in reader:
                line = reader.line_num
                if None in row or any(value is None for value in row.values()):
                    raise ValueError(
                        f"InMemDataset.from_csv: {os.fspath(path)} line {line} has a different "
                        f"number of fields than the {len(columns)} columns {columns}"
                    )
                for name, convert in converters.items():
                    try:
                        row[name] = convert(row[name])
                    except (TypeError, ValueError) as error:
                        raise ValueError(
                            f"InMemDataset.from_csv: {os.fspath(path)} line {line}, column "
                            f"{name!r}: cannot convert {row[name]!r} with "
                            f"{getattr(convert, '__name__', convert)!r} ({error})"
                        ) from None
                rows.append(row)
        return cls(rows)
