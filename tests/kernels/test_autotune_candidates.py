"""Every candidate of every op the ``cpu`` backend tunes gives the reference backend's result
(each forced in turn), so whichever one a machine measures fastest, the numbers are right."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.kernels import autotune
from ember.kernels.cpu import attention as cpu_attention  # noqa: F401  (declares its tuned ops)
from ember.kernels.cpu import gemm

CPU_TUNED = ["cpu.matmul", "cpu.attention", "cpu.attention_backward"]


def candidates(op):
    return [(op, name) for name in autotune.tunables()[op].candidates]


@pytest.fixture(scope="module")
def backends():
    return ember.Device("cpu").backend, ember.Device("reference").backend


def test_each_tuned_op_is_declared_with_its_default_first_class():
    tuned = autotune.tunables()
    for op in CPU_TUNED:
        assert op in tuned and tuned[op].default in tuned[op].candidates


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape_a, shape_b, transposed",
    [
        ((256, 64), (64, 512), False),
        ((1000, 130), (130, 70), False),
        ((300, 96), (96, 200), True),
        ((40, 2048), (2048, 33), False),
    ],
)
@pytest.mark.parametrize("op, candidate", candidates("cpu.matmul"))
def test_matmul_candidates(op, candidate, shape_a, shape_b, transposed, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape_a).astype(dtype)
    b = rng.standard_normal(shape_b[::-1] if transposed else shape_b).astype(dtype)
    b = b.T if transposed else b
    bias = rng.standard_normal(shape_b[1]).astype(dtype)
    with autotune.forced(op, candidate):
        out = gemm.matmul(a, b)
        biased = gemm.matmul(a, b, bias=bias)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(out, a @ b, rtol=tol, atol=tol * shape_a[1])
    np.testing.assert_allclose(biased, a @ b + bias, rtol=tol, atol=tol * shape_a[1])


def _attention_inputs(dtype, b=2, h=3, sq=70, sk=90, d=16, masked=True):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((b, h, s, d)).astype(dtype) for s in (sq, sk, sk))
    mask = None
    if masked:
        mask = np.zeros((b, sk), dtype=bool)
        mask[0, 60:] = True
        mask[1, 5:] = True
    return q, k, v, mask


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("masked, dropout_p", [(True, 0.0), (False, 0.0), (True, 0.25)])
@pytest.mark.parametrize("op, candidate", candidates("cpu.attention") + candidates("cpu.attention_backward"))
def test_attention_candidates(backends, op, candidate, dtype, masked, dropout_p):
    cpu, reference = backends
    q, k, v, mask = _attention_inputs(dtype, masked=masked)
    scale, seed = 0.25, 1234
    dout = np.random.default_rng(2).standard_normal(q.shape[:3] + (v.shape[3],)).astype(dtype)
    ref_out, ref_lse = reference.attention(q, k, v, mask, scale, False, dropout_p, seed)
    ref_grads = reference.attention_backward(
        dout, q, k, v, ref_out, ref_lse, mask, scale, False, dropout_p, seed
    )
    with autotune.forced(op, candidate):
        out, lse = cpu.attention(q, k, v, mask, scale, False, dropout_p, seed)
        grads = cpu.attention_backward(dout, q, k, v, out, lse, mask, scale, False, dropout_p, seed)
    tol = 2e-5 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(out, ref_out, rtol=tol, atol=tol)
    for got, want in zip(grads, ref_grads):
        np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol * 10)
