"""Resizing: Burn's ``Interpolate1d`` (``[batch, channels, length]``) and ``Interpolate2d``
(``[batch, channels, height, width]``) with Burn's ``InterpolateMode``.

Every mode is separable and linear in the input, so each resized axis is one gather plus a
weighted sum: output position ``o`` reads a few input positions ("taps") with fixed weights,
worked out once per (sizes, mode) in NumPy. Gradients come from the ``index_select``, ``mul``
and ``sum`` rules, on every backend.

Coordinates, as in Burn's backends (``align_corners`` only matters for Linear, Cubic and
Lanczos; it defaults to True, where PyTorch's ``F.interpolate`` defaults to False):

* ``align_corners=True``: ``src = o · (in − 1) / max(out − 1, 1)``;
* ``align_corners=False``: ``src = (o + 0.5) · in / out − 0.5`` (half-pixel centres).

* ``Nearest``: input ``floor(o · in / out)`` (PyTorch's ``nearest``, OpenCV's INTER_NEAREST).
* ``NearestExact``: input ``floor((o + 0.5) · in / out)`` (PyTorch's ``nearest-exact``).
* ``Linear``: ``src`` clamped to ``[0, in − 1]``, the two neighbours weighted linearly.
* ``Cubic``: Keys' cubic convolution with ``A = −0.75`` over 4 neighbours, indices clamped
  to the edge (PyTorch's ``bicubic``).
* ``Lanczos``: ``sinc(t)·sinc(t/3)`` over 6 neighbours; those outside the input are left out
  and the remaining weights renormalised.

A tap of weight exactly zero reads nothing, so a NaN or infinity in the input reaches only
the outputs that actually depend on it.
"""

from __future__ import annotations

import enum
import math

import numpy as np

from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor import dtypes as dt
from ember.tensor.creation import from_numpy
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["Interpolate1d", "Interpolate1dConfig", "Interpolate2d", "Interpolate2dConfig", "InterpolateMode"]


class InterpolateMode(enum.Enum):
    """How resampled values are computed (Burn's ``InterpolateMode``; see the module docstring)."""

    Nearest = "Nearest"
    NearestExact = "NearestExact"
    Linear = "Linear"
    Cubic = "Cubic"
    Lanczos = "Lanczos"


# PyTorch's mode names, accepted as strings next to Burn's (case-insensitive)
_MODE_ALIASES = {
    "nearest": InterpolateMode.Nearest,
    "nearest-exact": InterpolateMode.NearestExact,
    "nearestexact": InterpolateMode.NearestExact,
    "linear": InterpolateMode.Linear,
    "bilinear": InterpolateMode.Linear,
    "cubic": InterpolateMode.Cubic,
    "bicubic": InterpolateMode.Cubic,
    "lanczos": InterpolateMode.Lanczos,
    "lanczos3": InterpolateMode.Lanczos,
}


def as_interpolate_mode(op: str, mode) -> InterpolateMode:
    """An ``InterpolateMode`` from itself or a name (``"Linear"``, ``"bilinear"``, ...)."""
    if isinstance(mode, InterpolateMode):
        return mode
    if isinstance(mode, str) and mode.lower() in _MODE_ALIASES:
        return _MODE_ALIASES[mode.lower()]
    names = ", ".join(m.name for m in InterpolateMode)
    raise ValueError(f"{op}: mode must be an InterpolateMode ({names}) or its name, got {mode!r}")


# ---- taps --------------------------------------------------------------------------------------
_TAPS_CACHE: dict = {}


def _source_coords(in_size: int, out_size: int, align_corners: bool) -> np.ndarray:
    o = np.arange(out_size, dtype=np.float64)
    if align_corners:
        return o * ((in_size - 1) / max(out_size - 1, 1))
    return (o + 0.5) * (in_size / out_size) - 0.5


def _keys_cubic(t: np.ndarray, a: float = -0.75) -> np.ndarray:
    """Keys' cubic convolution kernel at distance ``t`` (>= 0)."""
    near = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    far = ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a
    return np.where(t < 1.0, near, np.where(t < 2.0, far, 0.0))


def _lanczos3(x: np.ndarray) -> np.ndarray:
    """``sinc(x)·sinc(x/3)`` inside ``|x| < 3``; exactly 0 at non-zero integers, where ``sin(πx)``
    only rounds to ~1e-17 (so a same-size resize is exactly the identity)."""
    safe = np.where(x == 0.0, 1.0, x)
    pix = np.pi * safe
    value = np.sin(pix) * np.sin(pix / 3.0) / (pix * pix / 3.0)
    value = np.where((np.abs(x) >= 3.0) | (x == np.round(x)), 0.0, value)
    return np.where(x == 0.0, 1.0, value)


