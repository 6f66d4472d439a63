"""Indexing on every backend: basic and advanced ``t[key]``, ``index_put`` / ``t[key] = v``,
gather, scatter_add, index_select, take_along_dim, one_hot, sort, argsort, topk."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.gradcheck import gradcheck_np
from helpers.numeric import assert_close, distinct

import ember

SHAPE = (4, 5, 3)
_I = np.array([[0, 3], [-1, 1]])  # int index with a negative entry
_B = np.array([True, False, True, True, False])

# keys given as (numpy key, key for ember); index arrays become tensors on the test's device
KEYS = {
    "int": (2,),
    "negative_int": (-1,),
    "int_int": (1, -2),
    "slice": (slice(1, 3),),
    "slice_step": (slice(None, None, 2), slice(1, None, 3)),
    "slice_neg_bounds": (slice(-3, -1), slice(None), slice(-2, None)),
    "none": (None, slice(None), None),
    "ellipsis": (Ellipsis, 1),
    "ellipsis_middle": (0, Ellipsis, slice(0, 2)),
    "mixed": (slice(None, None, 2), None, -1, Ellipsis),
    "int_tensor": ("I",),
    "int_tensor_dim1": (slice(None), "I1"),
    "two_int_tensors": ("I", "J"),
    "bool_tensor": (slice(None), "B"),
    "bool_tensor_2d": ("B2",),
    "list_index": ([0, 2, 2],),
}


def _make_key(name, device, as_tensor: bool):
    arrays = {
        "I": _I,
        "I1": np.array([4, 0, 0, -5]),
        "J": np.array([[1, 1], [0, 4]]),
        "B": _B,
        "B2": np.arange(20).reshape(4, 5) % 3 == 0,
    }
    out = []
    for k in KEYS[name]:
        if isinstance(k, str):
            out.append(ember.tensor(arrays[k], device=device) if as_tensor else arrays[k])
        else:
            out.append(k)
    return tuple(out)


@pytest.mark.parametrize("name", list(KEYS))
def test_getitem(device, rng, name):
    x = rng.standard_normal(SHAPE).astype(np.float32)
    t = ember.tensor(x, device=device)
    out = t[_make_key(name, device, True)]
    want = x[_make_key(name, device, False)]
    assert out.shape == want.shape and out.dtype is ember.float32
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("name", list(KEYS))
def test_getitem_gradient(device, rng, name):
    key = _make_key(name, device, True)
    gradcheck_np(lambda t: t[key] * 1.5, device, rng.standard_normal(SHAPE))


def test_repeated_advanced_index_accumulates_gradient(device):
    x = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, device=device).require_grad()
    idx = ember.tensor([0, 2, 0, 0, -1], device=device)
    g = x[idx].sum().backward().get(x)
    assert_close(g, np.array([3.0, 0.0, 2.0]))


def test_single_element_and_int_dtype(device):
    t = ember.arange(12, device=device).reshape(3, 4)
    assert t[1, 2].item() == 6 and t[1, 2].shape == ()
    assert t[-1].numpy().tolist() == [8, 9, 10, 11]
    assert t[:, ember.tensor([3, 0], dtype=ember.int32, device=device)].numpy().tolist() == [
        [3, 0],
        [7, 4],
        [11, 8],
    ]
    assert t[t > 7].numpy().tolist() == [8, 9, 10, 11]


# ---- index_put and setitem ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["int", "slice_step", "ellipsis", "int_tensor_dim1", "bool_tensor", "list_index"]
)
def test_index_put(device, rng, name):
    x = rng.standard_normal(SHAPE)
    np_key = _make_key(name, device, False)
    target = x[np_key].shape
    v = rng.standard_normal(target)
    t = ember.tensor(x, dtype=ember.float64, device=device)
    key = _make_key(name, device, True)
    out = ember.index_put(t, key, ember.tensor(v, dtype=ember.float64, device=device))
    want = x.copy()
    want[np_key] = v
    assert_close(out, want)
    assert_close(t, x)  # index_put does not modify its input
    # accumulate=True adds (repeated positions add several times)
    acc = t.index_put(key, ember.tensor(v, dtype=ember.float64, device=device), accumulate=True)
    want = x.copy()
    np.add.at(want, np_key, v)
    assert_close(acc, want)


def test_index_put_gradients(device, rng):
    x = rng.standard_normal(SHAPE)
    key = (slice(None), ember.tensor([4, 0, 2], device=device))
    v = rng.standard_normal((4, 3, 3))
    gradcheck_np(lambda a, b: ember.index_put(a, key, b) * a, device, x, v)
    gradcheck_np(lambda a, b: ember.index_put(a, key, b, accumulate=True), device, x, v)
    gradcheck_np(lambda a, b: a.index_put((1, slice(0, 2)), b), device, x, rng.standard_normal((3,)))


def test_setitem(device, rng):
    x = rng.standard_normal((4, 3)).astype(np.float32)
    t = ember.tensor(x, device=device)
    t[1] = 5.0
    t[:, 2] = ember.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    t[ember.tensor([0, 3], device=device), 0] = -1.0
    want = x.copy()
    want[1] = 5.0
    want[:, 2] = [1, 2, 3, 4]
    want[[0, 3], 0] = -1.0
    assert_close(t, want, dtype=ember.float32)
    t[t > 2.5] = 0.0
    want[want > 2.5] = 0.0
    assert_close(t, want)


def test_setitem_is_differentiable_on_non_leaves(device, rng):
    def fn(a, b):
        y = a * 2.0
        y[1] = b  # overwrites row 1: a gets no gradient there, b gets it
        return y * a

    gradcheck_np(fn, device, rng.standard_normal((3, 4)), rng.standard_normal((4,)))
    leaf = ember.ones(2, dtype=ember.float64, device=device).require_grad()
    with pytest.raises(RuntimeError, match="leaf"):
        leaf[0] = 3.0


# ---- gather / scatter_add / index_select / take_along_dim -------------------------------------------
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64], ids=str)
def test_gather(device, rng, dtype):
    x = (rng.standard_normal((3, 5)) * 5).astype(dtype.numpy)
    idx = rng.integers(0, 5, (3, 4))
    out = ember.gather(ember.tensor(x, device=device), 1, ember.tensor(idx, device=device))
    assert out.dtype is dtype
    np.testing.assert_array_equal(out.numpy(), np.take_along_axis(x, idx, 1))
    idx0 = rng.integers(0, 3, (2, 5))
    out = ember.tensor(x, device=device).gather(0, ember.tensor(idx0, dtype=ember.int32, device=device))
    np.testing.assert_array_equal(out.numpy(), np.take_along_axis(x, idx0, 0))
    # index smaller than x in a non-gather dim: reads the leading block, as torch.gather
    small = rng.integers(0, 5, (2, 2))
    out = ember.gather(ember.tensor(x, device=device), 1, ember.tensor(small, device=device))
    np.testing.assert_array_equal(out.numpy(), np.take_along_axis(x[:2], small, 1))


def test_gather_gradient(device, rng):
    idx = ember.tensor(rng.integers(0, 5, (3, 7)), device=device)  # repeats: gradients accumulate
    gradcheck_np(lambda t: ember.gather(t, 1, idx), device, rng.standard_normal((3, 5)))
    small = ember.tensor(rng.integers(0, 3, (2, 4)), device=device)
    gradcheck_np(lambda t: t.gather(0, small), device, rng.standard_normal((3, 5)))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64], ids=str)
def test_scatter_add(device, rng, dtype):
    x = (rng.standard_normal((3, 5)) * 5).astype(dtype.numpy)
    idx = rng.integers(0, 5, (3, 6))  # repeated targets must accumulate
    src = (rng.standard_normal((3, 6)) * 5).astype(dtype.numpy)
    out = ember.scatter_add(
        ember.tensor(x, device=device), 1, ember.tensor(idx, device=device), ember.tensor(src, device=device)
    )
    want = x.copy()
    for i in range(3):
        for j in range(6):
            want[i, idx[i, j]] += src[i, j]
    assert out.dtype is dtype
    assert_close(out, want)
    idx0 = rng.integers(0, 3, (4, 5))
    src0 = rng.standard_normal((4, 5)).astype(dtype.numpy)
    out = ember.tensor(x, device=device).scatter_add(
        0, ember.tensor(idx0, device=device), ember.tensor(src0, device=device)
    )
    want = x.copy()
    for i in range(4):
        for j in range(5):
            want[idx0[i, j], j] += src0[i, j]
    assert_close(out, want)


def test_scatter_add_gradient(device, rng):
    idx = ember.tensor(rng.integers(0, 5, (3, 6)), device=device)
    gradcheck_np(
        lambda x, s: ember.scatter_add(x, 1, idx, s) ** 2,
        device,
        rng.standard_normal((3, 5)),
        rng.standard_normal((3, 6)),
    )


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64], ids=str)
def test_index_select(device, rng, dtype):
    x = (rng.standard_normal((4, 3, 2)) * 5).astype(dtype.numpy)
    t = ember.tensor(x, device=device)
    for dim, idx in ((0, [3, 0, 3, 1]), (1, [2]), (-1, [1, 1, 0])):
        out = ember.index_select(t, dim, ember.tensor(idx, device=device))
        np.testing.assert_array_equal(out.numpy(), np.take(x, idx, axis=dim))
    assert t.select(0, ember.tensor([0], device=device)).shape == (1, 3, 2)


def test_index_select_gradient(device, rng):
    idx = ember.tensor([3, 0, 3, 1, 3], device=device)
    gradcheck_np(lambda t: ember.index_select(t, 0, idx), device, rng.standard_normal((4, 3)))
    gradcheck_np(
        lambda t: t.index_select(1, ember.tensor([2, 2], device=device)), device, rng.standard_normal((4, 3))
    )


def test_take_along_dim(device, rng):
    x = rng.standard_normal((3, 4))
    idx = rng.integers(0, 4, (1, 2))  # broadcasts over dim 0
    out = ember.take_along_dim(ember.tensor(x, device=device), ember.tensor(idx, device=device), 1)
    assert_close(out, np.take_along_axis(x, np.broadcast_to(idx, (3, 2)), 1), dtype=ember.float64)
    t_idx = ember.tensor(idx, device=device)
    gradcheck_np(lambda t: t.take_along_dim(t_idx, 1), device, x)


def test_one_hot(device):
    ids = ember.tensor([[0, 2], [3, 1]], device=device)
    oh = ember.one_hot(ids, 4)
    assert oh.dtype is ember.int64 and oh.shape == (2, 2, 4)
    np.testing.assert_array_equal(oh.numpy(), np.eye(4, dtype=np.int64)[[[0, 2], [3, 1]]])
    ohf = ids.one_hot(5, dtype=ember.float32)
    assert ohf.dtype is ember.float32
    np.testing.assert_array_equal(ohf.numpy(), np.eye(5, dtype=np.float32)[[[0, 2], [3, 1]]])


# ---- sort / argsort / topk --------------------------------------------------------------------------
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(device, rng, descending):
    x = rng.integers(-3, 4, (3, 6)).astype(np.float32)  # many ties: the sort must be stable
    t = ember.tensor(x, device=device)
    for dim in (0, 1, -1):
        vals, idx = ember.sort(t, dim, descending=descending)
        key = -x if descending else x
        want_idx = np.argsort(key, axis=dim, kind="stable")
        assert idx.dtype is ember.int64
        np.testing.assert_array_equal(idx.numpy(), want_idx)
        np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(x, want_idx, dim))
        np.testing.assert_array_equal(t.argsort(dim, descending).numpy(), want_idx)
    xi = ember.tensor([3, 1, 2], device=device)
    assert xi.sort()[0].numpy().tolist() == [1, 2, 3] and xi.sort()[0].dtype is ember.int64


def test_topk(device, rng):
    x = distinct(rng, (3, 7)).astype(np.float32)
    t = ember.tensor(x, device=device)
    vals, idx = ember.topk(t, 3)
    want = np.argsort(-x, axis=1)[:, :3]
    np.testing.assert_array_equal(idx.numpy(), want)
    np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(x, want, 1))
    vals, idx = t.topk(2, dim=0, largest=False)
    want = np.argsort(x, axis=0)[:2]
    np.testing.assert_array_equal(idx.numpy(), want)
    np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(x, want, 0))
    assert ember.topk(t, 0)[0].shape == (3, 0)


def test_sort_topk_gradients(device, rng):
    x = distinct(rng, (3, 6))
    gradcheck_np(
        lambda t: ember.sort(t, 1)[0] * ember.arange(6, dtype=ember.float64, device=device), device, x
    )
    gradcheck_np(lambda t: ember.sort(t, 0, descending=True)[0], device, x)
    gradcheck_np(lambda t: ember.topk(t, 2)[0] ** 2, device, x)
    t = ember.tensor(x, dtype=ember.float64, device=device).require_grad()
    assert not ember.argsort(t).is_require_grad()
