"""`PartialDataset`: a contiguous range `[start, end)` of a dataset."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ..dataset import Dataset, check_index, fetch_many

__all__ = ["PartialDataset"]


class PartialDataset(Dataset[Any]):
    """Items `start` (included) to `end` (excluded) of `dataset` (Burn's `PartialDataset`).

    Args:
        dataset: the source dataset.
        start: first source position, `0 <= start <= len(dataset)`.
        end: one past the last source position, `start <= end <= len(dataset)`; `None` means
            `len(dataset)`.

    Raises:
        ValueError: if the range does not fit the source.
    """

    def __init__(self, dataset: Any, start: int, end: int | None = None) -> None:
        source_len = len(dataset)
        start = operator.index(start)
        end = source_len if end is None else operator.index(end)
        if not 0 <= start <= end <= source_len:
            raise ValueError(
                f"PartialDataset: range [{start}, {end}) does not fit a dataset of {source_len} "
                f"items (need 0 <= start <= end <= {source_len})"
            )
        self._dataset = dataset
        self._start = start
        self._end = end

    @classmethod
    def split(cls, dataset: Any, num: int) -> list["PartialDataset"]:
        """Cut `dataset` into `num` contiguous parts whose sizes differ by at most one.

        Args:
            dataset: the source dataset.
            num: the number of parts (>= 1).
        """
        if num < 1:
            raise ValueError(f"PartialDataset.split: num must be >= 1, got {num}")
        total = len(dataset)
        base, extra = divmod(total, num)
        parts, start = [], 0
        for part in range(num):
            end = start + base + (1 if part < extra else 0)
            parts.append(cls(dataset, start, end))
            start = end
        return parts

    @property
    def start(self) -> int:
        """First source position."""
        return self._start

    @property
    def end(self) -> int:
        """One past the last source position."""
        return self._end

    def __len__(self) -> int:
        return self._end - self._start

    def get(self, index: int) -> Any:
        return self._dataset[self._start + check_index("PartialDataset", index, len(self))]

    def get_many(self, indices: Sequence[int]) -> list[Any]:
        n = len(self)
        return fetch_many(self._dataset, [self._start + check_index("PartialDataset", i, n) for i in indices])

    def _inner_datasets(self) -> tuple[Any, ...]:
        return (self._dataset,)

    def __repr__(self) -> str:
        return f"PartialDataset(start={self._start}, end={self._end})"
