"""Lazy CuPy detection for the ``cuda`` backend.

Nothing here imports CuPy at module import time: ``import ember.kernels.cuda`` works on a
machine without CuPy, without an NVIDIA driver and without a GPU. The first call to
:func:`cupy_or_error` or :func:`is_available` probes once and caches the outcome.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

__all__ = ["CudaUnavailableError", "cupy_or_error", "is_available", "unavailable_reason"]

INSTALL_HINT = (
    "install CuPy built for your CUDA toolkit: `pip install ember[cuda]`, or directly "
    "`pip install cupy-cuda12x` (CUDA 12) / `pip install cupy-cuda13x` (CUDA 13)"
)


class CudaUnavailableError(RuntimeError):
    """The ``cuda`` backend cannot run here; the message says why (no CuPy, driver or GPU)."""


_lock = threading.Lock()
# None = not probed yet; otherwise (cupy module or None, reason or None).
_probe_result: tuple[ModuleType | None, str | None] | None = None


def _describe_runtime_error(exc: BaseException) -> str:
    """Turn a CUDA runtime/driver error raised while probing into an explanation."""
    text = f"{type(exc).__name__}: {exc}"
    lowered = text.lower()
    if "nodevice" in lowered or "no cuda-capable device" in lowered:
        return f"CuPy is installed but no CUDA device was found ({text})"
    if "insufficientdriver" in lowered or "driver version is insufficient" in lowered:
        return (
            f"the NVIDIA driver is too old for this CuPy build ({text}); update the driver "
            f"or install the CuPy wheel matching it (cupy-cuda12x or cupy-cuda13x)"
        )
    if "libcuda" in lowered or "driver" in lowered:
        return f"the NVIDIA driver (libcuda) is missing or unusable ({text})"
    return f"CuPy could not initialise CUDA ({text})"


def _probe() -> tuple[ModuleType | None, str | None]:
    try:
        cupy = importlib.import_module("cupy")
    except ImportError as exc:
        return None, f"CuPy is not installed ({exc}); {INSTALL_HINT}"
    except Exception as exc:  # a broken install, e.g. missing CUDA libraries
        return None, f"CuPy failed to import ({type(exc).__name__}: {exc}); {INSTALL_HINT}"
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # cupy.cuda.runtime.CUDARuntimeError and driver load errors
        return None, _describe_runtime_error(exc)
    if count < 1:
        return None, "CuPy is installed but no CUDA device is visible (check CUDA_VISIBLE_DEVICES)"
    return cupy, None


def _result() -> tuple[ModuleType | None, str | None]:
    global _probe_result
    result = _probe_result
    if result is None:
        with _lock:
            if _probe_result is None:
                _probe_result = _probe()
            result = _probe_result
    return result


def cupy_or_error() -> ModuleType:
    """Return the ``cupy`` module, or raise :class:`CudaUnavailableError` saying why not.

    Raises:
        CudaUnavailableError: CuPy is not installed, fails to import, finds no usable
            driver, or sees no CUDA device.
    """
    cupy, reason = _result()
    if cupy is None:
        raise CudaUnavailableError(f"the cuda backend is unavailable: {reason}")
    return cupy


def is_available() -> bool:
    """True when CuPy imports and at least one CUDA device is usable."""
    return _result()[0] is not None


def unavailable_reason() -> str | None:
    """Why the cuda backend is unavailable, or None when it is available."""
    return _result()[1]


def reset() -> None:
    """Forget the cached probe so the next call probes again (tests, late installs)."""
    global _probe_result
    with _lock:
        _probe_result = None
