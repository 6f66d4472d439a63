"""An empty train or valid loader is an error before training starts, naming the split and
the loader (it used to print "Starting split 'train' with 0 items" and "Training ended.")."""

from __future__ import annotations

import pytest
from helpers import train_toy as toy
from helpers.train_steps import FeatureBatcher

from ember.data import DataLoaderBuilder, InMemDataset
from ember.train import SupervisedTraining
from ember.train.metric import LossMetric


def _empty():
    return DataLoaderBuilder(FeatureBatcher()).batch_size(16).build(InMemDataset([]))


def test_an_empty_train_loader_is_refused_before_anything_runs(tmp_path):
    _, valid = toy.loaders()
    t = SupervisedTraining(tmp_path / "run", _empty(), valid).metrics(LossMetric())
    with pytest.raises(ValueError, match=r"the train loader has no batches \(DataLoader\(items=0"):
        t.launch(toy.learner())
    assert not (tmp_path / "run").exists()  # not even experiment.log: nothing started


def test_an_empty_valid_loader_is_refused(tmp_path):
    train, _ = toy.loaders()
    t = SupervisedTraining(tmp_path / "run", train, _empty()).metrics(LossMetric())
    with pytest.raises(ValueError, match="the valid loader has no batches.*dataloader_valid=None"):
        t.launch(toy.learner())
    assert not (tmp_path / "run").exists()