def _taps(in_size: int, out_size: int, mode: InterpolateMode, align_corners: bool):
    """(index ``[K, out]`` int64, weight ``[K, out]`` float64 or None for Nearest*). An index of
    ``in_size`` points at a zero appended to the input: the slot of every zero-weight tap."""
    key = (in_size, out_size, mode, align_corners)
    found = _TAPS_CACHE.get(key)
    if found is not None:
        return found
    o = np.arange(out_size, dtype=np.float64)
    last = in_size - 1
    if mode is InterpolateMode.Nearest:
        index, weight = np.minimum(np.floor(o * (in_size / out_size)), last)[None], None
    elif mode is InterpolateMode.NearestExact:
        index, weight = np.minimum(np.floor((o + 0.5) * (in_size / out_size)), last)[None], None
    else:
        src = _source_coords(in_size, out_size, align_corners)
        if mode is InterpolateMode.Linear:
            src = np.clip(src, 0.0, last)
            low = np.floor(src)
            frac = src - low
            index = np.stack([low, np.minimum(low + 1, last)])
            weight = np.stack([1.0 - frac, frac])
        elif mode is InterpolateMode.Cubic:
            base = np.floor(src)
            t = src - base
            index = np.clip(base[None] + np.arange(-1, 3)[:, None], 0, last)
            weight = np.stack(
                [_keys_cubic(t + 1.0), _keys_cubic(t), _keys_cubic(1.0 - t), _keys_cubic(2.0 - t)]
            )
        else:  # Lanczos
            base = np.floor(src)
            index = base[None] + np.arange(-2, 4)[:, None]
            weight = _lanczos3(src[None] - index)
            weight = np.where((index < 0) | (index > last), 0.0, weight)
            total = weight.sum(0)
            weight = weight / np.where(total == 0.0, 1.0, total)
        index = np.where(weight == 0.0, in_size, index)
    found = (index.astype(np.int64), weight)
    if len(_TAPS_CACHE) > 256:
        _TAPS_CACHE.clear()
    _TAPS_CACHE[key] = found
    return found


def _resample_axis(x: Tensor, axis: int, out_size: int, mode: InterpolateMode, align_corners: bool) -> Tensor:
    """``x`` resized along ``axis`` (a non-negative dim) to ``out_size``."""
    in_size = x.shape[axis]
    index, weight = _taps(in_size, out_size, mode, align_corners)
    if (index == in_size).any():  # some taps read the appended zero
        x = x.pad((0, 0) * (x.ndim - 1 - axis) + (0, 1), 0.0)
    picked = x.index_select(axis, from_numpy(index.reshape(-1), x.device))
    if weight is None:
        return picked
    k = index.shape[0]
    picked = picked.reshape(x.shape[:axis] + (k, out_size) + x.shape[axis + 1 :])
    w = from_numpy(weight.reshape((k, out_size) + (1,) * (x.ndim - 1 - axis)).astype(x.dtype.numpy), x.device)
    return (picked * w).sum(axis)


def _resize(x: Tensor, sizes: tuple, mode: InterpolateMode, align_corners: bool) -> Tensor:
    """Resize the trailing ``len(sizes)`` dims of ``x`` to ``sizes``, one axis after the other."""
    narrow = x.dtype is dt.float16
    y = x.to(dt.float32) if narrow else x  # weights and sums in float32 for half inputs
    first = x.ndim - len(sizes)
    for offset, size in enumerate(sizes):
        y = _resample_axis(y, first + offset, size, mode, align_corners)
    return y.to(dt.float16) if narrow else y


def _check_input(op: str, x, rank: int, dims: str) -> None:
    if not isinstance(x, Tensor) or x.ndim != rank or not x.dtype.is_float:
        got = f"{x.dtype} {shape_str(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{op}: expected a float input [{dims}], got {got}")
    if min(x.shape[2:]) <= 0:
        raise ValueError(f"{op}: cannot resample an empty spatial dim, got input {shape_str(x.shape)}")


def _check_sizes(op: str, output_size, scale_factor, n: int) -> None:
    if (output_size is None) == (scale_factor is None):
        raise ValueError(
            f"{op}: give exactly one of output_size and scale_factor, got output_size={output_size!r}, "
            f"scale_factor={scale_factor!r}"
        )
    if output_size is not None:
        if len(output_size) != n or any(
            isinstance(s, bool) or not isinstance(s, int) or s <= 0 for s in output_size
        ):
            raise ValueError(f"{op}: output_size must be {n} positive int(s), got {output_size!r}")
    elif len(scale_factor) != n or any(
        isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s <= 0
        for s in scale_factor
    ):
        raise ValueError(f"{op}: scale_factor must be {n} positive finite number(s), got {scale_factor!r}")


def _scaled_sizes(op: str, x: Tensor, scale_factor: tuple) -> tuple:
    """``floor(size · scale)`` per axis, the scale rounded to float32 first as Burn stores it."""
    spatial = x.shape[2:]
    sizes = tuple(int(size * float(np.float32(s))) for size, s in zip(spatial, scale_factor))
    if min(sizes) <= 0:
        raise ValueError(
            f"{op}: scale_factor {list(scale_factor)} turns the input {shape_str(x.shape)} into an "
            f"empty output {list(sizes)}"
        )
    return sizes


