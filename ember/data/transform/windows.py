"""`WindowsDataset`: overlapping windows of consecutive items."""

from __future__ import annotations

import operator
from typing import Any

from ..dataset import Dataset, check_index, fetch_many

__all__ = ["WindowsDataset"]


class WindowsDataset(Dataset[list]):
    """Item `i` is the list of source items `i, i+1, ..., i+size-1` (Burn's
    `WindowsDataset`); there are `max(len(dataset) - size + 1, 0)` windows.

    Args:
        dataset: the source dataset.
        size: the window length (>= 1).
    """

    def __init__(self, dataset: Any, size: int) -> None:
        size = operator.index(size)
        if size < 1:
            raise ValueError(f"WindowsDataset: window size must be >= 1, got {size}")
        self._dataset = dataset
        self._size = size

    @property
    def size(self) -> int:
        """The window length."""
        return self._size

    def __len__(self) -> int:
        return max(len(self._dataset) - self._size + 1, 0)

    def get(self, index: int) -> list:
        start = check_index("WindowsDataset", index, len(self))
        return fetch_many(self._dataset, range(start, start + self._size))

    def _inner_datasets(self) -> tuple[Any, ...]:
        return (self._dataset,)
