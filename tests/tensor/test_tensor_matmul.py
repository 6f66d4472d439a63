"""Matrix multiplication on every backend: 2-D, batched with broadcasting, 1-D operands."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.gradcheck import gradcheck_np
from helpers.numeric import assert_close

import ember

SHAPES = {
    "2d": ((3, 4), (4, 5)),
    "batched": ((2, 3, 4), (2, 4, 5)),
    "broadcast_left": ((3, 4), (2, 4, 5)),
    "broadcast_right": ((2, 3, 4), (4, 5)),
    "broadcast_batch": ((2, 1, 3, 4), (1, 3, 4, 2)),
    "vec_mat": ((4,), (4, 5)),
    "mat_vec": ((3, 4), (4,)),
    "vec_vec": ((4,), (4,)),
    "batched_vec": ((2, 3, 4), (4,)),
    "vec_batched": ((4,), (2, 4, 3)),
}


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
@pytest.mark.parametrize("case", list(SHAPES))
def test_matmul_forward(device, rng, case, dtype):
    sa, sb = SHAPES[case]
    a, b = rng.standard_normal(sa).astype(dtype.numpy), rng.standard_normal(sb).astype(dtype.numpy)
    ta, tb = ember.tensor(a, device=device), ember.tensor(b, device=device)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    for out in (ta @ tb, ember.matmul(ta, tb), ta.matmul(tb)):
        assert_close(out, want, dtype=dtype)


@pytest.mark.parametrize("case", list(SHAPES))
def test_matmul_gradients(device, rng, case):
    sa, sb = SHAPES[case]
    gradcheck_np(lambda x, y: x @ y, device, rng.standard_normal(sa), rng.standard_normal(sb))


def test_matmul_int_and_promotion(device):
    a = ember.tensor([[1, 2], [3, 4]], device=device)
    b = ember.tensor([[5, 6], [7, 8]], device=device)
    out = a @ b
    assert out.dtype is ember.int64 and out.numpy().tolist() == [[19, 22], [43, 50]]
    out = a @ b.float()
    assert out.dtype is ember.float32 and out.numpy().tolist() == [[19, 22], [43, 50]]


def test_matmul_with_constant_operand(device, rng):
    w = ember.tensor(rng.standard_normal((4, 2)), dtype=ember.float64, device=device)
    gradcheck_np(lambda x: (x @ w).tanh() @ w.T, device, rng.standard_normal((3, 4)))


def test_matmul_empty_inner(device):
    out = ember.zeros(2, 0, device=device) @ ember.zeros(0, 3, device=device)
    assert_close(out, np.zeros((2, 3)))


def test_batched_matmul_with_an_empty_inner_dim(device):
    # found by the differential test: [..., n, 0] @ [0, m] folded the batch with
    # reshape(-1, 0), which NumPy cannot infer for an empty array (a raw ValueError)
    for a_shape, b_shape in (((1, 1, 0), (0, 0)), ((2, 3, 0), (0, 4)), ((2, 0, 0), (0, 3))):
        a = ember.zeros(*a_shape, device=device).require_grad()
        b = ember.zeros(*b_shape, device=device).require_grad()
        out = a @ b
        assert out.shape == a_shape[:-1] + b_shape[-1:]
        np.testing.assert_array_equal(out.numpy(), np.zeros(out.shape))
        grads = out.backward(ember.ones_like(out))
        assert grads.get(a).shape == a_shape and grads.get(b).shape == b_shape
