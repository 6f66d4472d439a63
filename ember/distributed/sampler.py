"""``DistributedSampler``: which items each rank reads in every step of an epoch.

The global order of an epoch is the one a single-process ``DataLoader`` uses (a permutation
drawn from ``(seed, epoch)`` when shuffling, else ``0 … n-1``), whatever the number of ranks.
Step ``s`` covers items ``order[s·G : (s+1)·G]`` with ``G = batch_size × world_size``, and rank
``r`` reads the ``r``-th of ``world_size`` contiguous, near-equal parts of it. So the ranks
together read exactly the batches of a single process with batch ``G``, in the same order,
and concatenating their parts in rank order gives that batch back.

A rank whose part of the last step is empty (fewer items left than ranks) still needs a batch
to take part in the step: it reads the step's first item again with weight 0, so neither its
gradient nor its metrics count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["DistributedSampler", "RankShard", "global_order"]


def global_order(num_items: int, seed: int | None, epoch: int) -> np.ndarray:
    """The item order of pass ``epoch``, as ``ember.data.DataLoader`` draws it."""
    if seed is None:
        return np.arange(num_items, dtype=np.int64)
    return np.random.default_rng([seed, epoch]).permutation(num_items).astype(np.int64, copy=False)


@dataclass(frozen=True)
class RankShard:
    """One rank's items of one epoch.

    Attributes:
        indices: the dataset indices to read, step after step (``batch_size`` per step, the
            last step possibly fewer): a loader with that batch size over them yields this
            rank's batch of each step.
        counts: per step, how many of this rank's items are real (0 for a repeated item).
        step_sizes: per step, the items of all ranks together.
    """

    indices: np.ndarray
    counts: np.ndarray
    step_sizes: np.ndarray

    @property
    def weights(self) -> np.ndarray:
        """Per step, this rank's share of the step's items (``count / step size``)."""
        return self.counts / np.maximum(self.step_sizes, 1)


class DistributedSampler:
    """Split every epoch of a dataset across ranks, step by step.

    Args:
        num_items: the dataset's length (the same on every rank).
        batch_size: items per rank and step.
        world_size: the number of ranks.
        rank: this rank.
        seed: the shuffle seed of the loader (None: the dataset's own order).

    Raises:
        ValueError: a count out of range.
    """

    def __init__(self, num_items: int, batch_size: int, world_size: int, rank: int, seed: int | None = None):
        if num_items < 0 or batch_size < 1 or world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(
                f"DistributedSampler: expected num_items >= 0, batch_size >= 1, world_size >= 1 and "
                f"0 <= rank < world_size, got num_items={num_items}, batch_size={batch_size}, "
                f"world_size={world_size}, rank={rank}"
            )
        self.num_items = int(num_items)
        self.batch_size = int(batch_size)
        self.world_size = int(world_size)
        self.rank = int(rank)
        self.seed = seed

    @property
    def global_batch_size(self) -> int:
        """Items per step over all ranks."""
        return self.batch_size * self.world_size

    def num_steps(self) -> int:
        """Steps per epoch (the same on every rank)."""
        return math.ceil(self.num_items / self.global_batch_size)

    def _part(self, size: int) -> tuple[int, int]:
        """(start, length) of this rank's part of a step of ``size`` items."""
        base, extra = divmod(size, self.world_size)
        start = self.rank * base + min(self.rank, extra)
        return start, base + (1 if self.rank < extra else 0)

    def shard(self, epoch: int) -> RankShard:
        """This rank's items of pass ``epoch`` (0-based, as ``DataLoader.set_epoch``)."""
        order = global_order(self.num_items, self.seed, epoch)
        g, b, steps = self.global_batch_size, self.batch_size, self.num_steps()
        full = self.num_items // g
        # Whole steps: a [steps, ranks, batch] view of the order, this rank's column.
        pieces = [order[: full * g].reshape(full, self.world_size, b)[:, self.rank, :].reshape(-1)]
        counts = [np.full(full, b, dtype=np.int64)]
        sizes = [np.full(full, g, dtype=np.int64)]
        if steps > full:  # the last, partial step
            last = order[full * g :]
            start, length = self._part(last.size)
            pieces.append(last[start : start + length] if length else last[:1])
            counts.append(np.array([length], dtype=np.int64))
            sizes.append(np.array([last.size], dtype=np.int64))
        return RankShard(np.concatenate(pieces), np.concatenate(counts), np.concatenate(sizes))

    def __repr__(self) -> str:
        return (
            f"DistributedSampler(num_items={self.num_items}, batch_size={self.batch_size}, "
            f"world_size={self.world_size}, rank={self.rank}, seed={self.seed})"
        )
