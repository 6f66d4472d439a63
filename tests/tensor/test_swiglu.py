"""``ember.swiglu(a, b) = silu(a) * b``: the fused SwiGLU gate, on every backend.

Forward against NumPy in float64, gradients against finite differences and against the
composition ``silu(a) * b`` (whose gradient rule is PyTorch's), edge values, float16, empty
tensors, the errors, and PyTorch as an oracle where it is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.helpers.gradcheck import gradcheck_np


def _expected(a, b, dy):
    """NumPy float64: the value and both gradients."""
    a, b, dy = (np.asarray(x, np.float64) for x in (a, b, dy))
    with np.errstate(over="ignore", invalid="ignore"):
        s = 1.0 / (1.0 + np.exp(-a))
        return a * s * b, dy * b * (s * (1.0 + a * (1.0 - s))), dy * (a * s)


def _run(a, b, dy, device):
    ta = ember.tensor(a, device=device).require_grad()
    tb = ember.tensor(b, device=device).require_grad()
    y = ember.swiglu(ta, tb)
    grads = y.backward(ember.tensor(dy, device=device))
    return y.numpy(), grads[ta].numpy(), grads[tb].numpy()


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 2e-5), ("float16", 2e-3)])
def test_value_and_gradients_match_numpy(device, rng, dtype, rtol):
    a, b, dy = (rng.standard_normal((7, 33)).astype(dtype) * 4 for _ in range(3))
    got = _run(a, b, dy, device)
    for name, g, w in zip(("y", "da", "db"), got, _expected(a, b, dy)):
        assert g.dtype == np.dtype(dtype), name
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=rtol, atol=rtol * 1e-2, err_msg=name)


def test_gradients_against_finite_differences(device, rng):
    a, b = rng.standard_normal((3, 5)) * 3, rng.standard_normal((3, 5))
    gradcheck_np(ember.swiglu, device, a, b)


def test_equals_the_composition_forward_and_backward(device, rng):
    a, b, dy = (rng.standard_normal(40) * 5 for _ in range(3))
    ta, tb = (ember.tensor(x, device=device).require_grad() for x in (a, b))
    composed = ember.silu(ta) * tb
    want = composed.backward(ember.tensor(dy, device=device))
    got = _run(a, b, dy, device)
    np.testing.assert_allclose(got[0], composed.numpy(), rtol=1e-14)
    np.testing.assert_allclose(got[1], want[ta].numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got[2], want[tb].numpy(), rtol=1e-14)


@pytest.mark.parametrize("dtype, big", [("float64", 1e308), ("float32", 3e38), ("float16", 6e4)])
def test_edge_values(device, dtype, big):
    a = np.array([0.0, -0.0, big, -big, np.inf, -np.inf, np.nan, 1.0], dtype)
    b = np.array([2.0, 2.0, 0.5, 2.0, 1.0, 1.0, 1.0, np.nan], dtype)
    dy = np.ones(8, dtype)
    y, da, db = _run(a, b, dy, device)
    with np.errstate(over="ignore", invalid="ignore"):
        want = [w.astype(dtype) for w in _expected(a, b, dy)]
    # 0 at 0; the gradient's limits at ±big (1 and 0, times b); NaN where the formula is
    # inf * 0 (a = ±inf: PyTorch's silu gives NaN there too) or an operand is NaN
    np.testing.assert_array_equal(y, want[0])
    np.testing.assert_array_equal(da, want[1])
    np.testing.assert_array_equal(db, want[2])
    assert da[2] == 0.5 and da[3] == 0.0 and da[0] == 1.0


def test_empty_and_scalar_tensors(device):
    y, da, db = _run(np.zeros((0, 4)), np.zeros((0, 4)), np.zeros((0, 4)), device)
    assert y.shape == da.shape == db.shape == (0, 4)
    y, da, db = _run(np.float64(2.0), np.float64(3.0), np.float64(1.0), device)
    assert y.shape == () and abs(y - 3 * 2 / (1 + np.exp(-2.0))) < 1e-12


def test_the_method_and_tensor_likes(device):
    a = ember.tensor([1.0, -2.0], device=device)
    b = ember.tensor([3.0, 4.0], device=device)
    np.testing.assert_array_equal(a.swiglu(b).numpy(), ember.swiglu(a, b).numpy())
    w = ember.nn.Param(ember.tensor([3.0, 4.0], device=device))
    np.testing.assert_array_equal(a.swiglu(w).numpy(), ember.swiglu(a, b).numpy())


def test_errors_name_the_op_and_what_was_expected(device):
    a = ember.ones(2, 3, device=device)
    with pytest.raises(
        ValueError, match=r"swiglu: a and b must have one shape and dtype, got \[2, 3\] float32 and \[3\]"
    ):
        ember.swiglu(a, ember.ones(3, device=device))
    with pytest.raises(ValueError, match="float32 and .* float64"):
        ember.swiglu(a, ember.ones(2, 3, dtype=ember.float64, device=device))
    with pytest.raises(TypeError, match="swiglu: b must be a float tensor, got int64"):
        ember.swiglu(a, ember.ones(2, 3, dtype=ember.int64, device=device))
    with pytest.raises(TypeError, match="swiglu: a must be a Tensor, got list"):
        ember.swiglu([1.0], a)
    other = "reference" if device != "reference" else "cpu"
    with pytest.raises(RuntimeError, match="swiglu: tensors are on different devices"):
        ember.swiglu(a, ember.ones(2, 3, device=other))


def test_pytorch_oracle(device, rng):
    torch = pytest.importorskip("torch")
    a, b, dy = (rng.standard_normal((4, 9)).astype(np.float32) * 3 for _ in range(3))
    ta, tb = (torch.tensor(x, requires_grad=True) for x in (a, b))
    y = torch.nn.functional.silu(ta) * tb
    y.backward(torch.tensor(dy))
    got = _run(a, b, dy, device)
    for g, w in zip(got, (y.detach().numpy(), ta.grad.numpy(), tb.grad.numpy())):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)
