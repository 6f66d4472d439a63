"""Autodiff semantics on every backend: when nodes exist, grad modes, leaves, the returned
Gradients container, seeds, freed graphs, accumulation, broadcasting, memory, anomalies."""

from __future__ import annotations

import gc
import os
import tracemalloc
import weakref

import numpy as np
import pytest
from helpers import mlp
from helpers.numeric import assert_close

import ember
from ember.tensor.node import Node


def _leaf(device, values, dtype=ember.float64):
    return ember.tensor(values, dtype=dtype, device=device).require_grad()


# ---- when graph nodes are created --------------------------------------------------------------
def test_nodes_only_when_an_input_requires_grad(device):
    a = ember.tensor([1.0, 2.0], device=device)
    b = _leaf(device, [3.0, 4.0], ember.float32)
    assert not (a * 2 + a).is_require_grad()
    assert (a * b).is_require_grad()
    assert (a + b).sum().is_require_grad()
    assert not (b > 0).is_require_grad()  # bool results carry no graph
    assert not b.argmax().is_require_grad()
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        y = (b * 2).exp()
        assert not y.is_require_grad() and y._node is None
        with ember.enable_grad():
            assert ember.is_grad_enabled()
            assert (b * 2).is_require_grad()
        assert not (b * 2).is_require_grad()
    assert ember.is_grad_enabled()


def test_no_grad_restores_state_after_exception():
    with pytest.raises(KeyError), ember.no_grad():
        raise KeyError("boom")
    assert ember.is_grad_enabled()


def test_require_grad_marks_and_returns_same_tensor(device):
    t = ember.tensor([1.0, 2.0], device=device)
    assert not t.is_require_grad()
    assert t.require_grad() is t
    assert t.is_require_grad()
    assert t.set_require_grad(False) is t and not t.is_require_grad()
    assert t.set_require_grad(True) is t and t.is_require_grad()
    d = t.detach()
    assert d is not t and not d.is_require_grad() and t.is_require_grad()
    np.testing.assert_array_equal(d.numpy(), t.numpy())
    assert not (d * 3).is_require_grad()


@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.bool_], ids=str)
def test_int_and_bool_cannot_require_grad(device, dtype):
    t = ember.zeros(3, dtype=dtype, device=device)
    with pytest.raises(TypeError, match="float"):
        t.require_grad()
    with pytest.raises(TypeError, match="float"):
        t.set_require_grad(True)
    with pytest.raises(TypeError):
        ember.tensor([1, 2], dtype=dtype, device=device, requires_grad=True)
    t.set_require_grad(False)  # unmarking is always allowed


# ---- the Gradients container ------------------------------------------------------------------
def test_backward_returns_gradients_container(device):
    x = _leaf(device, [1.0, 2.0, 3.0])
    w = _leaf(device, [0.5, -1.0, 2.0])
    unused = _leaf(device, [1.0])
    const = ember.tensor([1.0, 1.0, 1.0], dtype=ember.float64, device=device)
    mid = x * w
    loss = (mid + const).sum()
    grads = loss.backward()
    assert isinstance(grads, ember.Gradients)
    assert len(grads) == 2
    assert x in grads and w in grads and unused not in grads
    assert grads.get(unused) is None and grads.get(const) is None
    assert grads.get(mid) is None  # only leaves are reported
    assert_close(grads.get(x), np.array([0.5, -1.0, 2.0]), dtype=ember.float64)
    gw = grads.remove(w)
    assert_close(gw, np.array([1.0, 2.0, 3.0]))
    assert len(grads) == 1 and grads.get(w) is None and grads.remove(w) is None
    assert "Gradients" in repr(grads)
    # nothing is ever written onto tensors
    for t in (x, w, mid, loss):
        assert not hasattr(t, "grad")
    with pytest.raises(AttributeError):
        x.grad = 1  # (Tensor has __slots__)


def test_gradient_of_scalar_and_leaf_itself(device):
    x = _leaf(device, 3.0)
    g = (x * x).backward().get(x)
    assert g.shape == () and g.item() == 6.0
    assert x.backward().get(x).item() == 1.0  # d x / d x


def test_seed_gradient_rules(device):
    x = _leaf(device, [[1.0, 2.0], [3.0, 4.0]])
    y = x * 3
    with pytest.raises(RuntimeError, match="scalar"):
        y.backward()
    with pytest.raises(ValueError, match=r"\[2, 2\]"):
        y.backward(ember.ones(3, dtype=ember.float64, device=device))
    seed = ember.tensor([[1.0, 0.0], [2.0, -1.0]], dtype=ember.float64, device=device)
    assert_close(y.backward(seed).get(x), 3 * seed.numpy())
    single = (x.sum() * 1).reshape(1, 1)
    assert single.backward().get(x).numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.raises(RuntimeError, match="require"):
        ember.ones(2, device=device).sum().backward()


def test_second_backward_over_freed_graph_raises(device):
    x = _leaf(device, [1.0, 2.0])
    loss = (x.exp() * x).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="freed"):
        loss.backward()
    # a new forward pass can be differentiated again
    assert (x.exp() * x).sum().backward().get(x) is not None


