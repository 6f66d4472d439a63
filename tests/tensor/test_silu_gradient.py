"""silu's gradient stays finite at large |x|: it is sigmoid(x)·(1 + x·(1 − sigmoid(x))), not
the composition's, which multiplies the output gradient by x first and overflows (NaN) —
found by the PyTorch differential test (issue #30)."""

from __future__ import annotations

import numpy as np
import pytest

import ember


def _silu_grad(x: np.ndarray, seed: np.ndarray, device) -> np.ndarray:
    t = ember.tensor(x, device=device).require_grad()
    return ember.silu(t).backward(ember.tensor(seed, device=device)).get(t).numpy()


@pytest.mark.parametrize("dtype, big", [("float32", 3e38), ("float64", 1e308), ("float16", 6e4)])
def test_the_gradient_at_large_magnitudes_is_its_limit(device, dtype, big):
    x = np.array([big, -big, 1e4, -1e4], dtype=dtype)
    seed = np.full(4, 2.0, dtype=dtype)
    got = _silu_grad(x, seed, device)
    np.testing.assert_array_equal(got, np.array([2.0, 0.0, 2.0, 0.0], dtype=dtype))


def test_the_gradient_matches_its_formula(device, rng):
    x = rng.standard_normal(50) * 4
    x[:3] = [0.0, -0.0, np.inf]
    seed = rng.standard_normal(50)
    s = 1 / (1 + np.exp(-x))
    with np.errstate(invalid="ignore"):
        want = seed * s * (1 + x * (1 - s))
    np.testing.assert_allclose(_silu_grad(x, seed, device), want, rtol=1e-12, atol=1e-15)
    # the value is unchanged: x · sigmoid(x)
    np.testing.assert_allclose(
        ember.silu(ember.tensor(x[3:], device=device)).numpy(), x[3:] * s[3:], rtol=1e-12
    )
