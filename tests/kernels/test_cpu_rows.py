"""The cpu backend's row gather and scatter (token packing's ``index`` / ``index_put`` /
``index_add`` with one integer index array): NumPy's results exactly, repeated rows with NumPy's
semantics, and NumPy's own path (and errors) for every key the row kernels do not take."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.kernels.cpu import rows

CPU = ember.Device("cpu").backend


def rows_taken(x, picked):
    from ember.kernels.cpu.backend import _row_key

    return _row_key(x, picked) is not None


RNG = np.random.default_rng(0)


def _big(dtype, n=1200, trailing=(4, 32)):
    x = RNG.standard_normal((n, *trailing)).astype(dtype)
    x[3, 0, 0], x[5, 1, 2], x[7, 2, 3] = np.nan, np.inf, -np.inf
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_put_rows_equals_numpy_put_and_add(dtype):
    x = _big(dtype)
    picked = RNG.permutation(x.shape[0])[:400]
    values = RNG.standard_normal((400, *x.shape[1:])).astype(dtype)
    values[0, 0, 0] = np.nan
    want = x.copy()
    want[picked] = values
    np.testing.assert_array_equal(rows.put_rows(x, picked, values, add=False), want)
    want = x.copy()
    want[picked] += values
    np.testing.assert_array_equal(rows.put_rows(x, picked, values, add=True), want)


def test_repeated_rows_keep_the_last_value_as_numpy():
    x = np.zeros((6, 3), np.float32)
    picked = np.array([4, 1, 4])
    values = np.arange(9, dtype=np.float32).reshape(3, 3)
    want = x.copy()
    want[picked] = values
    np.testing.assert_array_equal(rows.put_rows(x, picked, values, add=False), want)
    np.testing.assert_array_equal(want[4], values[2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_backend_row_ops_match_reference(dtype):
    ref = ember.Device("reference").backend
    x = _big(dtype)
    picked = np.sort(RNG.permutation(x.shape[0])[:900]).astype(np.int64)
    values = RNG.standard_normal((900, *x.shape[1:])).astype(dtype)
    assert rows_taken(x, picked)
    for key in (picked, (picked,)):
        np.testing.assert_array_equal(CPU.getitem(x, key), ref.getitem(x, key))
        np.testing.assert_array_equal(
            CPU.index_put(x, key, values, False), ref.index_put(x, key, values, False)
        )
        np.testing.assert_array_equal(
            CPU.index_put(x, key, values, True), ref.index_put(x, key, values, True)
        )
        np.testing.assert_array_equal(CPU.index_add(x, key, values), ref.index_add(x, key, values))


def test_repeated_rows_accumulate_in_index_add():
    x = np.zeros((2000, 64), np.float32)
    picked = np.array([5, 9, 5] * 400)
    values = np.ones((picked.size, 64), np.float32)
    out = CPU.index_add(x, picked, values)
    assert out[5, 0] == 800 and out[9, 0] == 400 and out[0, 0] == 0


def test_keys_the_row_kernels_do_not_take_go_to_numpy():
    x = _big(np.float32)
    neg = np.array([-1, -2] * 300)
    np.testing.assert_array_equal(CPU.getitem(x, neg), x[neg])  # negative rows count from the end
    with pytest.raises(IndexError):
        CPU.getitem(x, np.array([0, x.shape[0]] * 300))
    with pytest.raises(IndexError):
        CPU.index_put(x, np.array([1, x.shape[0]] * 300), np.zeros((600, 4, 32), np.float32), False)
    small = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(CPU.getitem(small, np.array([2, 0])), small[[2, 0]])
    ints = np.arange(400_000).reshape(100_000, 4)
    np.testing.assert_array_equal(CPU.getitem(ints, np.arange(0, 100_000, 2)), ints[::2])
    # broadcast values (a view of one row) are not C-contiguous: NumPy's assignment
    one = np.broadcast_to(np.ones((1, 4, 32), np.float32), (600, 4, 32))
    want = x.copy()
    want[np.arange(600)] = one
    np.testing.assert_array_equal(CPU.index_put(x, np.arange(600), one, False), want)


def test_token_packing_round_trip_on_cpu_equals_reference():
    from ember.nn.token_packing import TokenPacking

    mask = np.arange(200)[None, :] >= RNG.integers(20, 201, 16)[:, None]
    h = RNG.standard_normal((int((~mask).sum()), 64)).astype(np.float32)
    outs = {}
    for device in ("cpu", "reference"):
        packing = TokenPacking(ember.tensor(mask, device=device))
        t = ember.tensor(h, device=device, requires_grad=True)
        wide = packing.unpack(t)
        up = ember.tensor(np.arange(wide.numel, dtype=np.float32).reshape(wide.shape) % 7, device=device)
        grads = (wide * up).sum().backward()
        outs[device] = (wide.numpy(), packing.pack(wide).numpy(), grads.get(t).numpy())
    for got, want in zip(outs["cpu"], outs["reference"]):
        np.testing.assert_array_equal(got, want)
