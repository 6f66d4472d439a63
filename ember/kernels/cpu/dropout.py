"""Dropout driven by a counter-based hash RNG (SplitMix64 finaliser).

The keep decision for flat element ``i`` (row-major over the array) is a pure function
of ``(seed, i)``, so the backward regenerates the mask instead of storing it and every
backend produces bit-identical masks::

    z = seed + (i + 1) * 0x9E3779B97F4A7C15            (mod 2^64)
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9           (mod 2^64)
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB           (mod 2^64)
    z = z ^ (z >> 31)
    keep = (z >> 40) * 2^-24 >= p

The comparison is done on the 24-bit integer ``z >> 40`` against ``ceil(p * 2^24)``,
which is exactly equivalent and avoids a float conversion per element.
:func:`hash_bits` and :func:`keep_threshold` are shared with the attention kernel.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange
from numba.extending import register_jitable

from ember.kernels.backend import fused
from ember.kernels.families.dropout import GOLDEN, MIX1, MIX2

from . import vecmath as vm
from .checks import float_array, probability, seed_u64
from .jit import kernel

__all__ = ["dropout", "dropout_backward", "hash_bits", "keep_threshold"]

_GOLDEN = np.uint64(GOLDEN)
_MIX1 = np.uint64(MIX1)
_MIX2 = np.uint64(MIX2)


@register_jitable(inline="always")
def hash_bits(seed, i):
    """The 24 uniform bits ``z >> 40`` of the hash of flat index ``i`` (uint64).

    Args:
        seed: the uint64 seed.
        i: the int64 flat element index.
    """
    z = seed + np.uint64(i + 1) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    return z >> np.uint64(40)


def keep_threshold(p: float) -> np.uint64:
    """Smallest 24-bit value ``k`` with ``k * 2^-24 >= p``: keep iff ``hash_bits >= k``.

    Args:
        p: drop probability in ``[0, 1]``.
    """
    return np.uint64(math.ceil(p * 16777216.0))


@kernel
def _dropout_flat(x, seed, threshold, scale, y):
    # scale arrives in x's dtype, so the product stays in that dtype.
    zero = vm.typed(0.0, x)
    for i in prange(x.shape[0]):
        y[i] = x[i] * scale if hash_bits(seed, i) >= threshold else zero


def _apply(op: str, name: str, x: object, p: object, seed: object) -> np.ndarray:
    x = float_array(op, name, x, min_ndim=0)
    p = probability(op, "p", p)
    seed_value = seed_u64(op, seed)
    if p == 0.0:
        return x.copy()
    if p == 1.0:
        return np.zeros_like(x)
    y = np.empty_like(x)
    if x.size:
        scale = x.dtype.type(1.0 / (1.0 - p))
        _dropout_flat(x.reshape(-1), seed_value, keep_threshold(p), scale, y.reshape(-1))
    return y


def dropout(x: np.ndarray, p: float, seed: int) -> np.ndarray:
    """Inverted dropout: ``y = x / (1 - p)`` where kept, 0 where dropped.

    Args:
        x: float32/float64 array of any shape.
        p: drop probability in ``[0, 1]`` (0 copies ``x``, 1 gives zeros).
        seed: integer seed of the hash RNG (taken modulo 2**64).

    Returns:
        A new array of ``x``'s shape and dtype.
    """
    return _apply("dropout", "x", x, p, seed)


def dropout_backward(dy: np.ndarray, p: float, seed: int) -> np.ndarray:
    """Gradient of :func:`dropout`: the same mask and scaling applied to ``dy``.

    Args:
        dy: gradient of the output.
        p: the forward drop probability.
        seed: the forward seed.

    Returns:
        ``dx``, a new array of ``dy``'s shape and dtype.
    """
    return _apply("dropout_backward", "dy", dy, p, seed)


class CpuDropoutOps:
    """Dropout on ``cpu``: the mask hashed inside the kernel, never stored."""

    @fused(half=True)
    def dropout(self, x, p, seed):
        return dropout(x, p, seed)

    @fused(half=True)
    def dropout_backward(self, dy, p, seed):
        return dropout_backward(dy, p, seed)
