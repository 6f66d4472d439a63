"""A NaN or infinite training loss: ``on_non_finite_loss("stop")`` (default) raises before the
optimizer step and keeps the last checkpoint finite, ``"skip_batch"`` drops the batch and
counts it, ``"continue"`` applies it; the summary keeps a metric's NaN row."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from helpers import train_toy as toy

import ember
from ember.optim import AdamConfig
from ember.train import ClassificationOutput, Learner, TrainOutput
from ember.train.logger import read_aggregate
from ember.train.renderer import CliMetricsRenderer
from ember.train.supervised import NonFiniteLossError

N_BATCHES = 96 // 16


class PoisonedToy(toy.ToyClassifier):
    """The toy classifier whose loss is made NaN at the chosen training steps (counted over
    the whole run, 1-based: step 9 is epoch 2, batch 3)."""

    poison: frozenset = frozenset()
    steps = 0

    def train_step(self, batch) -> TrainOutput:
        PoisonedToy.steps += 1
        out = self.forward_classification(batch)
        if PoisonedToy.steps in PoisonedToy.poison:
            out = ClassificationOutput(out.loss * float("nan"), out.output, out.targets)
        return TrainOutput(self, out.loss.backward(), out)


def poisoned_learner(steps) -> Learner:
    PoisonedToy.poison, PoisonedToy.steps = frozenset(steps), 0
    ember.seed(0)
    return Learner(PoisonedToy(dropout=0.0), AdamConfig().init(), 1e-2)


def training(directory, epochs=3):
    return toy.training(directory, epochs=epochs, renderer=CliMetricsRenderer(stream=io.StringIO()))


def finite(model) -> bool:
    return all(np.isfinite(p.value.numpy()).all() for _, p in model.named_parameters())


def test_stop_is_the_default_and_keeps_the_last_checkpoint_finite(tmp_path):
    learner = poisoned_learner({9})
    with pytest.raises(
        NonFiniteLossError, match=r"nan at epoch 2, batch 3.*ember\.detect_anomaly\(\)"
    ) as err:
        training(tmp_path).launch(learner)
    assert "checkpoint(1)" in str(err.value)
    assert finite(learner.model)  # stopped before the step that would have used the NaN
    ckpt = tmp_path / "checkpoint"
    assert (ckpt / "training-1.bpk").exists() and not list(ckpt.glob("*-2.bpk"))
    restored = toy.ToyClassifier(dropout=0.0)
    restored.load_file(ckpt / "model-1.bpk")
    assert finite(restored)
    assert "NonFiniteLossError" in (tmp_path / "experiment.log").read_text()


def test_detect_anomaly_as_the_message_says_names_the_op(tmp_path):
    learner = poisoned_learner({9})
    with pytest.raises(FloatingPointError, match="op 'mul' produced a non-finite"), ember.detect_anomaly():
        training(tmp_path).launch(learner)


def test_stop_with_gradient_accumulation(tmp_path):
    learner = poisoned_learner({8})
    with pytest.raises(NonFiniteLossError, match="epoch 2, batch 2"):
        training(tmp_path).grads_accumulation(2).launch(learner)
    assert finite(learner.model)


@pytest.mark.parametrize("accumulation", [1, 2])
def test_skip_batch_drops_the_update_and_counts_it(tmp_path, accumulation):
    t = training(tmp_path, epochs=2).on_non_finite_loss("skip_batch")
    if accumulation > 1:
        t = t.grads_accumulation(accumulation)
    result = t.launch(poisoned_learner({3, 9}))
    assert result.skipped_batches == 2
    assert finite(result.model)
    loss = (tmp_path / "train" / "epoch-2" / "Loss.log").read_text().splitlines()
    assert len(loss) == N_BATCHES - 1 + 1  # the skipped batch is not in the metrics
    assert all(math.isfinite(float(line.split(",")[0])) for line in loss)
    assert math.isfinite(result.summary.get("train", "Loss").max_value)
    log = (tmp_path / "experiment.log").read_text()
    assert "Epoch 2: skipped 1 batch(es) with a non-finite loss" in log
    assert "batch 3: loss nan, batch skipped" in log


def test_continue_applies_it_and_the_summary_keeps_nan_rows(tmp_path):
    result = (
        training(tmp_path, epochs=1).on_non_finite_loss("continue").launch(poisoned_learner(range(1, 99)))
    )
    assert not finite(result.model) and result.skipped_batches == 0
    assert math.isnan(read_aggregate(tmp_path / "train" / "epoch-1" / "Loss.log"))
    row = result.summary.get("train", "Loss")
    assert math.isnan(row.min_value) and math.isnan(row.max_value) and row.min_epoch == 1
    assert any("Loss" in line and "nan" in line for line in str(result.summary).splitlines())
    assert math.isnan(result.summary.get("valid", "Loss").last_value)


def test_the_summary_lists_nan_epochs_beside_the_finite_ones(tmp_path):
    t = training(tmp_path, epochs=2).on_non_finite_loss("continue")
    summary = t.launch(poisoned_learner(range(7, 99))).summary  # epoch 2 is NaN throughout
    row = summary.get("train", "Loss")
    assert math.isfinite(row.min_value) and (row.min_epoch, row.max_epoch) == (1, 1)
    assert math.isnan(row.last_value) and row.nan_epochs == (2,)
    assert "  Train Loss: epochs 2" in str(summary).splitlines()


def test_an_unknown_action_is_refused(tmp_path):
    with pytest.raises(ValueError, match="'stop', 'skip_batch', 'continue'.*'ignore'"):
        training(tmp_path).on_non_finite_loss("ignore")
