"""Hypothesis property tests of shape semantics on every backend: broadcasting of binary ops,
reduction output shapes, basic indexing shapes and values against NumPy."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember

# derandomized: the same examples every run; no "explain" phase (slow, and imports libcst)
FAST = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
)


@FAST
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=3),
    op=st.sampled_from(["add", "sub", "mul", "maximum", "lt", "eq"]),
)
def test_binary_broadcast_shapes(device, shapes, op):
    sa, sb = shapes.input_shapes
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    ta = ember.tensor(a, device=device)
    tb = ember.tensor(b, device=device)
    out = getattr(ta, op)(tb)
    assert out.shape == np.broadcast_shapes(sa, sb) == shapes.result_shape
    ref = {
        "add": np.add,
        "sub": np.subtract,
        "mul": np.multiply,
        "maximum": np.maximum,
        "lt": np.less,
        "eq": np.equal,
    }[op]
    np.testing.assert_array_equal(out.numpy(), ref(a, b))


@FAST
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, max_side=3))
def test_broadcast_gradient_shapes(device, shapes):
    sa, sb = shapes.input_shapes
    a = ember.ones(sa, dtype=ember.float64, device=device).require_grad()
    b = ember.ones(sb, dtype=ember.float64, device=device).require_grad()
    grads = (a * b).sum().backward()
    assert grads.get(a).shape == sa and grads.get(b).shape == sb
    # each element of a is used once per broadcast copy
    n_out = int(np.prod(shapes.result_shape))
    np.testing.assert_array_equal(grads.get(a).numpy(), np.full(sa, n_out / max(int(np.prod(sa)), 1)))


@st.composite
def _shape_and_dims(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=3))
    nd = len(shape)
    dims = draw(
        st.one_of(
            st.none(),
            st.integers(-nd, nd - 1),
            st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True).map(tuple),
        )
    )
    return shape, dims


@FAST
@given(
    case=_shape_and_dims(),
    keepdim=st.booleans(),
    op=st.sampled_from(["sum", "mean", "max", "min", "prod", "var", "logsumexp", "any", "all"]),
)
def test_reduction_shapes(device, case, keepdim, op):
    shape, dims = case
    x = np.random.default_rng(1).standard_normal(shape)
    out = getattr(ember.tensor(x, device=device), op)(dims, keepdim=keepdim)
    np_fn = np.sum if op == "logsumexp" else getattr(np, op)  # (shape only for logsumexp)
    want = np_fn(x, axis=dims, keepdims=keepdim)
    assert out.shape == np.shape(want)
    if op in ("sum", "mean", "max", "min", "prod"):
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)


@st.composite
def _basic_index(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    key = draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    return shape, key


def _has_negative_step(key):
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, slice) and k.step is not None and k.step < 0 for k in keys)


@FAST
@given(case=_basic_index())
def test_basic_indexing_matches_numpy(device, case):
    shape, key = case
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    t = ember.tensor(x, device=device)
    if _has_negative_step(key):  # reversal is spelled flip() in ember
        try:
            t[key]
        except ValueError as exc:
            assert "step" in str(exc)
            return
        raise AssertionError(f"negative slice step {key} was accepted")
    out = t[key]
    want = x[key]
    assert out.shape == np.shape(want)
    np.testing.assert_array_equal(out.numpy(), want)


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=3), data=st.data())
def test_permute_reshape_roundtrip(device, shape, data):
    perm = data.draw(st.permutations(range(len(shape))))
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    t = ember.tensor(x, device=device).permute(perm)
    np.testing.assert_array_equal(t.numpy(), np.transpose(x, perm))
    flat = t.reshape(-1)
    np.testing.assert_array_equal(flat.numpy(), np.transpose(x, perm).reshape(-1))
