"""The `Batcher` protocol: turn a list of items into one batch on a device."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Batcher"]

I_contra = TypeVar("I_contra", contravariant=True)
O_co = TypeVar("O_co", covariant=True)


@runtime_checkable
class Batcher(Protocol[I_contra, O_co]):
    """Builds a batch from items (Burn's `Batcher` trait).

    `batch(items, device)` receives the items of one batch, in order, and the device the
    batch's tensors should be created on. With a multi-worker `DataLoader` it runs inside a
    worker process and receives the CPU device; the loader then moves every ember tensor of
    the result to the loader's device in the main process. So a batcher should create its
    tensors on `device` and return plain structures: a dataclass, a (named) tuple, a list or
    a dict of tensors, NumPy arrays and Python values. It is pickled into the workers, so it
    should hold plain data (a tokenizer, sizes, ids), not open handles.

    Example:
        >>> class PairBatcher:
        ...     def batch(self, items, device):
        ...         xs = ember.tensor([x for x, _ in items], device=device)
        ...         ys = ember.tensor([y for _, y in items], dtype=ember.int64, device=device)
        ...         return xs, ys
    """

    def batch(self, items: list[I_contra], device: Any) -> O_co:
        """Build one batch.

        Args:
            items: the items of the batch, in dataset order for this pass.
            device: where to create tensors (an `ember.Device`).
        """
        ...
