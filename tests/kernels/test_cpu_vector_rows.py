"""The attention kernel's row passes in vector IR (ember/kernels/cpu/vector_rows.py): values as
NumPy's on every length around the vector width (the masked last vector), the elements past a
row untouched, and NaN/inf handled as the scalar loops did."""

from __future__ import annotations

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from ember.kernels.cpu import vecmath as vm  # noqa: E402
from ember.kernels.cpu import vector_rows  # noqa: E402

DTYPES = [np.float32, np.float64]
LENGTHS = [0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 190, 257]


@numba.njit
def _scale_max(row, scale):
    return vector_rows.scale_max(row, scale)


@numba.njit
def _exp_sum(row, m):
    return vector_rows.exp_sum(row, m)


@numba.njit
def _exp_grad(row, grow, scale, lse, lse_lo, delta):
    vector_rows.exp_grad(row, grow, scale, lse, lse_lo, delta)


@numba.njit
def _scalar_exp(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = vm.exp(x[i])
    return out


def _tol(dtype):
    return dict(rtol=2e-6, atol=0) if dtype == np.float32 else dict(rtol=1e-14, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
def test_rows_of_every_length_and_nothing_past_them(dtype, n):
    rng = np.random.default_rng(n)
    scale = dtype(0.37)
    buf = np.full(n + 40, 7.0, dtype=dtype)
    x = rng.standard_normal(n).astype(dtype) * 4
    buf[:n] = x
    m = _scale_max(buf[:n], scale)
    want = x * scale
    np.testing.assert_array_equal(buf[:n], want)
    assert m == (want.max() if n else -np.inf)
    total = _exp_sum(buf[:n], m)
    np.testing.assert_array_equal(buf[:n], _scalar_exp(want - m))  # the same exponential
    np.testing.assert_allclose(total, np.exp(want.astype(np.float64) - m).sum(), **_tol(dtype))
    assert (buf[n:] == 7).all()

    grow_buf = np.full(n + 40, 5.0, dtype=dtype)
    g = rng.standard_normal(n).astype(dtype)
    grow_buf[:n] = g
    buf[:n] = x
    lse, lse_lo, delta = dtype(1.5), dtype(1e-7), dtype(0.25)
    _exp_grad(buf[:n], grow_buf[:n], scale, lse, lse_lo, delta)
    w = _scalar_exp((x * scale - lse) - lse_lo)
    np.testing.assert_array_equal(buf[:n], w)
    np.testing.assert_allclose(grow_buf[:n], w * (g - delta) * scale, **_tol(dtype))
    assert (buf[n:] == 7).all() and (grow_buf[n:] == 5).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_and_inf(dtype):
    row = np.array([1.0, np.nan, 3.0, -np.inf] + [0.0] * 18, dtype=dtype)
    assert _scale_max(row, dtype(2.0)) == 6.0  # NaN ignored, as vecmath.vmax
    assert np.isnan(row[1]) and row[3] == -np.inf
    assert np.isnan(_exp_sum(row, dtype(6.0)))  # the NaN score reaches the sum
    assert row[3] == 0 and row[2] == 1
    row = np.array([np.inf, 0.0, 2.0], dtype=dtype)
    assert _scale_max(row, dtype(1.0)) == np.inf
    assert np.isnan(_exp_sum(row, dtype(np.inf)))  # inf - inf, as the scalar loop


def test_huge_products_round_before_lse_is_subtracted():
    # Under the callers' fast-math flags LLVM may fuse a product into a following
    # subtraction: exp_grad must still give w = exp(0) = 1 at the row's maximum.
    @numba.njit(fastmath={"contract", "arcp", "nsz", "afn"})
    def grad_under_contract(row, grow, scale, lse):
        vector_rows.exp_grad(row, grow, scale, lse, 0.0, 0.0)

    scale = 1 / np.sqrt(2)
    row = np.array([0.0, 1e60])
    lse = row[1] * scale
    grow = np.zeros(2)
    grad_under_contract(row, grow, scale, lse)
    np.testing.assert_array_equal(row, [0.0, 1.0])
    np.testing.assert_array_equal(grow, [0.0, 0.0])


def test_rejects_what_it_cannot_vectorise():
    with pytest.raises(numba.core.errors.TypingError):
        _scale_max(np.arange(4), 1.0)  # integers
    with pytest.raises(numba.core.errors.TypingError):
        _scale_max(np.zeros(8)[::2], 1.0)  # not contiguous
