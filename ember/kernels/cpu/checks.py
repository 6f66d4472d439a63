"""Input validation shared by the ``cpu`` fused kernels' Python entry points.

The Numba kernels index memory without bounds checks, so every entry point validates
dtypes, shapes and indices here first and raises an error that names the op, the
argument and what was expected.
"""

from __future__ import annotations

import math

import numpy as np

from ember.kernels.arg_checks import check_float_meta, check_same_shape, probability, seed_u64

__all__ = [
    "FLOAT_DTYPES",
    "as_rows",
    "check_same_shape",
    "contiguous",
    "float_array",
    "float_table",
    "index_array",
    "optional_param",
    "probability",
    "seed_u64",
]

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))


def contiguous(x: np.ndarray) -> np.ndarray:
    """``x`` itself when C-contiguous, else a C-contiguous copy of the same shape.

    (``np.ascontiguousarray`` would turn a 0-d array into a 1-d one.)

    Args:
        x: any ndarray.
    """
    return x if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(x.shape)


def float_array(
    op: str, name: str, x: object, dtype: np.dtype | None = None, min_ndim: int = 1
) -> np.ndarray:
    """Check that ``x`` is a float32/float64 ndarray and return it C-contiguous.

    ``dtype`` and ``min_ndim`` and the errors they raise: :func:`check_float_meta`.

    Raises:
        TypeError: if ``x`` is not an ndarray.
    """
    _ndarray(op, name, x)
    check_float_meta(op, name, x, FLOAT_DTYPES, "float32 or float64", dtype, min_ndim)
    return contiguous(x)


def _ndarray(op: str, name: str, x: object) -> None:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: {name} must be a numpy.ndarray, got {type(x).__name__}")


def float_table(op: str, name: str, x: object) -> np.ndarray:
    """:func:`float_array` of a 2-D table ``[V, D]`` (an embedding's weight).

    Raises:
        ValueError: ``x`` is not 2-D.
    """
    x = float_array(op, name, x, min_ndim=2)
    if x.ndim != 2:
        raise ValueError(f"{op}: {name} must have shape [V, D], got {x.shape}")
    return x


def as_rows(x: np.ndarray) -> np.ndarray:
    """View a C-contiguous array as 2-D ``[rows, last_dim]`` (leading dims flattened).

    Args:
        x: a C-contiguous array with at least one dimension.
    """
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def optional_param(
    op: str, name: str, p: object, dim: int, dtype: np.dtype, fill: float
) -> tuple[np.ndarray, bool]:
    """Validate an optional per-feature parameter of shape ``[dim]``.

    Args:
        op: name of the op.
        name: name of the argument.
        p: the parameter or None.
        dim: the required length (the input's last dimension).
        dtype: the required dtype.
        fill: value of the stand-in array used when ``p`` is None (1 for a scale,
            0 for a shift), so that one kernel serves both cases exactly.

    Returns:
        ``(array, given)``.
    """
    if p is None:
        return np.full(dim, fill, dtype=dtype), False
    arr = float_array(op, name, p, dtype=dtype)
    if arr.shape != (dim,):
        raise ValueError(
            f"{op}: {name} must have shape ({dim},) to match the input's last dimension, got {arr.shape}"
        )
    return arr, True


def index_array(op: str, name: str, ids: object, upper: int) -> np.ndarray:
    """Check integer indices lie in ``[0, upper)`` and return them C-contiguous.

    Args:
        op: name of the op.
        name: name of the argument ("targets", "ids"…).
        ids: the index array (int64 or int32).
        upper: exclusive upper bound (number of classes / embeddings).

    Raises:
        TypeError: if ``ids`` is not an int64/int32 ndarray.
        IndexError: naming the first offending value and the valid range.
    """
    _ndarray(op, name, ids)
    if ids.dtype not in INDEX_DTYPES:
        raise TypeError(f"{op}: {name} must be int64 or int32, got dtype {ids.dtype}")
    ids = contiguous(ids)
    if ids.size and (ids.min() < 0 or ids.max() >= upper):
        bad_at = np.flatnonzero((ids.ravel() < 0) | (ids.ravel() >= upper))[0]
        bad = int(ids.ravel()[bad_at])
        position = np.unravel_index(bad_at, ids.shape)
        raise IndexError(
            f"{op}: {name} value {bad} at position {tuple(int(i) for i in position)} "
            f"is out of range; valid range is [0, {upper})"
        )
    return ids
