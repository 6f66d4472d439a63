"""The gradient of ``prod`` is the product of the other elements of each slice, also where a
slice holds a zero or an infinity (``y / x`` is NaN there) — found by the PyTorch
differential test (issue #30)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember

INF = np.inf


def _others(x: np.ndarray, axes: tuple) -> np.ndarray:
    """The product of the other elements of each slice over ``axes``, element by element."""
    out = np.empty_like(x)
    for i in itertools.product(*(range(s) for s in x.shape)):
        sl = tuple(slice(None) if a in axes else i[a] for a in range(x.ndim))
        block = x[sl].copy()
        block[tuple(i[a] for a in axes)] = 1.0
        out[i] = np.prod(block)
    return out


def _grad(x: np.ndarray, device, dim, keepdim=False) -> np.ndarray:
    t = ember.tensor(x, device=device).require_grad()
    return t.prod(dim, keepdim).sum().backward().get(t).numpy()


def test_a_lone_zero_gets_the_product_of_the_rest_and_two_zeros_give_zero(device):
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.5, -2.0, 4.0]])
    np.testing.assert_array_equal(_grad(x, device, -1), [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [-8.0, 6.0, -3.0]])
    np.testing.assert_array_equal(_grad(np.array([1.0, 0.0, 3.0]), device, None), [0.0, 3.0, 0.0])


def test_infinite_elements_and_a_product_that_overflows(device):
    x = np.array([[INF, 2.0, 0.5], [4.0, 2.0, 3e38]], dtype=np.float32)
    got = _grad(x, device, 1, keepdim=True)
    np.testing.assert_array_equal(got, np.array([[1.0, INF, INF], [INF, INF, 8.0]], dtype=np.float32))


@pytest.mark.parametrize("dim", [0, 1, 2, (0, 2), None])
def test_matches_the_products_of_the_others(device, dim, rng):
    x = rng.integers(-2, 3, (3, 4, 2)).astype(np.float64)  # many zeros
    x[1, 2, 0] = INF
    axes = tuple(range(3)) if dim is None else ((dim,) if isinstance(dim, int) else dim)
    np.testing.assert_allclose(_grad(x, device, dim), _others(x, axes), rtol=1e-12)


def test_zero_dim_and_empty_inputs(device):
    assert _grad(np.array(0.0), device, None).tolist() == 1.0
    assert _grad(np.zeros((2, 0)), device, 1).shape == (2, 0)
