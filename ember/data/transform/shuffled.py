"""`ShuffledDataset`: a fixed random permutation of a dataset."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..dataset import Dataset, check_index, fetch_many
from .sampler import check_seed

__all__ = ["ShuffledDataset"]


class ShuffledDataset(Dataset[Any]):
    """The items of `dataset` in a random order fixed at construction (Burn's
    `ShuffledDataset::with_seed`). For a new order every epoch, use `DataLoaderBuilder.shuffle`.

    Args:
        dataset: the source dataset.
        seed: non-negative integer seed; `None` draws one from the OS.
    """

    def __init__(self, dataset: Any, seed: int | None = None) -> None:
        self._dataset = dataset
        self._seed = check_seed("ShuffledDataset", seed)
        permutation = np.random.default_rng(self._seed).permutation(len(dataset))
        permutation.setflags(write=False)
        self._permutation = permutation

    @property
    def seed(self) -> int:
        """The seed of the permutation."""
        return self._seed

    def permutation(self) -> np.ndarray:
        """Source position of each item (read-only `int64` array)."""
        return self._permutation

    def __len__(self) -> int:
        return len(self._permutation)

    def get(self, index: int) -> Any:
        position = check_index("ShuffledDataset", index, len(self._permutation))
        return self._dataset[int(self._permutation[position])]

    def get_many(self, indices: Sequence[int]) -> list[Any]:
        n = len(self._permutation)
        return fetch_many(
            self._dataset,
            [int(self._permutation[check_index("ShuffledDataset", i, n)]) for i in indices],
        )

    def _inner_datasets(self) -> tuple[Any, ...]:
        return (self._dataset,)
