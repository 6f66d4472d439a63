"""Tests of ember's native C++ kernels (ember.kernels.native_ops / _native).

Oracles are plain NumPy in float64 (``math.erfc`` for the normal CDF). Every test
that calls a kernel runs once per instruction set compiled in and usable on this
CPU (baseline / avx2 / avx512), so each variant is checked here.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers.gradcheck import central_difference
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ember.kernels import native_ops

SKIP_REASON = f"ember native extension not available: {native_ops.load_error()}"
needs_native = pytest.mark.skipif(not native_ops.available(), reason=SKIP_REASON)

DTYPES = [np.float32, np.float64]
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
# Smaller results may flush to zero in the float32 polynomial exp.
TINY = 1e-30


@pytest.fixture(params=list(native_ops.supported_isas()) or ["none"])
def isa(request):
    """Run the test with each compiled instruction-set variant, then restore the best."""
    if not native_ops.available():
        pytest.skip(SKIP_REASON)
    native_ops.set_isa(request.param)
    yield request.param
    native_ops.set_isa(native_ops.supported_isas()[-1])


# --------------------------------------------------------------------------- oracles
_erfc = np.frompyfunc(math.erfc, 1, 1)


def normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * _erfc(-x / math.sqrt(2.0)).astype(np.float64)


def gelu_oracle(x, approximate):
    """(y, dy/dx, scale of the dy/dx terms) in float64."""
    x = np.asarray(x, dtype=np.float64)
    if approximate:
        inner = SQRT_2_OVER_PI * (x + 0.044715 * x**3)
        # 0.5 * (1 + tanh(inner)) == sigmoid(2 inner), written to stay accurate in the tails.
        s = np.exp(-np.logaddexp(0.0, -2.0 * inner))
        t1 = s
        t2 = x * s * (1.0 - s) * 2.0 * SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x**2)
    else:
        t1 = normal_cdf(x)
        t2 = x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        s = t1
    return x * s, t1 + t2, np.abs(t1) + np.abs(t2)


def layer_norm_oracle(x, gamma, beta, eps):
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(axis=-1)
    var = ((x - mean[..., None]) ** 2).mean(axis=-1)
    rstd = 1.0 / np.sqrt(var + eps)
    y = (x - mean[..., None]) * rstd[..., None]
    if gamma is not None:
        y = y * gamma.astype(np.float64)
    if beta is not None:
        y = y + beta.astype(np.float64)
    return y, mean, rstd


def layer_norm_backward_oracle(dy, x, gamma, eps):
    dy = dy.astype(np.float64)
    x = x.astype(np.float64)
    d = x.shape[-1]
    mean = x.mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    g = dy * gamma.astype(np.float64) if gamma is not None else dy
    dx = rstd * (g - g.sum(-1, keepdims=True) / d - xhat * (g * xhat).sum(-1, keepdims=True) / d)
    if gamma is None:
        return dx, None, None
    rows = dy.reshape(-1, d)
    return dx, (rows * xhat.reshape(-1, d)).sum(0), rows.sum(0)


def gelu_inputs(dtype, n=4001, seed=0):
    rng = np.random.default_rng(seed)
    grid = np.linspace(-10.0, 10.0, n)
    return np.concatenate([grid, rng.standard_normal(n) * 3.0]).astype(dtype)


def gelu_tols(dtype):
    # float32: polynomial exp/erfc (about 1e-7) plus the float32 rounding of x^3 in the
    # tanh form, which the function amplifies up to ~1e-5 near x = -9.
    return dict(rtol=3e-5, atol=TINY) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-300)


# ------------------------------------------------------------------------------ GELU
@needs_native
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_matches_numpy(isa, dtype, approximate):
    x = gelu_inputs(dtype)
    y = native_ops.gelu(x, approximate)
    assert y.dtype == dtype and y.shape == x.shape
    want, _, _ = gelu_oracle(x, approximate)
    np.testing.assert_allclose(y, want, **gelu_tols(dtype))


@needs_native
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_backward_matches_numpy(isa, dtype, approximate):
    x = gelu_inputs(dtype)
    dy = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    dx = native_ops.gelu_backward(x, dy, approximate)
    assert dx.dtype == dtype and dx.shape == x.shape
    _, grad, scale = gelu_oracle(x, approximate)
    # Relative to the size of the two terms: the derivative crosses zero near x = -0.75.
    err = np.abs(dx.astype(np.float64) - dy * grad) / np.maximum(np.abs(dy) * scale, TINY)
    assert err.max() < (3e-5 if dtype == np.float32 else 1e-12), f"max error {err.max():.3g}"


@needs_native
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_backward_matches_finite_differences(isa, approximate):
    x = np.random.default_rng(2).uniform(-6.0, 6.0, 257)
    numeric = central_difference(lambda z: native_ops.gelu(z, approximate), x, 1.0)
    analytic = native_ops.gelu_backward(x, np.ones_like(x), approximate)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


@needs_native
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5, 17), (33, 1025), (70001,)])
def test_gelu_odd_sizes_and_parallel_path(isa, dtype, shape):
    # Sizes cover SIMD tails, several OpenMP chunks and the single-thread cut-off.
    x = (np.random.default_rng(3).standard_normal(shape) * 2).astype(dtype)
    for approximate in (False, True):
        want, grad, _ = gelu_oracle(x, approximate)
        np.testing.assert_allclose(native_ops.gelu(x, approximate), want, rtol=3e-5, atol=1e-30)
        dx = native_ops.gelu_backward(x, np.ones_like(x), approximate)
        np.testing.assert_allclose(dx, grad, rtol=3e-5, atol=1e-6)


@needs_native
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_special_values(isa, dtype, approximate):
    x = np.array([np.nan, np.inf, 0.0, -0.0, 1e30, -1e30, 40.0, -40.0], dtype=dtype)
    y = native_ops.gelu(x, approximate)
    assert np.isnan(y[0])
    assert y[1] == np.inf
    assert y[2] == 0.0 and y[3] == 0.0
    assert y[4] == dtype(1e30) and y[5] == 0.0
    assert y[6] == dtype(40.0) and abs(y[7]) < 1e-30
    dx = native_ops.gelu_backward(x, np.ones_like(x), approximate)
    assert np.isnan(dx[0])
    # Huge and infinite inputs take the derivative's limits instead of inf * 0 = NaN.
    np.testing.assert_array_equal(dx[[1, 4, 6]], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(dx[[5, 7]], [0.0, 0.0])
    np.testing.assert_allclose(dx[2:4], [0.5, 0.5], rtol=1e-6)
    # gelu(-inf) follows the formula: -inf * 0 = NaN, as the reference computes it.
    assert np.isnan(native_ops.gelu(np.array([-np.inf], dtype=dtype), approximate)[0])


@needs_native
@settings(max_examples=40, deadline=None)
@given(
    x=hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=1, max_dims=3, max_side=40),
        elements=st.floats(-20.0, 20.0, width=32),
    ),
    approximate=st.booleans(),
)
def test_gelu_property_float32(x, approximate):
    want, grad, scale = gelu_oracle(x, approximate)
    np.testing.assert_allclose(native_ops.gelu(x, approximate), want, rtol=3e-5, atol=TINY)
    dx = native_ops.gelu_backward(x, np.ones_like(x), approximate).astype(np.float64)
    assert np.all(np.abs(dx - grad) <= 3e-5 * scale + TINY)


@needs_native
@pytest.mark.torch
def test_gelu_agrees_with_torch(isa):
    torch = pytest.importorskip("torch")
    x = gelu_inputs(np.float32, n=2001)
    for approximate, mode in ((False, "none"), (True, "tanh")):
        want = torch.nn.functional.gelu(torch.from_numpy(x), approximate=mode).numpy()
        np.testing.assert_allclose(native_ops.gelu(x, approximate), want, rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------------ layer norm
LN_SHAPES = [(5,), (3, 7), (2, 3, 129), (300, 257), (3, 2500), (4, 1)]


def ln_tols(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-12)


def ln_params(d, dtype, seed=4):
    rng = np.random.default_rng(seed)
    return (1.0 + 0.5 * rng.standard_normal(d)).astype(dtype), rng.standard_normal(d).astype(dtype)


@needs_native
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", LN_SHAPES)
@pytest.mark.parametrize("affine", ["both", "gamma", "beta", "none"])
def test_layer_norm_matches_numpy(isa, dtype, shape, affine):
    rng = np.random.default_rng(5)
    # An offset mean checks the two-pass variance; scale != 1 checks rstd.
    x = (rng.standard_normal(shape) * 3.0 + 10.0).astype(dtype)
    gamma, beta = ln_params(shape[-1], dtype)
    gamma = gamma if affine in ("both", "gamma") else None
    beta = beta if affine in ("both", "beta") else None
    y, mean, rstd = native_ops.layer_norm(x, gamma, beta, 1e-5)
    want_y, want_mean, want_rstd = layer_norm_oracle(x, gamma, beta, 1e-5)
    assert y.dtype == mean.dtype == rstd.dtype == dtype
    assert y.shape == shape and mean.shape == shape[:-1] == rstd.shape
    np.testing.assert_allclose(y, want_y, **ln_tols(dtype))
    np.testing.assert_allclose(mean, want_mean, **ln_tols(dtype))
    np.testing.assert_allclose(rstd, want_rstd, rtol=ln_tols(dtype)["rtol"])


@needs_native
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", LN_SHAPES)
@pytest.mark.parametrize("with_gamma", [True, False])
def test_layer_norm_backward_matches_numpy(isa, dtype, shape, with_gamma):
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(shape) * 2.0 - 1.0).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    gamma = ln_params(shape[-1], dtype)[0] if with_gamma else None
    _, mean, rstd = native_ops.layer_norm(x, gamma, None, 1e-5)
    dx, dgamma, dbeta = native_ops.layer_norm_backward(dy, x, mean, rstd, gamma)
    want_dx, want_dgamma, want_dbeta = layer_norm_backward_oracle(dy, x, gamma, 1e-5)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    assert dx.dtype == dtype and dx.shape == shape
    np.testing.assert_allclose(dx, want_dx, **tol)
    if with_gamma:
        assert dgamma.dtype == dbeta.dtype == dtype and dgamma.shape == dbeta.shape == shape[-1:]
        np.testing.assert_allclose(dgamma, want_dgamma, **tol)
        np.testing.assert_allclose(dbeta, want_dbeta, **tol)
    else:
        assert dgamma is None and dbeta is None


@needs_native
def test_layer_norm_backward_matches_finite_differences(isa):
    """Directional derivative of L = sum(y * w) along random directions of x, gamma, beta."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 11))
    gamma, beta = ln_params(11, np.float64)
    w = rng.standard_normal(x.shape)
    vx, vg, vb = rng.standard_normal(x.shape), rng.standard_normal(11), rng.standard_normal(11)

    def loss(t):
        y, _, _ = native_ops.layer_norm(x + t * vx, gamma + t * vg, beta + t * vb, 1e-5)
        return float((y * w).sum())

    numeric = float(central_difference(loss, 0.0, 1.0, eps=1e-5))  # d loss / dt at t = 0
    _, mean, rstd = native_ops.layer_norm(x, gamma, beta, 1e-5)
    dx, dgamma, dbeta = native_ops.layer_norm_backward(w, x, mean, rstd, gamma)
    analytic = (dx * vx).sum() + (dgamma * vg).sum() + (dbeta * vb).sum()
    assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-8)


