"""Python front door to ember's optional C++ kernels (``ember.kernels._native``).

The extension is built by ``setup.py`` with pybind11 and OpenMP; when it is missing
(no compiler at install time, a failed build, ``EMBER_DISABLE_NATIVE=1``) importing
this module still succeeds: :func:`available` returns False, :func:`load_error` says
why, and the ``cpu`` backend keeps its Numba kernels.

The kernels follow the array-level composite contract of
:mod:`ember.kernels.backend`: NumPy float32/float64 inputs, new arrays out, reductions
over the last axis. This module validates dtypes (``TypeError`` naming the op) and
makes non-contiguous or misaligned inputs contiguous before calling C++, which
re-checks shapes and layout before touching memory.

float32 GELU uses vectorised polynomial approximations of ``exp``/``erfc`` (relative
error about 1e-7 for results above 1e-30; smaller results may flush to zero); float64
uses libm. The kernels release the GIL and run on OpenMP threads.

Environment:
    EMBER_NUM_THREADS: threads per kernel (default: OpenMP's, i.e. all cores or
        ``OMP_NUM_THREADS``); :func:`set_num_threads` changes it at run time.
    EMBER_NATIVE_ISA: force an instruction set (``baseline``, ``avx2``, ``avx512``).
    EMBER_DISABLE_NATIVE: ``1`` to behave as if the extension were not built.
"""

from __future__ import annotations

import os
import warnings
from types import ModuleType

import numpy as np

from ember import config
from ember.kernels import threads as _openmp_policy  # noqa: F401  (OpenMP wait policy, before the runtime loads)

__all__ = [
    "NativeUnavailableError",
    "available",
    "gelu",
    "gelu_backward",
    "isa",
    "layer_norm",
    "layer_norm_backward",
    "load_error",
    "num_threads",
    "set_isa",
    "set_num_threads",
    "supported_isas",
]


class NativeUnavailableError(RuntimeError):
    """Raised when a native kernel is called but the extension could not be loaded."""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def _load() -> tuple[ModuleType | None, str | None]:
    if _truthy(os.environ.get("EMBER_DISABLE_NATIVE")):
        return None, "disabled by EMBER_DISABLE_NATIVE"
    try:
        from ember.kernels import _native  # late: the optional C++ extension, which may be missing
    except ImportError as exc:  # not built, or built for another Python/ABI
        return None, (
            f"{type(exc).__name__}: {exc}. The optional C++ extension was not built "
            "(no C++17 compiler at install time, or its build failed: `pip install -v .` "
            "shows why); in a checkout, `python setup.py build_ext --inplace` builds it."
        )
    except Exception as exc:  # a broken library must not break `import ember`
        return None, f"{type(exc).__name__}: {exc}"
    return _native, None


_native, _load_error = _load()


def _threads_from_env() -> int:
    """``threads.num_threads`` of the configuration (0: OpenMP's default). Invalid values are
    reported by the cpu backend (ember.kernels.cpu.jit); here they fall back to the default so
    importing never fails."""
    try:
        return config.get("threads.num_threads") or 0
    except config.ConfigError:
        return 0


_threads = _threads_from_env()


def _apply_isa_from_env() -> None:
    wanted = os.environ.get("EMBER_NATIVE_ISA", "").strip()
    if not wanted or _native is None:
        return
    try:
        _native.set_isa(wanted)
    except ValueError as exc:
        warnings.warn(f"EMBER_NATIVE_ISA ignored: {exc}", RuntimeWarning, stacklevel=2)


_apply_isa_from_env()


# ----------------------------------------------------------------------------- status
def available() -> bool:
    """True when the C++ extension is loaded and its kernels can be called."""
    return _native is not None


def load_error() -> str | None:
    """Why the extension is unavailable, or None when it loaded."""
    return _load_error


def _module() -> ModuleType:
    if _native is None:
        raise NativeUnavailableError(f"ember's native C++ extension is not available: {_load_error}")
    return _native


def isa() -> str | None:
    """Instruction set of the kernels in use (``baseline``/``avx2``/``avx512``), or None."""
    return None if _native is None else _native.isa()


def supported_isas() -> tuple[str, ...]:
    """Instruction sets both compiled in and supported by this CPU, best last."""
    return () if _native is None else tuple(_native.supported_isas())


def set_isa(name: str) -> None:
    """Use the kernels compiled for ``name`` (mainly for testing each variant).

    Args:
        name: one of :func:`supported_isas`.

    Raises:
        ValueError: if ``name`` is not supported here.
        NativeUnavailableError: if the extension is not loaded.
    """
    _module().set_isa(name)


def num_threads() -> int:
    """Threads each native kernel uses (resolved: never 0)."""
    if _threads > 0:
        return _threads
    return 1 if _native is None else int(_native.max_threads())


def set_num_threads(threads: int | None) -> None:
    """Set the threads per native kernel; None restores the default.

    Args:
        threads: a positive count, or None for ``EMBER_NUM_THREADS`` / OpenMP's default.

    Raises:
        ValueError: if ``threads`` is not a positive integer or None.
    """
    global _threads
    if threads is None:
        _threads = _threads_from_env()
        return
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"set_num_threads: expected a positive integer or None, got {threads!r}")
    _threads = int(threads)


