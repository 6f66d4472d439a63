"""A matrix product fused into the element-wise chain that reads it (``cpu``): the product is
made block of rows by block of rows and the chain runs on each block while it is in cache,
with the values eager execution gives."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.kernels.cpu import gemm
from ember.kernels.fusion import engine
from ember.kernels.fusion.lazy import Lazy
from ember.tensor.ops.nn import linear

pytestmark = pytest.mark.skipif(not engine.settings.enabled, reason="EMBER_FUSION=0")


@pytest.fixture
def epilogues(monkeypatch):
    """How many products ran as a chain's epilogue."""
    calls = []
    original = gemm.matmul_rows

    def counted(*args, **kwargs):
        calls.append(args[0].shape)
        return original(*args, **kwargs)

    monkeypatch.setattr(gemm, "matmul_rows", counted)
    return calls


def _gelu(h):
    return 0.5 * h * (1 + (0.7978845608 * (h + 0.044715 * h * h * h)).tanh())


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("shape", [(96, 48), (3, 40, 48), (600, 64)])
def test_a_two_layer_mlp_equals_eager_execution_forward_and_backward(
    fuse_all, eager, epilogues, rng, dtype, shape
):
    x0 = rng.standard_normal(shape)
    w1, b1 = rng.standard_normal((shape[-1], 80)) / 7, rng.standard_normal(80)
    w2 = rng.standard_normal((80, 16)) / 9

    def forward_backward():
        x = ember.tensor(x0, dtype=dtype).require_grad()
        params = [ember.tensor(p, dtype=dtype).require_grad() for p in (w1, b1, w2)]
        y = linear(_gelu(linear(x, params[0], params[1])), params[2])
        grads = (y * y).mean().backward()
        return [y.numpy(), grads[x].numpy()] + [grads[p].numpy() for p in params]

    got = forward_backward()
    assert epilogues, "no product ran as an epilogue"
    rtol = 2e-5 if dtype == ember.float32 else 1e-12
    for g, w in zip(got, eager(forward_backward)):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())


def test_a_product_only_the_chain_reads_is_never_stored(fuse_all, eager, epilogues, rng):
    x0 = rng.standard_normal((64, 32)).astype(np.float32)
    w0 = rng.standard_normal((32, 48)).astype(np.float32)
    stored = []
    original = gemm.matmul_rows
    # tensors without gradients: nothing but the chain reads the product
    x, w = ember.tensor(x0), ember.tensor(w0)
    y = ((x @ w) * 0.5).relu() + 1.0
    assert type(y._arr) is Lazy and y._arr.value is None
    gemm.matmul_rows = lambda *a, **k: (
        stored.append(a[4] if len(a) > 4 else k.get("into")),
        original(*a, **k),
    )
    try:
        got = y.numpy()
    finally:
        gemm.matmul_rows = original
    assert stored == [None]  # each block went to a scratch buffer
    np.testing.assert_allclose(got, np.maximum(x0 @ w0 * 0.5, 0) + 1, rtol=1e-5, atol=1e-5)


def test_a_product_a_tensor_holds_is_stored_and_exact(fuse_all, epilogues, rng):
    x0 = rng.standard_normal((40, 16)).astype(np.float32)
    w0 = rng.standard_normal((16, 24)).astype(np.float32)
    x, w = ember.tensor(x0), ember.tensor(w0)
    h = x @ w
    y = (h * 2.0).exp()
    np.testing.assert_allclose(y.numpy(), np.exp((x0 @ w0) * 2), rtol=1e-5)
    assert len(epilogues) == 1
    assert type(h._arr) is Lazy and h._arr.value is not None  # written by the same product
    np.testing.assert_allclose(h.numpy(), x0 @ w0, rtol=1e-5, atol=1e-5)


def test_a_product_two_chains_read_is_made_once(fuse_all, rng):
    x, w = ember.tensor(rng.standard_normal((30, 8))), ember.tensor(rng.standard_normal((8, 12)))
    h = x @ w
    a, b = (h + 1.0).exp(), (h * h).sqrt()
    np.testing.assert_allclose(a.numpy(), np.exp(x.numpy() @ w.numpy() + 1), rtol=1e-12)
    np.testing.assert_allclose(b.numpy(), np.abs(x.numpy() @ w.numpy()), rtol=1e-12)


def test_a_chain_that_broadcasts_the_product_does_not_take_it(fuse_all, epilogues, rng):
    x, w = ember.tensor(rng.standard_normal((1, 8))), ember.tensor(rng.standard_normal((8, 12)))
    big = ember.tensor(rng.standard_normal((5, 12)))
    y = (x @ w) + big  # the product is [1, 12], the chain [5, 12]
    np.testing.assert_allclose(y.numpy(), x.numpy() @ w.numpy() + big.numpy(), rtol=1e-12)
    assert not epilogues


def test_a_pending_product_read_by_an_unfused_op_is_computed(fuse_all, rng):
    x, w = ember.tensor(rng.standard_normal((6, 8))), ember.tensor(rng.standard_normal((8, 12)))
    h = x @ w
    assert type(h._arr) is Lazy
    np.testing.assert_allclose(h.sum(1).numpy(), (x.numpy() @ w.numpy()).sum(1), rtol=1e-12)
    np.testing.assert_allclose(h.reshape(12, 6).numpy(), (x.numpy() @ w.numpy()).reshape(12, 6), rtol=1e-12)


def test_errors_are_raised_at_the_product(fuse_all):
    with pytest.raises(ValueError, match="inner dims differ"):
        ember.ones(3, 4) @ ember.ones(5, 6)


def test_a_product_narrower_than_its_input_is_made_at_once(fuse_all, rng):
    # pending, it would hold x [64, 96] for a [64, 8] result: more than eager execution holds
    x, w = ember.tensor(rng.standard_normal((64, 96))), ember.tensor(rng.standard_normal((96, 8)))
    assert type((x @ w)._arr) is not Lazy
    assert type((x @ w.T.T)._arr) is not Lazy
    wide = ember.tensor(rng.standard_normal((96, 128)))
    assert type((x @ wide)._arr) is Lazy


def test_under_no_grad_a_product_is_made_at_once(fuse_all, rng):
    # inference measured slower with products kept pending, so they are not
    x, w = ember.tensor(rng.standard_normal((64, 32))), ember.tensor(rng.standard_normal((32, 48)))
    with ember.no_grad():
        assert type((x @ w)._arr) is not Lazy
        assert type(linear(x, w)._arr) is not Lazy
    assert type((x @ w)._arr) is Lazy
