import math

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, weighted_sum

import ember
from ember import nn

X = np.linspace(-3, 3, 13).astype(np.float64)


@pytest.mark.parametrize(
    "module, expected",
    [
        (nn.Relu(), np.maximum(X, 0)),
        (nn.LeakyRelu(0.2), np.where(X >= 0, X, 0.2 * X)),
        (nn.LeakyReluConfig().init(), np.where(X >= 0, X, 0.01 * X)),
        (nn.Silu(), X / (1 + np.exp(-X))),
        (nn.Tanh(), np.tanh(X)),
        (nn.Sigmoid(), 1 / (1 + np.exp(-X))),
        (nn.Gelu(), X * 0.5 * (1 + np.vectorize(math.erf)(X / math.sqrt(2)))),
        (nn.Gelu(approximate=True), 0.5 * X * (1 + np.tanh(math.sqrt(2 / math.pi) * (X + 0.044715 * X**3)))),
        (nn.Softmax(), np.exp(X) / np.exp(X).sum()),
        (nn.Identity(), X),
    ],
)
def test_activation_values_and_gradients(module, expected):
    x = ember.tensor(X, dtype="float64", device=DEV)
    np.testing.assert_allclose(module(x).numpy(), expected, rtol=1e-6, atol=1e-7)
    if not isinstance(module, nn.Identity):
        xg = ember.tensor(X + 0.05, dtype="float64", device=DEV).require_grad()  # off the kinks
        check_grads(lambda: weighted_sum(module(xg)), [xg])


def test_activation_config_by_name():
    assert isinstance(nn.ActivationConfig().init(), nn.Gelu)
    assert nn.ActivationConfig("GeluApproximate").init().approximate
    leaky = nn.ActivationConfig("leaky_relu", negative_slope=0.3).init()
    assert isinstance(leaky, nn.LeakyRelu) and leaky.negative_slope == 0.3
    with pytest.raises(ValueError, match="unknown activation"):
        nn.ActivationConfig("swoosh")


def test_dropout_train_scaling_and_inactive_cases():
    ember.seed(0)
    drop = nn.DropoutConfig(0.25).init()
    x = ember.ones(4000, device=DEV)
    y = drop(x).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    with ember.no_grad():
        np.testing.assert_array_equal(drop(x).numpy(), x.numpy())
    np.testing.assert_array_equal(drop.valid()(x).numpy(), x.numpy())
    np.testing.assert_array_equal(nn.Dropout(0.0)(x).numpy(), x.numpy())
    assert float(nn.Dropout(1.0)(x).sum()) == 0.0
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_dropout_gradient_uses_the_same_mask():
    ember.seed(3)
    x = ember.ones(50, device=DEV).require_grad()
    y = nn.Dropout(0.5)(x)
    g = y.sum().backward().get(x).numpy()
    np.testing.assert_allclose(g, y.numpy())


def test_sequential_and_identity():
    ember.seed(0)
    seq = nn.Sequential(nn.LinearConfig(3, 4).init(DEV), nn.Relu(), nn.LinearConfig(4, 2).init(DEV))
    assert [p for p, _ in seq.named_parameters()] == [
        "layers.0.weight",
        "layers.0.bias",
        "layers.2.weight",
        "layers.2.bias",
    ]
    x = ember.randn(5, 3, device=DEV)
    manual = seq[2](seq[1](seq[0](x)))
    np.testing.assert_allclose(seq(x).numpy(), manual.numpy())
    assert len(seq) == 3 and len(list(seq)) == 3
    seq.append(nn.Identity())
    assert len(seq) == 4
    with pytest.raises(TypeError):
        nn.Sequential(nn.Relu(), 3)
