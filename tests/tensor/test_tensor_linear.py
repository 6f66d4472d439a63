"""``ember.linear`` (``x @ weight + bias`` in one backend call) on every backend: values,
gradients against float64 finite differences, dtypes, edges and errors; and the cpu GEMM's
bias added block by block while the rows are in cache."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.gradcheck import gradcheck_np
from helpers.numeric import assert_close

import ember
from ember.kernels.cpu import gemm

SHAPES = {"1d": (5,), "2d": (7, 5), "3d": (2, 3, 5), "empty": (0, 5)}


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
@pytest.mark.parametrize("case", list(SHAPES))
def test_linear_forward(device, rng, case, dtype, bias):
    x = rng.standard_normal(SHAPES[case]).astype(dtype.numpy)
    w = rng.standard_normal((5, 4)).astype(dtype.numpy)
    b = rng.standard_normal(4).astype(dtype.numpy)
    want = x.astype(np.float64) @ w.astype(np.float64) + (b if bias else 0.0)
    tb = ember.tensor(b, device=device) if bias else None
    out = ember.linear(ember.tensor(x, device=device), ember.tensor(w, device=device), tb)
    assert out.dtype == dtype and out.shape == SHAPES[case][:-1] + (4,)
    assert_close(out, want, dtype=dtype)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("case", ["1d", "2d", "3d"])
def test_linear_gradients(device, rng, case, bias):
    x, w, b = rng.standard_normal(SHAPES[case]), rng.standard_normal((5, 4)), rng.standard_normal(4)
    if bias:
        gradcheck_np(lambda x, w, b: ember.linear(x, w, b), device, x, w, b)
    else:
        gradcheck_np(lambda x, w: ember.linear(x, w), device, x, w)


def test_linear_matches_matmul_plus_bias_in_value_and_gradient(device, rng):
    x = ember.tensor(rng.standard_normal((6, 3, 8)).astype(np.float32), device=device, requires_grad=True)
    w = ember.tensor(rng.standard_normal((8, 5)).astype(np.float32), device=device, requires_grad=True)
    b = ember.tensor(rng.standard_normal(5).astype(np.float32), device=device, requires_grad=True)
    fused = ember.linear(x, w, b)
    composed = x @ w + b
    np.testing.assert_allclose(fused.numpy(), composed.numpy(), rtol=1e-5, atol=1e-5)
    up = ember.tensor(rng.standard_normal(fused.shape).astype(np.float32), device=device)
    g1, g2 = (fused * up).sum().backward(), (composed * up).sum().backward()
    for t in (x, w, b):
        np.testing.assert_allclose(g1.get(t).numpy(), g2.get(t).numpy(), rtol=1e-5, atol=1e-5)


def test_linear_promotes_dtypes(device):
    x64 = ember.ones(2, 3, dtype=ember.float64, device=device)
    w32 = ember.ones(3, 4, device=device)
    assert ember.linear(x64, w32, ember.ones(4, device=device)).dtype == ember.float64
    ints = ember.tensor(np.arange(6).reshape(2, 3), device=device)
    out = ember.linear(ints, w32)
    assert out.dtype == ember.float32
    np.testing.assert_array_equal(out.numpy(), np.arange(6).reshape(2, 3) @ np.ones((3, 4)))


def test_linear_float16(device, rng):
    x = rng.standard_normal((4, 6)).astype(np.float16)
    w = rng.standard_normal((6, 3)).astype(np.float16)
    b = rng.standard_normal(3).astype(np.float16)
    out = ember.linear(*(ember.tensor(a, device=device) for a in (x, w, b)))
    assert out.dtype == ember.float16
    assert_close(out, x.astype(np.float64) @ w.astype(np.float64) + b, dtype=ember.float16)


def test_linear_propagates_nan_and_inf(device):
    x = ember.tensor(np.array([[1.0, np.nan], [np.inf, 0.0], [1.0, 2.0]], np.float32), device=device)
    out = ember.linear(
        x, ember.ones(2, 2, device=device), ember.tensor([0.0, -np.inf], device=device)
    ).numpy()
    assert np.isnan(out[0]).all()
    assert out[1, 0] == np.inf and np.isnan(out[1, 1])  # inf + (-inf)
    assert out[2, 0] == 3.0 and out[2, 1] == -np.inf


def test_linear_errors_name_the_op_and_shapes(device):
    x, w = ember.ones(2, 3, device=device), ember.ones(3, 4, device=device)
    with pytest.raises(ValueError, match=r"linear: input of shape \[2, 4\] does not end with d_input=3"):
        ember.linear(ember.ones(2, 4, device=device), w)
    with pytest.raises(ValueError, match=r"linear: weight must be \[d_input, d_output\], got \[3\]"):
        ember.linear(x, ember.ones(3, device=device))
    with pytest.raises(ValueError, match=r"linear: bias must be \[d_output\] = \[4\], got \[3\]"):
        ember.linear(x, w, ember.ones(3, device=device))
    with pytest.raises(TypeError, match="linear: expected a float tensor, got int64"):
        ember.linear(x, ember.tensor(np.ones((3, 4), np.int64), device=device))
    with pytest.raises(TypeError, match="linear: bool inputs"):
        ember.linear(ember.tensor(np.ones((2, 3), bool), device=device), w)
    with pytest.raises(TypeError, match="linear: expected a Tensor input"):
        ember.linear(np.ones((2, 3)), w)
    other = "reference" if device != "reference" else "cpu"
    with pytest.raises(RuntimeError, match="linear: tensors are on different devices"):
        ember.linear(x, ember.ones(3, 4, device=other))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
@pytest.mark.parametrize("m,k,n", [(5000, 64, 300), (3000, 200, 40), (40, 30, 20), (0, 8, 5)])
def test_cpu_gemm_bias_blocks_equal_numpy(m, k, n, dtype):
    # large products are split over ember's threads and each piece adds the bias in row blocks
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    bias = rng.standard_normal(n).astype(dtype)
    got = gemm.matmul(a, b, bias=bias)
    want = a @ b + bias
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * k)


def test_cpu_gemm_bias_on_batched_products():
    rng = np.random.default_rng(4)
    a, b, bias = rng.standard_normal((4, 600, 70)), rng.standard_normal((4, 70, 90)), rng.standard_normal(90)
    np.testing.assert_allclose(gemm.matmul(a, b, bias=bias), a @ b + bias, rtol=1e-12, atol=1e-10)
