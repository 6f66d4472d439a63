"""Shared helpers of the ember.nn tests: float64 central-difference gradient checks."""

from __future__ import annotations

import numpy as np

import ember

DEV = "reference"


def cpu_available() -> bool:
    """Whether the Numba ``cpu`` backend imports (it is optional while being finished)."""
    try:
        import ember.kernels.cpu.backend  # noqa: F401
    except Exception:
        return False
    return True


def check_grads(
    fn, tensors, n_dirs: int = 2, eps: float = 1e-6, rtol: float = 1e-4, atol: float = 1e-8, seed: int = 0
) -> None:
    """Compare the gradients of the scalar ``fn()`` w.r.t. ``tensors`` (float64 leaves that
    require grad, on a NumPy-backed device) with central differences along random directions."""
    out = fn()
    grads = out.backward()
    rng = np.random.default_rng(seed)
    for i, t in enumerate(tensors):
        g = grads.get(t)
        assert g is not None, f"tensor {i} {t.shape} got no gradient"
        g = g.numpy().astype(np.float64)
        data = t._data
        base = np.array(data, copy=True)
        for _ in range(n_dirs):
            d = rng.standard_normal(base.shape)
            with ember.no_grad():
                np.copyto(data, base + eps * d)
                plus = float(fn().item())
                np.copyto(data, base - eps * d)
                minus = float(fn().item())
                np.copyto(data, base)
            numeric = (plus - minus) / (2 * eps)
            analytic = float((g * d).sum())
            assert abs(numeric - analytic) <= atol + rtol * max(abs(numeric), abs(analytic)), (
                f"tensor {i} {t.shape}: numeric {numeric} vs analytic {analytic}"
            )


def weighted_sum(y, seed: int = 1):
    """A scalar that depends on every element of ``y`` with distinct weights."""
    w = np.random.default_rng(seed).standard_normal(y.shape)
    return (y * ember.tensor(w, dtype=y.dtype, device=y.device)).sum()


def params64(module):
    """Cast a module to float64 and return its trainable parameter tensors."""
    module.to(ember.float64)
    return [p.value for p in module.parameters() if p.is_require_grad()]