# ------------------------------------------------------------------------- validation
def _float_array(op: str, name: str, a: object) -> np.ndarray:
    """``a`` as a C-contiguous, aligned, native-byte-order float32/float64 array."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{op}: {name} must be a numpy.ndarray, got {type(a).__name__}")
    if a.dtype.kind != "f" or a.dtype.itemsize not in (4, 8):
        raise TypeError(
            f"{op}: {name} must be a float32 or float64 array, got {a.dtype} with shape {a.shape}"
        )
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if not (a.flags.c_contiguous and a.flags.aligned):
        a = np.array(a, order="C", copy=True)
    return a


def _same_dtype(op: str, name: str, a: np.ndarray, ref: np.ndarray) -> None:
    if a.dtype != ref.dtype:
        raise TypeError(
            f"{op}: {name} has dtype {a.dtype} (shape {a.shape}) but x has dtype {ref.dtype} "
            f"(shape {ref.shape}); they must match"
        )


def _optional_param(op: str, name: str, p: object, x: np.ndarray) -> np.ndarray | None:
    if p is None:
        return None
    arr = _float_array(op, name, p)
    _same_dtype(op, name, arr, x)
    return arr


# ---------------------------------------------------------------------------- kernels
def gelu(x: np.ndarray, approximate: bool = False) -> np.ndarray:
    """GELU of ``x`` as a new array.

    ``approximate=False``: ``x * 0.5 * (1 + erf(x / sqrt(2)))``;
    ``approximate=True``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    Args:
        x: float32 or float64 array, any shape.
        approximate: use the tanh form.

    Raises:
        TypeError: if ``x`` is not a float32/float64 array.
    """
    x = _float_array("gelu", "x", x)
    return _module().gelu(x, bool(approximate), _threads)


def gelu_backward(x: np.ndarray, dy: np.ndarray, approximate: bool = False) -> np.ndarray:
    """Gradient of GELU: ``dy * gelu'(x)`` as a new array.

    Args:
        x: the forward input, float32 or float64.
        dy: upstream gradient, same shape and dtype as ``x``.
        approximate: the form used in the forward pass.

    Raises:
        TypeError: on a non-float array or mismatched dtypes.
        ValueError: if the shapes differ.
    """
    op = "gelu_backward"
    x = _float_array(op, "x", x)
    dy = _float_array(op, "dy", dy)
    _same_dtype(op, "dy", dy, x)
    return _module().gelu_backward(x, dy, bool(approximate), _threads)


def layer_norm(
    x: np.ndarray, gamma: np.ndarray | None, beta: np.ndarray | None, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layer normalisation over the last axis.

    ``y = (x - mean) * rstd * gamma + beta`` with ``rstd = 1 / sqrt(var + eps)`` and the
    biased variance.

    Args:
        x: float32/float64 array with at least one axis and a non-empty last axis.
        gamma: scale of shape ``[D]`` (``D = x.shape[-1]``) or None.
        beta: shift of shape ``[D]`` or None.
        eps: finite, non-negative value added to the variance.

    Returns:
        ``(y, mean, rstd)``; ``mean`` and ``rstd`` have shape ``x.shape[:-1]``.

    Raises:
        TypeError: on non-float arrays or mismatched dtypes.
        ValueError: on wrong shapes or an invalid ``eps``.
    """
    op = "layer_norm"
    x = _float_array(op, "x", x)
    gamma = _optional_param(op, "gamma", gamma, x)
    beta = _optional_param(op, "beta", beta, x)
    y, mean, rstd = _module().layer_norm(x, gamma, beta, float(eps), _threads)
    return y, mean, rstd


def layer_norm_backward(
    dy: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, gamma: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Backward pass of :func:`layer_norm`.

    With ``xhat = (x - mean) * rstd`` and ``g = dy * gamma``:
    ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))`` (means over the last axis),
    ``dgamma = sum(dy * xhat)`` and ``dbeta = sum(dy)`` over all rows.

    Args:
        dy: upstream gradient, shape and dtype of ``x``.
        x: the forward input.
        mean: forward ``mean`` (shape ``x.shape[:-1]``).
        rstd: forward ``rstd`` (shape ``x.shape[:-1]``).
        gamma: forward scale of shape ``[D]`` or None.

    Returns:
        ``(dx, dgamma, dbeta)``; ``dgamma`` and ``dbeta`` are None when ``gamma`` is None.

    Raises:
        TypeError: on non-float arrays or mismatched dtypes.
        ValueError: on wrong shapes.
    """
    op = "layer_norm_backward"
    x = _float_array(op, "x", x)
    dy = _float_array(op, "dy", dy)
    mean = _float_array(op, "mean", mean)
    rstd = _float_array(op, "rstd", rstd)
    for name, arr in (("dy", dy), ("mean", mean), ("rstd", rstd)):
        _same_dtype(op, name, arr, x)
    gamma = _optional_param(op, "gamma", gamma, x)
    dx, dgamma, dbeta = _module().layer_norm_backward(dy, x, mean, rstd, gamma, _threads)
    return dx, dgamma, dbeta
