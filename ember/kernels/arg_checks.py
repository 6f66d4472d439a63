"""Argument checks shared by the fused kernels of every backend (they need no array module)."""
from __future__ import annotations

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
        raise ValueError(f"{op}: {name_a} and {name_b} must have the same shape, "
                         f"got {tuple(a.shape)} and {tuple(b.shape)}")


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
