"""Burn's activations (modules, configs and ``ember.nn.functional``): values and gradients
against PyTorch (float64, every backend), central differences, Burn's defaults,
``ActivationConfig`` by name and from JSON, the parameters of PRelu and SwiGlu (paths and
records), RRelu's two modes, and stability at extreme inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, weighted_sum

import ember
from ember import nn
from ember.nn import functional as F

# off the kinks of every piecewise function below (0, ±0.5, ±1, ±3, 6 and the thresholds)
X = np.concatenate([np.linspace(-7.03, 7.01, 29), [-0.77, 0.33, 0.61, 2.2]])

# (ember module, PyTorch function of a float64 tensor)
CASES = [
    # alpha 0.5: PyTorch's CELU backward rounds 1/alpha to float32 (derivatives.yaml), exact only
    # for powers of two
    ("celu", lambda: nn.CeluConfig(alpha=0.5).init(), lambda tf, x: tf.celu(x, alpha=0.5)),
    ("elu", lambda: nn.EluConfig().init(), lambda tf, x: tf.elu(x)),
    ("elu_alpha", lambda: nn.Elu(alpha=2.5), lambda tf, x: tf.elu(x, alpha=2.5)),
    ("selu", nn.Selu, lambda tf, x: tf.selu(x)),
    ("hard_sigmoid", lambda: nn.HardSigmoidConfig().init(), lambda tf, x: (0.2 * x + 0.5).clamp(0, 1)),
    # PyTorch's hardsigmoid/hardswish kernels round 1/6 to float32 in backward: their formulas
    # here (the forward of the kernels is checked in test_torch_kernels_with_float32_constants)
    ("hard_sigmoid_sixth", lambda: nn.HardSigmoid(1 / 6, 0.5), lambda tf, x: (x / 6 + 0.5).clamp(0, 1)),
    ("hard_swish", nn.HardSwish, lambda tf, x: x * (x / 6 + 0.5).clamp(0, 1)),
    ("hardtanh", lambda: nn.HardtanhConfig(-2.0, 1.5).init(), lambda tf, x: tf.hardtanh(x, -2.0, 1.5)),
    ("relu6", nn.Relu6, lambda tf, x: tf.relu6(x)),
    ("log_sigmoid", nn.LogSigmoid, lambda tf, x: tf.logsigmoid(x)),
    ("mish", nn.Mish, lambda tf, x: tf.mish(x)),
    ("softplus", lambda: nn.SoftplusConfig().init(), lambda tf, x: tf.softplus(x)),
    ("softplus_beta", lambda: nn.Softplus(beta=2.0), lambda tf, x: tf.softplus(x, beta=2.0)),
    ("softsign", nn.Softsign, lambda tf, x: tf.softsign(x)),
    ("tanhshrink", nn.Tanhshrink, lambda tf, x: tf.tanhshrink(x)),
    ("threshold", lambda: nn.ThresholdConfig(0.4, -2.0).init(), lambda tf, x: tf.threshold(x, 0.4, -2.0)),
    ("thresholded_relu", lambda: nn.ThresholdedReluConfig().init(), lambda tf, x: tf.threshold(x, 1.0, 0.0)),
    ("hard_shrink", lambda: nn.HardShrinkConfig().init(), lambda tf, x: tf.hardshrink(x, 0.5)),
    ("soft_shrink", lambda: nn.SoftShrinkConfig(lambd=0.8).init(), lambda tf, x: tf.softshrink(x, 0.8)),
    (
        "shrink",
        lambda: nn.ShrinkConfig(lambd=0.8, bias=0.3).init(),
        lambda tf, x: (x - x.sign() * 0.3) * (x.abs() > 0.8),
    ),
    ("leaky_relu", lambda: nn.LeakyReluConfig(0.2).init(), lambda tf, x: tf.leaky_relu(x, 0.2)),
    ("silu", nn.Silu, lambda tf, x: tf.silu(x)),
    (
        "rrelu_eval",
        lambda: nn.RReluConfig().init().valid(),
        lambda tf, x: tf.leaky_relu(x, (1 / 8 + 1 / 3) / 2),
    ),
    ("glu", lambda: nn.Glu(-1), lambda tf, x: tf.glu(x, -1)),
]


@pytest.mark.parametrize("name, build, reference", CASES, ids=[c[0] for c in CASES])
def test_activation_matches_torch(device, name, build, reference):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    data = np.stack([X, X[::-1] * 0.9])
    if name == "glu":
        data = data[:, :32]  # Glu halves the last dim: it must be even
    module = build()
    xt = torch.from_numpy(data).requires_grad_()
    want = reference(tf, xt)
    up = np.random.default_rng(0).standard_normal(tuple(want.shape))
    (want * torch.from_numpy(up)).sum().backward()
    x = ember.tensor(data, dtype="float64", device=device).require_grad()
    out = module.forward(x)  # forward, not __call__: an inference copy (rrelu_eval) records no graph
    assert out.shape == tuple(want.shape) and out.dtype is ember.float64
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-14)
    grad = (out * ember.tensor(up, dtype="float64", device=device)).sum().backward().get(x)
    np.testing.assert_allclose(grad.numpy(), xt.grad.numpy(), rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("name, build, reference", CASES, ids=[c[0] for c in CASES])
def test_activation_gradients_match_central_differences(name, build, reference):
    module = build()
    x = ember.tensor(X[:32].reshape(4, 8), dtype="float64", device=DEV).require_grad()
    check_grads(lambda: weighted_sum(module.forward(x)), [x])


def test_torch_kernels_with_float32_constants():
    torch = pytest.importorskip("torch")
    x = ember.tensor(X, dtype="float64", device=DEV)
    np.testing.assert_allclose(
        F.hard_sigmoid(x, 1 / 6, 0.5).numpy(),
        torch.nn.functional.hardsigmoid(torch.from_numpy(X)).numpy(),
        rtol=1e-12,
        atol=1e-15,
    )
    np.testing.assert_allclose(
        F.hard_swish(x).numpy(),
        torch.nn.functional.hardswish(torch.from_numpy(X)).numpy(),
        rtol=1e-12,
        atol=1e-15,
    )


def test_functional_forms_match_the_modules():
    x = ember.tensor(X, dtype="float64", device=DEV)
    pairs = [
        (F.elu(x, 1.0), nn.Elu()(x)),
        (F.celu(x, 1.0), nn.Celu()(x)),
        (F.selu(x), nn.Selu()(x)),
        (F.mish(x), nn.Mish()(x)),
        (F.softsign(x), nn.Softsign()(x)),
        (F.hard_swish(x), nn.HardSwish()(x)),
        (F.log_sigmoid(x), nn.LogSigmoid()(x)),
        (F.relu6(x), nn.Relu6()(x)),
        (F.tanh(x), nn.Tanh()(x)),
        (F.hard_sigmoid(x), nn.HardSigmoid()(x)),
        (F.gelu_approximate(x), nn.Gelu(True)(x)),
        (F.softplus(x), nn.Softplus()(x)),
        (F.soft_shrink(x), nn.SoftShrink()(x)),
    ]
    for got, want in pairs:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_allclose(F.softmin(x).numpy(), np.exp(-X) / np.exp(-X).sum(), rtol=1e-12)
    np.testing.assert_allclose(F.softmin(x.reshape(1, -1), dim=1).numpy().sum(), 1.0, rtol=1e-12)


def test_burn_defaults():
    assert nn.CeluConfig().alpha == 1.0 and nn.EluConfig().alpha == 1.0
    assert (nn.HardSigmoidConfig().alpha, nn.HardSigmoidConfig().beta) == (0.2, 0.5)
    assert (nn.HardtanhConfig().min_val, nn.HardtanhConfig().max_val) == (-1.0, 1.0)
    assert nn.SoftplusConfig().beta == 1.0 and nn.ThresholdedReluConfig().alpha == 1.0
    assert nn.HardShrinkConfig().lambd == 0.5 and nn.SoftShrinkConfig().lambd == 0.5
    assert (nn.ShrinkConfig().lambd, nn.ShrinkConfig().bias) == (0.5, 0.5)
    assert (nn.RReluConfig().lower, nn.RReluConfig().upper) == (0.125, 1 / 3)
    assert (nn.PReluConfig().num_parameters, nn.PReluConfig().alpha) == (1, 0.25)
    assert nn.LeakyReluConfig().negative_slope == 0.01
    swiglu = nn.SwiGluConfig(4, 6)
    assert swiglu.bias is False and swiglu.layout is nn.LinearLayout.Row
    assert swiglu.initializer == nn.KaimingUniform(gain=1 / math.sqrt(3), fan_out_only=False)
    with pytest.raises(TypeError):
        nn.ThresholdConfig()  # no defaults, as in Burn


def test_activation_config_covers_burns_enum(tmp_path):
    expected = {
        "Identity": nn.Identity,
        "Gelu": nn.Gelu,
        "GeluApproximate": nn.Gelu,
        "Relu": nn.Relu,
        "LeakyRelu": nn.LeakyRelu,
        "Selu": nn.Selu,
        "Sigmoid": nn.Sigmoid,
        "Tanh": nn.Tanh,
        "HardSigmoid": nn.HardSigmoid,
        "HardSwish": nn.HardSwish,
        "Softplus": nn.Softplus,
        "Softsign": nn.Softsign,
        "Elu": nn.Elu,
        "Celu": nn.Celu,
        "ThresholdedRelu": nn.ThresholdedRelu,
        "HardShrink": nn.HardShrink,
        "SoftShrink": nn.SoftShrink,
        "Shrink": nn.Shrink,
        "PRelu": nn.PRelu,
        "silu": nn.Silu,
    }
    for name, cls in expected.items():
        assert type(nn.ActivationConfig(name).init(DEV)) is cls, name
    assert nn.ActivationConfig("gelu-approximate").init().approximate
    # options: the kind's own config, in both spellings, through JSON
    for config in (
        nn.ActivationConfig(nn.EluConfig(alpha=0.3)),
        nn.ActivationConfig("softplus", options=nn.SoftplusConfig(beta=3.0)),
        nn.ActivationConfig(nn.PReluConfig(num_parameters=4, alpha=0.1)),
        nn.ActivationConfig(nn.SwiGluConfig(3, 5, bias=True)),
        nn.ActivationConfig("leaky_relu", negative_slope=0.3),
    ):
        loaded = nn.ActivationConfig.load(config.save(tmp_path / "act.json"))
        assert loaded == config
    assert nn.ActivationConfig(nn.EluConfig(alpha=0.3)).init().alpha == 0.3
    assert nn.ActivationConfig(nn.PReluConfig(num_parameters=4)).init(DEV).alpha.shape == (4,)
    assert nn.ActivationConfig(nn.SwiGluConfig(3, 5)).init(DEV).linear_outer.weight.shape == (3, 5)
    assert nn.ActivationConfig("leaky_relu", options=nn.LeakyReluConfig(0.4)).init().negative_slope == 0.4
    with pytest.raises(ValueError, match="unknown activation 'swoosh'"):
        nn.ActivationConfig("swoosh")
    with pytest.raises(ValueError, match="'elu' takes a EluConfig, got SoftplusConfig"):
        nn.ActivationConfig("elu", options=nn.SoftplusConfig())
    with pytest.raises(ValueError, match="'relu' takes no options"):
        nn.ActivationConfig("relu", options=nn.EluConfig())
    with pytest.raises(ValueError, match="'swiglu' needs options"):
        nn.ActivationConfig("SwiGlu")


def test_prelu_per_channel_matches_torch_and_saves_alpha(tmp_path):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    data = rng.standard_normal((2, 3, 4))
    prelu = nn.PReluConfig(num_parameters=3, alpha=0.25).init(DEV, "float64")
    prelu.alpha.set_value(ember.tensor([0.1, -0.3, 0.7], dtype="float64", device=DEV))
    assert [p for p, _ in prelu.named_parameters()] == ["alpha"]
    xt, wt = (
        torch.from_numpy(data).requires_grad_(),
        torch.tensor([0.1, -0.3, 0.7], dtype=torch.float64, requires_grad=True),
    )
    want = torch.nn.functional.prelu(xt, wt)
    up = rng.standard_normal(data.shape)
    (want * torch.from_numpy(up)).sum().backward()
    x = ember.tensor(data, dtype="float64", device=DEV).require_grad()
    out = prelu(x)
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-14)
    grads = (out * ember.tensor(up, dtype="float64", device=DEV)).sum().backward()
    np.testing.assert_allclose(grads.get(x).numpy(), xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(grads.get(prelu.alpha.value).numpy(), wt.grad.numpy(), rtol=1e-12)
    other = nn.PReluConfig(num_parameters=3).init(DEV, "float64").load_file(prelu.save_file(tmp_path / "p"))
    np.testing.assert_array_equal(other.alpha.numpy(), [0.1, -0.3, 0.7])
    shared = nn.PRelu(nn.Constant(0.5).init((1,), DEV, "float64"))
    np.testing.assert_allclose(
        shared(ember.tensor(X, dtype="float64", device=DEV)).numpy(), np.where(X >= 0, X, 0.5 * X)
    )
    with pytest.raises(ValueError, match=r"3 slopes need an input whose dim 1 has 3 channels, got \[2, 4\]"):
        prelu(ember.zeros(2, 4, device=DEV))


def test_swiglu_matches_its_formula_with_burns_paths(tmp_path):
    ember.seed(2)
    swiglu = nn.SwiGluConfig(4, 3, bias=True).init(DEV, "float64")
    assert [p for p, _ in swiglu.named_parameters()] == [
        "linear_inner.weight",
        "linear_inner.bias",
        "linear_outer.weight",
        "linear_outer.bias",
    ]
    data = np.random.default_rng(2).standard_normal((2, 5, 4))
    inner = data @ swiglu.linear_inner.weight.numpy() + swiglu.linear_inner.bias.numpy()
    outer = data @ swiglu.linear_outer.weight.numpy() + swiglu.linear_outer.bias.numpy()
    out = swiglu(ember.tensor(data, dtype="float64", device=DEV))
    assert out.shape == (2, 5, 3)
    np.testing.assert_allclose(out.numpy(), inner / (1 + np.exp(-inner)) * outer, rtol=1e-12)
    x = ember.tensor(data, dtype="float64", device=DEV).require_grad()
    check_grads(lambda: weighted_sum(swiglu(x)), [x] + [p.value for p in swiglu.parameters()])
    ember.seed(3)
    other = nn.SwiGluConfig(4, 3, bias=True).init(DEV, "float64").load_file(swiglu.save_file(tmp_path / "s"))
    np.testing.assert_array_equal(other(x).numpy(), out.numpy())


def test_rrelu_samples_slopes_while_training_only():
    ember.seed(4)
    rrelu = nn.RReluConfig(lower=0.1, upper=0.3).init()
    x = ember.tensor(
        np.concatenate([-np.ones(2000), np.ones(10)]), dtype="float64", device=DEV
    ).require_grad()
    out = rrelu(x)
    slopes = -out.numpy()[:2000]
    assert slopes.min() >= 0.1 and slopes.max() < 0.3 and abs(slopes.mean() - 0.2) < 0.01
    assert len(np.unique(slopes)) > 1000
    np.testing.assert_array_equal(out.numpy()[2000:], 1.0)
    grad = out.sum().backward().get(x).numpy()
    np.testing.assert_allclose(grad[:2000], slopes, rtol=1e-12)
    np.testing.assert_array_equal(grad[2000:], 1.0)
    with ember.no_grad():
        np.testing.assert_allclose(rrelu(x).numpy()[:5], -0.2)
    np.testing.assert_allclose(rrelu.valid()(x).numpy()[:5], -0.2)
    with pytest.raises(ValueError, match="lower bound"):
        nn.RReluConfig(lower=0.5, upper=0.1).init()


def test_extreme_inputs_stay_finite():
    # every value and gradient finite where a naive exp would overflow (and 0·inf = NaN)
    x = ember.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype="float64", device=DEV).require_grad()
    for fn in (F.log_sigmoid, F.mish, F.selu, F.elu, F.celu, F.softplus, F.softsign, F.hard_swish, F.silu):
        out = fn(x)
        grad = out.sum().backward().get(x).numpy()
        assert np.isfinite(out.numpy()).all() and np.isfinite(grad).all(), fn.__name__
    np.testing.assert_allclose(F.log_sigmoid(x).numpy()[[0, 4]], [-1000.0, 0.0], atol=1e-300)
    np.testing.assert_allclose(F.mish(x).numpy()[[0, 4]], [0.0, 1000.0])


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match=r"glu: dim -1 of the input \[2, 3\] has odd size 3"):
        F.glu(ember.zeros(2, 3))
    with pytest.raises(TypeError, match="mish: expected a float tensor, got int64"):
        F.mish(ember.tensor([1, 2]))
    with pytest.raises(ValueError, match="celu: alpha must not be 0"):
        F.celu(ember.zeros(2), 0.0)
    with pytest.raises(ValueError, match="Hardtanh: min_val"):
        nn.Hardtanh(1.0, -1.0)
    with pytest.raises(ValueError, match="Softplus: beta must not be 0"):
        nn.Softplus(0.0)
    with pytest.raises(ValueError, match="num_parameters must be positive"):
        nn.PReluConfig(num_parameters=0).init()
