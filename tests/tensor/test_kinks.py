"""Gradients where a function is not differentiable: ember takes PyTorch's choice (README, "A
tour of the API": gradients at kinks) at every kink, at ±0, ±inf and NaN, on every backend.

Each activation of :mod:`ember.nn.functional` and :mod:`ember.nn.activation` is evaluated at its
kinks plus the special points, forward and gradient, against PyTorch in float64 on the same
(exactly representable) inputs; a new activation without a case here fails
``test_every_activation_has_a_case``. Also: softplus / log_sigmoid / BCE-with-logits at 0, the
Adam regression of issue #30 (a parameter initialised to 0 through softplus trains),
``maximum``/``minimum`` and ``max``/``min`` reductions with ties and NaN, and max-pool ties.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.nn import activation as act
from ember.nn import functional as F

torch = pytest.importorskip("torch")
tF = torch.nn.functional
# NaN and ±inf inputs are the point here: NumPy's warnings about them are expected
pytestmark = [
    pytest.mark.torch,
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
]

INF, NAN = math.inf, math.nan
SPECIAL = [-INF, -7.0, -1.25, -0.0, 0.0, 1.25, 7.0, INF, NAN]
FLOATS = ("float64", "float32", "float16")
# float16 results are rounded; a kink's subgradient is exact in every dtype
TOL = {"float64": (1e-7, 1e-12), "float32": (2e-6, 1e-6), "float16": (2e-3, 2e-3)}


def _prelu(x):
    return F.prelu(x, ember.tensor([0.25], dtype=x.dtype, device=x.device))


def _torch_prelu(t):
    return tF.prelu(t, torch.tensor([0.25], dtype=t.dtype))


# name in F.__all__ -> (ember function, PyTorch function, kinks, whether ±inf is compared).
# ±inf is left out where PyTorch's value or gradient there is an inf·0 or inf/inf artefact
# (gelu'(−inf) = NaN, hardswish(−inf) = NaN): smooth there, not a choice between subgradients.
CASES = {
    "relu": (F.relu, tF.relu, [0.0], True),
    "relu6": (F.relu6, tF.relu6, [0.0, 6.0], True),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda t: tF.leaky_relu(t, 0.2), [0.0], True),
    "prelu": (_prelu, _torch_prelu, [0.0], True),
    "elu": (lambda x: F.elu(x, 0.5), lambda t: tF.elu(t, 0.5), [0.0], True),
    "celu": (lambda x: F.celu(x, 0.5), lambda t: tF.celu(t, 0.5), [0.0], True),
    "selu": (F.selu, tF.selu, [0.0], True),
    "gelu": (F.gelu, tF.gelu, [0.0], False),
    "gelu_approximate": (F.gelu_approximate, lambda t: tF.gelu(t, approximate="tanh"), [0.0], False),
    "hardtanh": (lambda x: F.hardtanh(x, -2.0, 0.5), lambda t: tF.hardtanh(t, -2.0, 0.5), [-2.0, 0.5], True),
    "hard_sigmoid": (lambda x: F.hard_sigmoid(x, 1.0 / 6.0, 0.5), tF.hardsigmoid, [-3.0, 3.0], True),
    "hard_swish": (F.hard_swish, tF.hardswish, [-3.0, 3.0], False),
    "hard_shrink": (lambda x: F.hard_shrink(x, 0.5), lambda t: tF.hardshrink(t, 0.5), [-0.5, 0.5], True),
    "soft_shrink": (lambda x: F.soft_shrink(x, 0.5), lambda t: tF.softshrink(t, 0.5), [-0.5, 0.5], True),
    "shrink": (lambda x: F.shrink(x, 0.5, 0.5), lambda t: tF.softshrink(t, 0.5), [-0.5, 0.5], True),
    "threshold": (lambda x: F.threshold(x, 1.0, -2.0), lambda t: tF.threshold(t, 1.0, -2.0), [1.0], True),
    "thresholded_relu": (
        lambda x: F.thresholded_relu(x, 1.0),
        lambda t: tF.threshold(t, 1.0, 0.0),
        [1.0],
        True,
    ),
    "softplus": (F.softplus, tF.softplus, [0.0, 20.0], True),
    "log_sigmoid": (F.log_sigmoid, tF.logsigmoid, [0.0], True),
    "mish": (F.mish, tF.mish, [0.0], False),
    "silu": (F.silu, tF.silu, [0.0], False),
    "sigmoid": (F.sigmoid, torch.sigmoid, [0.0], True),
    "tanh": (F.tanh, torch.tanh, [0.0], True),
    "softsign": (F.softsign, tF.softsign, [0.0], False),
    "tanhshrink": (F.tanhshrink, tF.tanhshrink, [0.0], True),
}
# tensor ops with kinks that the activations are built from
TENSOR_CASES = {
    "abs": (lambda x: x.abs(), torch.abs, [0.0], True),
    "clamp": (lambda x: x.clamp(-1.0, 0.5), lambda t: t.clamp(-1.0, 0.5), [-1.0, 0.5], True),
    "clamp_min": (lambda x: x.clamp(min=0.5), lambda t: t.clamp(min=0.5), [0.5], True),
    "sign": (lambda x: x.sign() + x, lambda t: t.sign() + t, [0.0], True),  # sign's gradient is 0
    "softplus_beta": (
        lambda x: ember.softplus(x, 2.0, 3.0),
        lambda t: tF.softplus(t, 2.0, 3.0),
        [1.5],  # beta·x == threshold: PyTorch is still on the log branch there
        True,
    ),
    "softplus_negative_beta": (
        lambda x: ember.softplus(x, -1.0, 2.0),
        lambda t: tF.softplus(t, -1.0, 2.0),
        [-2.0],
        True,
    ),
}
# smooth and not element-wise: no kink to choose at (their gradients are tested elsewhere)
NOT_ELEMENTWISE = {"softmax", "log_softmax", "quiet_softmax", "softmin", "glu"}

# activation module -> (a module computing that case, the case); the rest are not element-wise
# or random (RRelu: its own test below)
MODULES = {
    "Relu": (nn.Relu, "relu"),
    "Relu6": (nn.Relu6, "relu6"),
    "LeakyRelu": (lambda: nn.LeakyRelu(0.2), "leaky_relu"),
    "Elu": (lambda: nn.Elu(0.5), "elu"),
    "Celu": (lambda: nn.Celu(0.5), "celu"),
    "Selu": (nn.Selu, "selu"),
    "Gelu": (nn.Gelu, "gelu"),
    "Hardtanh": (lambda: nn.Hardtanh(-2.0, 0.5), "hardtanh"),
    "HardSigmoid": (lambda: nn.HardSigmoid(1.0 / 6.0, 0.5), "hard_sigmoid"),
    "HardSwish": (nn.HardSwish, "hard_swish"),
    "HardShrink": (lambda: nn.HardShrink(0.5), "hard_shrink"),
    "SoftShrink": (lambda: nn.SoftShrink(0.5), "soft_shrink"),
    "Shrink": (lambda: nn.Shrink(0.5, 0.5), "shrink"),
    "Threshold": (lambda: nn.Threshold(1.0, -2.0), "threshold"),
    "ThresholdedRelu": (lambda: nn.ThresholdedRelu(1.0), "thresholded_relu"),
    "Softplus": (nn.Softplus, "softplus"),
    "LogSigmoid": (nn.LogSigmoid, "log_sigmoid"),
    "Mish": (nn.Mish, "mish"),
    "Silu": (nn.Silu, "silu"),
    "Sigmoid": (nn.Sigmoid, "sigmoid"),
    "Tanh": (nn.Tanh, "tanh"),
    "Softsign": (nn.Softsign, "softsign"),
    "Tanhshrink": (nn.Tanhshrink, "tanhshrink"),
    "PRelu": (lambda: nn.PReluConfig(alpha=0.25).init(), "prelu"),
}
NOT_ELEMENTWISE_MODULES = {"Softmax", "Glu", "SwiGlu", "RRelu"}


def _points(kinks, with_inf):
    pts = sorted(set(kinks) | {p for p in SPECIAL if not math.isnan(p)}) + [NAN]
    return [p for p in pts if with_inf or not math.isinf(p)]


def _torch_reference(fn, points):
    # one element at a time: PyTorch's vectorised kernels disagree with its scalar formula at NaN
    # for some ops (hardtanh, hardshrink: 0 instead of 1; elu, selu, hardswish: NaN), and which
    # one runs depends on the tensor's length; ember follows the scalar formula
    ys, gs = [], []
    for p in points:
        t = torch.tensor([p], dtype=torch.float64, requires_grad=True)
        y = fn(t)
        y.backward(torch.ones_like(y))
        ys.append(y.item())
        gs.append(t.grad.item())
    return np.array(ys), np.array(gs)


def _ember(fn, points, device, dtype):
    x = ember.tensor(points, dtype=dtype, device=device).require_grad()
    y = fn(x)
    g = y.sum().backward().get(x)
    assert g is not None, "no gradient reached the input"
    return y.numpy().astype(np.float64), g.numpy().astype(np.float64)


def _compare(ember_fn, torch_fn, kinks, with_inf, device, dtype):
    pts = _points(kinks, with_inf)
    if dtype == "float16":  # ±7 and beyond stay exact; 20 (softplus's threshold) too
        pts = [p for p in pts if math.isnan(p) or abs(p) < 6e4]
    want_y, want_g = _torch_reference(torch_fn, pts)
    got_y, got_g = _ember(ember_fn, pts, device, dtype)
    rtol, atol = TOL[dtype]
    # float16 values of the smooth parts are rounded: compare them loosely, the subgradient picks
    # (0, 1, the slope) hold exactly in every dtype
    np.testing.assert_allclose(got_y, want_y, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"value at {pts}")
    np.testing.assert_allclose(
        got_g, want_g, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"gradient at {pts}"
    )


def test_every_activation_has_a_case():
    assert set(F.__all__) == set(CASES) | NOT_ELEMENTWISE, "a new activation needs a kink case here"
    modules = {
        name
        for name in act.__all__
        if inspect.isclass(getattr(act, name)) and issubclass(getattr(act, name), nn.Module)
    }
    assert modules == set(MODULES) | NOT_ELEMENTWISE_MODULES, "a new activation module needs a case here"


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_activation_at_its_kinks_matches_pytorch(device, name, dtype):
    _compare(*CASES[name], device, dtype)


@pytest.mark.parametrize("dtype", ("float64", "float32"))
@pytest.mark.parametrize("name", sorted(TENSOR_CASES))
def test_tensor_op_at_its_kinks_matches_pytorch(device, name, dtype):
    _compare(*TENSOR_CASES[name], device, dtype)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_activation_module_at_its_kinks_matches_pytorch(device, name):
    factory, case = MODULES[name]
    module = factory().to(device, ember.float64)
    _, torch_fn, kinks, with_inf = CASES[case]
    _compare(module, torch_fn, kinks, with_inf, device, "float64")


def test_rrelu_training_gives_zero_its_random_slope(device):
    # PyTorch's rrelu draws a slope for x <= 0 (0 included) and passes NaN with slope 1
    module = nn.RRelu(0.25, 0.25 + 1e-9)  # a slope range narrow enough to compare
    x = ember.tensor([-1.0, -0.0, 0.0, 2.0, NAN], dtype="float64", device=device).require_grad()
    g = module(x).sum().backward().get(x).numpy()
    np.testing.assert_allclose(g, [0.25, 0.25, 0.25, 1.0, 1.0], rtol=1e-8)


def test_hard_sigmoid_with_burns_defaults_is_flat_on_its_kinks(device):
    # Burn's alpha 0.2, beta 0.5 put the kinks at ±2.5; PyTorch's rule (0 on them) carries over
    x = ember.tensor([-2.5, -1.0, 0.0, 2.5, NAN], dtype="float64", device=device).require_grad()
    g = nn.HardSigmoid()(x).sum().backward().get(x).numpy()
    np.testing.assert_allclose(g, [0.0, 0.2, 0.2, 0.0, 0.0], rtol=1e-12)


# ---- softplus at 0 and what is built on it -------------------------------------------------------
def test_softplus_log_sigmoid_gradient_at_zero_is_one_half(device):
    x = ember.tensor([0.0, -0.0], dtype="float32", device=device).require_grad()
    np.testing.assert_allclose(F.softplus(x).sum().backward().get(x).numpy(), [0.5, 0.5])
    np.testing.assert_allclose(F.log_sigmoid(x).sum().backward().get(x).numpy(), [0.5, 0.5])


@pytest.mark.parametrize("weighted", (False, True))
def test_binary_cross_entropy_with_logits_at_zero_matches_pytorch(device, weighted):
    logits = [0.0, -0.0, 0.0, 2.5, -30.0, 40.0]
    targets = [1, 0, 1, 0, 1, 0]
    x = ember.tensor(logits, dtype="float64", device=device).require_grad()
    weights = ember.tensor([0.5, 2.0], dtype="float64", device=device) if weighted else None
    loss = nn.BinaryCrossEntropyLoss(weights=weights, logits=True)(
        x, ember.tensor(targets, device=device), nn.Reduction.Sum
    )
    got = loss.backward().get(x).numpy()
    t = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    w = torch.tensor([0.5, 2.0], dtype=torch.float64)[torch.tensor(targets)] if weighted else None
    want_loss = tF.binary_cross_entropy_with_logits(
        t, torch.tensor(targets, dtype=torch.float64), weight=w, reduction="sum"
    )
    want_loss.backward()
    np.testing.assert_allclose(float(loss.item()), want_loss.item(), rtol=1e-12)
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_a_parameter_initialised_to_zero_through_softplus_trains(device):
    # issue #30: softplus's gradient at exactly 0 was 0, so Adam never moved this parameter
    class Scale(nn.Module):
        def __init__(self):
            self.raw = nn.Param(ember.zeros(3, device=device))

        def forward(self):
            return F.softplus(self.raw.val())

    model = Scale()
    adam = optim.AdamConfig().init()
    target = ember.full((3,), 2.0, device=device)
    losses = []
    for _ in range(5):
        loss = (model.forward() - target).square().mean()
        losses.append(float(loss.item()))
        model = adam.step(0.1, model, optim.GradientsParams.from_grads(loss.backward(), model))
    raw = model.raw.val().numpy()
    assert (raw > 0.4).all(), f"the parameter barely moved from 0: {raw}"
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("bounds", ("both", "low", "high"))
def test_clamp_with_tensor_bounds_matches_pytorch(device, bounds):
    # PyTorch: x's gradient on [low, high] bounds included; where low > high the result is high,
    # which then takes the gradient (low none)
    xs = [0.0, 1.0, 2.0, 3.0, -1.0, 1.5, NAN, 1.0]
    lows = [1.0, 1.0, 1.0, 2.0, 2.0, 1.5, 0.0, 1.0]
    highs = [2.0, 0.5, 0.5, 1.0, 1.0, 1.5, 1.0, 1.0]
    x, low, high = (ember.tensor(v, dtype="float64", device=device).require_grad() for v in (xs, lows, highs))
    tx, tlow, thigh = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (xs, lows, highs))
    args = {
        "both": ((low, high), (tlow, thigh)),
        "low": ((low, None), (tlow, None)),
        "high": ((None, high), (None, thigh)),
    }
    (lo, hi), (tlo, thi) = args[bounds]
    y = x.clamp(lo, hi)
    grads = y.sum().backward()
    ty = torch.clamp(tx, tlo, thi)
    ty.sum().backward()
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    for mine, theirs in ((x, tx), (lo, tlo), (hi, thi)):
        if mine is not None:
            np.testing.assert_array_equal(grads.get(mine).numpy(), theirs.grad.numpy())


# ---- maximum / minimum and the max / min reductions ----------------------------------------------
PAIRS_A = [1.0, 2.0, 1.0, NAN, 1.0, NAN, -0.0, 0.0, INF, -INF, 3.0]
PAIRS_B = [1.0, 1.0, 2.0, 1.0, NAN, NAN, 0.0, -0.0, INF, -INF, -INF]


@pytest.mark.parametrize("op", ("maximum", "minimum"))
@pytest.mark.parametrize("dtype", ("float64", "float32"))
def test_maximum_minimum_ties_and_nan_match_pytorch(device, op, dtype):
    # PyTorch: a tie splits the gradient in halves; a NaN operand sends the whole gradient to both
    a = ember.tensor(PAIRS_A, dtype=dtype, device=device).require_grad()
    b = ember.tensor(PAIRS_B, dtype=dtype, device=device).require_grad()
    y = getattr(ember, op)(a, b)
    grads = y.sum().backward()
    want = []
    for pa, pb in zip(PAIRS_A, PAIRS_B):  # one pair at a time: PyTorch's scalar formula
        ta = torch.tensor([pa], dtype=torch.float64, requires_grad=True)
        tb = torch.tensor([pb], dtype=torch.float64, requires_grad=True)
        ty = getattr(torch, op)(ta, tb)
        ty.sum().backward()
        want.append((ty.item(), ta.grad.item(), tb.grad.item()))
    want_y, want_ga, want_gb = (np.array(w) for w in zip(*want))
    np.testing.assert_array_equal(y.numpy().astype(np.float64), want_y)
    np.testing.assert_array_equal(grads.get(a).numpy(), want_ga)
    np.testing.assert_array_equal(grads.get(b).numpy(), want_gb)


ROWS = [[1.0, 3.0, 3.0, 2.0], [0.0, -0.0, 0.0, -1.0], [-INF, -INF, -INF, -INF], [1.0, NAN, 3.0, NAN]]


@pytest.mark.parametrize("op", ("max", "min"))
def test_max_min_over_everything_share_ties_and_nans_as_pytorch(device, op):
    for row in ROWS:
        x = ember.tensor(row, dtype="float64", device=device).require_grad()
        got = getattr(x, op)().backward().get(x).numpy()
        t = torch.tensor(row, dtype=torch.float64, requires_grad=True)
        getattr(t, op)().backward()  # torch.max(): ties share evenly, a NaN result among the NaNs
        np.testing.assert_array_equal(got, t.grad.numpy(), err_msg=f"{op} of {row}")


@pytest.mark.parametrize("op", ("max", "min"))
def test_max_min_over_a_dim_share_ties_as_pytorch(device, op):
    data = np.array(ROWS, dtype=np.float64)
    x = ember.tensor(data, device=device).require_grad()
    got = getattr(x, op)(1).sum().backward().get(x).numpy()
    # torch.amax/amin share ties evenly; in a row holding a NaN ember shares among the NaNs as
    # torch.max() does on the whole row (torch.amax would make the row's gradient all NaN)
    want = []
    for row in data:
        t = torch.tensor(row, requires_grad=True)
        r = getattr(t, op)() if np.isnan(row).any() else getattr(torch, "a" + op)(t, 0)
        r.backward()
        want.append(t.grad.numpy())
    np.testing.assert_array_equal(got, np.array(want))


# ---- max pooling: PyTorch gives each window's gradient to one element -----------------------------
POOL_1D = [
    # (input row, kernel, stride, padding, dilation, ceil_mode)
    ([1.0, 1.0, 1.0, 0.0, 2.0, 2.0, 2.0], 3, 1, 0, 1, False),  # overlapping windows of ties
    ([1.0, NAN, NAN, 2.0, 3.0, NAN, 5.0, NAN], 3, 2, 0, 1, False),  # the last NaN of a window wins
    ([-INF, -INF, -INF, 4.0, 4.0], 2, 2, 1, 1, True),  # an all -inf window padded on the left
    ([0.0, -0.0, 0.0, 7.0, 7.0, 7.0, 7.0], 2, 1, 0, 2, False),  # dilated, ±0 ties
]


@pytest.mark.parametrize("case", range(len(POOL_1D)))
def test_max_pool1d_ties_and_nan_match_pytorch(device, case):
    row, k, s, p, d, ceil = POOL_1D[case]
    x = ember.tensor([[row, row[::-1]]], dtype="float64", device=device).require_grad()
    w = np.arange(1.0, 100.0)  # distinct weights per output: shows where each window's gradient went
    y = nn.MaxPool1d(k, s, p, d, ceil)(x)
    weights = ember.tensor(w[: y.numel].reshape(y.shape), device=device)
    got = (y * weights).sum().backward().get(x).numpy()
    t = torch.tensor([[row, row[::-1]]], dtype=torch.float64, requires_grad=True)
    ty = tF.max_pool1d(t, k, s, p, d, ceil)
    ty.backward(torch.tensor(w[: ty.numel()].reshape(ty.shape)))
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(got, t.grad.numpy())


POOL_2D = [
    # (image, kernel, stride, padding)
    ([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], (2, 2), (1, 1), 0),
    (
        [[0.0, 5.0, 5.0, 1.0], [5.0, 5.0, 2.0, 2.0], [NAN, 1.0, 1.0, NAN], [NAN, 0.0, NAN, 3.0]],
        (2, 2),
        (2, 2),
        0,
    ),
    ([[-INF, -INF], [-INF, -INF]], (2, 2), (2, 2), 1),
]


@pytest.mark.parametrize("case", range(len(POOL_2D)))
def test_max_pool2d_ties_and_nan_match_pytorch(device, case):
    image, k, s, p = POOL_2D[case]
    x = ember.tensor([[image]], dtype="float32", device=device).require_grad()
    y = nn.MaxPool2d(k, s, p)(x)
    w = np.arange(1.0, 1.0 + y.numel).reshape(y.shape)
    got = (y * ember.tensor(w, dtype="float32", device=device)).sum().backward().get(x).numpy()
    t = torch.tensor([[image]], dtype=torch.float32, requires_grad=True)
    ty = tF.max_pool2d(t, k, s, p)
    ty.backward(torch.tensor(w, dtype=torch.float32))
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(got, t.grad.numpy())
