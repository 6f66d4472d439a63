"""The training runner in pieces (issue #31 item 4): the builder records a frozen
``TrainingSettings``; the run reads only that; the event processor, used on its own, fans one
batch out to the metrics, the metric and progress loggers and the renderer; and no piece of
the runner reads another object's private attributes."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from helpers import train_toy as toy

import ember
from ember.data import Progress
from ember.train import Interrupter, MetricEarlyStoppingStrategy, StoppingCondition
from ember.train.event_processor import EventProcessor, LearnerItem
from ember.train.metric import LossMetric
from ember.train.metric.loss import LossInput
from ember.train.settings import RegisteredMetric, TrainingSettings
from ember.train.store import Aggregate, Direction, Split

RUNNER_FILES = ("supervised", "settings", "training_run", "epoch", "event_processor", "run_control")
TRAIN_DIR = Path(ember.__file__).resolve().parent / "train"


def test_the_builder_records_one_frozen_settings_object(tmp_path):
    interrupter = Interrupter()
    stopper = MetricEarlyStoppingStrategy(
        LossMetric(),
        Aggregate.Mean,
        Direction.Lowest,
        Split.Valid,
        condition=StoppingCondition.no_improvement_since(2),
    )
    training = (
        toy.training(tmp_path, epochs=4)
        .grads_accumulation(3)
        .on_non_finite_loss("skip_batch")
        .with_interrupter(interrupter)
        .with_sigterm_handler(False)
        .early_stopping(stopper)
        .with_plots(False)
    )
    settings = training.settings()
    assert isinstance(settings, TrainingSettings)
    assert settings.directory == Path(tmp_path) and settings.num_epochs == 4
    assert settings.grads_accumulation == 3 and settings.non_finite_loss == "skip_batch"
    assert settings.interrupter is interrupter is training.interrupter()
    assert settings.early_stopping is stopper
    assert (settings.handle_sigint, settings.handle_sigterm, settings.plots) == (True, False, False)
    assert settings.print_summary and settings.checkpointers is not None
    assert [(r.metric.name, r.numeric) for r in settings.train_metrics] == [
        ("Accuracy", True),
        ("Loss", True),
        ("Learning Rate", True),
    ]
    assert [r.metric.name for r in settings.metrics_of("valid")] == ["Accuracy", "Loss"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.num_epochs = 9
    # a later call makes a new settings object; the one handed out stays as it was
    training.num_epochs(7)
    assert settings.num_epochs == 4 and training.settings().num_epochs == 7
    with pytest.raises(ValueError, match="metrics_of: split must be 'train' or 'valid', got 'test'"):
        settings.metrics_of("test")


class _Recorder:
    """A metric logger, progress logger and renderer at once, writing down each call."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args: self.calls.append((name, *args))

    def read_numeric(self, split, name, epoch):
        return None


def test_the_event_processor_fans_one_batch_out_to_every_receiver():
    recorder = _Recorder()
    events = EventProcessor(
        {"train": (RegisteredMetric(LossMetric(), True),), "valid": ()},
        metric_loggers=[recorder],
        progress_loggers=[recorder],
        renderer=recorder,
    )
    events.start_split("train", 1, 4)
    for iteration, loss in enumerate(([1.0, 3.0], [5.0, 7.0]), start=1):
        output = LossInput(ember.from_numpy(np.array(loss, dtype=np.float32)))
        events.process_item(LearnerItem("train", output, Progress(2 * iteration, 4), 1, 3, iteration, 0.1))
    events.process_item(LearnerItem("train", None, Progress(4, 4), 1, 3, 3, 0.1))  # a skipped batch
    events.end_split("train", 1)
    names = [call[0] for call in recorder.calls]
    assert names == [
        "on_split_start",
        *(["log", "update_train", "render_train", "log_progress"] * 2),
        "render_train",  # the skipped batch: shown, not measured
        "log_progress",
        "log",  # the final line
        "end_split",
        "on_split_end",
    ]
    lines = [call[1:] for call in recorder.calls if call[0] == "log"]
    assert lines == [
        ("train", 1, "Loss", "2,2"),
        ("train", 1, "Loss", "6,2"),
        ("train", 1, "Loss", "4,final"),
    ]
    assert events.store.aggregate("Loss", 1, "train") == 4.0
    assert events.last_metrics(1) == {"train": {"Loss": 4.0}}
    progress = [call[1] for call in recorder.calls if call[0] == "log_progress"]
    assert [(p.split, p.epoch, p.epoch_total, p.iteration) for p in progress] == [
        ("train", 1, 3, 1),
        ("train", 1, 3, 2),
        ("train", 1, 3, 3),
    ]


def _private_reads(path: Path) -> list[str]:
    """``x._name`` where ``x`` is not ``self`` or ``cls``: a private attribute of another object."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append(f"{path.name}:{node.lineno} .{node.attr}")
    return found


@pytest.mark.parametrize("name", RUNNER_FILES)
def test_no_runner_piece_reads_private_attributes_of_another_object(name):
    assert _private_reads(TRAIN_DIR / f"{name}.py") == []


def test_the_private_read_check_finds_one(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text("class A:\n    def f(self, other):\n        return self._a + other.t._grad_accum\n")
    assert _private_reads(source) == ["sample.py:3 ._grad_accum"]
