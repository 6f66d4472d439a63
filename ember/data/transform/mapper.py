"""`MapperDataset`: apply a function to every item, lazily."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..dataset import Dataset, check_index, fetch_many

__all__ = ["MapperDataset"]


class MapperDataset(Dataset[Any]):
    """Items of `dataset` passed through `mapper` on access (Burn's `MapperDataset`).

    With a multi-worker `DataLoader` (started with "forkserver" or "spawn") the mapper is
    pickled into the workers: use a module-level function or an object with a `map` method,
    not a lambda or a nested function.

    Args:
        dataset: the source dataset.
        mapper: a callable `item -> new_item`, or an object with a `map(item)` method
            (Burn's `Mapper` trait).
    """

    def __init__(self, dataset: Any, mapper: Callable[[Any], Any] | Any) -> None:
        if callable(getattr(mapper, "map", None)):
            self._fn = mapper.map
        elif callable(mapper):
            self._fn = mapper
        else:
            raise TypeError(
                f"MapperDataset: mapper must be callable or have a map(item) method, got "
                f"{type(mapper).__name__}"
            )
        self._dataset = dataset
        self._mapper = mapper

    def __len__(self) -> int:
        return len(self._dataset)

    def get(self, index: int) -> Any:
        return self._fn(self._dataset[check_index("MapperDataset", index, len(self._dataset))])

    def get_many(self, indices: Sequence[int]) -> list[Any]:
        n = len(self._dataset)
        items = fetch_many(self._dataset, [check_index("MapperDataset", i, n) for i in indices])
        return [self._fn(item) for item in items]

    def _inner_datasets(self) -> tuple[Any, ...]:
        return (self._dataset,)
