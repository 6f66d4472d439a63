"""Device names for tests that run on one backend rather than on the ``device`` fixture."""

from __future__ import annotations

# NumPy-backed: tensors' buffers are NumPy arrays (``check_grads`` perturbs them in place).
DEV = "reference"


def cpu_available() -> bool:
    """Whether the Numba ``cpu`` backend imports (it is optional while being finished)."""
    try:
        import ember.kernels.cpu.backend  # noqa: F401
    except Exception:
        return False
    return True
