"""Argument validation for the ``cuda`` fused kernels' Python entry points.

The CUDA kernels index memory without bounds checks, so every entry point validates types,
dtypes and shapes here first (on the host, from array metadata only) and raises an error
naming the op, the argument and what was expected. Index ranges are checked on the device
by :mod:`ember.kernels.cuda.indexing`. ``cp`` is the array module (CuPy; the tests pass a
NumPy stand-in), so everything here runs without a GPU.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.kernels.arg_checks import check_float_meta, check_same_shape, finite_scalar, probability, seed_u64

__all__ = [
    "FLOAT_DTYPES",
    "INDEX_DTYPES",
    "check_same_shape",
    "contiguous",
    "dropout_threshold",
    "finite_scalar",
    "float_array",
    "index_array",
    "optional_vector",
    "probability",
    "rows_cols",
    "seed_u64",
]

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16))
INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))


def float_array(cp: Any, op: str, name: str, x: Any, dtype: Any = None, min_ndim: int = 1) -> Any:
    """Check that ``x`` is a float16/32/64 device array and return it C-contiguous.

    ``cp`` is the array module (cupy); ``dtype`` and ``min_ndim`` and the errors they raise:
    :func:`ember.kernels.arg_checks.check_float_meta`.

    Raises:
        TypeError: ``x`` is not a device array.
    """
    _device_array(cp, op, name, x)
    check_float_meta(op, name, x, FLOAT_DTYPES, "float16, float32 or float64", dtype, min_ndim)
    return contiguous(cp, x)


def _device_array(cp: Any, op: str, name: str, x: Any) -> None:
    if not isinstance(x, cp.ndarray):
        raise TypeError(
            f"{op}: {name} must be a {cp.__name__}.ndarray on the GPU, "
            f"got {type(x).__module__}.{type(x).__name__}"
        )


def contiguous(cp: Any, a: Any) -> Any:
    """``a`` itself when C-contiguous, else a C-contiguous copy; 0-d arrays stay 0-d
    (``ascontiguousarray`` would make them 1-d)."""
    return a if a.flags.c_contiguous else cp.ascontiguousarray(a)


def index_array(cp: Any, op: str, name: str, ids: Any) -> Any:
    """Check that ``ids`` is an int64/int32 device array and return it C-contiguous.

    Range checks happen on the device (see :func:`ember.kernels.cuda.indexing.check_range`).

    Args:
        cp: the array module.
        op: name of the op.
        name: name of the argument ("targets", "ids"...).
        ids: the index array.

    Raises:
        TypeError: ``ids`` is not an int64/int32 device array.
    """
    _device_array(cp, op, name, ids)
    if ids.dtype not in INDEX_DTYPES:
        raise TypeError(f"{op}: {name} must be int64 or int32, got dtype {ids.dtype}")
    return contiguous(cp, ids)


def optional_vector(cp: Any, op: str, name: str, p: Any, dim: int, dtype: Any) -> Any:
    """Validate an optional per-feature parameter of shape ``[dim]``; None passes through.

    Args:
        cp: the array module.
        op: name of the op.
        name: name of the argument.
        p: the parameter or None.
        dim: required length (the input's last dimension).
        dtype: required dtype (the input's).
    """
    if p is None:
        return None
    arr = float_array(cp, op, name, p, dtype=dtype)
    if tuple(arr.shape) != (dim,):
        raise ValueError(
            f"{op}: {name} must have shape ({dim},) to match the input's last "
            f"dimension, got {tuple(arr.shape)}"
        )
    return arr


def rows_cols(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, cols) of an array reduced over its last axis (leading dims flattened).

    Args:
        shape: the array shape (at least 1-D).
    """
    return math.prod(shape[:-1]), int(shape[-1])


def dropout_threshold(p: float) -> np.uint32:
    """Integer threshold t with ``keep <=> (z >> 40) >= t``, equal to ``u >= p`` exactly.

    ``u = (z >> 40) * 2**-24`` is a multiple of 2**-24, so ``u >= p`` iff
    ``z >> 40 >= ceil(p * 2**24)``; ``p * 2**24`` is exact in float64.

    Args:
        p: drop probability in [0, 1].
    """
    return np.uint32(math.ceil(p * (1 << 24)))
