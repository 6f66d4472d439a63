"""``ShardedDataLoader``: one rank's view of an ``ember.data.DataLoader`` in data-parallel training.

It keeps the wrapped loader's settings (batch size per rank, shuffle seed, workers, device)
and reads, in every epoch, this rank's part of each step as :class:`DistributedSampler`
decides. What it reports — ``len``, ``num_items``, ``progress`` — is about all ranks together,
so rank 0's display and metric metadata read as those of a single process with the global
batch. :attr:`step_weight` is this rank's share of the step last yielded, which the gradient
mean and the metric merge use.
"""

from __future__ import annotations

from typing import Any

from ember.data import DataLoader, Progress
from ember.data.dataset import Dataset, fetch_many, set_epoch

from .communicator import Communicator
from .sampler import DistributedSampler, RankShard

__all__ = ["ShardedDataLoader"]


class _RankItems(Dataset[Any]):
    """The items of a dataset at the given indices, in that order."""

    def __init__(self, dataset: Any, indices):
        self.dataset = dataset
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices)

    def get(self, index: int) -> Any:
        return self.dataset[int(self.indices[index])]

    def get_many(self, indices) -> list:
        return fetch_many(self.dataset, [int(self.indices[i]) for i in indices])

    def set_epoch(self, epoch: int) -> None:
        set_epoch(self.dataset, epoch)


class ShardedDataLoader:
    """This rank's share of every epoch of ``loader``.

    Args:
        loader: an ``ember.data.DataLoader``; its batch size is the batch of one rank.
        communicator: the run's communicator (rank and world size; checks the dataset length
            is the same on every rank when the first epoch starts).

    Raises:
        TypeError: ``loader`` is not an ``ember.data.DataLoader``.
    """

    def __init__(self, loader: Any, communicator: Communicator):
        if not isinstance(loader, DataLoader):
            raise TypeError(
                "DistributedDataParallel: each rank reads its shard of an ember.data.DataLoader, "
                f"got {type(loader).__name__}; build the loader with DataLoaderBuilder"
            )
        self.loader = loader
        self.communicator = communicator
        shuffle_seed = loader._settings.seed  # None: the loader does not shuffle
        self.sampler = DistributedSampler(
            len(loader.dataset), loader.batch_size, communicator.world_size, communicator.rank, shuffle_seed
        )
        self._epoch = loader.epoch
        self._shard: RankShard | None = None
        self._step = 0
        self._checked = False

    # ---- what the training loop reads --------------------------------------------------------
    @property
    def epoch(self) -> int:
        """Number of the next pass."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Make the next pass number ``epoch`` (the same on every rank)."""
        self._epoch = int(epoch)

    def num_items(self) -> int:
        """Items per pass over all ranks (the dataset length)."""
        return self.sampler.num_items

    def __len__(self) -> int:
        """Steps per pass (the same on every rank)."""
        return self.sampler.num_steps()

    def progress(self) -> Progress:
        """Items of all ranks in the steps yielded so far, out of the pass's items."""
        done = int(self._shard.step_sizes[: self._step].sum()) if self._shard is not None else 0
        return Progress(done, self.sampler.num_items)

    @property
    def step_weight(self) -> float:
        """This rank's share of the items of the step last yielded (0 for a repeated item)."""
        if self._shard is None or self._step == 0:
            return 0.0
        return float(self._shard.weights[self._step - 1])

    @property
    def step_count(self) -> int:
        """How many real items this rank holds in the step last yielded."""
        if self._shard is None or self._step == 0:
            return 0
        return int(self._shard.counts[self._step - 1])

    def __iter__(self):
        if not self._checked:
            self._check_lengths()
        epoch = self._epoch
        self._epoch += 1
        self._shard = self.sampler.shard(epoch)
        self._step = 0
        inner = self._inner_loader(self._shard)
        inner.set_epoch(epoch)  # the wrapped dataset sees the true pass (SamplerDataset draws)
        for batch in inner:
            self._step += 1
            yield batch

    # ---- helpers ----------------------------------------------------------------------------
    def _inner_loader(self, shard: RankShard) -> DataLoader:
        # the order is the shard's, drawn from the global permutation: no shuffle of its own
        return self.loader._with(_RankItems(self.loader.dataset, shard.indices), seed=None)

    def _check_lengths(self) -> None:
        import numpy as np

        sampler = self.sampler
        mine = np.array([sampler.num_items, sampler.batch_size, -1 if sampler.seed is None else sampler.seed])
        both = np.concatenate([mine, -mine]).astype(np.int64)
        self.communicator.allreduce_host(both, "max")
        if not np.array_equal(both[:3], -both[3:]):
            raise ValueError(
                "DistributedDataParallel: the loaders differ across the ranks: rank "
                f"{self.communicator.rank} has {sampler.num_items} items, batch size {sampler.batch_size} "
                f"and shuffle seed {sampler.seed}, but the ranks range up to {both[:3].tolist()} and down to "
                f"{(-both[3:]).tolist()} (items, batch, seed); every rank must build the same loader"
            )
        self._checked = True

    def __repr__(self) -> str:
        return f"ShardedDataLoader({self.loader!r}, {self.sampler!r})"