@needs_native
def test_layer_norm_constant_row_uses_eps():
    x = np.full((2, 8), 3.0, dtype=np.float32)
    y, mean, rstd = native_ops.layer_norm(x, None, np.full(8, 0.25, np.float32), 1e-3)
    np.testing.assert_allclose(mean, [3.0, 3.0])
    np.testing.assert_allclose(rstd, [1 / math.sqrt(1e-3)] * 2, rtol=1e-6)
    np.testing.assert_allclose(y, 0.25)


# ------------------------------------------------------------- layouts and threading
@needs_native
@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_inputs_are_made_contiguous(isa, dtype):
    base = np.random.default_rng(8).standard_normal((40, 64)).astype(dtype)
    views = {
        "strided": base[:, ::2],
        "transposed": base.T,
        "fortran": np.asfortranarray(base),
        "big-endian": base.astype(np.dtype(dtype).newbyteorder(">")),
    }
    raw = np.zeros(base.nbytes + 1, dtype=np.uint8)
    misaligned = np.frombuffer(raw.data, dtype=dtype, count=base.size, offset=1).reshape(base.shape)
    misaligned[...] = base
    views["misaligned"] = misaligned
    for name, view in views.items():
        contiguous = np.ascontiguousarray(view, dtype=dtype)
        before = view.copy()
        np.testing.assert_array_equal(native_ops.gelu(view), native_ops.gelu(contiguous), err_msg=name)
        np.testing.assert_array_equal(
            native_ops.gelu_backward(view, view, True),
            native_ops.gelu_backward(contiguous, contiguous, True),
            err_msg=name,
        )
        got = native_ops.layer_norm(view, None, None, 1e-5)
        for a, b in zip(got, native_ops.layer_norm(contiguous, None, None, 1e-5)):
            np.testing.assert_array_equal(a, b, err_msg=name)
        np.testing.assert_array_equal(view, before, err_msg=f"{name}: input was modified")


