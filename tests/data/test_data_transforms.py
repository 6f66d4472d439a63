"""Dataset transforms: sampling, shuffling, partial ranges, mapping, chaining, windows."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest

from ember.data import (
    ComposedDataset,
    InMemDataset,
    MapperDataset,
    PartialDataset,
    SamplerDataset,
    ShuffledDataset,
    WindowsDataset,
    set_epoch,
)


def numbers(n: int) -> InMemDataset:
    return InMemDataset(range(n))


# -- SamplerDataset ------------------------------------------------------------------------------


def test_sampler_is_reproducible_with_a_seed():
    a = SamplerDataset(numbers(100), 40, seed=3)
    b = SamplerDataset(numbers(100), 40, seed=3)
    c = SamplerDataset(numbers(100), 40, seed=4)
    assert len(a) == 40
    assert list(a) == list(b)
    assert list(a) != list(c)
    assert all(0 <= item < 100 for item in a)


def test_sampler_with_replacement_can_repeat_and_exceed_source():
    ds = SamplerDataset(numbers(10), 1000, seed=0)
    counts = Counter(ds)
    assert len(ds) == 1000 and set(counts) == set(range(10))
    assert max(counts.values()) > 100 - 50  # independent draws, roughly 100 each


def test_sampler_without_replacement_covers_source_evenly():
    ds = SamplerDataset(numbers(10), 25, with_replacement=False, seed=5)
    counts = Counter(ds)
    # two whole passes plus 5 distinct items
    assert sorted(counts.values()) == [2] * 5 + [3] * 5
    small = SamplerDataset(numbers(10), 7, with_replacement=False, seed=5)
    assert len(set(small)) == 7


def test_sampler_ratio_size():
    assert len(SamplerDataset(numbers(10), 1.5, seed=0)) == 15


def test_sampler_new_draws_per_epoch_and_reproducible():
    ds = SamplerDataset(numbers(1000), 50, seed=11)
    epoch0 = list(ds)
    ds.set_epoch(1)
    epoch1 = list(ds)
    assert epoch1 != epoch0
    other = SamplerDataset(numbers(1000), 50, seed=11)
    other.set_epoch(1)
    assert list(other) == epoch1
    ds.set_epoch(0)
    assert list(ds) == epoch0


def test_sampler_draws_survive_pickling():
    ds = SamplerDataset(numbers(100), 30)  # OS seed
    ds.set_epoch(2)
    clone = pickle.loads(pickle.dumps(ds))
    assert clone.seed == ds.seed and clone.epoch == 2
    assert list(clone) == list(ds)


def test_sampler_without_seed_differs_between_instances():
    assert SamplerDataset(numbers(10**6), 20).seed != SamplerDataset(numbers(10**6), 20).seed


def test_sampler_errors():
    with pytest.raises(ValueError, match="empty dataset"):
        SamplerDataset(numbers(0), 3)
    with pytest.raises(ValueError, match="size must be >= 0"):
        SamplerDataset(numbers(3), -1)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        SamplerDataset(numbers(3), 2, seed=-1)
    with pytest.raises(TypeError, match="size must be an int"):
        SamplerDataset(numbers(3), "2")
    with pytest.raises(IndexError):
        SamplerDataset(numbers(3), 2, seed=0)[2]


# -- ShuffledDataset -----------------------------------------------------------------------------


def test_shuffled_is_a_reproducible_permutation():
    a = ShuffledDataset(numbers(50), seed=1)
    assert sorted(a) == list(range(50)) and list(a) != list(range(50))
    assert list(ShuffledDataset(numbers(50), seed=1)) == list(a)
    assert list(ShuffledDataset(numbers(50), seed=2)) != list(a)
    assert a.get_many([0, 1]) == [a[0], a[1]]
    with pytest.raises(IndexError):
        a[50]


# -- PartialDataset ------------------------------------------------------------------------------


def test_partial_range_and_errors():
    part = PartialDataset(numbers(10), 2, 5)
    assert list(part) == [2, 3, 4] and part[-1] == 4
    assert list(PartialDataset(numbers(10), 7)) == [7, 8, 9]
    with pytest.raises(IndexError):
        part[3]
    with pytest.raises(ValueError, match=r"range \[4, 11\) does not fit a dataset of 10"):
        PartialDataset(numbers(10), 4, 11)
    with pytest.raises(ValueError):
        PartialDataset(numbers(10), 5, 4)


def test_partial_split_balances_parts():
    parts = PartialDataset.split(numbers(10), 3)
    assert [list(p) for p in parts] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    with pytest.raises(ValueError):
        PartialDataset.split(numbers(10), 0)


# -- MapperDataset -------------------------------------------------------------------------------


class AddOne:
    def map(self, item: int) -> int:
        return item + 1


def test_mapper_with_function_or_mapper_object():
    assert list(MapperDataset(numbers(3), lambda x: x * 10)) == [0, 10, 20]
    mapped = MapperDataset(numbers(3), AddOne())
    assert list(mapped) == [1, 2, 3] and mapped.get_many([2, 0]) == [3, 1]
    with pytest.raises(IndexError):
        mapped[3]
    with pytest.raises(TypeError, match="mapper must be callable"):
        MapperDataset(numbers(3), 42)


# -- ComposedDataset -----------------------------------------------------------------------------


def test_composed_chains_datasets():
    ds = ComposedDataset([numbers(2), InMemDataset(["a", "b", "c"]), numbers(0), [True]])
    assert len(ds) == 6
    assert list(ds) == [0, 1, "a", "b", "c", True]
    assert ds.get_many([5, 0, 3, 2]) == [True, 0, "b", "a"]
    with pytest.raises(IndexError):
        ds[6]
    with pytest.raises(ValueError):
        ComposedDataset([])


# -- WindowsDataset ------------------------------------------------------------------------------


def test_windows():
    ds = WindowsDataset(numbers(5), 3)
    assert len(ds) == 3 and list(ds) == [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
    assert len(WindowsDataset(numbers(2), 3)) == 0
    with pytest.raises(IndexError):
        ds[3]
    with pytest.raises(ValueError):
        WindowsDataset(numbers(5), 0)


# -- composition ---------------------------------------------------------------------------------


def test_transforms_compose_and_forward_epochs():
    base = InMemDataset([{"text": f"t{i}", "label": i % 4} for i in range(40)])
    train, valid = PartialDataset.split(ShuffledDataset(base, seed=0), 2)
    labels = MapperDataset(train, lambda row: row["label"])
    sampled = SamplerDataset(ComposedDataset([labels, labels]), 12, seed=9)
    windows = WindowsDataset(sampled, 2)
    assert len(valid) == 20 and len(windows) == 11
    first = list(windows)
    assert all(len(w) == 2 and all(0 <= v < 4 for v in w) for w in first)
    assert [w[1] for w in first[:-1]] == [w[0] for w in first[1:]]
    set_epoch(windows, 1)  # reaches the sampler through the window wrapper
    assert sampled.epoch == 1 and list(windows) != first
    set_epoch(windows, 0)
    assert list(windows) == first
    set_epoch([1, 2, 3], 4)  # plain sequences are left alone


def test_sampler_indices_are_int64_and_read_only():
    indices = SamplerDataset(numbers(10), 5, seed=0).source_indices()
    assert indices.dtype == np.int64 and not indices.flags.writeable
