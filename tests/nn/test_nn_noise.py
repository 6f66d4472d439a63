"""GaussianNoise (Burn's): N(0, std²) added while training with grads recorded, else identity."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn


def test_adds_noise_of_the_configured_spread_while_training(device):
    ember.seed(0)
    x = ember.zeros(200, 500, device=device)
    y = nn.GaussianNoiseConfig(0.5).init()(x).numpy()
    assert y.shape == (200, 500) and y.dtype == np.float32
    assert abs(y.mean()) < 5e-3 and abs(y.std() - 0.5) < 5e-3
    z = nn.GaussianNoiseConfig(0.5).init()(x).numpy()
    assert not np.array_equal(y, z)  # a fresh draw every call


def test_seeded_draws_repeat(device):
    layer = nn.GaussianNoiseConfig(1.0).init()
    x = ember.ones(4, 6, device=device)
    ember.seed(7)
    a = layer(x).numpy()
    ember.seed(7)
    np.testing.assert_array_equal(layer(x).numpy(), a)


def test_identity_when_not_training_or_no_grad_or_zero_std(device):
    x = ember.randn(3, 5, device=device)
    layer = nn.GaussianNoiseConfig(0.3).init()
    np.testing.assert_array_equal(layer.valid()(x).numpy(), x.numpy())
    with ember.no_grad():
        np.testing.assert_array_equal(layer(x).numpy(), x.numpy())
    np.testing.assert_array_equal(nn.GaussianNoiseConfig(0.0).init()(x).numpy(), x.numpy())


def test_gradient_is_the_identity(device):
    x = ember.randn(3, 4, dtype=ember.float64, device=device).require_grad()
    y = nn.GaussianNoiseConfig(2.0).init()(x)
    assert y.dtype == ember.float64
    grads = (y * 3.0).sum().backward()
    np.testing.assert_array_equal(grads[x].numpy(), np.full((3, 4), 3.0))


@pytest.mark.parametrize("std", [-0.5, float("nan"), float("inf")])
def test_bad_std_is_refused(std):
    with pytest.raises(ValueError, match="GaussianNoise: the standard deviation"):
        nn.GaussianNoiseConfig(std).init()


def test_integer_input_is_refused_while_active():
    with pytest.raises(TypeError, match="GaussianNoise: expected a float tensor"):
        nn.GaussianNoiseConfig(1.0).init()(ember.tensor([1, 2, 3]))


def test_config_round_trip_and_repr(tmp_path):
    cfg = nn.GaussianNoiseConfig(0.25)
    cfg.save(tmp_path / "noise.json")
    assert nn.GaussianNoiseConfig.load(tmp_path / "noise.json").std == 0.25
    assert "std" in repr(cfg.init())
