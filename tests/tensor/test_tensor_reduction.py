"""Reductions over one or several dims, with and without keepdim, and cumsum, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import npref
from helpers.gradcheck import gradcheck_np
from helpers.numeric import assert_close, distinct

import ember

FLOATS = [ember.float32, ember.float64]
DIMS = [None, 0, -1, (0, 2), (1, -1), (0, 1, 2)]


def _np_dims(dim):
    return dim if dim is None or isinstance(dim, int) else tuple(dim)


REDUCTIONS = {
    "sum": (lambda t, d, k: t.sum(d, keepdim=k), lambda x, d, k: x.sum(axis=d, keepdims=k)),
    "mean": (lambda t, d, k: t.mean(d, keepdim=k), lambda x, d, k: x.mean(axis=d, keepdims=k)),
    "var": (lambda t, d, k: t.var(d, keepdim=k), lambda x, d, k: x.var(axis=d, keepdims=k, ddof=1)),
    "std": (lambda t, d, k: t.std(d, keepdim=k), lambda x, d, k: x.std(axis=d, keepdims=k, ddof=1)),
    "max": (lambda t, d, k: t.max(d, keepdim=k), lambda x, d, k: x.max(axis=d, keepdims=k)),
    "min": (lambda t, d, k: t.min(d, keepdim=k), lambda x, d, k: x.min(axis=d, keepdims=k)),
    "prod": (lambda t, d, k: t.prod(d, keepdim=k), lambda x, d, k: x.prod(axis=d, keepdims=k)),
    "logsumexp": (
        lambda t, d, k: t.logsumexp(d, keepdim=k),
        lambda x, d, k: npref.logsumexp(x, axis=tuple(range(x.ndim)) if d is None else d, keepdims=k),
    ),
}


def _sample(rng, name, shape=(3, 4, 2)):
    if name in ("max", "min"):
        return distinct(rng, shape)
    if name == "prod":
        return rng.uniform(0.5, 1.5, shape) * np.where(rng.random(shape) < 0.3, -1, 1)
    return rng.standard_normal(shape)


@pytest.mark.parametrize("keepdim", [False, True], ids=["drop", "keep"])
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_forward(device, rng, name, dtype, dim, keepdim):
    fn, ref = REDUCTIONS[name]
    x = _sample(rng, name).astype(dtype.numpy)
    out = fn(ember.tensor(x, device=device), dim, keepdim)
    want = np.asarray(ref(x.astype(np.float64), _np_dims(dim), keepdim))
    assert_close(out, want, dtype=dtype)


@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)], ids=str)
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_gradients(device, rng, name, dim, keepdim):
    fn, _ = REDUCTIONS[name]
    gradcheck_np(lambda t: fn(t, dim, keepdim), device, _sample(rng, name))


def test_max_min_ties_share_gradient(device):
    x = ember.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], dtype=ember.float64, device=device).require_grad()
    g = x.max(1).sum().backward().get(x)
    assert_close(g, np.array([[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]]))
    g = x.min().backward().get(x)
    assert_close(g, np.array([[1.0, 0, 0], [0, 0, 0]]))


def test_integer_and_bool_reductions(device):
    xi = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int64)
    t = ember.tensor(xi, device=device)
    for got, want in (
        (t.sum(), xi.sum()),
        (t.sum(1), xi.sum(1)),
        (t.prod(0), xi.prod(0)),
        (t.max(1, keepdim=True), xi.max(1, keepdims=True)),
        (t.min(), xi.min()),
    ):
        assert got.dtype is ember.int64
        np.testing.assert_array_equal(got.numpy(), want)
    assert t.mean().dtype is ember.float32
    assert_close(t.mean(0), xi.mean(0))
    b = np.array([[True, False, True], [True, True, True]])
    tb = ember.tensor(b, device=device)
    s = tb.sum(1)
    assert s.dtype is ember.int64 and s.numpy().tolist() == [2, 3]
    for got, want in (
        (tb.all(), b.all()),
        (tb.all(1), b.all(1)),
        (tb.any(0, keepdim=True), b.any(0, keepdims=True)),
        (tb.any(), b.any()),
    ):
        assert got.dtype is ember.bool_
        np.testing.assert_array_equal(got.numpy(), want)
    f = ember.tensor([[0.0, 1.0], [0.0, 0.0]], device=device)
    assert f.any(1).numpy().tolist() == [True, False] and not bool(f.all())


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64], ids=str)
def test_argmax_argmin(device, rng, dtype, keepdim):
    x = rng.integers(-3, 4, (4, 5)).astype(dtype.numpy)  # ties: the first index wins
    t = ember.tensor(x, device=device)
    for dim in (0, 1, -1):
        am = t.argmax(dim, keepdim=keepdim)
        assert am.dtype is ember.int64
        np.testing.assert_array_equal(am.numpy(), np.argmax(x, axis=dim, keepdims=keepdim))
        np.testing.assert_array_equal(
            t.argmin(dim, keepdim=keepdim).numpy(), np.argmin(x, axis=dim, keepdims=keepdim)
        )
    flat = t.argmax(keepdim=keepdim)  # over all elements: a flat index
    assert flat.shape == ((1, 1) if keepdim else ())
    assert flat.item() == int(np.argmax(x))
    assert t.argmin(keepdim=keepdim).item() == int(np.argmin(x))


def test_variance_correction(device, rng):
    x = rng.standard_normal((4, 6))
    t = ember.tensor(x, dtype=ember.float64, device=device)
    assert_close(t.var(1, correction=0), x.var(1))
    assert_close(t.std(0, keepdim=True, correction=0), x.std(0, keepdims=True))
    gradcheck_np(lambda a: a.var(1, correction=0), device, x)


def test_logsumexp_extremes(device):
    x = ember.tensor(
        [[1000.0, 1000.0], [-1000.0, -1000.0], [-np.inf, 0.0]], dtype=ember.float64, device=device
    )
    assert_close(x.logsumexp(1), np.array([1000 + np.log(2), -1000 + np.log(2), 0.0]))
    assert_close(
        ember.logsumexp(x, 1, keepdim=True), np.array([[1000 + np.log(2)], [-1000 + np.log(2)], [0.0]])
    )
    minf = ember.tensor([[-np.inf, -np.inf]], dtype=ember.float64, device=device)
    with np.errstate(divide="ignore"):  # log(0) = -inf is the intended answer
        assert minf.logsumexp(1).numpy().tolist() == [-np.inf]


@pytest.mark.parametrize("dtype", FLOATS + [ember.int64], ids=str)
def test_cumsum(device, rng, dtype):
    x = (rng.standard_normal((3, 4, 2)) * 3).astype(dtype.numpy)
    t = ember.tensor(x, device=device)
    for dim in (0, 1, -1):
        out = t.cumsum(dim)
        assert out.dtype is dtype
        if dtype.is_float:
            assert_close(out, np.cumsum(x.astype(np.float64), axis=dim))
        else:
            np.testing.assert_array_equal(out.numpy(), np.cumsum(x, axis=dim))
    b = ember.tensor([True, False, True], device=device).cumsum(0)
    assert b.dtype is ember.int64 and b.numpy().tolist() == [1, 1, 2]


def test_cumsum_gradient(device, rng):
    x = rng.standard_normal((3, 4))
    gradcheck_np(lambda t: t.cumsum(1), device, x)
    gradcheck_np(lambda t: t.cumsum(0) * t, device, x)


def test_empty_reductions(device):
    e = ember.zeros(0, 3, device=device)
    assert_close(e.sum(0), np.zeros(3))
    assert e.sum(1).shape == (0,)
    with pytest.raises(ValueError, match="max"):
        e.max(0)
    with pytest.raises(ValueError, match="argmax"):
        e.argmax(0)


def test_zero_dim_tensors_accept_dim_0(device):
    """As in PyTorch, a 0-d tensor takes dim 0 / -1 in dim-wise ops and keeps its shape."""
    s = ember.tensor(2.5, dtype=ember.float64, device=device).require_grad()
    for out in (
        s.sum(0),
        s.mean(-1),
        s.max(0),
        s.min(0, keepdim=True),
        s.prod(0),
        s.logsumexp(0),
        s.cumsum(0),
        s.flip(0),
        s.squeeze(0),
        ember.softmax(s, 0),
        ember.log_softmax(s),
    ):
        assert out.shape == ()
    assert s.sum(0).item() == 2.5 and s.cumsum(0).item() == 2.5
    assert ember.softmax(s, 0).item() == 1.0 and ember.log_softmax(s).item() == 0.0
    assert s.argmax(0).item() == 0 and s.argmin().item() == 0 and s.argmax(0).shape == ()
    vals, idx = s.sort(0)
    assert vals.shape == () and idx.item() == 0
    vals, idx = s.topk(1)
    assert vals.item() == 2.5 and idx.item() == 0
    assert (s.sum(0) * 3).backward().get(s).item() == 3.0
    with pytest.raises(IndexError, match="dim"):
        s.sum(1)
    with pytest.raises(ValueError, match="cat"):
        ember.cat([s, s])
