"""Argument checks shared by the fused kernels of every backend (they need no array module).

The scalar checks here are the one copy used by the kernels, the composed defaults of the
backend contract and the optimizer configs (``ember.optim`` imports them; kernels may not
import ``ember.optim``), so a hyper-parameter is rejected with the same words everywhere.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

import numpy as np


def check_same_shape(op: str, name_a: str, a: Any, name_b: str, b: Any) -> None:
    """Raise ValueError unless ``a`` and ``b`` have the same shape.

    Args:
        op: name of the op.
        name_a: name of the first argument.
        a: first array.
        name_b: name of the second argument.
        b: second array.
    """
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(
            f"{op}: {name_a} and {name_b} must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}"
        )


def check_float_meta(
    op: str, name: str, x: Any, allowed: tuple, spelled: str, dtype: Any = None, min_ndim: int = 1
) -> None:
    """Raise unless the array ``x`` has a float dtype the backend takes, the op's dtype, and
    enough dimensions (the checks of every backend's ``float_array``, from metadata only).

    Args:
        op: name of the op, used in error messages.
        name: name of the argument, used in error messages.
        x: the array (NumPy or CuPy).
        allowed: the float dtypes the backend's kernels take.
        spelled: ``allowed`` in words, for the message ("float32 or float64").
        dtype: when given, the dtype ``x`` must have (that of the op's main input).
        min_ndim: minimum number of dimensions.

    Raises:
        TypeError: ``x`` has the wrong dtype.
        ValueError: ``x`` has fewer than ``min_ndim`` dimensions.
    """
    if x.dtype not in allowed:
        raise TypeError(f"{op}: {name} must be {spelled}, got dtype {x.dtype}")
    if dtype is not None and x.dtype != np.dtype(dtype):
        raise TypeError(
            f"{op}: {name} has dtype {x.dtype} but the op's input is {np.dtype(dtype)}; "
            "all float arguments must share one dtype"
        )
    if x.ndim < min_ndim:
        raise ValueError(
            f"{op}: {name} must have at least {min_ndim} dimension(s), got shape {tuple(x.shape)}"
        )


def table_size(op: str, name: str, value: object) -> int:
    """Return the row count of a table (``num_embeddings``...) as an int >= 0.

    Args:
        op: name of the op.
        name: name of the argument.
        value: a Python or NumPy integer.
    """
    try:
        size = operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an integer, got {type(value).__name__}") from None
    if size < 0:
        raise ValueError(f"{op}: {name} must be non-negative, got {size}")
    return size


def probability(op: str, name: str, p: object) -> float:
    """Return ``p`` as a float after checking ``0 <= p <= 1``.

    Args:
        op: name of the op.
        name: name of the argument.
        p: the probability.
    """
    value = float(p)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{op}: {name} must lie in [0, 1], got {p!r}")
    return value


def seed_u64(op: str, seed: object) -> np.uint64:
    """Return an integer seed reduced modulo 2**64, as the hash RNG uses it.

    Args:
        op: name of the op.
        seed: a Python or NumPy integer (negative values wrap around).
    """
    try:
        value = operator.index(seed)
    except TypeError:
        raise TypeError(f"{op}: seed must be an integer, got {type(seed).__name__}") from None
    return np.uint64(value % (1 << 64))


def finite_scalar(
    op: str, name: str, value: object, *, minimum: float | None = None, unit_interval: bool = False
) -> float:
    """Return ``value`` as a finite float, or raise an error naming ``op`` and ``name``.

    Args:
        op: name of the op or config, used in error messages.
        name: name of the argument.
        value: a real number (``bool`` is refused: it is never a hyper-parameter).
        minimum: when given, the smallest value accepted.
        unit_interval: require ``0 <= value < 1`` (decay rates such as β).

    Raises:
        TypeError: ``value`` is not a real number.
        ValueError: ``value`` is not finite or out of its range.
    """
    if type(value) is not float:  # the common case costs one type test
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{op}: `{name}` must be a number, got {value!r}")
        value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{op}: `{name}` must be finite, got {value!r}")
    if unit_interval and not 0.0 <= value < 1.0:
        raise ValueError(f"{op}: `{name}` must be in [0, 1), got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{op}: `{name}` must be >= {minimum:g}, got {value!r}")
    return value


def finite_values(op: str, name: str, value: object) -> float | np.ndarray:
    """A scalar as a finite float, or a sequence as a 1-D float64 array of finite values (one
    per tensor; :func:`per_tensor` checks its length once the group is known).

    Raises:
        ValueError: a value is not finite, or ``value`` has more than one dimension.
    """
    if type(value) is float or type(value) is int:  # the common case costs one type test
        return finite_scalar(op, name, value)
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0:
        return finite_scalar(op, name, float(array))
    if array.ndim != 1:
        raise ValueError(
            f"{op}: `{name}` must be a scalar or hold one value per tensor, got shape {array.shape}"
        )
    # a method call rather than np.all: this runs on every optimizer step, and the function's
    # dispatch costs more than the check itself on a few values
    if not np.isfinite(array).all():
        raise ValueError(f"{op}: `{name}` must be finite, got {value!r}")
    return array


def per_tensor(op: str, name: str, value: object, n: int) -> np.ndarray:
    """A scalar, or one value per tensor of a group, as ``n`` finite float64 values.

    Args:
        op: name of the op.
        name: name of the argument (``lr``, ``steps``...).
        value: a number, or a sequence / 1-D array of ``n`` numbers.
        n: the number of tensors.

    Raises:
        ValueError: ``value`` has another length or holds a non-finite value.
    """
    checked = finite_values(op, name, value)
    if type(checked) is float:
        return np.full(n, checked)
    if checked.shape != (n,):
        raise ValueError(
            f"{op}: `{name}` must be a scalar or hold one value per tensor ({n}), got shape {checked.shape}"
        )
    return checked


def step_numbers(op: str, name: str, value: object, n: int) -> np.ndarray:
    """:func:`per_tensor` for 1-based step counts t: whole numbers >= 1, as float64.

    Raises:
        ValueError: a step is below 1 or not a whole number.
    """
    array = per_tensor(op, name, value, n)
    if (array < 1).any() or (array != np.floor(array)).any():
        raise ValueError(f"{op}: `{name}` must be integers >= 1 (the 1-based step t), got {value!r}")
    return array
