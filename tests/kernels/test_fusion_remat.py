"""What the fusion engine leaves pending across flushes: an ``expand`` of a pending value, a held
intermediate it computes again instead of writing (rematerialisation), and the gradients one
backward pass leaves, computed together."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.kernels.cpu import fused_chain, fused_reduction, fused_rows
from ember.kernels.fusion import plan
from ember.kernels.fusion.lazy import Lazy

pytestmark = pytest.mark.skipif(
    ember.default_device().backend.chain_runner() is None, reason="the default backend fuses nothing"
)


@pytest.fixture(autouse=True)
def fusion_on(monkeypatch):
    """These tests are about what fusion does: on, whatever EMBER_FUSION says (CI runs with 0)."""
    from ember.kernels.fusion import engine

    monkeypatch.setattr(engine.settings, "enabled", True)


def _pending(t) -> bool:
    return type(t._arr) is Lazy and t._arr.value is None


def _data(rng, *shape):
    return ember.tensor(rng.standard_normal(shape), dtype=ember.float32)


# ---- expand ---------------------------------------------------------------------------------------
def test_an_expand_of_a_pending_value_stays_pending_and_equals_eager(fuse_all, eager, rng):
    x0 = rng.standard_normal((6, 5))

    def compute():
        x = ember.tensor(x0, dtype=ember.float32)
        rows = (x * 2.0).sum(-1, keepdim=True)  # a pending reduction
        spread = (rows + 1.0).expand(6, 5)
        if ember.kernels.fusion.engine.settings.enabled:
            assert _pending(spread) and spread._arr.op == "expand"
        alone = spread.numpy()
        return alone, ((rows * 3.0).expand(6, 5) * x).numpy()

    for got, want in zip(compute(), eager(compute)):
        np.testing.assert_array_equal(got, want)


def test_an_expand_computed_alone_is_a_broadcast_view_as_in_eager_execution(fuse_all, rng):
    x = _data(rng, 8, 1)
    spread = (x * 2.0).expand(8, 512)
    value = spread.numpy()
    assert value.shape == (8, 512) and value.strides[1] == 0  # 8 values stored, not 4096
    np.testing.assert_array_equal(value, np.broadcast_to(x.numpy() * 2.0, (8, 512)))


def test_a_composed_norm_backward_reads_its_rows_once(fuse_all, rng):
    """The row reduction's gradient spread back over the rows (an expand) no longer cuts the
    backward chain: the input's gradient and the weight's run as one row program."""
    x = _data(rng, 64, 48).require_grad()
    w = _data(rng, 48).require_grad()
    y = x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * w
    before = {k: dict(k.stats) for k in (fused_chain.KERNELS, fused_reduction.KERNELS, fused_rows.KERNELS)}
    grads = y.backward(_data(rng, 64, 48))
    used = {k: k.stats["hits"] + k.stats["misses"] - v["hits"] - v["misses"] for k, v in before.items()}
    assert used == {fused_chain.KERNELS: 0, fused_reduction.KERNELS: 0, fused_rows.KERNELS: 1}
    assert not _pending(grads[x]) and not _pending(grads[w])


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize(
    "norm",
    [
        lambda x, w, b: x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * w,
        lambda x, w, b: (
            (x - x.mean(-1, keepdim=True))
            / (((x - x.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True) + 1e-5).sqrt()
            * w
            + b
        ),
        lambda x, w, b: (x * w + b) * 0.5,  # no row reduction: the two column sums and the chain
    ],
    ids=["rms_norm", "layer_norm", "affine"],
)
def test_the_gradients_computed_together_equal_eager_execution(fuse_all, eager, rng, norm, dtype):
    x0, w0, b0, g0 = (rng.standard_normal(s) for s in ((5, 7, 33), (33,), (33,), (5, 7, 33)))

    def grads():
        x, w, b = (ember.tensor(a, dtype=dtype).require_grad() for a in (x0, w0, b0))
        got = norm(x, w, b).backward(ember.tensor(g0, dtype=dtype))
        return [got[t].numpy() for t in (x, w, b) if t in got]

    rtol = 5e-5 if dtype == ember.float32 else 1e-11
    for got, want in zip(grads(), eager(grads)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())


# ---- rematerialisation ------------------------------------------------------------------------------
def test_a_held_exactly_rounded_intermediate_is_computed_again_not_written(fuse_all, eager, rng):
    x0 = rng.standard_normal((32, 16))

    def compute():
        x = ember.tensor(x0, dtype=ember.float32)
        h = x * 3.0 - 1.0  # held by this variable; reads one array of its own size
        y = (h + 2.0).exp().numpy()
        if ember.kernels.fusion.engine.settings.enabled:
            assert _pending(h)  # not written by the flush of y
        return y, h.numpy(), (h * h).numpy()

    (y, *held), (y_eager, *held_eager) = compute(), eager(compute)
    np.testing.assert_allclose(y, y_eager, rtol=1e-6)  # exp: each kernel's own
    for got, want in zip(held, held_eager):
        np.testing.assert_array_equal(got, want)  # computed again: the same values, bit for bit


def test_a_held_transcendental_intermediate_is_written(fuse_all, rng):
    x = _data(rng, 32, 16)
    h = x.exp()  # computed again by another kernel, it could differ in its last bit
    (h * 2.0).numpy()
    assert not _pending(h)


def test_remat_keeps_no_more_memory_alive_than_the_value(fuse_all, rng):
    a, b = _data(rng, 32, 16), _data(rng, 32, 16)
    h = a + b  # recomputing it would keep two arrays of its size alive: written instead
    (h * 2.0).numpy()
    assert not _pending(h)
    a = b = None


def test_a_value_recomputation_reads_that_cannot_be_recomputed_is_written(fuse_all, rng):
    x = _data(rng, 40, 24)
    root = ((x * 2.0) * (x * 2.0)).sum(-1, keepdim=True).sqrt()  # a row reduction, then sqrt
    h = x / root  # held, as is root: both stay pending; the row sums they read are written
    out = (h * 2.0 + x).sum(-1, keepdim=True).numpy()
    assert _pending(h) and _pending(root)
    (row_sums,) = root._arr.args
    assert row_sums.op == "reduce:sum:rows" and row_sums.value is not None
    want = x.numpy() / np.sqrt(((x.numpy() * 2) ** 2).sum(-1, keepdims=True))
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(out, (want * 2 + x.numpy()).sum(-1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_remat_can_be_turned_off(fuse_all, rng, monkeypatch):
    monkeypatch.setattr(plan, "REMAT_MAX_OPS", 0)
    x = _data(rng, 32, 16)
    h = x * 3.0
    (h + 1.0).numpy()
    assert not _pending(h)


def test_a_value_only_pending_values_hold_is_computed_again_whatever_its_ops(fuse_all, eager, rng):
    x0, b0 = rng.standard_normal((32, 16)), rng.standard_normal((32, 16))

    def swiglu_grads():
        x = ember.tensor(x0, dtype=ember.float32).require_grad()
        b = ember.tensor(b0, dtype=ember.float32).require_grad()
        gate = x * x.sigmoid()
        y = gate * b  # y, pending, holds gate; nothing else does once the tape lets go
        del gate
        grads = y.backward(ember.ones(32, 16))
        if ember.kernels.fusion.engine.settings.enabled:
            (held, _) = y._arr.args
            assert held.value is None  # not written by the backward kernel
        return grads[x].numpy(), grads[b].numpy(), y.numpy()  # y computes it again

    for got, want in zip(swiglu_grads(), eager(swiglu_grads)):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "op_by_op"])
def test_a_sum_over_leading_axes_stays_pending_through_a_reshape(eager, rng, monkeypatch, compiled):
    from ember.kernels.fusion import engine

    monkeypatch.setattr(engine.settings, "min_elements", 0)
    monkeypatch.setattr(engine.settings, "compile_after", 1 if compiled else 1000)
    x0 = rng.standard_normal((2, 1, 3, 4))

    def compute():
        x = ember.tensor(x0, dtype=ember.float32)
        total = (x * 2.0).sum(0, keepdim=True)  # [1, 1, 3, 4]
        flat = total.reshape(3, 4)  # a bias gradient's shape
        if engine.settings.enabled:
            assert _pending(flat) and flat._arr.op == "reduce:sum:columns:1"
        return flat.numpy(), total.reshape(12).numpy()

    for got, want in zip(compute(), eager(compute)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
