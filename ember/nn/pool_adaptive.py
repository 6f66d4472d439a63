"""Adaptive average pooling over any number of trailing spatial dims, and Burn's
``AdaptiveAvgPool3d`` (``AdaptiveAvgPool1d`` in ``ember.nn.pool1d`` and ``AdaptiveAvgPool2d`` in
``ember.nn.pool`` use the same function).

Bin ``i`` of an axis of length ``n`` pooled to ``m`` covers ``[floor(i·n/m), ceil((i+1)·n/m))``
(PyTorch's and Burn's edges; bins may overlap when ``m`` does not divide ``n``). The axes are
pooled one after another: each bin gathers only its own elements (one ``index_select`` per
axis, short bins filled with an appended zero), sums them and divides by its length. So an
infinity or NaN reaches only the outputs whose window contains it — an averaging matmul would
multiply it by the zeros of every other bin and spread NaN everywhere.
"""

from __future__ import annotations

import numpy as np

from ember.nn.module import Module
from ember.nn.unfold import per_axis
from ember.record.config import Config
from ember.tensor.creation import from_numpy
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["AdaptiveAvgPool3d", "AdaptiveAvgPool3dConfig", "adaptive_avg_pool"]

_BIN_CACHE: dict = {}


def _bins(length: int, out: int) -> tuple:
    """(index ``[out·K]``, K, bin lengths ``[out]``) of the bins over an axis of ``length``; the
    K slots of a shorter bin are filled with ``length``, the position of the appended zero."""
    key = (length, out)
    found = _BIN_CACHE.get(key)
    if found is None:
        i = np.arange(out)
        start = (i * length) // out
        end = -(-((i + 1) * length) // out)
        k = int((end - start).max())
        index = start[:, None] + np.arange(k)[None, :]
        index = np.where(index < end[:, None], index, length).astype(np.int64)
        found = (index.reshape(-1), k, (end - start).astype(np.float64))
        if len(_BIN_CACHE) > 256:
            _BIN_CACHE.clear()
        _BIN_CACHE[key] = found
    return found


def adaptive_avg_pool(x: Tensor, output_size: tuple, op: str = "adaptive_avg_pool") -> Tensor:
    """Average the trailing ``len(output_size)`` dims of ``x [B, C, *spatial]`` into ``output_size`` bins.

    Args:
        x: a float tensor with two leading dims (batch, channels).
        output_size: the number of bins per spatial dim.
        op: name used in error messages.

    Returns:
        ``[B, C, *output_size]``.

    Raises:
        ValueError: not a float tensor of rank ``2 + len(output_size)``, or an empty spatial dim.
    """
    n = len(output_size)
    if not isinstance(x, Tensor) or x.ndim != n + 2 or not x.dtype.is_float:
        got = f"{x.dtype} {shape_str(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
        dims = {1: "length", 2: "height, width", 3: "depth, height, width"}.get(n, f"{n} spatial dims")
        raise ValueError(f"{op}: expected a float input [batch, channels, {dims}], got {got}")
    if any(s == 0 for s in x.shape[2:]):
        raise ValueError(f"{op}: cannot pool an empty spatial dim, got input {shape_str(x.shape)}")
    out = x
    for d, bins in enumerate(output_size):
        axis = 2 + d
        length = out.shape[axis]
        index, k, count = _bins(length, bins)
        pads = [0, 0] * (out.ndim - 1 - axis) + [0, 1]  # one zero at the end of `axis` fills short bins
        picked = out.pad(pads, 0.0).index_select(axis, from_numpy(index, x.device))
        shape = tuple(out.shape)
        picked = picked.reshape(shape[:axis] + (bins, k) + shape[axis + 1 :])
        divisor = from_numpy(count.astype(x.dtype.numpy), x.device).reshape(
            (bins,) + (1,) * (out.ndim - 1 - axis)
        )
        out = picked.sum(axis + 1) / divisor
    return out


class AdaptiveAvgPool3dConfig(Config):
    """Configuration of :class:`AdaptiveAvgPool3d`.

    Args:
        output_size: ``(od, oh, ow)``; an int means the same on every axis.
    """

    output_size: tuple[int, int, int]

    def __post_init__(self):
        self.output_size = per_axis("AdaptiveAvgPool3dConfig", "output_size", self.output_size, 3)

    def init(self, device=None, dtype=None) -> "AdaptiveAvgPool3d":
        """Build the layer (it has no parameters)."""
        return AdaptiveAvgPool3d(self.output_size)


class AdaptiveAvgPool3d(Module):
    """Averages ``[B, C, D, H, W]`` into ``[B, C, od, oh, ow]`` bins (see the module docstring).

    Args:
        output_size: ``(od, oh, ow)``.
    """

    def __init__(self, output_size: tuple[int, int, int]):
        self.output_size = per_axis("AdaptiveAvgPool3d", "output_size", output_size, 3)
        if min(self.output_size) <= 0:
            raise ValueError(
                f"AdaptiveAvgPool3d: output_size must be three positive ints, got {list(self.output_size)}"
            )

    def forward(self, x: Tensor) -> Tensor:
        """Pool ``x [B, C, D, H, W]``.

        Args:
            x: a float input.

        Returns:
            ``[B, C, od, oh, ow]``.

        Raises:
            ValueError: not a 5-D float input, or an empty spatial dim.
        """
        return adaptive_avg_pool(x, self.output_size, "AdaptiveAvgPool3d")

    def extra_repr(self) -> dict:
        return {"output_size": list(self.output_size)}
