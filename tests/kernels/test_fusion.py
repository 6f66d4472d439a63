"""The fusion engine on ``cpu``: element-wise chains recorded, compiled into one kernel, and
computed at sync points with the values eager execution gives."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from helpers.fusion_chains import CHAINS

import ember
from ember.kernels.cpu import fused_chain
from ember.kernels.fusion import engine
from ember.kernels.fusion.lazy import Lazy, pending_count
from ember.optim import GradientsParams, SgdConfig

pytestmark = pytest.mark.skipif(not engine.settings.enabled, reason="EMBER_FUSION=0")


def _pending(t) -> bool:
    return type(t._arr) is Lazy and t._arr.value is None


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_a_chain_equals_eager_execution_forward_and_backward(fuse_all, eager, rng, name, dtype):
    chain = CHAINS[name]
    x0 = rng.standard_normal((37, 19)) * 2
    w0 = rng.standard_normal(19)

    def forward_backward():
        x = ember.tensor(x0, dtype=dtype).require_grad()
        w = ember.tensor(w0, dtype=dtype).require_grad()
        y = chain(x, w)
        grads = (y * y).sum().backward()
        return y.numpy(), grads[x].numpy(), grads[w].numpy()

    x = ember.tensor(x0, dtype=dtype)
    assert _pending(chain(x, ember.tensor(w0, dtype=dtype))), "the chain was not recorded"
    got, want = forward_backward(), eager(forward_backward)
    rtol = 2e-5 if dtype == ember.float32 else 1e-12
    for g, w, what in zip(got, want, ("value", "grad x", "grad w")):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, err_msg=f"{name}: {what}")


def test_edge_values_propagate_as_in_eager_execution(fuse_all, eager):
    values = np.array([0.0, -0.0, 1e38, -1e38, np.inf, -np.inf, np.nan, 3.0, -3.0], np.float32)

    def chain():
        x = ember.tensor(values)
        return [
            (x.exp() * x).numpy(),
            (x / (x - 3.0)).numpy(),
            (x.sigmoid() + x.tanh() - x.relu()).numpy(),
            ember.where(x.isnan(), ember.zeros(9), x.sqrt()).numpy(),
            (x.maximum(x * 0.0) + x.minimum(x.abs())).numpy(),
            (x.isinf() | x.isfinite().logical_not()).numpy(),
        ]

    with np.errstate(all="ignore"):
        for got, want in zip(chain(), eager(chain)):
            np.testing.assert_array_equal(got, want)


def test_one_kernel_per_chain_and_a_repeated_chain_compiles_nothing(fuse_all, rng):
    def chain(n):
        x = ember.tensor(rng.standard_normal((n, 8)), dtype=ember.float32)
        return (((x * 1.5 - 0.25).exp() + x) / (x * x + 1.0)).numpy()

    chain(5)
    before = fused_chain.compiled_count()
    for n in (7, 100, 3000):  # other sizes, the same relative signature
        chain(n)
    assert fused_chain.compiled_count() == before


def test_a_chain_seen_once_runs_op_by_op_and_compiles_the_second_time(fuse_all, rng, eager, monkeypatch):
    monkeypatch.setattr(fused_chain.KERNELS, "compile_after", 2)
    x0 = rng.standard_normal((9, 13))

    def chain():
        x = ember.tensor(x0, dtype=ember.float32)
        return (x * 0.75 - 0.5).sigmoid().log1p() * x  # a signature no other test uses

    before = fused_chain.compiled_count()
    first = chain().numpy()
    assert fused_chain.compiled_count() == before
    np.testing.assert_array_equal(first, eager(lambda: chain().numpy()))  # eager, exactly
    second = chain().numpy()
    assert fused_chain.compiled_count() == before + 1
    np.testing.assert_allclose(second, first, rtol=2e-6, atol=1e-7)


def test_a_chain_runs_as_one_kernel(fuse_all, rng, monkeypatch):
    runs = []
    real = fused_chain.run
    monkeypatch.setattr(Lazy, "realize", _counting(Lazy.realize, runs))
    x = ember.tensor(rng.standard_normal((64, 64)), dtype=ember.float32)
    y = ((x + 1.0) * 2.0).exp().sqrt() - x
    assert y._arr.depth == 5
    y.numpy()
    assert len(runs) == 1 and real is fused_chain.run


def _counting(realize, runs):
    def counted(self):
        if self.value is None:
            runs.append(self.op)
        return realize(self)

    return counted


@pytest.mark.parametrize(
    "sync",
    [
        lambda y: y.numpy(),
        lambda y: y.item() if y.numel == 1 else y.tolist(),
        lambda y: repr(y),
        lambda y: y @ y.T,  # a backend call the engine does not fuse
        lambda y: y.sum(),
        lambda y: y.reshape(-1),
    ],
    ids=["numpy", "item", "repr", "matmul", "reduction", "view"],
)
def test_sync_points_compute_the_value(fuse_all, rng, sync):
    x = ember.tensor(rng.standard_normal((6, 6)), dtype=ember.float32)
    y = (x * 2.0).exp()
    assert _pending(y)
    sync(y)
    assert not _pending(y)


def test_errors_are_raised_at_the_op_that_caused_them(fuse_all):
    x = ember.ones(4, 5)
    y = x * 2.0
    with pytest.raises(ValueError, match=r"add: shapes \[4, 5\] and \[3\] cannot be broadcast"):
        y + ember.ones(3)
    assert _pending(y)
    with pytest.raises(TypeError, match="bool"):
        (y > 1.0) + (y > 0.0)


def test_an_optimizer_step_computes_pending_values_first(fuse_all):
    class Model(ember.nn.Module):
        def __init__(self):
            self.w = ember.nn.Param(ember.ones(8))

    model = Model()
    seen = model.w.value * 3.0  # reads the parameter's array, not computed yet
    assert _pending(seen)
    loss = (model.w.value * model.w.value).sum()
    grads = GradientsParams.from_grads(loss.backward(), model)
    model = SgdConfig().init().step(0.5, model, grads)  # updates the parameter in place
    np.testing.assert_array_equal(seen.numpy(), np.full(8, 3.0, np.float32))
    np.testing.assert_array_equal(model.w.value.numpy(), np.zeros(8, np.float32))
    assert pending_count() == 0 or not _pending(seen)


def test_a_deep_chain_is_computed_when_it_reaches_the_depth_limit(fuse_all, monkeypatch):
    monkeypatch.setattr(engine.settings, "max_depth", 4)
    y = ember.ones(10)
    for _ in range(4):
        y = y + 1.0
    assert _pending(y)
    y = y + 1.0
    assert not _pending(y)
    np.testing.assert_array_equal(y.numpy(), np.full(10, 6.0, np.float32))


@pytest.mark.parametrize("dtype", [ember.float16, ember.int64, ember.int32])
def test_dtypes_the_kernels_do_not_take_run_at_once(fuse_all, dtype):
    x = ember.ones(5, dtype=dtype)
    assert not _pending(x * 2)


def test_small_results_run_at_once_unless_they_continue_a_chain(monkeypatch):
    monkeypatch.setattr(engine.settings, "min_elements", 100)
    assert not _pending(ember.ones(99) * 2.0)
    big = ember.ones(100) * 2.0
    assert _pending(big)


def test_fusion_off_runs_everything_at_once(monkeypatch):
    monkeypatch.setattr(engine.settings, "enabled", False)
    assert not _pending(ember.ones(1 << 16) * 2.0)


def test_empty_and_scalar_tensors(fuse_all):
    assert ((ember.ones(0, 3) * 2.0).exp()).numpy().shape == (0, 3)
    assert float((ember.tensor(2.0) * 3.0 + 1.0).item()) == 7.0


def test_broadcast_and_strided_operands(fuse_all, rng):
    a = rng.standard_normal((4, 1, 6)).astype(np.float32)
    b = rng.standard_normal((5, 1)).astype(np.float32)
    c = rng.standard_normal((6, 4)).astype(np.float32)
    y = (ember.tensor(a) * ember.tensor(b) + ember.tensor(c).T.reshape(4, 1, 6).exp()).numpy()
    np.testing.assert_allclose(y, a * b + np.exp(c.T.reshape(4, 1, 6)), rtol=1e-6)


def test_large_outputs_split_over_threads_give_the_same_values(rng):
    x0 = rng.standard_normal((300, 1000)).astype(np.float32)
    y = ((ember.tensor(x0) * 0.5).tanh() + 1.0).numpy()
    np.testing.assert_allclose(y, np.tanh(x0 * np.float32(0.5)) + 1, rtol=1e-6, atol=1e-6)


def test_a_second_process_loads_the_compiled_chain_from_disk(tmp_path):
    code = textwrap.dedent(
        """
        import ember
        from ember.kernels.cpu import fused_chain
        from ember.kernels.fusion import engine
        engine.settings.min_elements = 0
        x = ember.ones(16, 16)
        for _ in range(engine.settings.compile_after):
            ((x * 3.0 + 0.125).exp() / (x + 2.0)).numpy()
        fn = fused_chain.KERNELS.kernels()[0]
        print(sum(fn.stats.cache_hits.values()), sum(fn.stats.cache_misses.values()))
        """
    )
    env = {**os.environ, "EMBER_CACHE_DIR": str(tmp_path), "EMBER_BACKGROUND_COMPILE": "0"}
    env.pop("NUMBA_CACHE_DIR", None)
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    first, second = (tuple(map(int, r.stdout.split()[-2:])) for r in runs)
    assert first == (0, 1) and second == (1, 0), (first, second)
