"""Checkpointing strategies (Burn's semantics), the background checkpointer, custom
checkpointers and metric loggers plugged into SupervisedTraining."""

from __future__ import annotations

import io

import pytest
from helpers import train_toy as toy

from ember.train import (
    AsyncCheckpointer,
    CheckpointingAction,
    ComposedCheckpointingStrategy,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
    MetricsStore,
    Split,
)
from ember.train.checkpoint import CheckpointerError, FileCheckpointer
from ember.train.metric import LossMetric
from ember.train.renderer import CliMetricsRenderer
from ember.train.store import Direction

SAVE = CheckpointingAction.save()


def delete(e):
    return CheckpointingAction.delete(e)


def test_keep_last_n():
    s = KeepLastNCheckpoints(2)
    store = MetricsStore()
    assert [s.checkpointing(e, store) for e in (1, 2, 3)] == [[SAVE], [SAVE], [SAVE, delete(1)]]
    with pytest.raises(ValueError):
        KeepLastNCheckpoints(0)


def test_composed_deletes_only_when_every_strategy_agrees():
    s = (
        ComposedCheckpointingStrategy.builder()
        .add(KeepLastNCheckpoints(1))
        .add(KeepLastNCheckpoints(2))
        .build()
    )
    store = MetricsStore()
    assert s.checkpointing(1, store) == [SAVE]
    assert s.checkpointing(2, store) == [SAVE]
    assert s.checkpointing(3, store) == [SAVE, delete(1)]


def _store(values):
    store = MetricsStore()
    for epoch, v in enumerate(values, 1):
        store.record("train", "Loss", epoch, v)
    return store


def test_metric_strategy_keeps_the_best():
    s = MetricCheckpointingStrategy(LossMetric(), direction=Direction.Lowest, split=Split.Train)
    store = _store([0.75, 0.4, 2.0])
    assert s.checkpointing(1, store) == [SAVE]
    assert s.checkpointing(2, store) == [delete(1), SAVE]
    assert s.checkpointing(3, store) == []


def test_default_composition_keeps_last_two_and_the_best():
    s = (
        ComposedCheckpointingStrategy.builder()
        .add(KeepLastNCheckpoints(2))
        .add(MetricCheckpointingStrategy("Loss", direction=Direction.Lowest, split=Split.Train))
        .build()
    )
    store = _store([0.1, 0.5, 0.6, 0.7, 0.05])
    kept = set()
    for epoch in range(1, 6):
        for a in s.checkpointing(epoch, store):
            kept.add(epoch) if a.kind == "save" else kept.discard(a.epoch)
        if epoch == 4:
            assert kept == {1, 3, 4}  # epoch 1 is still the best
    assert kept == {4, 5}


class _FailingCheckpointer:
    def save(self, epoch, data):
        raise OSError("disk full")

    def restore(self, epoch):
        raise FileNotFoundError

    def delete(self, epoch):
        pass


def test_async_checkpointer_reports_a_background_failure(tmp_path):
    c = AsyncCheckpointer(_FailingCheckpointer())
    c.save(1, b"x")
    with pytest.raises(CheckpointerError, match="disk full"):
        c.flush()
    ok = AsyncCheckpointer(FileCheckpointer(tmp_path, "model"))
    for e in range(1, 4):
        ok.save(e, bytes([e]) * 10)
    ok.delete(1)
    ok.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model-2.bpk", "model-3.bpk"]
    assert ok.restore(3) == b"\x03" * 10


class _MemoryCheckpointer:
    def __init__(self):
        self.files = {}

    def save(self, epoch, data):
        self.files[epoch] = data

    def restore(self, epoch):
        return self.files[epoch]

    def delete(self, epoch):
        self.files.pop(epoch, None)


class _MemoryLogger:
    def __init__(self):
        self.lines = []

    def log(self, split, epoch, name, line):
        self.lines.append((split, epoch, name, line))

    def end_split(self, split, epoch):
        pass

    def read_numeric(self, split, name, epoch):
        return None

    def close(self):
        pass


def test_custom_checkpointers_and_metric_logger(tmp_path):
    model, optim, sched = _MemoryCheckpointer(), _MemoryCheckpointer(), _MemoryCheckpointer()
    logger = _MemoryLogger()
    train, valid = toy.loaders()
    t = (
        toy.training(tmp_path, epochs=3, renderer=CliMetricsRenderer(stream=io.StringIO()))
        .with_custom_checkpointers(model, optim, sched)
        .with_metric_logger(logger)
        .with_checkpointing_strategy(KeepLastNCheckpoints(1))
    )
    t.launch(toy.learner())
    assert sorted(model.files) == sorted(optim.files) == sorted(sched.files) == [3]
    assert logger.lines[0][:3] == ("train", 1, "Accuracy")
    assert any(line[3].endswith(",final") for line in logger.lines)
    assert not (tmp_path / "train").exists()  # the default file logger is used only when none is given