def test_saved_tensors_are_released_by_backward(device):
    x = _leaf(device, np.ones((4, 4)))
    y = (x.tanh() * x).sum()
    node = y._node
    inner = next(p for p, _, _ in node.inputs if p is not None)
    y.backward()
    assert node.ctx is None and node.freed and inner.freed


# ---- accumulation, broadcasting, dtypes ----------------------------------------------------
def test_gradient_accumulates_over_uses(device):
    x = _leaf(device, [1.0, -2.0, 3.0])
    y = (x * x + x + x.sin() * x).sum()
    g = y.backward().get(x).numpy()
    xv = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(g, 2 * xv + 1 + np.cos(xv) * xv + np.sin(xv), rtol=1e-12)
    a = _leaf(device, [2.0])
    z = a
    for _ in range(5):  # a chain through one tensor used many times
        z = z * a
    assert_close(z.backward(ember.ones(1, dtype=ember.float64, device=device)).get(a), np.array([6 * 2.0**5]))


def test_broadcasting_is_undone(device, rng):
    a = _leaf(device, rng.standard_normal((3, 1)))
    b = _leaf(device, rng.standard_normal((4,)))
    c = _leaf(device, rng.standard_normal((2, 1, 1)))
    s = _leaf(device, 2.0)
    out = (a * b + c) * s
    assert out.shape == (2, 3, 4)
    grads = out.sum().backward()
    av, bv, cv, sv = a.numpy(), b.numpy(), c.numpy(), s.item()
    assert_close(grads.get(a), 2 * sv * np.full((3, 1), bv.sum()))
    assert_close(grads.get(b), 2 * sv * np.full(4, av.sum()))
    assert_close(grads.get(c), np.full((2, 1, 1), 12 * sv))
    assert_close(grads.get(s), np.array(((av * bv)[None] + cv).sum()))


def test_gradient_dtype_follows_leaf(device):
    x = _leaf(device, [1.0, 2.0], ember.float32)
    y = (x.double() * 2.0).sum()
    g = y.backward().get(x)
    assert g.dtype is ember.float32 and g.numpy().tolist() == [2.0, 2.0]
    h = _leaf(device, [1.0, 2.0], ember.float64)
    g = (h.float() ** 2).sum().backward().get(h)
    assert g.dtype is ember.float64
    assert_close(g, np.array([2.0, 4.0]), rtol=1e-6)


def test_integer_ops_block_gradient(device):
    x = _leaf(device, [1.2, 2.7])
    y = (x.int().float() * x).sum()  # the cast to int cuts the path
    assert_close(y.backward().get(x), np.array([1.0, 2.0]))


def test_detach_stops_gradient(device):
    x = _leaf(device, [1.0, 2.0])
    y = (x.detach() * x).sum()
    assert_close(y.backward().get(x), np.array([1.0, 2.0]))
    with ember.no_grad():
        z = x * x
    assert not (z * 1).is_require_grad()


# ---- memory -----------------------------------------------------------------------------------
def _live_nodes() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Node)


def test_training_loop_does_not_grow_memory(device):
    rng = np.random.default_rng(0)
    params = [ember.tensor(p, device=device).require_grad() for p in mlp.init_params(rng, 16, 32, 4)]
    x = ember.tensor(rng.standard_normal((32, 16)), dtype=ember.float64, device=device)
    y = ember.tensor(rng.standard_normal((32, 4)), dtype=ember.float64, device=device)
    loss_nodes = []

    def step(params):
        loss = mlp.mse(mlp.forward(params, x), y)
        loss_nodes.append(weakref.ref(loss._node))
        return mlp.sgd_step(params, loss.backward(), 0.05)

    for _ in range(20):  # warm-up: caches, compiled kernels, allocator pools
        params = step(params)
    nodes_before = _live_nodes()
    tracemalloc.start()
    try:
        for i in range(200):
            params = step(params)
            if i == 19:
                gc.collect()
                base, _ = tracemalloc.get_traced_memory()
        gc.collect()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    growth = end - base
    # one leaked graph per step would hold ~10 saved [32, 32] float64 tensors (~80 kB a step)
    assert growth < 1_000_000, f"memory grew by {growth} bytes over 180 steps"
    alive = sum(1 for r in loss_nodes[:-1] if r() is not None)
    assert alive == 0, f"{alive} graphs of earlier steps are still alive"
    assert _live_nodes() <= nodes_before + 2, "graph nodes accumulate across steps"


# ---- anomaly detection -----------------------------------------------------------------------
def test_detect_anomaly_names_the_op(device):
    with np.errstate(divide="ignore", invalid="ignore"):
        x = _leaf(device, [0.0, 1.0])
        loss = x.sqrt().sum()
        g = loss.backward().get(x).numpy()  # without the switch: inf silently
        assert np.isinf(g[0])
        with ember.detect_anomaly():
            loss = x.sqrt().sum()
            with pytest.raises(FloatingPointError, match="sqrt") as info:
                loss.backward()
        assert os.path.basename(__file__) in str(info.value)  # where the op was created
        with ember.detect_anomaly():
            z = _leaf(device, [0.0, 2.0])
            with pytest.raises(FloatingPointError, match="'log'"):
                (z.log() * 2).sum().backward()
        with ember.detect_anomaly():  # finite gradients pass
            assert (x.exp() * 2).sum().backward().get(x) is not None
