"""The `Dataset` protocol: a sized, indexable collection of items.

Mirrors Burn's `burn_dataset::Dataset` trait (`get(index)`, `len()`, `iter()`), with Python
conventions on top: `dataset[i]` accepts negative indices, and an out-of-range index raises
`IndexError` (Burn returns `None`).
"""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["Dataset", "check_index", "fetch_many", "set_epoch"]


def as_integer(value: Any, requirement: str) -> int:
    """Return an integer-like `value` (`int`, `numpy.int64`, ...) as an `int`.

    Args:
        value: the argument to check.
        requirement: the start of the error message, e.g. `"InMemDataset: index must be an
            integer"`; the message goes on with what `value` is.

    Raises:
        TypeError: if `value` is not an integer (bools, which Python counts as integers, and
            floats are rejected).
    """
    if isinstance(value, bool):
        raise TypeError(f"{requirement}, got bool {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{requirement}, got {type(value).__name__} {value!r}") from None


def check_index(dataset_name: str, index: Any, length: int) -> int:
    """Validate an item index and return it as a non-negative `int`.

    Args:
        dataset_name: name used in error messages (usually the dataset class name).
        index: the index to check; any integer-like object (`int`, `numpy.int64`, ...).
            Negative indices count from the end, like Python sequences.
        length: the number of items in the dataset.

    Returns:
        The index in `[0, length)`.

    Raises:
        TypeError: if `index` is not an integer (bools and floats are rejected).
        IndexError: if `index` is outside `[-length, length)`.
    """
    position = as_integer(index, f"{dataset_name}: index must be an integer")
    if position < 0:
        position += length
    if not 0 <= position < length:
        raise IndexError(
            f"{dataset_name}: index {index} is out of range for a dataset of {length} items "
            f"(valid: 0..{length - 1}, or -{length}..-1)"
            if length
            else f"{dataset_name}: index {index} is out of range: the dataset is empty"
        )
    return position


def set_epoch(dataset: Any, epoch: int) -> None:
    """Tell `dataset` (and every dataset it wraps) which pass over the data comes next.

    The `DataLoader` calls this before each pass, in the main process, before the dataset is
    sent to worker processes. Datasets whose items depend on the pass (`SamplerDataset` draws
    new samples each epoch) implement `set_epoch`; plain sequences are left alone.

    Args:
        dataset: any dataset or sequence.
        epoch: the pass number, starting at 0.
    """
    method = getattr(dataset, "set_epoch", None)
    if callable(method):
        method(epoch)


def fetch_many(dataset: Any, indices: Sequence[int]) -> list[Any]:
    """Fetch several items, through `dataset.get_many` when it has one (one query for SQLite).

    Args:
        dataset: any dataset or sequence.
        indices: item positions, in the order wanted.
    """
    get_many = getattr(dataset, "get_many", None)
    if callable(get_many):
        return list(get_many(indices))
    return [dataset[index] for index in indices]


class Dataset(ABC, Generic[T]):
    """A sized collection of items addressed by position.

    Subclasses implement `__len__` and `get(index)`; `get` must raise `IndexError` for an
    index outside `[0, len)` (use `check_index`). Everything else is derived: `dataset[i]`
    (negative indices allowed), iteration, `is_empty()`.

    Datasets used with a multi-worker `DataLoader` are pickled into the worker processes, so
    they should hold plain data (paths, lists, NumPy arrays) rather than open handles.
    `SqliteDataset` shows the pattern: it drops its connection when pickled and reopens it
    lazily in each process.

    Any object with `__len__` and `__getitem__` (a list, a NumPy array) can be used wherever a
    dataset is expected; this base class is a convenience, not a requirement.
    """

    @abstractmethod
    def __len__(self) -> int:
        """Number of items."""

    @abstractmethod
    def get(self, index: int) -> T:
        """Return the item at `index`.

        Args:
            index: position in `[0, len(self))`; negative values count from the end.

        Raises:
            IndexError: if `index` is out of range.
        """

    def __getitem__(self, index: int) -> T:
        return self.get(index)

    def get_many(self, indices: Sequence[int]) -> list[T]:
        """Return the items at `indices`, in order (datasets backed by storage override this
        to read them in one go).

        Args:
            indices: item positions; each must be in range.

        Raises:
            IndexError: if any index is out of range.
        """
        return [self.get(index) for index in indices]

    def __iter__(self) -> Iterator[T]:
        for index in range(len(self)):
            yield self.get(index)

    def is_empty(self) -> bool:
        """Whether the dataset has no items."""
        return len(self) == 0

    def set_epoch(self, epoch: int) -> None:
        """Prepare the pass `epoch` (default: forward to the wrapped datasets, if any).

        Args:
            epoch: the pass number, starting at 0.
        """
        for inner in self._inner_datasets():
            set_epoch(inner, epoch)

    def _inner_datasets(self) -> tuple[Any, ...]:
        """Datasets wrapped by this one (transforms override this)."""
        return ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(len={len(self)})"