@needs_native
def test_kernel_rejects_non_contiguous_when_called_directly():
    from ember.kernels import _native

    x = np.zeros((4, 6), np.float32)[:, ::2]
    with pytest.raises(ValueError, match="gelu: x must be C-contiguous"):
        _native.gelu(x)
    with pytest.raises(ValueError, match="layer_norm: x must be C-contiguous"):
        _native.layer_norm(x, None, None, 1e-5)


@needs_native
def test_thread_count_does_not_change_results():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((96, 512)).astype(np.float32)
    gamma, beta = ln_params(512, np.float32)
    results = []
    try:
        for threads in (1, 2, 3):
            native_ops.set_num_threads(threads)
            assert native_ops.num_threads() == threads
            y, mean, rstd = native_ops.layer_norm(x, gamma, beta, 1e-5)
            dx, dg, db = native_ops.layer_norm_backward(x, x, mean, rstd, gamma)
            results.append((native_ops.gelu(x), native_ops.gelu_backward(x, x), y, dx, dg, db))
    finally:
        native_ops.set_num_threads(None)
    for other in results[1:]:
        for a, b in zip(results[0][:4], other[:4]):
            np.testing.assert_array_equal(a, b)  # row/element-wise work: bit-identical
        for a, b in zip(results[0][4:], other[4:]):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)  # summation order differs


