"""Creation functions, seeded random numbers, dtypes, promotion and casts, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.numeric import assert_close

import ember


# ---- constant fills ---------------------------------------------------------------------------
def test_zeros_ones_full_empty(device):
    z = ember.zeros(2, 3, device=device)
    assert z.shape == (2, 3) and z.dtype is ember.float32 and z.device == device
    assert_close(z, np.zeros((2, 3)))
    o = ember.ones((4,), dtype=ember.int64, device=device)
    assert o.dtype is ember.int64
    np.testing.assert_array_equal(o.numpy(), np.ones(4, dtype=np.int64))
    f = ember.full((2, 2), 7, device=device)
    assert f.dtype is ember.int64 and f.numpy().tolist() == [[7, 7], [7, 7]]
    f = ember.full(3, 2.5, dtype=ember.float64, device=device)
    assert f.dtype is ember.float64 and f.numpy().tolist() == [2.5, 2.5, 2.5]
    fb = ember.full((2,), True, device=device)
    assert fb.dtype is ember.bool_ and fb.numpy().tolist() == [True, True]
    e = ember.empty(3, 0, 2, device=device)
    assert e.shape == (3, 0, 2) and e.numel == 0 and e.dtype is ember.float32
    s = ember.zeros(device=device)
    assert s.shape == () and s.item() == 0.0


def test_like_functions(device):
    x = ember.tensor([[1, 2, 3]], dtype=ember.float64, device=device)
    for t, val in ((ember.zeros_like(x), 0.0), (ember.ones_like(x), 1.0), (ember.full_like(x, 4.5), 4.5)):
        assert t.shape == (1, 3) and t.dtype is ember.float64 and t.device == device
        assert_close(t, np.full((1, 3), val))
    i = ember.zeros_like(x, dtype=ember.int32)
    assert i.dtype is ember.int32 and i.numpy().dtype == np.int32


def test_arange_linspace_eye(device):
    a = ember.arange(5, device=device)
    assert a.dtype is ember.int64 and a.numpy().tolist() == [0, 1, 2, 3, 4]
    a = ember.arange(2, 11, 3, device=device)
    assert a.numpy().tolist() == [2, 5, 8]
    a = ember.arange(0.0, 1.0, 0.25, device=device)
    assert a.dtype is ember.float32
    assert_close(a, np.array([0, 0.25, 0.5, 0.75]))
    a = ember.arange(5, 0, -2, dtype=ember.float64, device=device)
    assert_close(a, np.array([5.0, 3.0, 1.0]), dtype=ember.float64)
    with pytest.raises(ValueError, match="arange"):
        ember.arange(0, 3, 0, device=device)
    ls = ember.linspace(-1, 1, 5, dtype=ember.float64, device=device)
    assert_close(ls, np.linspace(-1, 1, 5), dtype=ember.float64)
    assert ember.linspace(0, 1, 0, device=device).shape == (0,)
    e = ember.eye(3, device=device)
    assert_close(e, np.eye(3), dtype=ember.float32)
    e = ember.eye(2, 4, dtype=ember.int64, device=device)
    np.testing.assert_array_equal(e.numpy(), np.eye(2, 4, dtype=np.int64))


def test_tensor_from_data(device):
    t = ember.tensor([[1.5, 2.0], [3.0, 4.0]], device=device)
    assert t.dtype is ember.float32 and t.shape == (2, 2)
    assert ember.tensor([1, 2], device=device).dtype is ember.int64
    assert ember.tensor([True, False], device=device).dtype is ember.bool_
    assert ember.tensor(np.arange(3, dtype=np.int32), device=device).dtype is ember.int32
    assert ember.tensor(np.zeros(2, np.float64), device=device).dtype is ember.float64
    assert ember.tensor(np.zeros(2, np.float16), device=device).dtype is ember.float16
    s = ember.tensor(3.5, device=device)
    assert s.shape == () and s.item() == 3.5 and float(s) == 3.5
    src = np.array([1.0, 2.0], dtype=np.float64)
    t = ember.tensor(src, device=device)
    src[0] = 99.0  # tensor() copies
    assert t.numpy()[0] == 1.0
    t2 = ember.tensor(t, dtype=ember.float32, device=device)
    assert t2.dtype is ember.float32 and t2.numpy().tolist() == [1.0, 2.0]
    assert ember.tensor([[1.0]], device=device, requires_grad=True).is_require_grad()
    with pytest.raises((TypeError, ValueError), match="tensor"):
        ember.tensor([[1, 2], [3]], device=device)  # ragged


def test_conversions(device):
    t = ember.tensor([[1.0, 2.0]], device=device)
    assert t.tolist() == [[1.0, 2.0]]
    assert isinstance(t.numpy(), np.ndarray)
    np.testing.assert_array_equal(np.asarray(t), np.array([[1.0, 2.0]], np.float32))
    assert len(t) == 1 and t.ndim == 2 and t.numel == 2 and t.size() == (1, 2) and t.size(1) == 2
    assert t.dims() == (1, 2)
    with pytest.raises(ValueError, match="item"):
        t.item()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(t)
    assert int(ember.tensor([3], device=device)) == 3
    assert [10, 20, 30][ember.tensor(1, device=device)] == 20  # __index__
    assert "shape=[1, 2]" in repr(t) and str(device) in repr(t)


# ---- seeded random numbers --------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda d: ember.rand(4, 5, device=d),
        lambda d: ember.randn(4, 5, dtype=ember.float64, device=d),
        lambda d: ember.randint(0, 10, (4, 5), device=d),
        lambda d: ember.bernoulli(0.3, (4, 5), device=d),
    ],
    ids=["rand", "randn", "randint", "bernoulli"],
)
def test_random_same_seed_same_numbers(device, make):
    ember.seed(123)
    a = make(device)
    b = make(device)
    ember.seed(123)
    c = make(device)
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    assert a.dtype is c.dtype and a.shape == (4, 5)
    assert not np.array_equal(a.numpy(), b.numpy()), "two draws after one seed must differ"
    ember.seed(124)
    d = make(device)
    assert not np.array_equal(a.numpy(), d.numpy()), "different seeds must give different numbers"


def test_random_distributions(device):
    ember.seed(0)
    u = ember.rand(20000, device=device).numpy()
    assert u.dtype == np.float32 and u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.02
    u = ember.rand(1000, dtype=ember.float64, device=device, low=-2.0, high=-1.0).numpy()
    assert u.dtype == np.float64 and u.min() >= -2.0 and u.max() < -1.0
    n = ember.randn(20000, device=device, mean=3.0, std=2.0).numpy()
    assert abs(n.mean() - 3.0) < 0.1 and abs(n.std() - 2.0) < 0.1
    r = ember.randint(-3, 4, 5000, device=device)
    assert r.dtype is ember.int64
    vals = r.numpy()
    assert vals.min() == -3 and vals.max() == 3
    b = ember.bernoulli(0.25, (20000,), device=device)
    assert b.dtype is ember.bool_
    assert abs(b.numpy().mean() - 0.25) < 0.02
    probs = ember.tensor([0.0, 1.0] * 50, device=device)
    bp = ember.bernoulli(probs).numpy()
    np.testing.assert_array_equal(bp, np.array([False, True] * 50))
    with pytest.raises(ValueError, match="bernoulli"):
        ember.bernoulli(1.5, (2,), device=device)
    with pytest.raises(ValueError, match="randint"):
        ember.randint(3, 3, (2,), device=device)
    with pytest.raises(TypeError):
        ember.rand(2, dtype=ember.int64, device=device)


# ---- dtypes, promotion, casts -----------------------------------------------------------------
def test_dtype_lookup():
    assert ember.dtype("float32") is ember.float32
    assert ember.dtype("f64") is ember.float64
    assert ember.dtype(np.int32) is ember.int32
    assert (
        ember.dtype(float) is ember.float32
        and ember.dtype(int) is ember.int64
        and ember.dtype(bool) is ember.bool_
    )
    assert ember.bool is ember.bool_
    assert ember.dtype_from_numpy(np.dtype(np.uint8)) is ember.int32
    with pytest.raises(TypeError, match="dtype"):
        ember.dtype("complex64")


@pytest.mark.parametrize(
    "a_dt,b_dt,expected",
    [
        (ember.int64, ember.float32, ember.float32),
        (ember.int32, ember.float64, ember.float64),
        (ember.int32, ember.int64, ember.int64),
        (ember.float32, ember.float64, ember.float64),
        (ember.float16, ember.float32, ember.float32),
        (ember.bool_, ember.int32, ember.int32),
        (ember.bool_, ember.float16, ember.float16),
    ],
)
def test_tensor_tensor_promotion(device, a_dt, b_dt, expected):
    a = ember.ones(3, dtype=a_dt, device=device)
    b = ember.ones(3, dtype=b_dt, device=device)
    for out in (a + b, b + a, a * b, b - a):
        assert out.dtype is expected, f"{a_dt} op {b_dt} gave {out.dtype}, expected {expected}"
        assert out.numpy().dtype == expected.numpy


def test_python_scalars_do_not_widen(device):
    f32 = ember.ones(2, device=device)
    f16 = ember.ones(2, dtype=ember.float16, device=device)
    i32 = ember.ones(2, dtype=ember.int32, device=device)
    b = ember.ones(2, dtype=ember.bool_, device=device)
    assert (f32 + 1).dtype is ember.float32
    assert (f32 * 2.5).dtype is ember.float32
    assert (2.5 * f16).dtype is ember.float16
    assert (i32 + 1).dtype is ember.int32
    assert (i32 * 2.5).dtype is ember.float32  # int tensor with a float scalar -> default float
    assert (i32 / 2).dtype is ember.float32  # true division of ints is float
    assert (i32 // 2).dtype is ember.int32
    assert (b & True).dtype is ember.bool_
    assert (f32 + np.float64(1.0)).dtype is ember.float32
    np.testing.assert_array_equal((i32 * 2.5).numpy(), np.full(2, 2.5, np.float32))


def test_casts(device):
    x = ember.tensor([1.7, -2.2, 0.0], device=device)
    assert x.to(ember.float64).dtype is ember.float64
    assert x.double().dtype is ember.float64 and x.half().dtype is ember.float16
    i = x.int()
    assert i.dtype is ember.int64 and i.numpy().tolist() == [1, -2, 0]  # truncation toward zero
    assert x.long().dtype is ember.int64
    assert x.bool().numpy().tolist() == [True, True, False]
    assert i.float().dtype is ember.float32
    assert x.to("float64").dtype is ember.float64
    assert x.to(device).device == device and x.to(device) is x
    assert x.to(device, ember.int32).dtype is ember.int32
    assert x.to(ember.float32) is x  # a cast to the same dtype is free
    c = x.clone()
    assert c is not x and c.numpy().tolist() == x.numpy().tolist()
    bc = ember.tensor([True, False], device=device).clone()
    assert bc.dtype is ember.bool_ and bc.numpy().tolist() == [True, False]


def test_to_other_device_and_back(device):
    other = "reference" if device != "reference" else "cpu"
    x = ember.tensor([[1.0, 2.0]], dtype=ember.float64, device=device).require_grad()
    y = x.to(other)
    assert y.device == other and y.dtype is ember.float64
    grads = (y * y).sum().backward()
    g = grads.get(x)
    assert g.device == device
    assert_close(g, np.array([[2.0, 4.0]]), dtype=ember.float64)


def test_from_numpy_and_dlpack(device):
    arr = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = ember.from_numpy(arr, device=device)
    assert t.dtype is ember.float64 and t.shape == (2, 3)
    np.testing.assert_array_equal(t.numpy(), arr)
    if device in ("cpu", "reference"):
        d = ember.from_dlpack(np.arange(4, dtype=np.int32), device=device)
        assert d.dtype is ember.int32 and d.numpy().tolist() == [0, 1, 2, 3]
        back = np.from_dlpack(t)
        np.testing.assert_array_equal(back, arr)
    with pytest.raises(TypeError, match="from_numpy"):
        ember.from_numpy([1, 2], device=device)


def test_default_device_and_device_objects(device):
    before = ember.default_device()
    try:
        ember.set_default_device(device)
        assert ember.default_device() == device
        assert ember.zeros(2).device == device and ember.tensor([1.0]).device == device
    finally:
        ember.set_default_device(before)
    d = ember.Device(device)
    assert d == device and str(d) == device and hash(d) == hash(ember.Device(device))
    assert ember.Device("cuda:1").index == 1 and str(ember.Device("cuda")) == "cuda:0"
    with pytest.raises(ValueError, match="Device"):
        ember.Device("tpu")
    with pytest.raises(ValueError, match="Device"):
        ember.Device("cpu:1")


def test_pickle_roundtrip_for_worker_transport(device):
    import pickle

    t = ember.tensor([[1.5, -2.0]], dtype=ember.float64, device=device)
    back = pickle.loads(pickle.dumps(t))
    assert back.device == device and back.dtype is ember.float64
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    assert pickle.loads(pickle.dumps(ember.int32)) is ember.int32


def test_float16_basics(device):
    x = np.array([[0.5, -1.25, 2.0], [3.0, 0.125, -0.75]], dtype=np.float16)
    t = ember.tensor(x, device=device)
    assert t.dtype is ember.float16
    for got, want in (
        (t + t, x + x),
        (t * 2, x * 2),
        (t.exp(), np.exp(x)),
        (t.sum(1), x.sum(1)),
        (t @ t.T, x @ x.T),
        (t.max(0), x.max(0)),
    ):
        assert got.dtype is ember.float16
        assert_close(got, want.astype(np.float64))
