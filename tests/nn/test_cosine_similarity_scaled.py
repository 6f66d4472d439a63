"""cosine_similarity scales each vector by its largest |x| before the dot and the norms, so a
vector near the dtype's limit gives its finite similarity, not inf/inf = NaN — found by the
PyTorch differential test (issue #30)."""

from __future__ import annotations

import numpy as np

import ember
from ember.nn import distance


def _cos64(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def test_a_vector_near_float32_max(device):
    a = np.array([[0.5, -1.25, 3e38, 2.0], [1e-30, 2e-30, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]], np.float32)
    b = np.array([[1.0, 2.0, 2.0, -1.0], [3.0, -1.0, 0.5, 0.0], [-2.0, 1.0, 0.0, 3e38]], np.float32)
    x1 = ember.tensor(a, device=device).require_grad()
    x2 = ember.tensor(b, device=device).require_grad()
    y = distance.cosine_similarity(x1, x2, dim=1)
    # the middle row's norm is under eps = 1e-8: the similarity shrinks by eps / |a| (as PyTorch)
    want = _cos64(a, b) * np.array([1.0, np.linalg.norm(a[1].astype(np.float64)) / 1e-8, 1.0])
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5)
    grads = y.sum().backward()
    assert np.isfinite(grads.get(x1).numpy()).all() and np.isfinite(grads.get(x2).numpy()).all()
    # d cos / d b for the first row: a/(|a||b|) − cos·b/|b|², with a ≈ 3e38·e3
    a0, b0 = a[0].astype(np.float64), b[0].astype(np.float64)
    na, nb = np.linalg.norm(a0), np.linalg.norm(b0)
    np.testing.assert_allclose(
        grads.get(x2).numpy()[0], a0 / (na * nb) - want[0] * b0 / nb**2, rtol=1e-5, atol=1e-7
    )


def test_zero_nan_and_infinite_vectors(device):
    x1 = ember.tensor([[0.0, 0.0], [np.nan, 1.0], [np.inf, 1.0]], device=device)
    x2 = ember.tensor([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]], device=device)
    y = distance.cosine_similarity(x1, x2, dim=1).numpy()
    assert y[0] == 0.0 and np.isnan(y[1]) and np.isnan(y[2])