@needs_native
def test_isa_variants_agree():
    x = gelu_inputs(np.float32, n=3001)
    outputs = {}
    for name in native_ops.supported_isas():
        native_ops.set_isa(name)
        outputs[name] = (native_ops.gelu(x), native_ops.gelu_backward(x, np.ones_like(x), True))
    native_ops.set_isa(native_ops.supported_isas()[-1])
    first = outputs[native_ops.supported_isas()[0]]
    for name, (y, dx) in outputs.items():
        np.testing.assert_allclose(y, first[0], rtol=1e-5, atol=TINY, err_msg=name)
        # The derivative crosses zero near x = -0.75: compare it absolutely.
        np.testing.assert_allclose(dx, first[1], rtol=1e-5, atol=1e-7, err_msg=name)


@needs_native
def test_empty_inputs():
    y = native_ops.gelu(np.zeros((0, 3), np.float32))
    assert y.shape == (0, 3) and y.dtype == np.float32
    y, mean, rstd = native_ops.layer_norm(np.zeros((0, 4)), np.ones(4), None, 1e-5)
    assert y.shape == (0, 4) and mean.shape == (0,) == rstd.shape
    dx, dg, db = native_ops.layer_norm_backward(np.zeros((0, 4)), np.zeros((0, 4)), mean, rstd, np.ones(4))
    assert dx.shape == (0, 4)
    np.testing.assert_array_equal(dg, np.zeros(4))
    np.testing.assert_array_equal(db, np.zeros(4))


