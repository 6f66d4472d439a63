"""`SamplerDataset`: a fixed-size random sample of a dataset, new draws every epoch."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..dataset import Dataset, check_index, fetch_many

__all__ = ["SamplerDataset", "random_seed"]


def random_seed() -> int:
    """A fresh non-negative 63-bit seed from the operating system's entropy."""
    return int.from_bytes(os.urandom(8), "little") >> 1


def check_seed(owner: str, seed: Any) -> int:
    """Validate a seed (non-negative int) or draw one when `seed` is `None`."""
    if seed is None:
        return random_seed()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{owner}: seed must be a non-negative integer or None, got {seed!r}")
    return int(seed)


class SamplerDataset(Dataset[Any]):
    """Sample `size` items from a dataset (Burn's `SamplerDataset`).

    - With replacement (default): every item is an independent uniform draw from the source.
    - Without replacement: the source is taken whole `size // len(dataset)` times, plus
      `size % len(dataset)` distinct items, and the lot is shuffled (Burn's behaviour).

    Draws are a pure function of `(seed, epoch, index)`: the same seed gives the same items in
    every process, which is what lets a multi-worker `DataLoader` deliver the same batches
    whatever its number of workers. Burn redraws on every access; here the `DataLoader` calls
    `set_epoch` before each pass, so every epoch still sees a fresh sample.

    Args:
        dataset: the source dataset (anything with `__len__` and `__getitem__`).
        size: the number of items, or a `float` ratio of the source length (`1.5` = 150%).
        with_replacement: draw independently (`True`) or in shuffled whole passes (`False`).
        seed: non-negative integer seed; `None` draws one from the OS (different each run).

    Raises:
        ValueError: for a negative size, or a positive size over an empty source.
    """

    def __init__(
        self,
        dataset: Any,
        size: int | float,
        with_replacement: bool = True,
        seed: int | None = None,
    ) -> None:
        source_len = len(dataset)
        if isinstance(size, bool) or not isinstance(size, (int, float, np.integer, np.floating)):
            raise TypeError(f"SamplerDataset: size must be an int (items) or a float (ratio), got {size!r}")
        if isinstance(size, (float, np.floating)):
            if not np.isfinite(size) or size < 0:
                raise ValueError(f"SamplerDataset: size ratio must be >= 0, got {size}")
            size = round(float(size) * source_len)
        size = int(size)
        if size < 0:
            raise ValueError(f"SamplerDataset: size must be >= 0, got {size}")
        if size > 0 and source_len == 0:
            raise ValueError(f"SamplerDataset: cannot draw {size} items from an empty dataset")
        self._dataset = dataset
        self._source_len = source_len
        self._size = size
        self._with_replacement = bool(with_replacement)
        self._seed = check_seed("SamplerDataset", seed)
        self._epoch = 0
        self._indices: np.ndarray | None = None

    @property
    def seed(self) -> int:
        """The seed in use (drawn at construction when none was given)."""
        return self._seed

    @property
    def epoch(self) -> int:
        """The epoch whose draws `get` returns."""
        return self._epoch

    @property
    def with_replacement(self) -> bool:
        """Whether items are drawn independently."""
        return self._with_replacement

    def set_epoch(self, epoch: int) -> None:
        if epoch != self._epoch:
            self._epoch = int(epoch)
            self._indices = None
        super().set_epoch(epoch)

    def source_indices(self) -> np.ndarray:
        """The source positions drawn for the current epoch (`int64`, length `len(self)`)."""
        if self._indices is None:
            rng = np.random.default_rng([self._seed, self._epoch])
            n = self._source_len
            if self._with_replacement:
                indices = rng.integers(0, n, size=self._size, dtype=np.int64)
            else:
                whole = np.tile(np.arange(n, dtype=np.int64), self._size // n) if n else None
                rest = rng.choice(n, size=self._size % n, replace=False) if n else None
                parts = [part for part in (whole, rest) if part is not None]
                indices = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
                rng.shuffle(indices)
            indices.setflags(write=False)
            self._indices = indices
        return self._indices

    def __len__(self) -> int:
        return self._size

    def get(self, index: int) -> Any:
        position = check_index("SamplerDataset", index, self._size)
        return self._dataset[int(self.source_indices()[position])]

    def get_many(self, indices: Sequence[int]) -> list[Any]:
        table = self.source_indices()
        return fetch_many(
            self._dataset,
            [int(table[check_index("SamplerDataset", index, self._size)]) for index in indices],
        )

    def _inner_datasets(self) -> tuple[Any, ...]:
        return (self._dataset,)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_indices"] = None  # cheap to redraw; keeps worker payloads small
        return state

    def __repr__(self) -> str:
        return (
            f"SamplerDataset(size={self._size}, source_len={self._source_len}, "
            f"with_replacement={self._with_replacement}, seed={self._seed}, epoch={self._epoch})"
        )
