"""``std`` of float16/float32 takes its variance in the next wider float, as PyTorch does: a
standard deviation within the dtype's range is finite even where its variance is not —
found by the PyTorch differential test (issue #30)."""

from __future__ import annotations

import numpy as np
import pytest

import ember


@pytest.mark.parametrize("dtype, big", [("float32", 3e38), ("float16", 300.0)])
def test_a_finite_std_whose_variance_overflows(device, dtype, big):
    x = np.array([[big, -big, 0.0], [1.0, 2.0, 3.0]], dtype=dtype)
    t = ember.tensor(x, device=device).require_grad()
    y = t.std(1)
    want = np.std(x.astype(np.float64), axis=1, ddof=1)
    assert y.dtype == ember.dtype(dtype)
    np.testing.assert_allclose(y.numpy().astype(np.float64), want, rtol=1e-3)
    g = y.sum().backward().get(t).numpy().astype(np.float64)
    # d std / d x_i = (x_i − mean) / ((n − 1)·std)
    xd = x.astype(np.float64)
    want_g = (xd - xd.mean(1, keepdims=True)) / (2 * want[:, None])
    np.testing.assert_allclose(g, want_g, rtol=1e-3)


def test_float64_and_keepdim_and_correction_are_unchanged(device, rng):
    x = rng.standard_normal((3, 5))
    t = ember.tensor(x, device=device)
    np.testing.assert_allclose(
        t.std(0, keepdim=True).numpy(), np.std(x, 0, ddof=1, keepdims=True), rtol=1e-12
    )
    y = ember.tensor(x.astype(np.float32), device=device).std((0, 1), correction=0)
    assert y.dtype == ember.float32
    np.testing.assert_allclose(y.numpy(), np.std(x), rtol=1e-5)