# ------------------------------------------------------------------------ bad inputs
@needs_native
@pytest.mark.parametrize("bad", [np.int64, np.int32, np.float16, np.complex64, np.bool_])
def test_wrong_dtype_raises_type_error_naming_the_op(bad):
    x = np.ones((2, 3), dtype=bad)
    f = np.ones((2, 3), dtype=np.float32)
    with pytest.raises(TypeError, match=r"^gelu: x must be a float32 or float64 array, got"):
        native_ops.gelu(x)
    with pytest.raises(TypeError, match=r"^gelu_backward: dy must be a float32 or float64"):
        native_ops.gelu_backward(f, x)
    with pytest.raises(TypeError, match=r"^layer_norm: x must be a float32 or float64"):
        native_ops.layer_norm(x, None, None, 1e-5)
    with pytest.raises(TypeError, match=r"^layer_norm_backward: x must be a float32 or float64"):
        native_ops.layer_norm_backward(f, x, f[:, 0], f[:, 0], None)


@needs_native
def test_mismatched_dtypes_and_non_arrays_raise_type_error():
    f32 = np.ones((2, 3), np.float32)
    f64 = np.ones((2, 3), np.float64)
    with pytest.raises(TypeError, match=r"^gelu_backward: dy has dtype float64 .* x has dtype float32"):
        native_ops.gelu_backward(f32, f64)
    with pytest.raises(TypeError, match=r"^layer_norm: gamma has dtype float64"):
        native_ops.layer_norm(f32, np.ones(3), None, 1e-5)
    with pytest.raises(TypeError, match=r"^layer_norm_backward: rstd has dtype float64"):
        native_ops.layer_norm_backward(f32, f32, f32[:, 0], f64[:, 0], None)
    with pytest.raises(TypeError, match=r"^gelu: x must be a numpy.ndarray, got list"):
        native_ops.gelu([1.0, 2.0])


@needs_native
def test_bad_shapes_and_values_raise_value_error():
    x = np.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match=r"gelu_backward: dy must have shape \(4, 3\)"):
        native_ops.gelu_backward(x, np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"layer_norm: gamma must have shape \(3,\)"):
        native_ops.layer_norm(x, np.ones(4, np.float32), None, 1e-5)
    with pytest.raises(ValueError, match=r"layer_norm: eps must be finite and >= 0"):
        native_ops.layer_norm(x, None, None, -1.0)
    with pytest.raises(ValueError, match=r"layer_norm: the normalised \(last\) axis of x is empty"):
        native_ops.layer_norm(np.ones((4, 0), np.float32), None, None, 1e-5)
    with pytest.raises(ValueError, match=r"layer_norm: x must have at least one axis"):
        native_ops.layer_norm(np.ones((), np.float32), None, None, 1e-5)
    mean = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=r"layer_norm_backward: rstd must have shape \(4,\)"):
        native_ops.layer_norm_backward(x, x, mean, np.zeros(3, np.float32), None)
    with pytest.raises(ValueError, match="positive integer"):
        native_ops.set_num_threads(0)
    with pytest.raises(ValueError, match="not available"):
        native_ops.set_isa("sse9000")


# ------------------------------------------------------------------ without the library
def test_disabled_extension_reports_instead_of_failing():
    code = (
        "import numpy as np\n"
        "from ember.kernels import native_ops as n\n"
        "assert not n.available()\n"
        "assert 'EMBER_DISABLE_NATIVE' in n.load_error()\n"
        "assert n.isa() is None and n.supported_isas() == ()\n"
        "try:\n"
        "    n.gelu(np.ones(3, np.float32))\n"
        "except n.NativeUnavailableError as e:\n"
        "    assert 'not available' in str(e)\n"
        "else:\n"
        "    raise SystemExit('expected NativeUnavailableError')\n"
    )
    env = dict(os.environ, EMBER_DISABLE_NATIVE="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
