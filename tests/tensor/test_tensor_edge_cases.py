"""Edge-case inputs on every backend: masked (-inf) logits, clamp at its bounds, huge and
infinite activations, empty normalised axes, empty arg-reductions and shapes no array can
have. Each op agrees with ``reference`` or raises the same clear ember error everywhere."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

INF = math.inf
HALF_AND_UP = [ember.float16, ember.float32, ember.float64]


def _grad(fn, x, device, dtype=None):
    t = ember.tensor(x, dtype=dtype, device=device).require_grad()
    out = fn(t)
    return out, out.sum().backward().get(t)


# ---- cross-entropy with masked (-inf) logits -------------------------------------------------
LOGITS = np.array([[-INF, 0.0, 1.0], [0.5, -INF, -INF], [2.0, 1.0, -INF]])
TARGETS = np.array([2, 0, 1])


def _softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("dtype", HALF_AND_UP, ids=str)
def test_cross_entropy_with_minus_inf_logits(device, dtype):
    out, g = _grad(
        lambda z: ember.cross_entropy_per_sample(z, ember.tensor(TARGETS, device=device)),
        LOGITS,
        device,
        dtype,
    )
    p = _softmax(LOGITS)
    want = -np.log(p[np.arange(3), TARGETS])  # [0.3133, 0, 1.3133]
    want_g = p - np.eye(3)[TARGETS]
    tol = 2e-3 if dtype is ember.float16 else 1e-6
    np.testing.assert_allclose(out.float().numpy(), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(g.float().numpy(), want_g, rtol=tol, atol=tol)


@pytest.mark.parametrize("smoothing", [0.1, 1.0])
def test_cross_entropy_smoothing_with_minus_inf_logits(device, smoothing):
    # smoothing puts target mass on the -inf classes: the loss is +inf (as in PyTorch), never NaN,
    # and the gradient stays p - (1 - s) onehot - s / C
    out, g = _grad(
        lambda z: ember.cross_entropy_per_sample(z, ember.tensor(TARGETS, device=device), smoothing),
        LOGITS,
        device,
        ember.float32,
    )
    np.testing.assert_array_equal(out.numpy(), [INF, INF, INF])
    want_g = _softmax(LOGITS) - (1 - smoothing) * np.eye(3)[TARGETS] - smoothing / 3
    np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-6, atol=1e-6)


def test_cross_entropy_with_minus_inf_logits_matches_torch(device):
    torch = pytest.importorskip("torch")
    x = torch.tensor(LOGITS, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(x, torch.from_numpy(TARGETS), reduction="none")
    (ref_g,) = torch.autograd.grad(ref.sum(), x)
    out, g = _grad(
        lambda z: ember.cross_entropy_per_sample(z, ember.tensor(TARGETS, device=device)),
        LOGITS,
        device,
        ember.float64,
    )
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g.numpy(), ref_g.numpy(), rtol=1e-12, atol=1e-12)


# ---- clamp: the gradient passes at the bounds ----------------------------------------------
def test_clamp_gradient_is_one_at_its_bounds(device):
    _, g = _grad(lambda t: t.clamp(0, 1), [0.0, 0.5, 1.0], device)
    np.testing.assert_array_equal(g.numpy(), [1.0, 1.0, 1.0])  # PyTorch and Burn: [1, 1, 1]
    x = [-1.0, 0.0, 0.5, 1.0, 2.0]
    for fn, want in (
        (lambda t: t.clamp(0, 1), [0, 1, 1, 1, 0]),
        (lambda t: t.clamp_min(0.0), [0, 1, 1, 1, 1]),
        (lambda t: t.clamp_max(1.0), [1, 1, 1, 1, 0]),
        (lambda t: ember.clamp(t, 1.0, 1.0), [0, 0, 0, 1, 0]),
    ):
        _, g = _grad(fn, x, device)
        np.testing.assert_array_equal(g.numpy(), want)


def test_clamp_gradients_match_torch_with_tensor_bounds(device):
    torch = pytest.importorskip("torch")
    x = np.array([-1.0, 0.0, 0.25, 0.5, 1.0, 2.0, np.nan])
    low = np.array([0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0])
    high = np.array([1.0, 1.0, 1.0, 0.5, 1.0, 3.0, 1.0])
    tx, tl, th = (torch.tensor(a, requires_grad=True) for a in (x, low, high))
    u = np.arange(1.0, 8.0)
    torch.clamp(tx, tl, th).backward(torch.from_numpy(u))
    ex, el, eh = (ember.tensor(a, dtype=ember.float64, device=device).require_grad() for a in (x, low, high))
    out = ember.clamp(ex, el, eh)
    np.testing.assert_array_equal(out.numpy(), torch.clamp(tx, tl, th).detach().numpy())
    grads = out.backward(ember.tensor(u, device=device))
    for ours, theirs in ((ex, tx), (el, tl), (eh, th)):
        np.testing.assert_array_equal(grads.get(ours).numpy(), theirs.grad.numpy())


# ---- GELU at huge and infinite inputs --------------------------------------------------------
HUGE = np.array([1e20, -1e20, INF, -INF, 1e30, -1e30, 3e38, -3e38, 1e4, -1e4, 20.0, -20.0, 3.0, 0.0, np.nan])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's inf * 0 in the reference
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
def test_gelu_at_huge_and_infinite_inputs(other_device, dtype, approximate):
    want, want_g = _grad(lambda t: ember.gelu(t, approximate), HUGE, "reference", dtype)
    got, got_g = _grad(lambda t: ember.gelu(t, approximate), HUGE, other_device, dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-30, equal_nan=True)
    np.testing.assert_allclose(got_g.numpy(), want_g.numpy(), rtol=1e-6, atol=1e-30, equal_nan=True)
    y, g = got.numpy(), got_g.numpy()
    # gelu(x) -> x for x -> +inf and -> 0 for x -> -inf; its derivative -> 1 and -> 0
    np.testing.assert_array_equal(y[[0, 2, 4, 6]], HUGE[[0, 2, 4, 6]].astype(dtype.numpy))
    np.testing.assert_array_equal(y[[1, 5, 7]], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(g[:8], [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    assert np.isnan(y[3]) and np.isnan(y[-1]) and np.isnan(g[-1])  # -inf * Phi(-inf) = -inf * 0


# ---- empty normalised axes -------------------------------------------------------------------
EMPTY_AXIS = {
    "layer_norm": (lambda x: ember.layer_norm(x), (3, 0)),
    "layer_norm_affine": (
        lambda x: ember.layer_norm(
            x, ember.ones(0, device=x.device, dtype=x.dtype), ember.zeros(0, device=x.device, dtype=x.dtype)
        ),
        (3, 0),
    ),
    "rms_norm": (lambda x: ember.rms_norm(x, ember.ones(0, device=x.device, dtype=x.dtype)), (2, 3, 0)),
    "softmax": (lambda x: ember.softmax(x), (3, 0)),
    "softmax_dim0": (lambda x: ember.softmax(x, 0), (0, 3)),
    "log_softmax": (lambda x: ember.log_softmax(x), (3, 0)),
    "quiet_softmax": (lambda x: ember.quiet_softmax(x), (3, 0)),
    "logsumexp": (lambda x: x.logsumexp(1), (3, 0)),
    "attention_no_keys": (lambda x: ember.attention(x[:, :, :3], x[:, :, 3:], x[:, :, 3:]), (1, 2, 3, 4)),
    "attention_no_keys_quiet": (
        lambda x: ember.attention(x[:, :, :3], x[:, :, 3:], x[:, :, 3:], quiet=True),
        (1, 2, 3, 4),
    ),
    "attention_no_keys_masked": (
        lambda x: ember.attention(
            x[:, :, :3],
            x[:, :, 3:],
            x[:, :, 3:],
            mask_pad=ember.zeros(1, 0, dtype=ember.bool_, device=x.device),
        ),
        (1, 2, 3, 4),
    ),
    "attention_head_dim_0": (lambda x: ember.attention(x, x, x), (1, 2, 3, 0)),
}


@pytest.mark.parametrize("dtype", HALF_AND_UP, ids=str)
@pytest.mark.parametrize("name", list(EMPTY_AXIS))
def test_empty_normalised_axis(device, name, dtype):
    fn, shape = EMPTY_AXIS[name]
    x = np.random.default_rng(0).standard_normal(shape)
    out, g = _grad(fn, x, device, dtype)
    want, want_g = _grad(fn, x, "reference", dtype)
    assert out.dtype is dtype and out.shape == want.shape and g.shape == x.shape
    np.testing.assert_array_equal(out.numpy(), want.numpy())
    np.testing.assert_array_equal(g.numpy(), want_g.numpy())
    if name == "logsumexp":
        np.testing.assert_array_equal(out.numpy(), [-INF] * 3)  # the log of an empty sum
    if name.startswith("attention_no_keys"):
        np.testing.assert_array_equal(out.numpy(), np.zeros(out.shape))  # PyTorch's sdpa too
        np.testing.assert_array_equal(g.numpy(), np.zeros(shape))


# ---- arg-reductions of empty tensors ----------------------------------------------------------
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_of_empty_tensors_raise_a_clear_error(device, op):
    x = ember.zeros(0, 3, device=device)
    for kwargs in ({}, {"keepdim": True}, {"dim": 0}):
        with pytest.raises(
            ValueError, match=rf"^{op}: cannot take {op} (of an empty tensor|over an empty dim)"
        ):
            getattr(x, op)(**kwargs)
    assert getattr(x, op)(1).shape == (0,)  # the other dim is not empty: an empty answer


# ---- shapes no array can have -----------------------------------------------------------------
BIG = 2**40
HUGE_SHAPES = {
    "zeros": lambda d: ember.zeros(BIG, BIG, device=d),
    "full": lambda d: ember.full((2**62, 4), 1.0, device=d),
    "empty": lambda d: ember.empty(BIG, BIG, device=d),
    "rand": lambda d: ember.rand(BIG, BIG, device=d),
    "randn": lambda d: ember.randn(BIG, BIG, device=d),
    "randint": lambda d: ember.randint(0, 5, (BIG, BIG), device=d),
    "bernoulli": lambda d: ember.bernoulli(0.5, (2**62, 4), device=d),
    "arange": lambda d: ember.arange(0, 2**62, device=d),
    "eye": lambda d: ember.eye(BIG, device=d),
    "expand": lambda d: ember.zeros(1, 1, device=d).expand(BIG, BIG),
    "repeat": lambda d: ember.zeros(2, 2, device=d).repeat(BIG, BIG),
    "pad": lambda d: ember.zeros(2, 2, device=d).pad((0, 2**62)),
    "cat": lambda d: ember.cat([ember.zeros(1, device=d).expand(2**60)] * 2),
}
TOO_MANY_DIMS = {
    "zeros": lambda d: ember.zeros(*[1] * 65, device=d),
    "reshape": lambda d: ember.zeros(1, device=d).reshape([1] * 65),
    "expand": lambda d: ember.zeros(1, device=d).expand([1] * 64 + [2]),
}


@pytest.mark.parametrize("op", list(HUGE_SHAPES))
def test_shapes_too_big_for_any_array_raise_a_clear_error(device, op):
    with pytest.raises(
        ValueError, match=rf"^{op}: shape \[.*\] of \w+ holds \d+ elements .*more than any array"
    ):
        HUGE_SHAPES[op](device)


@pytest.mark.parametrize("op", list(TOO_MANY_DIMS))
def test_more_than_64_dims_raise_a_clear_error(device, op):
    with pytest.raises(ValueError, match=rf"^{op}: a shape of 65 dims is not supported \(at most 64\)"):
        TOO_MANY_DIMS[op](device)


def test_reshape_reports_the_true_element_count_of_a_huge_target(device):
    # the count was computed with np.prod and wrapped around to 0
    with pytest.raises(ValueError, match=rf"into \[{BIG}, {BIG}\] \({BIG * BIG} elements\)"):
        ember.zeros(4, device=device).reshape(BIG, BIG)
