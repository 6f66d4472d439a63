"""What a run hands back: ``LearningResult.metrics`` (the last epoch's aggregates, also after
a resume) and ``LearnerSummary.get`` (the last value per metric; a clear ``KeyError`` for an
unknown split or metric name instead of ``None``)."""

from __future__ import annotations

import io

import pytest
from helpers import train_toy as toy

from ember.train.logger import read_aggregate
from ember.train.renderer import CliMetricsRenderer


def _training(directory, epochs):
    return toy.training(directory, epochs=epochs, renderer=CliMetricsRenderer(stream=io.StringIO()))


def _logged(directory, epoch):
    return {
        split: {
            name: read_aggregate(directory / split / f"epoch-{epoch}" / f"{name.replace(' ', '_')}.log")
            for name in names
        }
        for split, names in (
            ("train", ("Accuracy", "Learning Rate", "Loss")),
            ("valid", ("Accuracy", "Loss")),
        )
    }


def test_metrics_are_the_last_epoch_aggregates(tmp_path):
    result = _training(tmp_path, 2).launch(toy.learner())
    assert result.metrics == _logged(tmp_path, 2)
    row = result.summary.get("valid", "Accuracy")
    assert (row.last_value, row.last_epoch) == (result.metrics["valid"]["Accuracy"], 2)
    # A resumed run reads the epochs it did not run from the logs; the last is its own.
    resumed = _training(tmp_path, 3).checkpoint(2).launch(toy.learner())
    assert resumed.metrics == _logged(tmp_path, 3)
    assert resumed.summary.get("train", "Loss").last_epoch == 3


def test_get_names_what_exists(tmp_path):
    summary = _training(tmp_path, 1).launch(toy.learner()).summary
    with pytest.raises(
        KeyError, match=r"no metric 'accuracy' on split 'valid'; metrics: \['Accuracy', 'Loss'\]"
    ):
        summary.get("valid", "accuracy")
    with pytest.raises(KeyError, match=r"no split 'test'.*\['train', 'valid'\]"):
        summary.get("test", "Loss")
