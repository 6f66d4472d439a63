"""The cpu backend's fused Numba kernels against straightforward NumPy implementations.

Each kernel runs forward and backward in float32 (rtol ~1e-5) and float64 (rtol ~1e-10)
on small shapes whose last dimension is not a multiple of the SIMD width. The NumPy
oracles below compute in float64 and are written independently of the kernels; a few
gradients are also checked by central differences so the oracles are not trusted blindly.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import npref
from helpers.gradcheck import central_difference

# Numba is a core dependency: a failing import must fail these tests, not skip them.
from ember.kernels.cpu import (
    activations,
    attention,
    attention_tiles,
    cross_entropy,
    dropout,
    embedding,
    jit,
    norms,
    softmax,
    tilegemm,
    vecmath,
)

# The kernels' public functions under one name, e.g. K.softmax(x).
K = SimpleNamespace(
    **{
        name: getattr(module, name)
        for module in (activations, attention, cross_entropy, dropout, embedding, norms, softmax)
        for name in module.__all__
    }
)

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}


def close(actual, expected, dtype, scale=1.0):
    """assert_allclose with the dtype's tolerance (atol scaled by the data's magnitude)."""
    tol = TOL[dtype]
    assert actual.dtype == dtype
    np.testing.assert_allclose(actual, expected, rtol=tol["rtol"], atol=tol["atol"] * scale)


def data(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# ------------------------------------------------------------------------- oracles
def ref_softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ref_log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def ref_gelu(x, approximate):
    x = x.astype(np.float64)
    if approximate:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def ref_attention(q, k, v, mask, scale, quiet, p, seed):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ k.swapaxes(-1, -2) * scale
    keep = None
    if p > 0:
        keep = npref.keep_mask(s.shape, p, seed)
        s = np.where(keep, s / (1 - p), 0.0)
    if mask is not None:
        s = np.where(mask[:, None, None, :], -1e4, s)
    m = s.max(-1, keepdims=True)
    if quiet:
        m = np.maximum(m, 0.0)
    total = np.exp(s - m).sum(-1, keepdims=True) + (np.exp(-m) if quiet else 0.0)
    lse = m + np.log(total)
    w = np.exp(s - lse)
    return w @ v, lse[..., 0], w, keep


def ref_attention_backward(dout, q, k, v, mask, scale, quiet, p, seed):
    out, _, w, keep = ref_attention(q, k, v, mask, scale, quiet, p, seed)
    dout = dout.astype(np.float64)
    ds = w * (dout @ v.astype(np.float64).swapaxes(-1, -2) - (dout * out).sum(-1, keepdims=True))
    if mask is not None:
        ds = np.where(mask[:, None, None, :], 0.0, ds)
    if p > 0:
        ds = np.where(keep, ds / (1 - p), 0.0)
    ds = ds * scale
    return ds @ k, ds.swapaxes(-1, -2) @ q, w.swapaxes(-1, -2) @ dout


# ------------------------------------------------------------------------- vecmath
@jit.serial
def _map_exp(x, out):
    for i in range(x.shape[0]):
        out[i] = vecmath.exp(x[i])


@jit.serial
def _map_erfc(x, out):
    for i in range(x.shape[0]):
        out[i] = vecmath.erfc(x[i])


@jit.serial
def _max_reduce(x):
    m = x[0]
    for i in range(x.shape[0]):
        m = vecmath.vmax(m, x[i])
    return m


@pytest.mark.parametrize("dtype, bound", [(np.float32, 1.2e-7), (np.float64, 1e-15)])
def test_exp_relative_error_and_special_values(dtype, bound):
    lo, hi = (-86.0, 88.0) if dtype == np.float32 else (-700.0, 700.0)
    x = np.linspace(lo, hi, 100_003).astype(dtype)
    out = np.empty_like(x)
    _map_exp(x, out)
    ref = np.exp(x.astype(np.longdouble))
    assert float(np.max(np.abs(out - ref) / ref)) < bound
    special = np.array([np.nan, np.inf, -np.inf, 1e4, -1e4, 0.0], dtype=dtype)
    out = np.empty_like(special)
    _map_exp(special, out)
    assert np.isnan(out[0])
    assert out[1] == np.inf and out[3] == np.inf  # overflow gives inf
    assert out[2] == 0.0 and out[4] == 0.0  # underflow gives 0
    assert out[5] == 1.0


def test_erfc_float32_relative_error():
    x = np.linspace(-5, 5, 20_001).astype(np.float32)
    out = np.empty_like(x)
    _map_erfc(x, out)
    ref = np.array([math.erfc(float(v)) for v in x])
    assert float(np.max(np.abs(out - ref) / ref)) < 4e-7


@pytest.mark.parametrize("dtype", DTYPES)
def test_vmax_reduction_matches_numpy(dtype, rng):
    x = data(rng, 1001, dtype)
    assert _max_reduce(x) == x.max()


@pytest.mark.parametrize("dtype, bound", [(np.float32, 4e-7), (np.float64, 1e-15)])
def test_erf_array(dtype, bound):
    x = np.concatenate([np.linspace(-6, 6, 2001), np.geomspace(1e-20, 0.7, 50)]).astype(dtype)
    y = K.erf(x)
    ref = np.array([math.erf(float(v)) for v in x])
    assert y.dtype == dtype
    assert K.erf(np.zeros(1, dtype=dtype))[0] == 0.0
    nonzero = ref != 0
    assert float(np.max(np.abs(y - ref)[nonzero] / np.abs(ref[nonzero]))) < bound


# ------------------------------------------------------------------------- tile products
@pytest.mark.parametrize("dtype", DTYPES)
def test_tile_products_all_remainders(dtype, rng):
    # Row counts around the micro-kernel's strips (8, 4, 2, 1 rows), column counts around one
    # and two vectors (masked last block), reductions including 0 and 1.
    for m in (1, 2, 3, 5, 8, 9, 13, 17):
        for k in (0, 1, 3, 32):
            for n in (1, 7, 8, 15, 16, 17, 31, 32, 33, 65):
                a, bt = data(rng, (m, k), dtype), data(rng, (k, n), dtype)
                w, acc = data(rng, (m, n), dtype), data(rng, (k, n), dtype)
                out = np.full((m, n), np.nan, dtype=dtype)
                tilegemm.rows_by_matrix(a, bt, out)
                close(out, a.astype(np.float64) @ bt, dtype, scale=10)
                expected = acc + a.astype(np.float64).T @ w
                tilegemm.accumulate_at_b(acc, a, w)
                close(acc, expected, dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tile_products_strided_views_leave_the_rest_alone(dtype, rng):
    # a as a transposed view (element stride != 1), out and acc as column windows of wider
    # arrays: the masked stores must not touch the columns beyond the window.
    a = data(rng, (32, 11), dtype).T  # [11, 32], strides (elem, row)
    bt = data(rng, (32, 21), dtype)
    wide = np.full((11, 40), 7.0, dtype=dtype)
    tilegemm.rows_by_matrix(a, bt, wide[:, 3:24])
    close(wide[:, 3:24], a.astype(np.float64) @ bt, dtype, scale=10)
    assert (wide[:, :3] == 7).all() and (wide[:, 24:] == 7).all()
    w = data(rng, (11, 21), dtype)
    acc = np.full((32, 40), 1.0, dtype=dtype)
    tilegemm.accumulate_at_b(acc[:, 5:26], a, w)
    close(acc[:, 5:26], 1.0 + a.astype(np.float64).T @ w, dtype, scale=10)
    assert (acc[:, :5] == 1).all() and (acc[:, 26:] == 1).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_tile_products_propagate_nan_and_inf(dtype):
    a = np.ones((9, 4), dtype=dtype)
    a[2, 1] = np.nan
    a[5, 0] = np.inf
    bt = np.ones((4, 19), dtype=dtype)
    out = np.empty((9, 19), dtype=dtype)
    tilegemm.rows_by_matrix(a, bt, out)
    assert np.isnan(out[2]).all() and np.isposinf(out[5]).all()
    assert (np.delete(out, [2, 5], axis=0) == 4).all()


# ------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_forward_backward(dtype, rng):
    x = data(rng, (3, 4, 37), dtype, scale=3.0)
    dy = data(rng, x.shape, dtype)
    y = K.softmax(x)
    close(y, ref_softmax(x), dtype)
    r = ref_softmax(x)
    close(K.softmax_backward(y, dy), r * (dy - (dy * r).sum(-1, keepdims=True)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_softmax_forward_backward(dtype, rng):
    x = data(rng, (5, 33), dtype, scale=3.0)
    dy = data(rng, x.shape, dtype)
    y = K.log_softmax(x)
    close(y, ref_log_softmax(x), dtype, scale=10)
    expected = dy - np.exp(ref_log_softmax(x)) * dy.sum(-1, keepdims=True)
    close(K.log_softmax_backward(y, dy), expected, dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_softmax_keeps_log_probabilities_near_zero(dtype, rng):
    # Confident rows (one logit far above the rest, at a large offset): the log-probability
    # of the top class is -log1p(tiny), which a sum that holds the maximum's 1 rounds away
    # and which x - (m + log_total) loses at the scale of m. Logits on a 2^-10 grid so every
    # x - m is exact and the float64 reference sees the same differences.
    x = rng.standard_normal((64, 200)) * 3.0
    x[:, 17] += np.linspace(6.0, 40.0, 64)
    x += np.linspace(-900.0, 900.0, 64)[:, None]
    x[-1, :] = x[-1, 0]  # all tied: total = d, not the log1p path
    x[-2, :2] = x[-2].max() + 1.0  # two tied maxima: total just above 2
    x = (np.round(x * 1024.0) / 1024.0).astype(dtype)
    x64 = x.astype(np.float64)
    m = x64.max(-1, keepdims=True)
    # log1p of (total - 1) keeps the reference's own log total accurate near 0 too.
    below = np.where(x64 < m, np.exp(x64 - m), 0.0).sum(-1, keepdims=True)
    expected = (x64 - m) - np.log1p(below + ((x64 == m).sum(-1, keepdims=True) - 1))
    y = K.log_softmax(x)
    rel = np.abs(y - expected) / np.maximum(np.abs(expected), 1e-300)
    assert rel.max() < (1e-6 if dtype == np.float32 else 1e-13), np.unravel_index(rel.argmax(), rel.shape)
    assert np.all(y[:-1, 17] < 0)


def test_softmax_is_stable_and_handles_masked_rows():
    x = np.array([[1000.0, 999.0, -np.inf, 998.0], [-1e4, 0.0, -1e4, 1.0]], dtype=np.float32)
    y = K.softmax(x)
    np.testing.assert_allclose(y, ref_softmax(np.where(np.isinf(x), -1e30, x)), rtol=1e-6)
    assert y[0, 2] == 0.0 and y[1, 0] == 0.0
    ly = K.log_softmax(x)
    assert ly[0, 2] == -np.inf and np.all(np.isfinite(ly[1]))


def test_softmax_one_dimensional_and_empty():
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(K.softmax(x), ref_softmax(x), rtol=1e-12)
    assert K.softmax(np.empty((3, 0))).shape == (3, 0)


def test_softmax_does_not_modify_inputs(rng):
    x = data(rng, (4, 9), np.float64)
    dy = data(rng, (4, 9), np.float64)
    x0, dy0 = x.copy(), dy.copy()
    y = K.softmax(x)
    K.softmax_backward(y, dy)
    K.log_softmax_backward(K.log_softmax(x), dy)
    assert np.array_equal(x, x0) and np.array_equal(dy, dy0)


def test_softmax_accepts_non_contiguous_input(rng):
    x = data(rng, (9, 6), np.float64).T
    np.testing.assert_allclose(K.softmax(x), ref_softmax(x), rtol=1e-12)


def test_softmax_rejects_bad_dtype_and_shapes():
    with pytest.raises(TypeError, match="softmax: x must be float32 or float64"):
        K.softmax(np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(TypeError, match="softmax_backward: dy has dtype float32"):
        K.softmax_backward(np.zeros((2, 3)), np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(3, 2\)"):
        K.softmax_backward(np.zeros((2, 3)), np.zeros((3, 2)))


# ------------------------------------------------------------------------- norms
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_forward_backward(dtype, affine, rng):
    x = data(rng, (2, 3, 21), dtype, scale=2.0) + dtype(0.7)
    dy = data(rng, x.shape, dtype)
    gamma = data(rng, 21, dtype) if affine else None
    beta = data(rng, 21, dtype) if affine else None
    y, mean, rstd = K.layer_norm(x, gamma, beta, 1e-5)
    ry, rmean, rrstd = npref.layer_norm_stats(x, gamma, beta, 1e-5)
    close(y, ry, dtype, scale=10)
    close(mean, rmean, dtype)
    close(rstd, rrstd, dtype)
    assert mean.shape == rstd.shape == (2, 3)

    dx, dgamma, dbeta = K.layer_norm_backward(dy, x, mean, rstd, gamma)
    xhat = (x - rmean[..., None]) * rrstd[..., None]
    g = dy * (gamma if affine else 1.0)
    r = rrstd[..., None]
    expected = r * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    close(dx, expected, dtype, scale=10)
    if affine:
        close(dgamma, (dy * xhat).sum((0, 1)), dtype, scale=10)
        close(dbeta, dy.sum((0, 1)), dtype, scale=10)
    else:
        assert dgamma is None and dbeta is None


def test_layer_norm_gradient_by_central_differences(rng):
    x = data(rng, (3, 10), np.float64)
    gamma, beta = data(rng, 10, np.float64), data(rng, 10, np.float64)
    dy, direction = data(rng, x.shape, np.float64), data(rng, x.shape, np.float64)
    _, mean, rstd = K.layer_norm(x, gamma, beta, 1e-5)
    dx, _, _ = K.layer_norm_backward(dy, x, mean, rstd, gamma)

    def loss(z):
        return (K.layer_norm(z, gamma, beta, 1e-5)[0] * dy).sum()

    numeric = central_difference(loss, x, direction)
    assert abs((dx * direction).sum() - numeric) < 1e-6


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm_forward_backward(dtype, affine, rng):
    x = data(rng, (4, 19), dtype, scale=2.0)
    dy = data(rng, x.shape, dtype)
    gamma = data(rng, 19, dtype) if affine else None
    y, rstd = K.rms_norm(x, gamma, 1e-6)
    xd = x.astype(np.float64)
    rr = 1.0 / np.sqrt((xd * xd).mean(-1, keepdims=True) + 1e-6)
    g = gamma if affine else 1.0
    close(y, xd * rr * g, dtype, scale=10)
    close(rstd, rr[..., 0], dtype)

    dx, dgamma = K.rms_norm_backward(dy, x, rstd, gamma)
    gy = dy * g
    close(dx, rr * gy - xd * rr**3 * (gy * xd).mean(-1, keepdims=True), dtype, scale=10)
    if affine:
        close(dgamma, (dy * xd * rr).sum(0), dtype, scale=10)
    else:
        assert dgamma is None


def test_rms_norm_gradient_by_central_differences(rng):
    x = data(rng, (3, 8), np.float64)
    gamma, dy, direction = (data(rng, s, np.float64) for s in (8, x.shape, x.shape))
    _, rstd = K.rms_norm(x, gamma, 1e-6)
    dx, _ = K.rms_norm_backward(dy, x, rstd, gamma)
    numeric = central_difference(lambda z: (K.rms_norm(z, gamma, 1e-6)[0] * dy).sum(), x, direction)
    assert abs((dx * direction).sum() - numeric) < 1e-6


def test_norm_parameter_grads_sum_over_many_rows(rng):
    # More rows than threads: the per-thread partial sums must all be added up.
    x = data(rng, (257, 5), np.float64)
    dy = data(rng, x.shape, np.float64)
    gamma = np.ones(5)
    _, mean, rstd = K.layer_norm(x, gamma, None, 1e-5)
    _, dgamma, dbeta = K.layer_norm_backward(dy, x, mean, rstd, gamma)
    np.testing.assert_allclose(dbeta, dy.sum(0), rtol=1e-12)


def test_norms_validate_arguments():
    x = np.zeros((2, 4))
    with pytest.raises(ValueError, match=r"layer_norm: gamma must have shape \(4,\)"):
        K.layer_norm(x, np.ones(3), None, 1e-5)
    with pytest.raises(ValueError, match=r"layer_norm_backward: mean must have shape \(2,\)"):
        K.layer_norm_backward(x, x, np.zeros(3), np.ones(2), None)
    with pytest.raises(ValueError, match="rms_norm: the normalised .* is empty"):
        K.rms_norm(np.zeros((2, 0)), None, 1e-6)
    with pytest.raises(TypeError, match="rms_norm: gamma has dtype float32"):
        K.rms_norm(x, np.ones(4, dtype=np.float32), 1e-6)


# ------------------------------------------------------------------------- gelu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_forward_backward(dtype, approximate, rng):
    x = np.concatenate([np.linspace(-9, 9, 181), rng.standard_normal(50)])
    x = x.astype(dtype).reshape(-1, 7)
    dy = data(rng, x.shape, dtype)
    y = K.gelu(x, approximate)
    close(y, ref_gelu(x, approximate), dtype, scale=5)
    # the derivative of the float64 oracle by central differences
    xd = x.astype(np.float64)
    slope = central_difference(lambda z: ref_gelu(z, approximate), xd, 1.0, eps=1e-5)
    dx = K.gelu_backward(x, dy, approximate)
    tol = dict(rtol=2e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(dx, dy * slope, **tol)


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_float32_negative_tail_keeps_relative_accuracy(approximate):
    x = np.linspace(-5, -2, 31).astype(np.float32)
    np.testing.assert_allclose(K.gelu(x, approximate), ref_gelu(x, approximate), rtol=2e-6)


def test_gelu_exact_float32_relative_error_over_the_whole_line():
    # Down to x = -12.5, where the output (about 1e-35) is still a normal float32: the
    # tail's x^2 / 2 is carried exactly into its exponential, so the bound holds there too.
    x = np.concatenate([np.linspace(-12.5, 9.0, 43_001), -np.geomspace(1e-30, 1.0, 200)])
    x = x.astype(np.float32)
    xd = x.astype(np.float64)
    ref = xd * 0.5 * np.vectorize(math.erfc)(-xd / math.sqrt(2))
    got = K.gelu(x, False)
    assert got[ref == 0].tolist() == [0.0]  # x = 0
    nonzero = ref != 0
    assert float(np.max(np.abs(got - ref)[nonzero] / np.abs(ref[nonzero]))) < 4e-7


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_exact_forward_at_huge_and_infinite_inputs(dtype):
    # the limits where the formula x Phi(x) has them; -inf gives -inf * 0 = NaN, as the
    # reference backend composes it
    edges = np.array([-np.inf, -3e38, -1e4, 1e4, 3e38, np.inf, np.nan], dtype=dtype)
    got = K.gelu(edges, False)
    np.testing.assert_array_equal(got[1:6], np.array([0, 0, 1e4, 3e38, np.inf], dtype=dtype))
    assert np.isnan(got[0]) and np.isnan(got[6])


def test_gelu_exact_backward_float32_tail_keeps_relative_accuracy():
    # The density comes from the tail's own exponential (exp(-x^2/2) with x^2 carried
    # exactly): down to x = -13, where the derivative is about 1e-36, it keeps float32's
    # relative precision; and a huge or infinite input gives the limits 0 and 1.
    x = np.concatenate([np.linspace(-13, -1.2, 119), np.linspace(0.5, 13, 126)])
    x = x.astype(np.float32).astype(np.float64)  # the oracle at the float32 inputs
    cdf = 0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    got = K.gelu_backward(x.astype(np.float32), np.ones(x.shape, np.float32), False)
    np.testing.assert_allclose(got, cdf + x * pdf, rtol=3e-6)
    edges = np.array([-np.inf, -3e38, 3e38, np.inf, np.nan], dtype=np.float32)
    got = K.gelu_backward(edges, np.ones_like(edges), False)
    np.testing.assert_array_equal(got[:4], [0, 0, 1, 1])
    assert np.isnan(got[4])


def test_gelu_exact_backward_formula_float64(rng):
    x = data(rng, 40, np.float64, scale=3)
    dy = data(rng, 40, np.float64)
    cdf = 0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(K.gelu_backward(x, dy, False), dy * (cdf + x * pdf), rtol=1e-12)


def test_gelu_scalar_and_shape_checks():
    assert K.gelu(np.array(1.0), False).shape == ()
    with pytest.raises(ValueError, match="gelu_backward: x and dy must have the same shape"):
        K.gelu_backward(np.zeros(3), np.zeros(4), True)


# ------------------------------------------------------------------------- cross-entropy
def ref_cross_entropy(logits, targets, s):
    lg = logits.astype(np.float64)
    n, c = lg.shape
    m = lg.max(-1)
    lse = m + np.log(np.exp(lg - m[:, None]).sum(-1))
    loss = lse - (1 - s) * lg[np.arange(n), targets] - s / c * lg.sum(-1)
    return loss, lse


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_forward_backward(dtype, smoothing, rng):
    n, c = 9, 37
    logits = data(rng, (n, c), dtype, scale=4)
    targets = rng.integers(0, c, n)
    dloss = data(rng, n, dtype)
    loss, lse = K.cross_entropy(logits, targets, smoothing)
    rloss, rlse = ref_cross_entropy(logits, targets, smoothing)
    close(loss, rloss, dtype, scale=10)
    close(lse, rlse, dtype, scale=10)
    expected = np.exp(logits.astype(np.float64) - rlse[:, None]) - smoothing / c
    expected[np.arange(n), targets] -= 1 - smoothing
    expected *= dloss[:, None]
    close(K.cross_entropy_backward(logits, targets, lse, dloss, smoothing), expected, dtype)


def test_cross_entropy_gradient_by_central_differences(rng):
    logits = data(rng, (4, 6), np.float64)
    targets = np.array([0, 5, 2, 2])
    dloss, direction = data(rng, 4, np.float64), data(rng, (4, 6), np.float64)
    _, lse = K.cross_entropy(logits, targets, 0.2)
    grad = K.cross_entropy_backward(logits, targets, lse, dloss, 0.2)

    def loss(z):
        return (K.cross_entropy(z, targets, 0.2)[0] * dloss).sum()

    numeric = central_difference(loss, logits, direction)
    assert abs((grad * direction).sum() - numeric) < 1e-7


def test_cross_entropy_int32_targets_and_tiny_classes(rng):
    logits = data(rng, (32, 4), np.float32)
    targets = rng.integers(0, 4, 32).astype(np.int32)
    loss, _ = K.cross_entropy(logits, targets, 0.0)
    np.testing.assert_allclose(loss, ref_cross_entropy(logits, targets, 0.0)[0], rtol=1e-5)


@pytest.mark.parametrize("bad", [-1, 4, 1000])
def test_cross_entropy_rejects_out_of_range_targets(bad):
    logits = np.zeros((3, 4))
    targets = np.array([0, bad, 1])
    with pytest.raises(IndexError, match=rf"cross_entropy: targets value {bad} .* \[0, 4\)"):
        K.cross_entropy(logits, targets, 0.0)
    with pytest.raises(IndexError, match=rf"cross_entropy_backward: targets value {bad}"):
        K.cross_entropy_backward(logits, targets, np.zeros(3), np.ones(3), 0.0)


def test_cross_entropy_validates_shapes():
    with pytest.raises(ValueError, match=r"targets must have shape \(3,\)"):
        K.cross_entropy(np.zeros((3, 4)), np.zeros(2, dtype=np.int64), 0.0)
    with pytest.raises(TypeError, match="targets must be int64 or int32"):
        K.cross_entropy(np.zeros((3, 4)), np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="smoothing must lie in"):
        K.cross_entropy(np.zeros((3, 4)), np.zeros(3, dtype=np.int64), 1.5)


# ------------------------------------------------------------------------- embedding
@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_forward_and_backward_with_repeated_ids(dtype, rng):
    weight = data(rng, (11, 6), dtype)
    ids = np.array([[3, 3, 0, 10], [3, 7, 0, 3]])  # repeated ids must accumulate
    out = K.embedding(weight, ids)
    assert out.shape == (2, 4, 6)
    assert np.array_equal(out, weight[ids])
    dout = data(rng, out.shape, dtype)
    expected = np.zeros((11, 6))
    np.add.at(expected, ids.ravel(), dout.reshape(-1, 6).astype(np.float64))
    close(K.embedding_backward(dout, ids, 11), expected, dtype)


def test_embedding_backward_many_repeats_and_unused_rows(rng):
    ids = rng.integers(0, 5, 1000)  # only rows 0..4 of 300 used
    dout = data(rng, (1000, 3), np.float64)
    expected = np.zeros((300, 3))
    np.add.at(expected, ids, dout)
    got = K.embedding_backward(dout, ids, 300)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_embedding_int32_and_scalar_ids(rng):
    weight = data(rng, (5, 3), np.float64)
    assert np.array_equal(K.embedding(weight, np.array([4, 1], dtype=np.int32)), weight[[4, 1]])
    assert np.array_equal(K.embedding(weight, np.array(2)), weight[2])


@pytest.mark.parametrize("bad", [-1, 5])
def test_embedding_rejects_out_of_range_ids(bad):
    weight = np.zeros((5, 3))
    ids = np.array([[0, 1], [bad, 2]])
    message = rf"embedding: ids value {bad} at position \(1, 0\) .* \[0, 5\)"
    with pytest.raises(IndexError, match=message):
        K.embedding(weight, ids)
    with pytest.raises(IndexError, match=rf"embedding_backward: ids value {bad}"):
        K.embedding_backward(np.zeros((2, 2, 3)), ids, 5)


def test_embedding_backward_validates_dout_shape():
    with pytest.raises(ValueError, match="dout must have shape"):
        K.embedding_backward(np.zeros((3, 4)), np.zeros((2,), dtype=np.int64), 5)


# ------------------------------------------------------------------------- dropout
@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_mask_is_bit_exact_with_the_contract_hash(dtype, rng):
    x = data(rng, (7, 9, 13), dtype)
    p, seed = 0.3, 987654321
    keep = npref.keep_mask(x.shape, p, seed)
    y = K.dropout(x, p, seed)
    assert np.array_equal(y != 0, keep & (x != 0))
    close(y, np.where(keep, x.astype(np.float64) / (1 - p), 0.0), dtype)
    dx = K.dropout_backward(x, p, seed)
    assert np.array_equal(dx, y)


def test_dropout_keep_fraction_and_seeds():
    x = np.ones(200_000, dtype=np.float32)
    for p in (0.1, 0.5, 0.9):
        kept = np.count_nonzero(K.dropout(x, p, 5)) / x.size
        assert abs(kept - (1 - p)) < 5 * math.sqrt(p * (1 - p) / x.size)
    a, b = K.dropout(x, 0.5, 1), K.dropout(x, 0.5, 2)
    assert not np.array_equal(a, b)
    # seeds are taken modulo 2**64
    assert np.array_equal(K.dropout(x, 0.5, -1), K.dropout(x, 0.5, 2**64 - 1))


def test_dropout_edge_probabilities_and_validation(rng):
    x = data(rng, (3, 4), np.float32)
    y = K.dropout(x, 0.0, 1)
    assert np.array_equal(y, x) and y is not x
    assert np.array_equal(K.dropout(x, 1.0, 1), np.zeros_like(x))
    with pytest.raises(ValueError, match=r"dropout: p must lie in \[0, 1\]"):
        K.dropout(x, 1.5, 1)
    with pytest.raises(TypeError, match="dropout_backward: seed must be an integer"):
        K.dropout_backward(x, 0.5, 1.5)


# ------------------------------------------------------------------------- attention
ATTENTION_CASES = [
    # (quiet, dropout_p, with_mask)
    (False, 0.0, False),
    (False, 0.0, True),
    (True, 0.0, True),
    (False, 0.25, True),
    (True, 0.4, False),
]


@pytest.mark.parametrize("quiet, p, with_mask", ATTENTION_CASES)
def test_attention_float64_against_reference(quiet, p, with_mask, rng):
    b, h, sq, sk, dh, dv = 2, 3, 5, 19, 4, 6
    q = data(rng, (b, h, sq, dh), np.float64)
    k = data(rng, (b, h, sk, dh), np.float64)
    v = data(rng, (b, h, sk, dv), np.float64)
    mask = (np.arange(sk)[None, :] >= np.array([sk, 11])[:, None]) if with_mask else None
    dout = data(rng, (b, h, sq, dv), np.float64)
    scale, seed = 0.5, 77
    out, lse = K.attention(q, k, v, mask, scale, quiet, p, seed)
    rout, rlse, _, _ = ref_attention(q, k, v, mask, scale, quiet, p, seed)
    np.testing.assert_allclose(out, rout, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lse, rlse, rtol=1e-10, atol=1e-12)
    grads = K.attention_backward(dout, q, k, v, out, lse, mask, scale, quiet, p, seed)
    expected = ref_attention_backward(dout, q, k, v, mask, scale, quiet, p, seed)
    for got, want in zip(grads, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_attention_float32(rng):
    b, h, s, dh = 2, 2, 24, 8
    q, k, v = (data(rng, (b, h, s, dh), np.float32) for _ in range(3))
    mask = np.zeros((b, s), dtype=bool)
    mask[1, 17:] = True
    dout = data(rng, (b, h, s, dh), np.float32)
    out, lse = K.attention(q, k, v, mask, 1 / math.sqrt(dh), False, 0.1, 3)
    rout, rlse, _, _ = ref_attention(q, k, v, mask, 1 / math.sqrt(dh), False, 0.1, 3)
    close(out, rout, np.float32)
    assert lse.dtype == np.float64  # kept wide for the backward (a fully masked row's lse)
    close(lse.astype(np.float32), rlse, np.float32)
    grads = K.attention_backward(dout, q, k, v, out, lse, mask, 1 / math.sqrt(dh), False, 0.1, 3)
    expected = ref_attention_backward(dout, q, k, v, mask, 1 / math.sqrt(dh), False, 0.1, 3)
    for got, want in zip(grads, expected, strict=True):
        close(got, want, np.float32, scale=10)


def test_attention_tiles_over_heads_and_query_blocks(rng, monkeypatch):
    # A tiny tile budget forces several head groups and query blocks per head, so the
    # dk/dv accumulation across query blocks and the flat dropout index are exercised.
    monkeypatch.setattr(attention_tiles, "_TILE_BYTES", 3 * 13 * 8)
    b, h, sq, sk, dh = 2, 2, 11, 13, 3
    q = data(rng, (b, h, sq, dh), np.float64)
    k, v = data(rng, (b, h, sk, dh), np.float64), data(rng, (b, h, sk, dh), np.float64)
    mask = rng.random((b, sk)) < 0.3
    dout = data(rng, (b, h, sq, dh), np.float64)
    out, lse = K.attention(q, k, v, mask, 0.7, True, 0.2, 11)
    rout, rlse, _, _ = ref_attention(q, k, v, mask, 0.7, True, 0.2, 11)
    np.testing.assert_allclose(out, rout, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lse, rlse, rtol=1e-10, atol=1e-12)
    grads = K.attention_backward(dout, q, k, v, out, lse, mask, 0.7, True, 0.2, 11)
    expected = ref_attention_backward(dout, q, k, v, mask, 0.7, True, 0.2, 11)
    for got, want in zip(grads, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_attention_gradient_by_central_differences(rng):
    b, h, sq, sk, dh = 1, 2, 3, 4, 2
    q = data(rng, (b, h, sq, dh), np.float64)
    k, v = data(rng, (b, h, sk, dh), np.float64), data(rng, (b, h, sk, dh), np.float64)
    mask = np.array([[False, False, True, False]])
    dout = data(rng, (b, h, sq, dh), np.float64)
    args = (mask, 0.9, True, 0.3, 5)
    out, lse = K.attention(q, k, v, *args)
    dq, dk, dv = K.attention_backward(dout, q, k, v, out, lse, *args)
    for name, grad in (("q", dq), ("k", dk), ("v", dv)):
        inputs = {"q": q, "k": k, "v": v}
        direction = data(rng, inputs[name].shape, np.float64)

        def loss(z, name=name, inputs=inputs):
            return (
                K.attention(
                    **{**inputs, name: z}, mask_pad=mask, scale=0.9, quiet=True, dropout_p=0.3, seed=5
                )[0]
                * dout
            ).sum()

        numeric = central_difference(loss, inputs[name], direction)
        assert abs((grad * direction).sum() - numeric) < 1e-7, name


def test_attention_validates_inputs():
    q = np.zeros((2, 3, 4, 5))
    k = np.zeros((2, 3, 6, 5))
    with pytest.raises(ValueError, match=r"attention: k must have shape \[B, H, Sk, Dh\]"):
        K.attention(q, np.zeros((2, 3, 6, 4)), k, None, 1.0, False, 0.0, 0)
    with pytest.raises(ValueError, match=r"mask_pad must have shape \[B, Sk\] = \[2, 6\]"):
        K.attention(q, k, k, np.zeros((2, 4), dtype=bool), 1.0, False, 0.0, 0)
    with pytest.raises(TypeError, match="attention: mask_pad must be a bool"):
        K.attention(q, k, k, np.zeros((2, 6)), 1.0, False, 0.0, 0)
    with pytest.raises(TypeError, match="attention: k has dtype float32"):
        K.attention(q, k.astype(np.float32), k, None, 1.0, False, 0.0, 0)
    with pytest.raises(ValueError, match=r"attention_backward: lse must have shape \[2, 3, 4\]"):
        K.attention_backward(q, q, k, k, q, np.zeros((2, 3)), None, 1.0, False, 0.0, 0)


# ------------------------------------------------------------------------- jit setup
def test_cache_dir_follows_ember_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    path = jit.cache_dir()
    assert path.parent == tmp_path / "numba"
    monkeypatch.delenv("EMBER_CACHE_DIR")
    assert jit.cache_dir().parent.parts[-3:] == (".cache", "ember", "numba")


def test_configured_threads_parsing(monkeypatch):
    monkeypatch.setenv("EMBER_NUM_THREADS", "3")
    assert jit.configured_threads() == 3
    monkeypatch.setenv("EMBER_NUM_THREADS", "")
    assert jit.configured_threads() is None
    for bad in ("0", "-2", "two"):
        monkeypatch.setenv("EMBER_NUM_THREADS", bad)
        with pytest.raises(ValueError, match="EMBER_NUM_THREADS must be a positive integer"):
            jit.configured_threads()
