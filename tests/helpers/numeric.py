"""Comparing ember tensors with NumPy expectations at dtype-appropriate tolerances."""

from __future__ import annotations

import numpy as np

import ember

# Forward tolerances: float32 results against a float64 NumPy computation on the same
# (float32-rounded) inputs, and float64 results against float64 NumPy.
TOLERANCES = {
    "float16": (2e-3, 2e-3),
    "float32": (1e-5, 1e-6),
    "float64": (1e-10, 1e-12),
}


def tol(dtype) -> tuple[float, float]:
    """(rtol, atol) for a float dtype (an ember dtype or its name)."""
    return TOLERANCES[str(ember.dtype(dtype))]


def to_numpy(x) -> np.ndarray:
    """A tensor's values on the host (NumPy arrays pass through)."""
    if isinstance(x, ember.Tensor):
        return x.numpy()
    return np.asarray(x)


def assert_close(actual, expected, rtol: float | None = None, atol: float | None = None, dtype=None) -> None:
    """Assert an ember tensor equals a NumPy array in shape and (approximately) values.

    Args:
        actual: the ember tensor under test.
        expected: the NumPy result; float results are usually computed in float64.
        rtol, atol: override the defaults of ``actual``'s dtype (see ``TOLERANCES``).
        dtype: when given, the ember dtype ``actual`` must have.

    Float tensors are compared with tolerances (NaNs must match); int and bool tensors exactly.
    """
    assert isinstance(actual, ember.Tensor), f"expected an ember.Tensor, got {type(actual).__name__}"
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    if dtype is not None:
        assert actual.dtype is ember.dtype(dtype), f"dtype {actual.dtype} != expected {ember.dtype(dtype)}"
    got = actual.numpy()
    if actual.dtype.is_float:
        r, a = tol(actual.dtype)
        np.testing.assert_allclose(
            got.astype(np.float64),
            expected.astype(np.float64),
            rtol=r if rtol is None else rtol,
            atol=a if atol is None else atol,
            equal_nan=True,
        )
    else:
        np.testing.assert_array_equal(got, expected)


def away_from(
    rng: np.random.Generator, shape, points=(0.0,), gap: float = 0.1, scale: float = 1.0, dtype=np.float64
) -> np.ndarray:
    """Normal samples kept at least ``gap`` away from each of ``points`` (kinks of an op)."""
    x = rng.standard_normal(shape) * scale
    for p in points:
        close = np.abs(x - p) < gap
        x = np.where(close, p + np.where(x >= p, gap, -gap) * (1 + rng.random(shape)), x)
    return x.astype(dtype)


def distinct(rng: np.random.Generator, shape, dtype=np.float64) -> np.ndarray:
    """Values without ties (so max/min/sort have a unique, differentiable answer)."""
    n = int(np.prod(shape)) if shape else 1
    vals = (rng.permutation(n) + rng.random(n) * 0.5) / max(n, 1) * 4 - 2
    return vals.reshape(shape).astype(dtype)
