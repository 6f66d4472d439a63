"""Fused neural-network ops on every backend: softmax family, layer/rms norm, GELU,
per-sample cross-entropy, embedding. Forward against NumPy (tests/helpers/npref.py) at
float32 and float64 tolerances; gradients against central differences at float64.

Shapes and dtypes are kept to a few combinations: every distinct (dtype, rank) compiles a
new specialisation of the cpu backend's Numba kernels.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import npref
from helpers.gradcheck import gradcheck_np
from helpers.numeric import assert_close

import ember

FLOATS = [ember.float32, ember.float64]


def _t(x, dtype, device):
    return ember.tensor(np.asarray(x), dtype=dtype, device=device)


# ---- softmax family ---------------------------------------------------------------------------
SOFTMAXES = {
    "softmax": (ember.softmax, npref.softmax),
    "log_softmax": (ember.log_softmax, npref.log_softmax),
    "quiet_softmax": (ember.quiet_softmax, npref.quiet_softmax),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_softmax_family_forward(device, rng, name, dtype):
    fn, ref = SOFTMAXES[name]
    x = (rng.standard_normal((2, 3, 5)) * 3).astype(dtype.numpy)
    t = _t(x, dtype, device)
    for dim in (-1, 1, 0):
        assert_close(fn(t, dim=dim), ref(x.astype(np.float64), axis=dim), dtype=dtype)


@pytest.mark.parametrize("name", list(SOFTMAXES))
def test_softmax_family_gradients(device, rng, name):
    fn, _ = SOFTMAXES[name]
    x = rng.standard_normal((2, 3, 5)) * 2
    gradcheck_np(lambda t: fn(t, -1), device, x)
    gradcheck_np(lambda t: fn(t, 1), device, x)


def test_softmax_methods_and_extremes(device):
    x = _t([[1000.0, 1000.0, -1000.0], [-1e4, 0.0, -np.inf]], ember.float64, device)
    assert_close(x.softmax(-1), np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]]))
    assert_close(x.log_softmax(-1)[0, :2], np.log([0.5, 0.5]))
    q = ember.quiet_softmax(_t([[-50.0, -50.0]], ember.float64, device))
    assert q.numpy().sum() < 1e-20  # a row of very negative logits attends to nothing
    assert_close(ember.quiet_softmax(_t([[500.0, 500.0]], ember.float64, device)), np.array([[0.5, 0.5]]))


# ---- normalisation ------------------------------------------------------------------------------
AFFINE = ["none", "gamma", "beta", "both"]


def _affine(rng, which, d):
    gamma = rng.standard_normal(d) * 0.5 + 1 if which in ("gamma", "both") else None
    beta = rng.standard_normal(d) if which in ("beta", "both") else None
    return gamma, beta


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("which", AFFINE)
def test_layer_norm_forward(device, rng, which, dtype):
    x = (rng.standard_normal((2, 3, 8)) * 2 + 1).astype(dtype.numpy)
    gamma, beta = _affine(rng, which, 8)
    out = ember.layer_norm(
        _t(x, dtype, device),
        None if gamma is None else _t(gamma, dtype, device),
        None if beta is None else _t(beta, dtype, device),
        eps=1e-5,
    )
    assert_close(
        out,
        npref.layer_norm(
            x,
            None if gamma is None else gamma.astype(dtype.numpy),
            None if beta is None else beta.astype(dtype.numpy),
            1e-5,
        ),
        dtype=dtype,
    )


@pytest.mark.parametrize("which", AFFINE)
def test_layer_norm_gradients(device, rng, which):
    x = rng.standard_normal((2, 3, 8)) * 2 + 1
    gamma, beta = _affine(rng, which, 8)
    if which == "none":
        gradcheck_np(lambda a: ember.layer_norm(a), device, x)
    elif which == "gamma":
        gradcheck_np(lambda a, g: ember.layer_norm(a, g), device, x, gamma)
    elif which == "beta":
        gradcheck_np(lambda a, b: ember.layer_norm(a, None, b), device, x, beta)
    else:
        gradcheck_np(lambda a, g, b: ember.layer_norm(a, g, b, eps=1e-3), device, x, gamma, beta)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("with_gamma", [False, True], ids=["plain", "gamma"])
def test_rms_norm_forward(device, rng, with_gamma, dtype):
    x = rng.standard_normal((2, 3, 8)).astype(dtype.numpy)
    gamma = (rng.standard_normal(8) + 1).astype(dtype.numpy) if with_gamma else None
    out = ember.rms_norm(_t(x, dtype, device), None if gamma is None else _t(gamma, dtype, device))
    assert_close(out, npref.rms_norm(x, gamma, 1e-5), dtype=dtype)


def test_rms_norm_gradients(device, rng):
    x = rng.standard_normal((2, 3, 8))
    gradcheck_np(lambda a: ember.rms_norm(a), device, x)
    gradcheck_np(lambda a, g: ember.rms_norm(a, g, eps=1e-3), device, x, rng.standard_normal(8) + 1)


def test_norms_constant_rows(device):
    x = ember.full((2, 4), 3.0, dtype=ember.float64, device=device)
    assert_close(ember.layer_norm(x), np.zeros((2, 4)))
    y = ember.rms_norm(ember.zeros(1, 4, dtype=ember.float64, device=device))
    assert_close(y, np.zeros((1, 4)))


# ---- GELU ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_forward(device, rng, approximate, dtype):
    x = (rng.standard_normal((4, 16)) * 3).astype(dtype.numpy)
    out = ember.gelu(_t(x, dtype, device), approximate=approximate)
    assert_close(out, npref.gelu(x, approximate == "tanh"), dtype=dtype)
    assert_close(
        _t(x, dtype, device).gelu(approximate=approximate == "tanh"),
        npref.gelu(x, approximate == "tanh"),
        dtype=dtype,
    )


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradients(device, rng, approximate):
    gradcheck_np(lambda t: ember.gelu(t, approximate), device, rng.standard_normal((4, 16)) * 3)


def _gelu_truth(x, approximate: bool):
    """GELU and its derivative in float64, written without cancellation for x << 0."""
    x = np.asarray(x, dtype=np.float64)
    if approximate:
        c = math.sqrt(2 / math.pi)
        z = c * (x + 0.044715 * x**3)
        s, s_neg = npref.sigmoid(2 * z), npref.sigmoid(-2 * z)  # 0.5 (1 ± tanh z)
        return x * s, s + 2 * x * s * s_neg * c * (1 + 3 * 0.044715 * x * x)
    cdf = 0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2))
    return x * cdf, cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_float32_accuracy_over_the_tails(device, approximate):
    # float32 values and gradients are exact to float32 precision, also for x << 0 where
    # 1 + tanh / 1 + erf cancel
    x = np.linspace(-9, 9, 181).astype(np.float32)
    t = ember.tensor(x, device=device).require_grad()
    y = ember.gelu(t, approximate)
    g = y.backward(ember.ones_like(y)).get(t)
    want_y, want_g = _gelu_truth(x, approximate == "tanh")
    assert_close(y, want_y, rtol=2e-5, atol=1e-7)
    assert_close(g, want_g, rtol=2e-5, atol=1e-7)


# ---- cross-entropy ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 1.0])
def test_cross_entropy_forward(device, rng, smoothing, dtype):
    logits = (rng.standard_normal((6, 5)) * 3).astype(dtype.numpy)
    targets = np.array([0, 4, 2, 2, 1, 3])
    out = ember.cross_entropy_per_sample(
        _t(logits, dtype, device), ember.tensor(targets, device=device), smoothing=smoothing
    )
    assert out.shape == (6,)
    assert_close(out, npref.cross_entropy(logits, targets, smoothing), dtype=dtype)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_gradients(device, rng, smoothing):
    targets = ember.tensor([0, 4, 2, 2, 1, 3], device=device)
    gradcheck_np(
        lambda z: ember.cross_entropy_per_sample(z, targets, smoothing),
        device,
        rng.standard_normal((6, 5)) * 3,
    )
    # through a mean, as a loss is used
    gradcheck_np(
        lambda z: ember.cross_entropy_per_sample(z * 2, targets, smoothing).mean(),
        device,
        rng.standard_normal((6, 5)),
    )


def test_cross_entropy_int32_targets_and_large_logits(device):
    logits = _t([[1000.0, 0.0], [0.0, 1000.0]], ember.float32, device)
    out = ember.cross_entropy_per_sample(logits, ember.tensor([0, 0], dtype=ember.int32, device=device))
    assert_close(out, np.array([0.0, 1000.0]))


# ---- embedding -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_embedding_forward(device, rng, dtype):
    w = rng.standard_normal((7, 4)).astype(dtype.numpy)
    ids = np.array([[0, 6, 6], [3, 0, 6]])
    out = ember.embedding(_t(w, dtype, device), ember.tensor(ids, device=device))
    assert out.shape == (2, 3, 4) and out.dtype is dtype
    np.testing.assert_array_equal(out.numpy(), w[ids])
    flat = ember.embedding(_t(w, dtype, device), ember.tensor([5], dtype=ember.int32, device=device))
    np.testing.assert_array_equal(flat.numpy(), w[[5]])


def test_embedding_gradient_with_repeated_ids(device, rng):
    ids = ember.tensor([[0, 6, 6], [3, 0, 6]], device=device)
    gradcheck_np(lambda w: ember.embedding(w, ids), device, rng.standard_normal((7, 4)))
    w = ember.tensor(rng.standard_normal((7, 4)), dtype=ember.float64, device=device).require_grad()
    g = ember.embedding(w, ids).sum().backward().get(w).numpy()
    counts = np.array([2, 0, 0, 1, 0, 0, 3], dtype=np.float64)
    np.testing.assert_array_equal(g, np.repeat(counts[:, None], 4, axis=1))


# ---- found by the differential test (tests/tensor/test_differential.py) -----------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_layer_norm_gradient_of_a_one_wide_row_is_exactly_zero(device, dtype):
    # a 1-wide row normalises to a constant: cpu gave dx = -0.212 (x = [0], gamma = 6e4), the
    # rounding error of dy * gamma fused into an FMA against its already rounded mean
    x = ember.tensor([[0.0], [3.0]], dtype=dtype, device=device).require_grad()
    gamma = ember.tensor([6e4], dtype=dtype, device=device)
    out = ember.layer_norm(x, gamma)
    grad = out.backward(ember.tensor([[1.1234567], [-0.7654321]], dtype=dtype, device=device)).get(x)
    np.testing.assert_array_equal(grad.numpy(), [[0.0], [0.0]])


def test_norms_reject_bad_eps_and_0d_inputs_alike(device):
    # cpu and cuda rejected a negative (cuda also an infinite) eps, the reference computed with
    # it; a 0-d input raised Python's "tuple index out of range"
    x = ember.tensor([1.0, 2.0], device=device)
    for eps in (-1e-5, math.inf, math.nan):
        for op in (lambda: ember.layer_norm(x, eps=eps), lambda: ember.rms_norm(x, eps=eps)):
            with pytest.raises(ValueError, match="eps must be a finite number >= 0"):
                op()
    for op, name in ((ember.layer_norm, "layer_norm"), (ember.rms_norm, "rms_norm")):
        with pytest.raises(ValueError, match=f"{name}: .*0-d"):
            op(ember.tensor(1.0, device=device))


def test_cross_entropy_of_no_rows_and_no_classes(device):
    # cpu's kernel raised "logits must have shape [N, C] with C >= 1" where the reference gives
    # an empty loss: the fused op now falls back to the composed one (the backend contract)
    logits = ember.zeros(0, 0, device=device).require_grad()
    loss = ember.cross_entropy_per_sample(logits, ember.zeros(0, dtype="int64", device=device))
    assert loss.shape == (0,)
    grad = loss.backward(ember.zeros(0, device=device)).get(logits)
    assert grad.shape == (0, 0)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_rms_norm_gradient_of_tiny_rows_is_finite(device, dtype):
    # cpu computed dx = r g - x r^3 mean(g x): r^3 overflowed to an infinite dx for tiny rows
    # with eps = 0 (found at x = 1.3e-117 in float64; float32 overflows from about 1e-13)
    tiny = 1.3e-117 if dtype is ember.float64 else 1e-14
    x = ember.tensor([[tiny], [-2 * tiny]], dtype=dtype, device=device).require_grad()
    out = ember.rms_norm(x, eps=0.0)
    np.testing.assert_allclose(out.numpy(), [[1.0], [-1.0]], rtol=1e-6)
    grad = out.backward(ember.tensor([[1.5], [0.5]], dtype=dtype, device=device)).get(x).numpy()
    assert np.isfinite(grad).all()
    # a 1-wide row normalises to sign(x): the exact gradient is 0, up to rounding times 1/|x|
    np.testing.assert_allclose(grad * tiny, 0.0, atol=1e-6)


def test_embedding_bag_max_propagates_nan_as_the_reference(other_device):
    # cpu's max skipped a NaN that came after a number (``v > best`` is False for NaN) and
    # kept it when it came first; the reference (NumPy max / argmax) gives NaN either way,
    # and the gradient goes to the first NaN
    weight = np.array([[0.0, 0.0, np.nan], [0.0, 0.0, 0.0], [1.0, np.nan, 2.0]], dtype=np.float32)
    indices, offsets = np.array([1, 0, 2, 0, 1]), np.array([0, 3])
    results = {}
    for dev in ("reference", other_device):
        w = ember.tensor(weight, device=dev).require_grad()
        out = ember.embedding_bag(
            w, ember.tensor(indices, device=dev), ember.tensor(offsets, device=dev), mode="max"
        )
        results[dev] = out.numpy(), out.backward(ember.ones_like(out)).get(w).numpy()
    for got, want in zip(results[other_device], results["reference"]):
        np.testing.assert_array_equal(got, want)  # NaN where NaN (assert_array_equal matches NaNs)
    assert np.isnan(results["reference"][0]).tolist() == [[False, True, True], [False, False, True]]
