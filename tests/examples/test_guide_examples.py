"""The Burn book's two examples run end to end at a tiny size: ``examples/custom_training_loop.py``
(the hand-written loop, gradient accumulation) and ``examples/guide/`` (model, data, training
with ``ember.train.SupervisedTraining``, inference after reload).

Everything uses the offline ``digits`` source (scikit-learn's bundled 8×8 digits); without
scikit-learn the file is skipped.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import nn
from ember.data import DataLoaderBuilder, PartialDataset
from ember.optim import AdamConfig, GradientsParams, SgdConfig

pytest.importorskip(
    "sklearn", reason="the examples' offline 'digits' source needs scikit-learn (pip install scikit-learn)"
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

import custom_training_loop as ctl  # noqa: E402
from guide.data import DIGITS_MEAN, DIGITS_STD, MnistBatcher, digits_datasets  # noqa: E402
from guide.model import ModelConfig  # noqa: E402


def _train_api_missing() -> str | None:
    try:
        from ember.train import ClassificationOutput, Learner, SupervisedTraining, TrainOutput  # noqa: F401
        from ember.train.metric import AccuracyMetric, LossMetric  # noqa: F401
    except ImportError as exc:
        return f"ember.train is not importable yet ({exc})"
    return None


@pytest.fixture(scope="module")
def digits():
    return digits_datasets()


# ---- data ------------------------------------------------------------------------------------------
def test_digits_split_is_fixed_and_batches_are_normalised(digits):
    train, test = digits
    assert (len(train), len(test)) == (1437, 360)
    again_train, _ = digits_datasets()
    assert all(np.array_equal(train[i].image, again_train[i].image) for i in (0, 100, 1436))
    counts = np.bincount([test[i].label for i in range(len(test))], minlength=10)
    assert counts.min() >= 35 and counts.max() <= 37  # stratified by class

    batch = MnistBatcher.for_source("digits").batch([train[i] for i in range(len(train))], "cpu")
    assert batch.images.shape == (1437, 8, 8) and batch.images.dtype == ember.float32
    assert batch.targets.shape == (1437,) and batch.targets.dtype == ember.int64
    images = batch.images.numpy()
    assert abs(images.mean()) < 1e-3 and abs(images.std() - 1.0) < 1e-3
    raw = train[0].image / 16.0
    np.testing.assert_allclose(images[0], (raw - DIGITS_MEAN) / DIGITS_STD, rtol=1e-5, atol=1e-6)


# ---- the guide's model --------------------------------------------------------------------------
@pytest.mark.parametrize("size", [8, 28])
def test_model_forward_backward_shapes(size):
    ember.seed(0)
    model = ModelConfig(num_classes=10, hidden_size=32).init("reference")
    images = ember.randn(5, size, size, device="reference")
    logits = model(images)
    assert logits.shape == (5, 10)

    loss = nn.CrossEntropyLossConfig().init()(logits, ember.tensor([0, 1, 2, 3, 4], device="reference"))
    grads = GradientsParams.from_grads(loss.backward(), model)
    trainable = [(path, p) for path, p in model.named_parameters() if p.is_require_grad()]
    assert {path for path, _ in trainable} == {
        "conv1.weight",
        "conv1.bias",
        "norm1.gamma",
        "norm1.beta",
        "conv2.weight",
        "conv2.bias",
        "norm2.gamma",
        "norm2.beta",
        "linear1.weight",
        "linear1.bias",
        "linear2.weight",
        "linear2.bias",
    }
    assert len(grads) == len(trainable)
    for path, p in trainable:
        assert grads.get(p.id).shape == p.shape, path
    assert model.linear1.weight.shape == (16 * 8 * 8, 32)  # the adaptive pool fixes the head's size

    valid = model.valid()  # dropout off, running statistics: deterministic
    np.testing.assert_array_equal(valid(images).numpy(), valid(images).numpy())


def test_model_config_round_trips(tmp_path):
    config = ModelConfig(10, 512).with_dropout(0.25)
    config.save(tmp_path / "model.json")
    assert ModelConfig.load(tmp_path / "model.json") == config
    assert ModelConfig(10, 512).init("reference").num_params() == 531274  # the book's 531178 + batch norms


# ---- the custom training loop -------------------------------------------------------------------
_TRAIN_LINE = re.compile(r"^\[Train - Epoch 1 - Iteration (\d+)\] Loss \d+\.\d{3} \| Accuracy \d+\.\d{3} %$")
_VALID_LINE = re.compile(r"^\[Valid - Epoch 1\] Loss \d+\.\d{3} \| Accuracy \d+\.\d{3} %$")


def test_custom_loop_runs_and_loss_falls(capsys):
    history = ctl.main(
        ["--limit", "256", "--epochs", "1", "--batch-size", "32", "--lr", "1e-3", "--hidden-size", "128"]
    )
    lines = capsys.readouterr().out.splitlines()
    train_lines = [line for line in lines if line.startswith("[Train")]
    assert len(train_lines) == 8
    assert [int(_TRAIN_LINE.match(line).group(1)) for line in train_lines] == list(range(1, 9))
    assert sum(bool(_VALID_LINE.match(line)) for line in lines) == 1
    assert history.optimizer_steps == 8 and history.train[0].items == 256 and history.valid[0].items == 360
    losses = history.train_losses
    assert np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.1, losses
    # after 8 steps, with batch norm's running statistics still near their start: above chance
    assert history.valid[0].accuracy > 15.0 and history.valid[0].loss < np.log(10)


class _NoBatchStatsModel(nn.Module):
    """Linear -> ReLU -> Linear in float64: no dropout and no batch norm, whose batch statistics
    would make a batch of n*b a different function from n batches of b."""

    def __init__(self, device):
        self.hidden = nn.LinearConfig(64, 16).init(device, ember.float64)
        self.out = nn.LinearConfig(16, 10).init(device, ember.float64)

    def forward(self, images):
        x = images.to(ember.float64).reshape(images.shape[0], -1)
        return self.out(ember.relu(self.hidden(x)))


def test_grad_accumulation_equals_one_step_on_the_big_batch(digits):
    n, b, steps, lr, device = 4, 8, 2, 0.05, "reference"
    data = PartialDataset(digits[0], 0, n * b * steps)
    batcher = MnistBatcher.for_source("digits")

    ember.seed(3)
    accumulated = _NoBatchStatsModel(device)
    big = accumulated.clone()
    per_batch = accumulated.clone()

    loader = DataLoaderBuilder(batcher).batch_size(b).set_device(device).build(data)
    history = ctl.History(accumulated)
    accumulated, _ = ctl.train_epoch(
        accumulated, SgdConfig().init(), loader, lr, 1, grads_accumulation=n, log=None, history=history
    )
    assert history.optimizer_steps == steps

    # Burn sums the accumulated gradients: n batches of b are one step on n*b items with the
    # loss n * mean = the sum of the n batch means.
    optim = SgdConfig().init()
    loss_fn = nn.CrossEntropyLossConfig().init()
    for batch in DataLoaderBuilder(batcher).batch_size(n * b).set_device(device).build(data):
        loss = loss_fn(big(batch.images), batch.targets) * float(n)
        big = optim.step(lr, big, GradientsParams.from_grads(loss.backward(), big))

    per_batch, _ = ctl.train_epoch(per_batch, SgdConfig().init(), loader, lr, 1, log=None)

    differs = False
    for (path, p_acc), (_, p_big), (_, p_one) in zip(
        accumulated.named_parameters(), big.named_parameters(), per_batch.named_parameters()
    ):
        np.testing.assert_allclose(p_acc.numpy(), p_big.numpy(), rtol=1e-12, atol=1e-14, err_msg=path)
        differs |= not np.allclose(p_acc.numpy(), p_one.numpy(), rtol=1e-6)
    assert differs, "accumulating should not be the same as stepping after every batch"


# ---- the guide, end to end through SupervisedTraining ------------------------------------------
def test_guide_trains_saves_and_infers_after_reload(tmp_path, digits):
    missing = _train_api_missing()
    if missing:
        pytest.skip(missing)
    from guide.inference import infer
    from guide.training import TrainingConfig, train

    config = TrainingConfig(
        ModelConfig(10, 64), AdamConfig(), num_epochs=1, batch_size=64, learning_rate=1e-3, source="digits"
    )
    result = train(tmp_path, config, "cpu", limit=256)

    assert not result.model.training  # launch returns the model in inference mode
    assert (tmp_path / "config.json").is_file() and (tmp_path / "model.bpk").is_file()
    assert TrainingConfig.load(tmp_path / "config.json") == config
    assert json.loads((tmp_path / "config.json").read_text())["model"] == {
        "num_classes": 10,
        "hidden_size": 64,
        "dropout": 0.5,
    }
    for split in ("train", "valid"):
        for name in ("Accuracy", "Loss"):
            assert (tmp_path / split / "epoch-1" / f"{name}.log").is_file(), (split, name)

    _, test = digits
    items = [test[i] for i in range(42, 74)]
    predictions = infer(tmp_path, "cpu", items, log=None)
    assert [p.expected for p in predictions] == [item.label for item in items]

    batch = MnistBatcher.for_source("digits").batch(items, "cpu")
    in_memory = result.model(batch.images).argmax(1).tolist()
    assert [p.predicted for p in predictions] == in_memory
