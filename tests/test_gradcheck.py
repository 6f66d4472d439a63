"""The tests' gradient checker (tests/helpers/gradcheck.py) passes true gradients and
catches wrong ones, in each of its entry points."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.gradcheck import central_difference, check_grads, gradcheck_np, params64, weighted_sum

import ember
from ember import nn


def _half_gradient(x):
    # x * x.detach(): autodiff sees x * c, so it gives half of the true derivative 2x
    return x * x.detach()


def test_gradcheck_passes_and_catches_a_wrong_gradient():
    a = np.random.default_rng(0).standard_normal((3, 2))
    gradcheck_np(lambda x: (x * x).sin(), "reference", a)
    with pytest.raises(AssertionError, match="input 0"):
        gradcheck_np(_half_gradient, "reference", a)


def test_gradcheck_catches_gradients_swapped_between_inputs():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(4), rng.standard_normal(4)

    def swapped(x, y):  # forward x * y; backward gives x the gradient y should get and y x's
        return x.detach() * y.detach() + (x - x.detach()) * x.detach() + (y - y.detach()) * y.detach()

    gradcheck_np(lambda x, y: x * y, "reference", a, b)
    with pytest.raises(AssertionError, match="input"):
        gradcheck_np(swapped, "reference", a, b)


def test_check_grads_covers_module_parameters():
    ember.seed(0)
    layer = nn.LinearConfig(4, 3).init("reference")
    params = params64(layer)
    x = ember.tensor(np.random.default_rng(2).standard_normal((2, 4)), device="reference").require_grad()
    check_grads(lambda: weighted_sum(layer(x).tanh()), [x, *params], rtol=1e-8, atol=1e-12)
    with pytest.raises(AssertionError, match=r"tensor 0 \(4, 3\)"):
        check_grads(lambda: weighted_sum(_half_gradient(layer(x))), params, rtol=1e-8, atol=1e-12)
    # the leaves are restored after the check, failing or not
    np.testing.assert_array_equal(params[0].numpy(), layer.weight.value.numpy())


def test_central_difference_on_numpy():
    x, v = np.array([0.3, -1.2]), np.array([1.0, 2.0])
    got = central_difference(lambda z: np.sin(z).sum(), x, v)
    assert abs(got - float((np.cos(x) * v).sum())) < 1e-9
