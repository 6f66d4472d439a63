"""SupervisedTraining end to end on a small generated problem: artifacts and their format,
exact aggregates, determinism, resume after SIGKILL and after an interrupt, checkpoints
that survive a kill mid-write, early stopping, gradient accumulation, the summary."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import train_toy as toy

import ember
from ember.optim import GradientsParams, SgdConfig
from ember.train import (
    Direction,
    Learner,
    MetricEarlyStoppingStrategy,
    MultiDevice,
    Split,
    SupervisedTraining,
)
from ember.train.logger import read_aggregate
from ember.train.metric import LossMetric
from ember.train.renderer import CliMetricsRenderer

TESTS_DIR = Path(__file__).resolve().parents[1]
N_BATCHES = 96 // 16


def quiet():
    return CliMetricsRenderer(stream=io.StringIO())


def run(directory, epochs=3, **kw):
    result = toy.training(directory, epochs=epochs, renderer=quiet()).launch(toy.learner(**kw))
    return result


def lines(path) -> list[str]:
    return Path(path).read_text().splitlines()


def test_artifact_tree_and_log_format(tmp_path):
    result = run(tmp_path, epochs=3)
    assert (tmp_path / "experiment.log").read_text().strip()
    ckpt = sorted(p.name for p in (tmp_path / "checkpoint").iterdir())
    assert not [n for n in ckpt if n.endswith(".tmp")]
    epochs_kept = sorted({int(n.split("-")[1].split(".")[0]) for n in ckpt})
    assert epochs_kept[-2:] == [2, 3]  # the last two, plus the best by valid loss
    for e in epochs_kept:
        for kind in ("model", "optim", "scheduler", "training"):
            assert f"{kind}-{e}.bpk" in ckpt
    for split in ("train", "valid"):
        for e in (1, 2, 3):
            folder = tmp_path / split / f"epoch-{e}"
            loss, acc = lines(folder / "Loss.log"), lines(folder / "Accuracy.log")
            n = N_BATCHES if split == "train" else 48 // 16
            assert len(loss) == len(acc) == n + 1
            # iteration lines: `{value},{count}`; last: `{aggregate},final`
            assert all(line.endswith(",1") for line in loss[:-1])
            assert all(line.endswith(",16") for line in acc[:-1])
            assert loss[-1].endswith(",final") and acc[-1].endswith(",final")
            values = [float(line.split(",")[0]) for line in acc[:-1]]
            assert float(acc[-1].split(",")[0]) == pytest.approx(np.mean(values), rel=1e-12)
            for v in values:  # accuracy of 16 samples: a multiple of 6.25 %
                assert (v / 6.25) == pytest.approx(round(v / 6.25))
    lr_lines = lines(tmp_path / "train" / "epoch-1" / "Learning_Rate.log")
    assert lr_lines[0] == "0.01,1" and lr_lines[-1] == "0.01,final"
    assert not (tmp_path / "valid" / "epoch-1" / "Learning_Rate.log").exists()
    assert result.epochs_trained == 3 and not result.interrupted
    assert not result.model.training


def test_summary_matches_logs(tmp_path):
    result = run(tmp_path, epochs=3)
    row = result.summary.get("valid", "Loss")
    per_epoch = [read_aggregate(tmp_path / "valid" / f"epoch-{e}" / "Loss.log") for e in (1, 2, 3)]
    assert row.min_value == pytest.approx(min(per_epoch)) and row.min_epoch == int(np.argmin(per_epoch)) + 1
    assert row.max_value == pytest.approx(max(per_epoch)) and row.max_epoch == int(np.argmax(per_epoch)) + 1
    text = str(result.summary)
    assert "Learner Summary" in text and "| Split | Metric" in text and "Total Epochs: 3" in text
    assert [r.name for r in result.summary.metrics if r.split == "train"] == [
        "Accuracy",
        "Learning Rate",
        "Loss",
    ]


def test_training_learns_and_is_deterministic(tmp_path):
    run(tmp_path / "a", epochs=2)
    run(tmp_path / "b", epochs=2)
    for rel in ("train/epoch-2/Loss.log", "valid/epoch-2/Accuracy.log", "train/epoch-1/Accuracy.log"):
        assert lines(tmp_path / "a" / rel) == lines(tmp_path / "b" / rel)
    first = read_aggregate(tmp_path / "a" / "train/epoch-1/Loss.log")
    last = read_aggregate(tmp_path / "a" / "train/epoch-2/Loss.log")
    assert last < first


def _run_toy(directory, *args, check=True, timeout=240):
    env = dict(
        os.environ,
        PYTHONPATH=str(TESTS_DIR) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        EMBER_RENDERER="cli",
    )
    return subprocess.run(
        [sys.executable, "-m", "helpers.train_toy", str(directory), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


def test_resume_after_sigkill_is_bit_identical(tmp_path):
    full, crashed = tmp_path / "full", tmp_path / "crashed"
    _run_toy(full, "--epochs", "4")
    killed = _run_toy(crashed, "--epochs", "4", "--kill-at", "3", "2", check=False)
    assert killed.returncode == -9, killed.stderr
    assert (crashed / "checkpoint" / "training-2.bpk").exists()
    assert not (crashed / "model.bpk").exists()
    _run_toy(crashed, "--epochs", "4", "--resume", "2")
    assert_same_weights(full / "model.bpk", crashed / "model.bpk")
    for split in ("train", "valid"):
        for e in (3, 4):
            for name in ("Loss.log", "Accuracy.log"):
                rel = Path(split) / f"epoch-{e}" / name
                assert lines(full / rel) == lines(crashed / rel), rel
    # the resumed run wrote its epochs under their own numbers (Burn #1312)
    assert not (crashed / "train" / "epoch-5").exists()
    assert "Resuming from the checkpoint of epoch 2" in (crashed / "experiment.log").read_text()


def assert_same_weights(a, b):
    """Bit-identical parameters (the ParamIds differ: each process draws its own)."""
    with ember.record.load(a) as ra, ember.record.load(b) as rb:
        wa, wb = ra.numpy(), rb.numpy()
    assert sorted(wa) == sorted(wb)
    for key in wa:
        np.testing.assert_array_equal(wa[key], wb[key], err_msg=key)


def test_kill_during_checkpoint_write_leaves_complete_files(tmp_path):
    marker = tmp_path / "writing"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "helpers.train_toy",
            str(tmp_path / "run"),
            "--epochs",
            "2",
            "--slow-checkpoint-marker",
            str(marker),
        ],
        env=dict(os.environ, PYTHONPATH=str(TESTS_DIR), EMBER_RENDERER="cli"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 180
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the run never reached a checkpoint"
            time.sleep(0.05)
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    folder = tmp_path / "run" / "checkpoint"
    finished = [p for p in folder.iterdir() if p.suffix == ".bpk"]
    assert not finished  # the half-written file never took a checkpoint's name
    scratch = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert scratch  # only the recognisable scratch file is left behind
    with pytest.raises(FileNotFoundError, match="no complete checkpoint of epoch 1"):
        toy.training(tmp_path / "run", renderer=quiet()).checkpoint(1).launch(toy.learner())


def test_interrupt_then_resume_equals_uninterrupted(tmp_path):
    class StopAt:
        def __init__(self, interrupter):
            self.interrupter = interrupter

        def log_progress(self, progress):
            if progress.split == "train" and (progress.epoch, progress.iteration) == (2, 3):
                self.interrupter.stop("test")

    t = toy.training(tmp_path / "stopped", epochs=3, renderer=quiet())
    result = t.with_progress_logger(StopAt(t.interrupter())).launch(toy.learner())
    assert result.interrupted and result.epochs_trained == 1
    assert (tmp_path / "stopped" / "checkpoint" / "training-2.bpk").exists()
    assert "checkpoint(2)" in (tmp_path / "stopped" / "experiment.log").read_text()
    assert len(lines(tmp_path / "stopped" / "train" / "epoch-2" / "Loss.log")) == 3 + 1
    resumed = (
        toy.training(tmp_path / "stopped", epochs=3, renderer=quiet()).checkpoint(2).launch(toy.learner())
    )
    full = run(tmp_path / "full", epochs=3)
    for (path, a), (_, b) in zip(full.model.named_parameters(), resumed.model.named_parameters()):
        np.testing.assert_array_equal(a.value.numpy(), b.value.numpy(), err_msg=path)
    for name in ("Loss", "Accuracy", "Learning_Rate"):
        log = lines(tmp_path / "stopped" / "train" / "epoch-2" / f"{name}.log")
        full_log = lines(tmp_path / "full" / "train" / "epoch-2" / f"{name}.log")
        assert len(log) == N_BATCHES + 1  # every batch once, then the whole epoch's `final` line
        assert log[:-1] == full_log[:-1]
        assert log[-1].endswith(",final"), name
        assert float(log[-1].split(",")[0]) == pytest.approx(float(full_log[-1].split(",")[0]), rel=1e-12)


def test_ctrl_c_checkpoints_and_says_how_to_resume(tmp_path):
    stopped = _run_toy(tmp_path / "run", "--epochs", "3", "--sigint-at", "2", "4")
    assert "Ctrl-C" in stopped.stdout and "checkpoint(2)" in stopped.stdout, stopped.stdout
    assert "interrupted after epoch 1" in stopped.stdout
    assert (tmp_path / "run" / "checkpoint" / "training-2.bpk").exists()
    assert not (tmp_path / "run" / "valid" / "epoch-2").exists()
    _run_toy(tmp_path / "run", "--epochs", "3", "--resume", "2")
    _run_toy(tmp_path / "full", "--epochs", "3")
    assert_same_weights(tmp_path / "full" / "model.bpk", tmp_path / "run" / "model.bpk")


def test_early_stopping_stops_at_the_right_epoch(tmp_path):
    # lr 0: nothing changes, so the valid loss never improves on epoch 1
    t = toy.training(tmp_path, epochs=6, renderer=quiet()).early_stopping(
        MetricEarlyStoppingStrategy(
            LossMetric(), direction=Direction.Lowest, split=Split.Valid, no_improvement_since=2
        )
    )
    result = t.launch(toy.learner(lr=0.0, dropout=0.0))
    assert result.epochs_trained == 3
    assert not (tmp_path / "train" / "epoch-4").exists()


def test_gradient_accumulation_sums_like_one_big_batch(tmp_path):
    ember.seed(3)
    model = toy.ToyClassifier(dropout=0.0)
    manual = model.clone()
    train, _ = toy.loaders(n_train=32, batch_size=8, shuffle=None)
    t = (
        SupervisedTraining(tmp_path, train, None)
        .metrics(LossMetric())
        .grads_accumulation(4)
        .with_plots(False)
        .renderer(quiet())
    )
    trained = t.launch(Learner(model, SgdConfig().init(), 0.1)).model
    batches = list(train)
    grads = None
    for batch in batches:  # the gradients of the four batches, summed, then one SGD step
        g = GradientsParams.from_grads(manual.forward_classification(batch).loss.backward(), manual)
        grads = g if grads is None else _add(grads, g)
    manual = SgdConfig().init().step(0.1, manual, grads)
    for (path, a), (_, b) in zip(trained.named_parameters(), manual.named_parameters()):
        np.testing.assert_allclose(a.value.numpy(), b.value.numpy(), rtol=1e-6, atol=1e-7, err_msg=path)


def _add(a: GradientsParams, b: GradientsParams) -> GradientsParams:
    out = GradientsParams()
    for pid in a.ids():
        out.register(pid, a.get(pid) + b.get(pid))
    return out


def test_default_renderer_is_plain_lines_when_not_a_tty(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("EMBER_RENDERER", raising=False)
    toy.training(tmp_path, epochs=1).launch(toy.learner())
    out = capsys.readouterr().out
    assert "Starting training for 1 epochs." in out and "Training ended." in out
    assert "\x1b[" not in out
    assert "Learner Summary" in out


def test_clear_errors(tmp_path):
    train, valid = toy.loaders()
    with pytest.raises(TypeError, match="train_step"):
        Learner(ember.nn.LinearConfig(2, 2).init(), SgdConfig().init(), 0.1)
    with pytest.raises(ValueError, match="with_default_checkpointers"):
        SupervisedTraining(tmp_path, train, valid).checkpoint(1).launch(toy.learner())
    with pytest.raises(NotImplementedError, match="MultiDevice"):
        SupervisedTraining(tmp_path, train, valid).with_training_strategy(MultiDevice(("cpu", "cpu"))).launch(
            toy.learner()
        )
    with pytest.raises(FileNotFoundError, match="available: none"):
        (
            SupervisedTraining(tmp_path / "empty", train, valid)
            .with_default_checkpointers()
            .checkpoint(4)
            .renderer(quiet())
            .launch(toy.learner())
        )
    with pytest.raises(ValueError, match="already registered"):
        SupervisedTraining(tmp_path, train, valid).metrics(LossMetric()).metric_train_numeric(LossMetric())
    with pytest.raises(TypeError, match="numeric"):
        SupervisedTraining(tmp_path, train, valid).metric_train_numeric(_TextMetric())
    with pytest.raises(TypeError, match="Learner"):
        SupervisedTraining(tmp_path, train, valid).launch(object())


class _TextMetric:
    name = "Text"

    def update(self, item, metadata):
        raise AssertionError

    def clear(self):
        pass
