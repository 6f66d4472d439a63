"""The cuda backend's fused kernels against NumPy, on a GPU (``cupy``) or the host emulator.

Softmax, norms, GELU, cross-entropy, embedding and dropout (forward and backward);
attention and the optimizer updates have their own files. Each reference is computed in
float64 from the same rounded inputs the kernel sees.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from cuda_numpy_reference import DTYPES, assert_close, keep_mask, rounded
from helpers import npref

from ember.kernels import cuda as K

RNG = np.random.default_rng(1234)


def _randn(*shape):
    return RNG.standard_normal(shape)


# ---- softmax ---------------------------------------------------------------------------
def _softmax_ref(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _log_softmax_ref(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


# (3, 5, 37): one warp per row; 1500 and 5000 columns: a block of 256 / 512 threads per row.
SHAPES = [(3, 5, 37), (2, 1500), (2, 5000), (7,)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_and_log_softmax(xp, dtype, shape):
    x, x64 = rounded(_randn(*shape) * 3, dtype)
    dy, dy64 = rounded(_randn(*shape), dtype)
    y = K.softmax(xp.asarray(x))
    assert y.dtype == dtype
    assert_close(xp.asnumpy(y), _softmax_ref(x64), dtype, what="softmax")
    ly = K.log_softmax(xp.asarray(x))
    assert_close(xp.asnumpy(ly), _log_softmax_ref(x64), dtype, scale=10, what="log_softmax")

    ys, ys64 = rounded(_softmax_ref(x64), dtype)
    dx = K.softmax_backward(xp.asarray(ys), xp.asarray(dy))
    assert_close(
        xp.asnumpy(dx), ys64 * (dy64 - (dy64 * ys64).sum(-1, keepdims=True)), dtype, what="softmax_backward"
    )
    yl, yl64 = rounded(_log_softmax_ref(x64), dtype)
    dxl = K.log_softmax_backward(xp.asarray(yl), xp.asarray(dy))
    want = dy64 - np.exp(yl64) * dy64.sum(-1, keepdims=True)
    assert_close(xp.asnumpy(dxl), want, dtype, scale=10, what="log_softmax_backward")


def test_softmax_rejects_bad_input(xp):
    with pytest.raises(TypeError, match="softmax: x must be float16, float32 or float64"):
        K.softmax(xp.asarray(np.zeros((2, 3), dtype=np.int32)))
    with pytest.raises(ValueError, match="softmax_backward: y and dy must have the same shape"):
        K.softmax_backward(xp.asarray(np.zeros((2, 3), np.float32)), xp.asarray(np.zeros((2, 4), np.float32)))
    with pytest.raises(TypeError, match="dy has dtype float64 but the op's input is float32"):
        K.softmax_backward(xp.asarray(np.zeros((2, 3), np.float32)), xp.asarray(np.zeros((2, 3), np.float64)))


def test_softmax_of_empty_rows(xp):
    y = K.softmax(xp.asarray(np.zeros((0, 5), np.float32)))
    assert y.shape == (0, 5)


# ---- layer norm / rms norm ---------------------------------------------------------------
def _ln_bwd_ref(dy, x, mean, rstd, g):
    mean, rstd = mean[..., None], rstd[..., None]
    xhat = (x - mean) * rstd
    gg = dy * g if g is not None else dy
    dx = (gg - gg.mean(-1, keepdims=True) - xhat * (gg * xhat).mean(-1, keepdims=True)) * rstd
    rows = tuple(range(x.ndim - 1))
    return dx, (dy * xhat).sum(rows), dy.sum(rows)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 6, 70), (3, 1300), (5,)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(xp, dtype, shape, affine):
    d = shape[-1]
    x, x64 = rounded(_randn(*shape) * 2 + 0.5, dtype)
    g, g64 = rounded(_randn(d), dtype) if affine else (None, None)
    b, b64 = rounded(_randn(d), dtype) if affine else (None, None)
    dev = lambda a: None if a is None else xp.asarray(a)
    y, mean, rstd = K.layer_norm(xp.asarray(x), dev(g), dev(b), 1e-5)
    y_ref, mean_ref, rstd_ref = npref.layer_norm_stats(x64, g64, b64, 1e-5)
    assert mean.shape == shape[:-1] and rstd.shape == shape[:-1]
    assert mean.dtype == (np.float64 if dtype == np.float64 else np.float32)
    assert_close(xp.asnumpy(y), y_ref, dtype, scale=4, what="layer_norm y")
    np.testing.assert_allclose(xp.asnumpy(mean), mean_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xp.asnumpy(rstd), rstd_ref, rtol=1e-5)

    dy, dy64 = rounded(_randn(*shape), dtype)
    dx, dg, db = K.layer_norm_backward(xp.asarray(dy), xp.asarray(x), mean, rstd, dev(g))
    dx_ref, dg_ref, db_ref = _ln_bwd_ref(dy64, x64, mean_ref, rstd_ref, g64)
    rows = math.prod(shape[:-1])
    assert_close(xp.asnumpy(dx), dx_ref, dtype, scale=4, what="layer_norm dx")
    if affine:
        assert_close(xp.asnumpy(dg), dg_ref, dtype, scale=rows, what="dgamma")
        assert_close(xp.asnumpy(db), db_ref, dtype, scale=rows, what="dbeta")
    else:
        assert dg is None and db is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 6, 70), (3, 1300)])
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm(xp, dtype, shape, affine):
    d = shape[-1]
    x, x64 = rounded(_randn(*shape) * 2, dtype)
    g, g64 = rounded(_randn(d), dtype) if affine else (None, None)
    y, rstd = K.rms_norm(xp.asarray(x), None if g is None else xp.asarray(g), 1e-6)
    r = 1 / np.sqrt((x64**2).mean(-1, keepdims=True) + 1e-6)
    y_ref = x64 * r * (g64 if affine else 1)
    assert_close(xp.asnumpy(y), y_ref, dtype, scale=4, what="rms_norm y")
    np.testing.assert_allclose(xp.asnumpy(rstd), r[..., 0], rtol=1e-5)

    dy, dy64 = rounded(_randn(*shape), dtype)
    dx, dg = K.rms_norm_backward(xp.asarray(dy), xp.asarray(x), rstd, None if g is None else xp.asarray(g))
    gg = dy64 * g64 if affine else dy64
    xhat = x64 * r
    dx_ref = (gg - xhat * (gg * xhat).mean(-1, keepdims=True)) * r
    assert_close(xp.asnumpy(dx), dx_ref, dtype, scale=4, what="rms_norm dx")
    if affine:
        rows = math.prod(shape[:-1])
        assert_close(
            xp.asnumpy(dg), (dy64 * xhat).reshape(-1, d).sum(0), dtype, scale=rows, what="rms dgamma"
        )
    else:
        assert dg is None


def test_norms_reject_bad_gamma(xp):
    x = xp.asarray(np.zeros((2, 8), np.float32))
    with pytest.raises(ValueError, match=r"layer_norm: gamma must have shape \(8,\)"):
        K.layer_norm(x, xp.asarray(np.ones(7, np.float32)), None, 1e-5)
    with pytest.raises(TypeError, match="rms_norm: gamma has dtype float64"):
        K.rms_norm(x, xp.asarray(np.ones(8, np.float64)), 1e-5)


# ---- GELU --------------------------------------------------------------------------------
def _gelu_ref(x, approximate):
    if approximate:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    erf = np.vectorize(math.erf)
    return x * 0.5 * (1 + erf(x / math.sqrt(2)))


def _gelu_grad_ref(x, approximate):
    if approximate:
        c = math.sqrt(2 / math.pi)
        t = np.tanh(c * (x + 0.044715 * x**3))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)
    erf = np.vectorize(math.erf)
    return 0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu(xp, dtype, approximate):
    x, x64 = rounded(_randn(3, 4, 50) * 3, dtype)
    dy, dy64 = rounded(_randn(3, 4, 50), dtype)
    y = K.gelu(xp.asarray(x), approximate)
    assert_close(xp.asnumpy(y), _gelu_ref(x64, approximate), dtype, what="gelu")
    dx = K.gelu_backward(xp.asarray(x), xp.asarray(dy), approximate)
    assert_close(xp.asnumpy(dx), dy64 * _gelu_grad_ref(x64, approximate), dtype, what="gelu'")


# ---- SwiGLU gate ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_swiglu(xp, dtype):
    a, a64 = rounded(_randn(3, 4, 50) * 4, dtype)
    b, b64 = rounded(_randn(3, 4, 50), dtype)
    dy, dy64 = rounded(_randn(3, 4, 50), dtype)
    s = 1 / (1 + np.exp(-a64))
    y = K.swiglu(xp.asarray(a), xp.asarray(b))
    assert_close(xp.asnumpy(y), a64 * s * b64, dtype, what="swiglu")
    da, db = K.swiglu_backward(xp.asarray(a), xp.asarray(b), xp.asarray(dy))
    assert_close(xp.asnumpy(da), dy64 * b64 * s * (1 + a64 * (1 - s)), dtype, what="da")
    assert_close(xp.asnumpy(db), dy64 * a64 * s, dtype, what="db")


@pytest.mark.parametrize("dtype", DTYPES)
def test_swiglu_at_edge_values(xp, dtype):
    # as the reference: 0 at 0, the limits at ±big, NaN where the formula is inf * 0
    big = np.finfo(dtype).max / 4
    a = np.array([0.0, big, -big, np.inf, -np.inf, np.nan], dtype)
    b = np.array([2.0, 0.5, 2.0, 1.0, 1.0, 1.0], dtype)
    y = xp.asnumpy(K.swiglu(xp.asarray(a), xp.asarray(b))).astype(np.float64)
    np.testing.assert_array_equal(y, [0.0, float(np.asarray(big * 0.5, dtype)), 0.0, np.inf, np.nan, np.nan])
    da, db = K.swiglu_backward(xp.asarray(a), xp.asarray(b), xp.asarray(np.ones(6, dtype)))
    np.testing.assert_array_equal(xp.asnumpy(da).astype(np.float64), [1.0, 0.5, 0.0, np.nan, np.nan, np.nan])


# ---- cross-entropy -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,c", [(6, 4), (3, 1500)])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_cross_entropy(xp, dtype, n, c, smoothing, index_dtype):
    logits, l64 = rounded(_randn(n, c) * 2, dtype)
    t = RNG.integers(0, c, size=n).astype(index_dtype)
    loss, lse = K.cross_entropy(xp.asarray(logits), xp.asarray(t), smoothing)
    m = l64.max(1, keepdims=True)
    lse_ref = (m + np.log(np.exp(l64 - m).sum(1, keepdims=True)))[:, 0]
    loss_ref = lse_ref - (1 - smoothing) * l64[np.arange(n), t] - smoothing / c * l64.sum(1)
    assert loss.dtype == dtype
    assert_close(xp.asnumpy(lse), lse_ref, np.float32 if dtype == np.float16 else dtype, scale=10, what="lse")
    assert_close(xp.asnumpy(loss), loss_ref, dtype, scale=10, what="loss")

    dloss, d64 = rounded(RNG.random(n) + 0.5, dtype)
    g = K.cross_entropy_backward(xp.asarray(logits), xp.asarray(t), lse, xp.asarray(dloss), smoothing)
    onehot = np.zeros((n, c))
    onehot[np.arange(n), t] = 1
    g_ref = d64[:, None] * (np.exp(l64 - lse_ref[:, None]) - (1 - smoothing) * onehot - smoothing / c)
    assert_close(xp.asnumpy(g), g_ref, dtype, what="dlogits")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 1.0])
def test_cross_entropy_with_minus_inf_logits(xp, dtype, smoothing):
    # masked logits: a 0-weight term must be left out, not multiplied (0 * -inf = NaN)
    logits = np.array([[-np.inf, 0.0, 1.0], [0.5, -np.inf, -np.inf], [2.0, 1.0, -np.inf]], dtype)
    t = np.array([2, 0, 1])
    loss, lse = K.cross_entropy(xp.asarray(logits), xp.asarray(t), smoothing)
    p = np.exp(logits.astype(np.float64) - np.log(np.exp(logits.astype(np.float64)).sum(1, keepdims=True)))
    want = -np.log(p[np.arange(3), t]) if smoothing == 0.0 else np.full(3, np.inf)  # mass on -inf classes
    assert_close(xp.asnumpy(loss), want, dtype, what="loss")
    g = K.cross_entropy_backward(
        xp.asarray(logits), xp.asarray(t), lse, xp.asarray(np.ones(3, dtype)), smoothing
    )
    assert_close(xp.asnumpy(g), p - (1 - smoothing) * np.eye(3)[t] - smoothing / 3, dtype, what="dlogits")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_gradient_at_huge_and_infinite_inputs(xp, dtype, approximate):
    # the derivative's limits (1 and 0), as the reference and the cpu kernels, not inf * 0 = NaN
    x = np.array([np.inf, -np.inf, 6e4, -6e4, 2e4, -2e4], dtype)
    dx = K.gelu_backward(xp.asarray(x), xp.asarray(np.ones(6, dtype)), approximate)
    np.testing.assert_array_equal(xp.asnumpy(dx).astype(np.float64), [1, 0, 1, 0, 1, 0])


@pytest.mark.parametrize("bad", [-1, 4, 1000])
def test_cross_entropy_rejects_out_of_range_targets(xp, bad):
    logits = xp.asarray(np.zeros((5, 4), np.float32))
    t = np.array([0, 1, 2, 3, 0])
    t[3] = bad
    with pytest.raises(
        IndexError,
        match=rf"cross_entropy: targets value {bad} at position \(3,\)"
        r" is out of range; valid range is \[0, 4\)",
    ):
        K.cross_entropy(logits, xp.asarray(t), 0.0)
    with pytest.raises(IndexError, match="cross_entropy_backward: targets"):
        K.cross_entropy_backward(
            logits,
            xp.asarray(t),
            xp.asarray(np.zeros(5, np.float32)),
            xp.asarray(np.ones(5, np.float32)),
            0.0,
        )


# ---- embedding -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_embedding(xp, dtype, index_dtype):
    v, d = 11, 24
    w, w64 = rounded(_randn(v, d), dtype)
    ids = RNG.integers(0, v, size=(3, 9)).astype(index_dtype)
    ids[0, :4] = 5  # repeated ids must accumulate in backward
    out = K.embedding(xp.asarray(w), xp.asarray(ids))
    assert out.shape == (3, 9, d)
    np.testing.assert_array_equal(xp.asnumpy(out), w[ids])
    dout, dout64 = rounded(_randn(3, 9, d), dtype)
    dw = K.embedding_backward(xp.asarray(dout), xp.asarray(ids), v)
    dw_ref = np.zeros((v, d))
    np.add.at(dw_ref, ids.reshape(-1), dout64.reshape(-1, d))
    assert dw.dtype == dtype and dw.shape == (v, d)
    assert_close(xp.asnumpy(dw), dw_ref, dtype, scale=4, what="dweight")


def test_embedding_rejects_out_of_range_ids(xp):
    w = xp.asarray(np.zeros((6, 4), np.float32))
    ids = np.array([[0, 5], [6, 1]])
    with pytest.raises(
        IndexError,
        match=r"embedding: ids value 6 at position \(1, 0\) is out "
        r"of range; valid range is \[0, 6\)",
    ):
        K.embedding(w, xp.asarray(ids))
    with pytest.raises(IndexError, match=r"embedding_backward: ids value -3"):
        K.embedding_backward(xp.asarray(np.zeros((2, 4), np.float32)), xp.asarray(np.array([1, -3])), 6)


# ---- dropout -------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("seed", [0, 12345, 2**64 - 5, -7])
def test_dropout_mask_is_bit_exact(xp, p, seed):
    shape = (3, 7, 31)
    want = keep_mask(math.prod(shape), p, seed).reshape(shape)
    got = xp.asnumpy(K.dropout_keep_mask(shape, p, seed))
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, want)
    from ember.kernels.reference import ReferenceBackend  # the spec backend agrees too

    np.testing.assert_array_equal(ReferenceBackend().dropout_keep_mask(shape, p, seed), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_forward_and_backward(xp, dtype):
    p, seed = 0.3, 99
    x, x64 = rounded(_randn(4, 5, 33), dtype)
    keep = keep_mask(x.size, p, seed).reshape(x.shape)
    y = xp.asnumpy(K.dropout(xp.asarray(x), p, seed))
    assert_close(y, np.where(keep, x64 * (1 / (1 - p)), 0.0), dtype, what="dropout")
    np.testing.assert_array_equal(y == 0, ~keep | (x == 0))
    dy = xp.asnumpy(K.dropout_backward(xp.asarray(x), p, seed))
    np.testing.assert_array_equal(dy, y)  # same mask and scaling


def test_dropout_edge_probabilities(xp):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(xp.asnumpy(K.dropout(xp.asarray(x), 0.0, 1)), x)
    np.testing.assert_array_equal(xp.asnumpy(K.dropout(xp.asarray(x), 1.0, 1)), np.zeros_like(x))
    with pytest.raises(ValueError, match=r"dropout: p must lie in \[0, 1\]"):
        K.dropout(xp.asarray(x), 1.5, 1)
