"""Dropout with the counter-based hash RNG on CuPy arrays.

Element ``i`` (flat, row-major) is kept iff ``u_i >= p`` with ``u_i`` from the SplitMix64
finaliser of ``seed + (i + 1) * 0x9E3779B97F4A7C15`` (see ember/kernels/backend.py). Masks
are bit-identical to the reference backend and are regenerated in backward, never stored.
Kept values are multiplied by ``1 / (1 - p)`` (computed in float64, applied in the
accumulation type) like the reference.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.kernels.backend import fused
from ember.kernels.cuda import launch, modules, validate
from ember.kernels.cuda.runtime import cupy_or_error

__all__ = ["dropout", "dropout_backward", "dropout_keep_mask"]

_SRC = "dropout.cu"


def _apply(op: str, x: Any, p: float, seed: int) -> Any:
    cp = cupy_or_error()
    x = validate.float_array(cp, op, "x", x, min_ndim=0)
    p = validate.probability(op, "p", p)
    seed64 = validate.seed_u64(op, seed)
    if p <= 0.0:
        return x.copy()
    if p >= 1.0:
        return cp.zeros(x.shape, dtype=x.dtype)
    y = cp.empty(x.shape, dtype=x.dtype)
    n = int(x.size)
    if n:
        ct = modules.ctype_of(x.dtype)
        grid, block = launch.elementwise_launch(n)
        modules.kernel(_SRC, ct, "dropout_apply", ct)(
            grid,
            block,
            (
                x,
                y,
                np.int64(n),
                seed64,
                validate.dropout_threshold(p),
                modules.acc_scalar(x.dtype, 1.0 / (1.0 - p)),
            ),
        )
    return y


def dropout(x: Any, p: float, seed: int) -> Any:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    Args:
        x: float16/32/64 CuPy array.
        p: drop probability in [0, 1] (0 returns a copy, 1 returns zeros).
        seed: integer seed, taken modulo 2**64.
    """
    return _apply("dropout", x, p, seed)


def dropout_backward(dy: Any, p: float, seed: int) -> Any:
    """Gradient of :func:`dropout`: the same mask and scaling applied to ``dy``.

    Args:
        dy: gradient of the output.
        p: the forward drop probability.
        seed: the forward seed.
    """
    return _apply("dropout_backward", dy, p, seed)


def dropout_keep_mask(shape: tuple[int, ...], p: float, seed: int) -> Any:
    """Boolean keep-mask of the hash RNG for an array of ``shape``.

    Args:
        shape: array shape.
        p: drop probability in [0, 1].
        seed: integer seed, taken modulo 2**64.
    """
    op = "dropout_keep_mask"
    cp = cupy_or_error()
    p = validate.probability(op, "p", p)
    seed64 = validate.seed_u64(op, seed)
    shape = tuple(int(s) for s in shape)
    keep = cp.empty(shape, dtype=np.bool_)
    n = math.prod(shape)
    if n:
        grid, block = launch.elementwise_launch(n)
        modules.kernel(_SRC, "float", "dropout_mask")(
            grid, block, (keep, np.int64(n), seed64, validate.dropout_threshold(p))
        )
    return keep


class CudaDropoutOps:
    """Dropout on ``cuda``: the mask hashed inside the kernel, never stored."""

    @fused
    def dropout(self, x, p, seed):
        return dropout(x, p, seed)

    @fused
    def dropout_backward(self, dy, p, seed):
        return dropout_backward(dy, p, seed)
