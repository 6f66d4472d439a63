"""End to end: a two-layer tanh MLP trained by a hand-written SGD loop with ember ops
(params are leaves; the update builds fresh leaves under no_grad). From identical float64
initial values and data, every backend follows the reference's loss curve, and the loss falls."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import mlp

import ember

STEPS = 30


def _regression_data():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 5))
    y = np.stack([np.sin(x[:, 0]) + 0.5 * x[:, 1], x[:, 2] * x[:, 3]], axis=1)
    return mlp.init_params(rng, 5, 16, 2), x, y


def _classification_data():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((96, 4))
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 0.5).astype(np.int64)  # 3 classes
    return mlp.init_params(rng, 4, 16, 3), x, y


@pytest.mark.parametrize("loss", ["mse", "ce"])
def test_mlp_loss_falls(device, loss):
    init, x, y = _regression_data() if loss == "mse" else _classification_data()
    losses = mlp.train(device, init, x, y, STEPS, lr=0.2 if loss == "mse" else 0.5, loss=loss)
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.7 * losses[0], f"loss did not fall: {losses[0]:.4f} -> {losses[-1]:.4f}"
    assert sum(b < a for a, b in zip(losses, losses[1:])) >= STEPS * 0.8  # mostly monotone


@pytest.mark.parametrize("loss", ["mse", "ce"])
def test_mlp_training_matches_reference(other_device, loss):
    init, x, y = _regression_data() if loss == "mse" else _classification_data()
    lr = 0.2 if loss == "mse" else 0.5
    want = mlp.train("reference", init, x, y, STEPS, lr, loss=loss)
    got = mlp.train(other_device, init, x, y, STEPS, lr, loss=loss)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_trained_parameters_match_reference_exactly_enough(other_device):
    """Beyond the losses: the parameters after training agree (float64, tight)."""
    init, x, y = _regression_data()
    finals = []
    for dev in ("reference", other_device):
        params = [ember.tensor(p, dtype=ember.float64, device=dev).require_grad() for p in init]
        tx, ty = (
            ember.tensor(x, dtype=ember.float64, device=dev),
            ember.tensor(y, dtype=ember.float64, device=dev),
        )
        for _ in range(10):
            params = mlp.sgd_step(params, mlp.mse(mlp.forward(params, tx), ty).backward(), 0.2)
        finals.append([p.numpy() for p in params])
    for a, b in zip(*finals):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
