"""The completion marker of a checkpoint (``training-E.bpk``): written only after the model,
optimizer and scheduler files are on disk, deleted before them, and a checkpoint without it
is not resumed from. Each file has its own background thread, so the order is forced, not
luck: the tests slow one writer down and check the marker still comes last."""

from __future__ import annotations

import io
import threading
import time

import pytest
from helpers import train_toy as toy

from ember.train import AsyncCheckpointer, KeepLastNCheckpoints, LearningCheckpointer, MetricsStore
from ember.train.checkpoint import CheckpointerError, FileCheckpointer
from ember.train.renderer import CliMetricsRenderer

KINDS = ("model", "optim", "scheduler", "training")


class _Recording(FileCheckpointer):
    """A file checkpointer that logs when each save/delete finishes, optionally slowly."""

    def __init__(self, directory, name, events, delay=0.0, fail=False):
        super().__init__(directory, name)
        self.events, self.delay, self.fail = events, delay, fail

    def save(self, epoch, data):
        time.sleep(self.delay)
        if self.fail:
            raise OSError(f"{self.name}: disk full")
        super().save(epoch, data)
        self.events.append(("save", self.name, epoch))

    def delete(self, epoch):
        time.sleep(self.delay)
        super().delete(epoch)
        self.events.append(("delete", self.name, epoch))


def _checkpointer(directory, events, delays=None, fail=()):
    delays = delays or {}
    parts = [
        AsyncCheckpointer(_Recording(directory, k, events, delays.get(k, 0.0), k in fail)) for k in KINDS
    ]
    return LearningCheckpointer(*parts, KeepLastNCheckpoints(1))


def test_the_marker_is_written_after_the_slow_model_file(tmp_path):
    events: list = []
    checkpointer = _checkpointer(tmp_path, events, {"model": 0.5, "optim": 0.2})
    learner = toy.learner()
    seen_early = []

    def watch():  # the marker must never exist while the model file does not
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            if (tmp_path / "training-1.bpk").exists():
                seen_early.append(not (tmp_path / "model-1.bpk").exists())
                return
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    checkpointer.checkpoint(learner, 1, MetricsStore())
    checkpointer.flush()
    watcher.join()
    assert [e[1] for e in events][-1] == "training", events
    assert seen_early == [False]
    checkpointer.close()


def test_the_marker_is_deleted_first(tmp_path):
    events: list = []
    checkpointer = _checkpointer(tmp_path, events, {"training": 0.3})
    learner = toy.learner()
    checkpointer.checkpoint(learner, 1, MetricsStore())
    checkpointer.checkpoint(learner, 2, MetricsStore())  # KeepLastN(1): deletes epoch 1
    checkpointer.close()
    deletes = [e[1] for e in events if e[0] == "delete"]
    assert deletes[0] == "training" and sorted(deletes) == sorted(KINDS), events
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{k}-2.bpk" for k in sorted(KINDS)]


def test_no_marker_when_a_record_fails(tmp_path):
    events: list = []
    checkpointer = _checkpointer(tmp_path, events, fail={"optim"})
    checkpointer.checkpoint(toy.learner(), 1, MetricsStore())
    with pytest.raises(CheckpointerError, match="disk full"):
        checkpointer.close()
    assert not (tmp_path / "training-1.bpk").exists()
    assert ("save", "training", 1) not in events


def test_a_checkpoint_without_its_marker_is_not_resumed(tmp_path):
    renderer = CliMetricsRenderer(stream=io.StringIO())
    toy.training(tmp_path, epochs=1, renderer=renderer).launch(toy.learner())
    (tmp_path / "checkpoint" / "training-1.bpk").unlink()
    assert (tmp_path / "checkpoint" / "model-1.bpk").exists()
    with pytest.raises(FileNotFoundError, match="no complete checkpoint of epoch 1"):
        toy.training(tmp_path, epochs=2, renderer=renderer).checkpoint(1).launch(toy.learner())
