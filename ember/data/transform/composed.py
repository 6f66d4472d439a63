"""`ComposedDataset`: several datasets one after another."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import Any

from ..dataset import Dataset, check_index, fetch_many

__all__ = ["ComposedDataset"]


class ComposedDataset(Dataset[Any]):
    """The concatenation of `datasets` (Burn's `ComposedDataset`): the items of the first,
    then of the second, and so on. Lengths are read once, at construction.

    Args:
        datasets: the datasets to chain (at least one).
    """

    def __init__(self, datasets: Sequence[Any]) -> None:
        self._datasets = list(datasets)
        if not self._datasets:
            raise ValueError("ComposedDataset: needs at least one dataset")
        # offsets[k] = position of the first item of datasets[k]
        self._offsets = [0, *itertools.accumulate(len(d) for d in self._datasets)]

    @property
    def datasets(self) -> list[Any]:
        """The chained datasets."""
        return list(self._datasets)

    def __len__(self) -> int:
        return self._offsets[-1]

    def _locate(self, index: int) -> tuple[int, int]:
        position = check_index("ComposedDataset", index, self._offsets[-1])
        which = bisect.bisect_right(self._offsets, position) - 1
        return which, position - self._offsets[which]

    def get(self, index: int) -> Any:
        which, inner = self._locate(index)
        return self._datasets[which][inner]

    def get_many(self, indices: Sequence[int]) -> list[Any]:
        located = [self._locate(index) for index in indices]
        results: list[Any] = [None] * len(located)
        for which, dataset in enumerate(self._datasets):
            slots = [slot for slot, (owner, _) in enumerate(located) if owner == which]
            if slots:
                items = fetch_many(dataset, [located[slot][1] for slot in slots])
                for slot, item in zip(slots, items):
                    results[slot] = item
        return results

    def _inner_datasets(self) -> tuple[Any, ...]:
        return tuple(self._datasets)