class Interpolate1dConfig(Config):
    """Configuration of :class:`Interpolate1d` (Burn's defaults).

    Args:
        output_size: output length, or None to use ``scale_factor``.
        scale_factor: output length = ``floor(length · scale_factor)``, or None.
        mode: an :class:`InterpolateMode` (Nearest); names such as ``"linear"`` are accepted.
        align_corners: map corner samples onto each other (True, as Burn).
    """

    output_size: int | None = None
    scale_factor: float | None = None
    mode: InterpolateMode = InterpolateMode.Nearest
    align_corners: bool = True

    def __post_init__(self):
        self.mode = as_interpolate_mode("Interpolate1dConfig", self.mode)

    def init(self, device=None, dtype=None) -> "Interpolate1d":
        """Build the layer (it has no parameters)."""
        return Interpolate1d(self.output_size, self.scale_factor, self.mode, self.align_corners)


class Interpolate1d(Module):
    """Resizes ``[batch, channels, length]`` to ``[batch, channels, length']`` (module docstring).

    Args:
        output_size, scale_factor, mode, align_corners: as in the config; exactly one of the
            first two is given.
    """

    def __init__(
        self,
        output_size: int | None = None,
        scale_factor: float | None = None,
        mode: InterpolateMode | str = InterpolateMode.Nearest,
        align_corners: bool = True,
    ):
        _check_sizes(
            "Interpolate1d",
            None if output_size is None else (output_size,),
            None if scale_factor is None else (scale_factor,),
            1,
        )
        self.output_size = output_size
        self.scale_factor = None if scale_factor is None else float(scale_factor)
        self.mode = as_interpolate_mode("Interpolate1d", mode)
        self.align_corners = bool(align_corners)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
        x: ``[batch, channels, length]``.
        """
        _check_input("Interpolate1d", x, 3, "batch, channels, length")
        if self.output_size is not None:
            sizes = (self.output_size,)
        else:
            sizes = _scaled_sizes("Interpolate1d", x, (self.scale_factor,))
        return _resize(x, sizes, self.mode, self.align_corners)

    def extra_repr(self) -> dict:
        return {
            "mode": self.mode.name,
            "output_size": self.output_size,
            "scale_factor": self.scale_factor,
            "align_corners": self.align_corners,
        }


class Interpolate2dConfig(Config):
    """Configuration of :class:`Interpolate2d` (Burn's defaults).

    Args:
        output_size: ``(height, width)`` of the output, or None to use ``scale_factor``.
        scale_factor: ``(sh, sw)``: output = ``floor(size · s)`` per axis, or None.
        mode: an :class:`InterpolateMode` (Nearest); names such as ``"bilinear"`` are accepted.
        align_corners: map corner pixels onto each other (True, as Burn).
    """

    output_size: tuple[int, int] | None = None
    scale_factor: tuple[float, float] | None = None
    mode: InterpolateMode = InterpolateMode.Nearest
    align_corners: bool = True

    def __post_init__(self):
        self.output_size = None if self.output_size is None else tuple(self.output_size)
        self.scale_factor = None if self.scale_factor is None else tuple(self.scale_factor)
        self.mode = as_interpolate_mode("Interpolate2dConfig", self.mode)

    def init(self, device=None, dtype=None) -> "Interpolate2d":
        """Build the layer (it has no parameters)."""
        return Interpolate2d(self.output_size, self.scale_factor, self.mode, self.align_corners)


class Interpolate2d(Module):
    """Resizes ``[batch, channels, height, width]`` to ``[batch, channels, height', width']``
    (module docstring); height is resampled first, then width.

    Args:
        output_size, scale_factor, mode, align_corners: as in the config; exactly one of the
            first two is given.
    """

    def __init__(
        self,
        output_size: tuple[int, int] | None = None,
        scale_factor: tuple[float, float] | None = None,
        mode: InterpolateMode | str = InterpolateMode.Nearest,
        align_corners: bool = True,
    ):
        output_size = None if output_size is None else tuple(output_size)
        if scale_factor is not None:  # ints are scales too; anything else is left for the check to name
            scale_factor = tuple(
                float(s) if isinstance(s, (int, float)) and not isinstance(s, bool) else s
                for s in scale_factor
            )
        _check_sizes("Interpolate2d", output_size, scale_factor, 2)
        self.output_size = output_size
        self.scale_factor = scale_factor
        self.mode = as_interpolate_mode("Interpolate2d", mode)
        self.align_corners = bool(align_corners)

    def forward(self, x: Tensor) -> Tensor:
        """Args:
        x: ``[batch, channels, height, width]``.
        """
        _check_input("Interpolate2d", x, 4, "batch, channels, height, width")
        sizes = (
            self.output_size
            if self.output_size is not None
            else _scaled_sizes("Interpolate2d", x, self.scale_factor)
        )
        return _resize(x, sizes, self.mode, self.align_corners)

    def extra_repr(self) -> dict:
        return {
            "mode": self.mode.name,
            "output_size": None if self.output_size is None else list(self.output_size),
            "scale_factor": None if self.scale_factor is None else list(self.scale_factor),
            "align_corners": self.align_corners,
        }
