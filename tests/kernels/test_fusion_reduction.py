"""Reductions fused on read (``cpu``): a sum, max or min over the last axis (rows) or over the
leading axes (columns) of a pending element-wise chain computes the chain inside its own loop,
with the values eager execution gives."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.kernels.cpu import fused_reduction, fused_rows
from ember.kernels.fusion import engine
from ember.kernels.fusion.lazy import Lazy

pytestmark = pytest.mark.skipif(not engine.settings.enabled, reason="EMBER_FUSION=0")


def _lookups() -> int:
    """Kernel look-ups of the fused reductions and the row programs so far."""
    return sum(k.stats["hits"] + k.stats["misses"] for k in (fused_reduction.KERNELS, fused_rows.KERNELS))


def _pending_reduction(t) -> bool:
    return type(t._arr) is Lazy and t._arr.value is None and t._arr.op.startswith("reduce:")


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize(
    ("shape", "dim", "keepdim"),
    [
        ((37, 19), -1, True),
        ((37, 19), -1, False),
        ((4, 6, 9), 2, False),
        ((37, 19), 0, True),
        ((37, 19), (0,), False),
        ((4, 6, 9), (0, 1), False),
        ((4, 6, 9), (0, 1), True),
    ],
)
def test_a_reduction_of_a_chain_equals_eager_execution(fuse_all, eager, rng, op, shape, dim, keepdim):
    x0 = rng.standard_normal(shape).astype(np.float32)
    w0 = rng.standard_normal(shape[-1]).astype(np.float32)

    def compute():
        x, w = ember.tensor(x0), ember.tensor(w0)
        return getattr((x * w + 0.5).exp(), op)(dim, keepdim=keepdim)

    fused = compute()
    assert _pending_reduction(fused), "the reduction was not recorded"
    np.testing.assert_allclose(fused.numpy(), eager(compute).numpy(), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("dim", [-1, 0])
def test_nan_and_infinities_reduce_as_in_eager_execution(fuse_all, eager, op, dim):
    x0 = np.array(
        [
            [1.0, np.nan, 2.0, 3.0],
            [np.inf, 1.0, -1.0, 0.0],
            [-np.inf, -np.inf, 5.0, 1.0],
            [-0.0, 0.0, 7.0, 2.0],
        ],
        np.float32,
    )

    def compute():
        return getattr(ember.tensor(x0) * 2.0, op)(dim).numpy()

    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(compute(), eager(compute))


def test_a_composed_rms_norm_equals_eager_execution_forward_and_backward(fuse_all, eager, rng):
    x0 = rng.standard_normal((64, 48))
    w0 = rng.standard_normal(48)

    def forward_backward():
        x = ember.tensor(x0, dtype=ember.float32).require_grad()
        w = ember.tensor(w0, dtype=ember.float32).require_grad()
        y = x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * w
        grads = y.backward(ember.tensor(np.cos(x0), dtype=ember.float32))
        return y.numpy(), grads[x].numpy(), grads[w].numpy()

    before = _lookups()
    got = forward_backward()
    assert _lookups() > before, "no reduction was fused"
    for g, w, what in zip(got, eager(forward_backward), ("value", "grad x", "grad w")):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5, err_msg=what)


def test_a_max_keeps_the_chain_values_its_backward_reads(fuse_all, eager, rng):
    x0 = rng.standard_normal((16, 12)).astype(np.float32)

    def forward_backward():
        x = ember.tensor(x0).require_grad()
        y = (x * 3.0 - 1.0).max(-1)
        grads = y.sum().backward()
        return y.numpy(), grads[x].numpy()

    for g, w in zip(forward_backward(), eager(forward_backward)):
        np.testing.assert_array_equal(g, w)


def test_a_chain_read_by_a_reduction_and_by_a_tensor_is_computed_once(fuse_all, rng):
    x0 = rng.standard_normal((32, 16)).astype(np.float32)
    x = ember.tensor(x0)
    e = (x * 0.5).exp()
    total = e.sum(-1)
    np.testing.assert_allclose(total.numpy(), np.exp(x0 * np.float32(0.5)).sum(-1), rtol=1e-5)
    # the reduction wrote the chain's values for `e` as it went: no second kernel computes them
    assert type(e._arr) is Lazy and e._arr.value is not None
    np.testing.assert_allclose(e.numpy(), np.exp(x0 * np.float32(0.5)), rtol=1e-6)


def test_the_same_reduction_on_other_sizes_reuses_its_kernel(fuse_all, rng):
    def compute(rows):
        x = ember.tensor(rng.standard_normal((rows, 24)).astype(np.float32))
        return ((x * x).sum(-1) + 1.0).sqrt().numpy()

    compute(8)
    compiled = fused_reduction.KERNELS.stats["compiled"]
    for rows in (3, 70, 513):
        compute(rows)
    assert fused_reduction.KERNELS.stats["compiled"] == compiled


def test_reductions_of_computed_tensors_and_other_axes_run_at_once(fuse_all, rng):
    x = ember.tensor(rng.standard_normal((5, 6, 7)).astype(np.float32))
    assert not _pending_reduction(x.sum(-1))  # nothing pending to read
    assert not _pending_reduction((x * 2.0).sum(1))  # a middle axis
    assert not _pending_reduction((x * 2.0).sum())  # every axis
    np.testing.assert_allclose((x * 2.0).sum(1).numpy(), (x.numpy() * 2).sum(1), rtol=1e-5)


def test_large_reductions_split_over_threads_give_the_same_values(fuse_all, eager, rng):
    x0 = rng.standard_normal((300, 1000)).astype(np.float32)

    def compute():
        x = ember.tensor(x0)
        return (x * 1.5).sum(0).numpy(), (x * 1.5).max(-1).numpy()

    for g, w in zip(compute(), eager(compute)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-4)


ROW_PROGRAMS = {
    "softmax": lambda x, w: (
        (x - x.max(-1, keepdim=True)).exp() / (x - x.max(-1, keepdim=True)).exp().sum(-1, keepdim=True) * w
    ),
    "layer_norm": lambda x, w: (
        (x - x.mean(-1, keepdim=True))
        / (((x - x.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True) + 1e-5).sqrt()
        * w
    ),
    "rms_norm": lambda x, w: x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * w,
    "log_sum_exp_rows": lambda x, w: x.exp().sum(-1, keepdim=True).log() + x * w,
}


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("name", sorted(ROW_PROGRAMS))
@pytest.mark.parametrize("shape", [(40, 33), (3, 7, 16)])
def test_a_row_program_equals_eager_execution_forward_and_backward(fuse_all, eager, rng, name, dtype, shape):
    x0 = rng.standard_normal(shape) * 3
    w0 = rng.standard_normal(shape[-1])

    def forward_backward():
        x = ember.tensor(x0, dtype=dtype).require_grad()
        w = ember.tensor(w0, dtype=dtype).require_grad()
        y = ROW_PROGRAMS[name](x, w)
        grads = y.backward(ember.tensor(np.sin(x0), dtype=dtype))
        return y.numpy(), grads[x].numpy(), grads[w].numpy()

    before = fused_rows.KERNELS.stats["hits"] + fused_rows.KERNELS.stats["misses"]
    got = forward_backward()
    assert fused_rows.KERNELS.stats["hits"] + fused_rows.KERNELS.stats["misses"] > before, (
        "no row program ran"
    )
    rtol = 5e-5 if dtype == ember.float32 else 1e-11
    for g, w, what in zip(got, eager(forward_backward), ("value", "grad x", "grad w")):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max(), err_msg=f"{name}: {what}")


def test_a_composed_norm_forward_is_one_kernel(fuse_all, rng, monkeypatch):
    ran = []
    for module in (fused_reduction, fused_rows):
        original = module.run

        def traced(*args, original=original, name=module.__name__, **kwargs):
            value = original(*args, **kwargs)
            ran.append((name, value is not None))
            return value

        monkeypatch.setattr(module, "run", traced)
    x = ember.tensor(rng.standard_normal((64, 48)).astype(np.float32))
    w = ember.tensor(rng.standard_normal(48).astype(np.float32))
    y = ROW_PROGRAMS["rms_norm"](x, w).numpy()
    assert ran == [("ember.kernels.cpu.fused_rows", True)]
    want = x.numpy() / np.sqrt((x.numpy() ** 2).mean(-1, keepdims=True) + 1e-6) * w.numpy()
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_row_programs_keep_nan_and_infinities(fuse_all, eager):
    x0 = np.array([[1.0, np.nan, 2.0], [np.inf, 1.0, 0.0], [-np.inf, 5.0, 1.0], [0.0, -0.0, 3.0]], np.float32)

    def compute():
        x = ember.tensor(x0)
        return ((x - x.max(-1, keepdim=True)) * 2.0).exp().numpy()

    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(compute(), eager(compute))
