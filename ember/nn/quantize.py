"""Weight quantization: Burn's symmetric ``QuantScheme`` / ``Quantizer`` on ember's dtypes.

A float parameter is quantized once, on the host, into integers ``q = clamp(round(x / s),
a, b)`` with one float scale ``s`` per tensor or per block, and dequantized on its device as
``q · s`` every time it is read. As in Burn (``burn-backend/src/quantization/scheme.rs``):

* ``s = 2·max(|min|, |max|) / (b - a)`` over the tensor or block (``Calibration.MinMax``), or
  ``s = 2·mean|x| / (b - a)`` (``Calibration.AbsMean``, BitNet's ``{-1, 0, +1}`` with Q2S);
  a zero scale (an all-zero block) becomes 0.1, as Burn's reference backend does;
* ``[a, b]`` is the value type's range: Q8F ``[-128, 127]``, Q8S ``[-127, 127]``, Q4F
  ``[-8, 7]``, Q4S ``[-7, 7]``, Q2F ``[-2, 1]``, Q2S ``[-1, 1]``; the default is Q8F;
* ``round`` takes halves away from zero (Rust's ``f32::round``);
* blocks are per-axis rectangles aligned to the trailing dims (``(32,)`` is 32 values along
  the last dim, ``(2, 16)`` spans the last two), and each dim must be a whole number of
  blocks; scales are stored as float32 (default) or float16, rounded *up* to the stored
  dtype (saturating at its maximum) so that no value at the block maximum clips.

Storage (Burn's ``QuantStore``): ember's smallest integer dtype is int32, so

* ``QuantStore.Native`` (ember's default) keeps one value per int32 element, in the tensor's
  own shape: every layer works unchanged, but it takes as many bytes as float32;
* ``QuantStore.PackedU32`` (Burn's default, ``PackedU32(0)``) packs ``32 / bits`` values into
  each 32-bit word along the innermost dim (first value in the lowest bits, two's complement):
  an int32 tensor ``[..., ceil(d / (32 / bits))]``, 1 byte per value at 8 bits, half at 4.
  The parameter's ``shape`` is then that stored shape, so it suits layers that read their
  weights only through ``val()`` (Linear, Embedding, attention); norms and RNN gates, which
  check ``param.shape`` in forward, need the Native store.

Two-level (block + per-tensor) scales and the float value types (E4M3, E5M2, E2M1) are not
supported.

:class:`QuantizedStorage` is the reparameterization a quantized parameter carries: the
parameter stores the int32 tensor, its scales are a frozen parameter at ``<path>.quant.scales``
(``<path>.lora.quant.scales`` under a QLoRA adapter), and ``Param.val()`` dequantizes.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ember._deprecation import renamed_method
from ember.nn.module import Module
from ember.nn.param import Param
from ember.tensor import dtypes as dt
from ember.tensor.creation import tensor as make_tensor
from ember.tensor.tensor import Tensor

__all__ = [
    "Calibration",
    "QuantScheme",
    "QuantStore",
    "QuantValue",
    "QuantizedStorage",
    "Quantizer",
    "dequantize",
    "quantize",
]


class QuantValue(enum.Enum):
    """The integer type quantized values take (Burn's ``QuantValue``, integer kinds)."""

    Q8F = "q8f"
    Q8S = "q8s"
    Q4F = "q4f"
    Q4S = "q4s"
    Q2F = "q2f"
    Q2S = "q2s"

    @property
    def bits(self) -> int:
        return int(self.value[1])

    @property
    def range(self) -> tuple[int, int]:
        """``(a, b)``: the smallest and largest quantized value."""
        half = 1 << (self.bits - 1)
        return (-half + 1 if self.value.endswith("s") else -half, half - 1)


class QuantStore(enum.Enum):
    """How quantized values are held (Burn's ``QuantStore``; packing is on the innermost dim)."""

    Native = "native"
    PackedU32 = "packed_u32"


class Calibration(enum.Enum):
    """How the range a scale must cover is measured (Burn's ``Calibration``)."""

    MinMax = "min_max"
    AbsMean = "abs_mean"


_SCALE_DTYPES = ("float32", "float16")


def _as_enum(kind: type[enum.Enum], value, what: str):
    """``value`` as a member of ``kind``: a member, its value or its name (any case)."""
    if isinstance(value, kind):
        return value
    for member in kind:
        if str(value).lower() in (member.value, member.name.lower()):
            return member
    raise ValueError(f"{what} must be one of {[m.name for m in kind]}, got {value!r}")


@dataclass(frozen=True)
class QuantScheme:
    """How a tensor is quantized (Burn's ``QuantScheme``, symmetric mode).

    Args:
        value: the quantized value type (default Q8F, as Burn's default scheme).
        block_size: None for one scale per tensor, else the block extents over the trailing
            dims (``(32,)``, ``(2, 16)``).
        scale_dtype: the dtype scales are stored in: float32 or float16.
        store: ``QuantStore.Native`` (one int32 per value) or ``PackedU32`` (see the module doc).
    """

    value: QuantValue = QuantValue.Q8F
    block_size: tuple[int, ...] | None = None
    scale_dtype: Any = field(default=dt.float32)
    store: QuantStore = QuantStore.Native

    def __post_init__(self):
        object.__setattr__(self, "value", _as_enum(QuantValue, self.value, "QuantScheme: value"))
        object.__setattr__(self, "store", _as_enum(QuantStore, self.store, "QuantScheme: store"))
        scale = dt.dtype(self.scale_dtype)
        if scale.name not in _SCALE_DTYPES:
            raise TypeError(f"QuantScheme: scale_dtype must be float32 or float16, got {scale}")
        object.__setattr__(self, "scale_dtype", scale)
        if self.block_size is not None:
            block = tuple(self.block_size) if not isinstance(self.block_size, int) else (self.block_size,)
            if not block or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in block):
                raise ValueError(f"QuantScheme: block_size must be positive ints, got {self.block_size!r}")
            while len(block) > 1 and block[0] == 1:  # leading unit dims restate the fill (Burn)
                block = block[1:]
            object.__setattr__(self, "block_size", block)

    def with_value(self, value: QuantValue | str) -> "QuantScheme":
        """A copy quantizing to ``value``."""
        return replace(self, value=value)

    def with_store(self, store: QuantStore | str) -> "QuantScheme":
        """A copy holding the values as ``store``."""
        return replace(self, store=store)

    def per_block(self, block_size, scale_dtype=dt.float32) -> "QuantScheme":
        """A copy with one scale per block of ``block_size`` values, stored as ``scale_dtype``."""
        return replace(self, block_size=block_size, scale_dtype=scale_dtype)

    def per_tensor(self, scale_dtype=dt.float32) -> "QuantScheme":
        """A copy with one scale for the whole tensor, stored as ``scale_dtype``."""
        return replace(self, block_size=None, scale_dtype=scale_dtype)

    @property
    def num_quants(self) -> int:
        """Values held by one int32 element."""
        return 32 // self.value.bits if self.store is QuantStore.PackedU32 else 1

    def block_dims(self, shape: tuple) -> tuple[int, ...] | None:
        """The block extent of every dim of ``shape`` (leading dims filled with 1), or None."""
        if self.block_size is None:
            return None
        if len(self.block_size) > len(shape):
            raise ValueError(
                f"quantize: block {list(self.block_size)} has more dims than the tensor {list(shape)}"
            )
        return (1,) * (len(shape) - len(self.block_size)) + self.block_size

    def scales_shape(self, shape: tuple) -> tuple[int, ...]:
        """Shape of the scale grid of a tensor of ``shape``: ``(1,)`` per tensor, else blocks per dim."""
        block = self.block_dims(shape)
        if block is None:
            return (1,)
        return tuple(-(-d // b) for d, b in zip(shape, block))

    def stored_shape(self, shape: tuple) -> tuple[int, ...]:
        """Shape of the int32 tensor holding a tensor of ``shape`` (a packed scalar takes a word)."""
        shape = tuple(shape)
        if self.store is QuantStore.Native:
            return shape
        shape = shape or (1,)
        return shape[:-1] + (-(-shape[-1] // self.num_quants),)


@dataclass
class Quantizer:
    """Which parameters to quantize and how (Burn's ``Quantizer``).

    Args:
        calibration: how each scale's range is measured (``Calibration.MinMax`` by default).
        scheme: the quantization scheme.
        param_group: which float parameters to quantize — an object with
            ``matches(path, param_id)``, a callable ``(path, param_id) -> bool``, or None for all.
    """

    calibration: Calibration = Calibration.MinMax
    scheme: QuantScheme = field(default_factory=QuantScheme)
    param_group: Any = None

    def __post_init__(self):
        self.calibration = _as_enum(Calibration, self.calibration, "Quantizer: calibration")
        if not isinstance(self.scheme, QuantScheme):
            raise TypeError(f"Quantizer: scheme must be a QuantScheme, got {type(self.scheme).__name__}")

    def with_param_group(self, group) -> "Quantizer":
        """A copy quantizing only the parameters matching ``group`` (Burn's ``set_param_group``)."""
        return replace(self, param_group=group)

    set_param_group = renamed_method("set_param_group", "with_param_group")  # Burn's name, one release


# ---- quantize (host, once) ---------------------------------------------------------------------
def _round_half_away(x: np.ndarray) -> np.ndarray:
    """Round halves away from zero, as Rust's ``round`` (NumPy rounds them to even)."""
    mag = np.abs(x)
    whole = np.floor(mag)
    return np.copysign(whole + (mag - whole >= 0.5), x)


def _round_up_to(scales: np.ndarray, dtype: dt.DType) -> np.ndarray:
    """The smallest value of ``dtype`` not below each scale, saturating at its maximum (Burn's
    ``ScaleDtype::round_up``): a scale rounded down would clip the block maximum."""
    target = np.dtype(dtype.numpy)
    top = np.finfo(target).max
    with np.errstate(over="ignore"):
        stored = np.minimum(scales, top).astype(target)
    low = stored.astype(scales.dtype) < scales
    stored = np.where(low, np.nextafter(stored, np.array(np.inf, target)), stored)
    return np.minimum(stored, top).astype(target)


def _block_view(x: np.ndarray, block: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, ...]]:
    """``x`` as ``[n0, b0, n1, b1, ...]`` and the block axes to reduce."""
    split = []
    for d, b in zip(x.shape, block):
        split += [d // b, b]
    return x.reshape(split), tuple(range(1, 2 * x.ndim, 2))


def _quantize_array(x: np.ndarray, scheme: QuantScheme, calibration: Calibration, op: str):
    """Integers (int64) and stored scales (in ``scheme.scale_dtype``) of the float array ``x``."""
    work = x.astype(np.float64 if x.dtype == np.float64 else np.float32)
    if not np.all(np.isfinite(work)):
        raise ValueError(f"{op}: cannot quantize a tensor holding NaN or inf")
    a, b = scheme.value.range
    block = scheme.block_dims(work.shape)
    if block is None:
        mag = np.abs(work).reshape(1, -1)
        axes = (1,)
    else:
        bad = [(d, e) for d, e in zip(work.shape, block) if d % e]
        if bad:
            raise ValueError(
                f"{op}: shape {list(work.shape)} is not a whole number of blocks "
                f"{list(block)} (dims must divide evenly)"
            )
        mag, axes = _block_view(np.abs(work), block)
    if mag.size == 0:
        raise ValueError(f"{op}: cannot quantize an empty tensor of shape {list(work.shape)}")
    if calibration is Calibration.AbsMean:
        alpha = mag.mean(axis=axes, keepdims=True, dtype=work.dtype)
    else:
        alpha = mag.max(axis=axes, keepdims=True)  # = max(|min|, |max|)
    raw = (alpha + alpha) / work.dtype.type(b - a)
    raw = np.where(raw == 0, work.dtype.type(0.1), raw)
    stored = _round_up_to(raw, scheme.scale_dtype)
    scale = stored.astype(work.dtype)
    if block is None:
        q = work / scale.reshape(())
    else:
        q = (_block_view(work, block)[0] / scale).reshape(work.shape)
    q = np.clip(_round_half_away(q), a, b).astype(np.int64)
    return q, stored.reshape(scheme.scales_shape(work.shape))


def _pack(q: np.ndarray, bits: int) -> np.ndarray:
    """Pack ``32 / bits`` two's-complement values per 32-bit word along the last dim (int32)."""
    q = q.reshape(q.shape or (1,))
    n = 32 // bits
    width = -(-q.shape[-1] // n)
    pad = width * n - q.shape[-1]
    if pad:
        q = np.concatenate([q, np.zeros(q.shape[:-1] + (pad,), q.dtype)], axis=-1)
    fields = (q & ((1 << bits) - 1)).astype(np.uint32).reshape(q.shape[:-1] + (width, n))
    shifts = np.arange(n, dtype=np.uint32) * np.uint32(bits)
    words = np.bitwise_or.reduce(fields << shifts, axis=-1).astype(np.uint32)
    return np.ascontiguousarray(words).view(np.int32)


def quantize(
    x: Tensor, scheme: QuantScheme | None = None, calibration: Calibration = Calibration.MinMax
) -> tuple[Tensor, Tensor]:
    """Quantize a float tensor; returns ``(stored, scales)`` on its device.

    Args:
        x: a float tensor with finite values.
        scheme: the scheme (``QuantScheme()``: Q8F, one float32 scale).
        calibration: ``Calibration.MinMax`` or ``AbsMean``.

    Returns:
        ``stored``: int32 of ``scheme.stored_shape(x.shape)``; ``scales``:
        ``scheme.scales_shape(x.shape)`` in ``scheme.scale_dtype``.
    """
    scheme = QuantScheme() if scheme is None else scheme
    if not isinstance(x, Tensor):
        raise TypeError(f"quantize: expected an ember Tensor, got {type(x).__name__}")
    if not x.dtype.is_float:
        raise TypeError(f"quantize: expected a float tensor, got {x.dtype} of shape {list(x.shape)}")
    calibration = _as_enum(Calibration, calibration, "quantize: calibration")
    q, scales = _quantize_array(np.asarray(x.detach().numpy()), scheme, calibration, "quantize")
    held = _pack(q, scheme.value.bits) if scheme.store is QuantStore.PackedU32 else q.astype(np.int32)
    stored = make_tensor(held, dtype=dt.int32, device=x.device)
    return stored, make_tensor(scales, dtype=scheme.scale_dtype, device=x.device)


# ---- dequantize (device, every read) ------------------------------------------------------------
def _unpack(packed: Tensor, bits: int, length: int) -> Tensor:
    """The int32 values packed in ``packed`` (last dim cut to ``length``), with tensor ops."""
    n = 32 // bits
    steps = make_tensor(np.array([1 << (bits * k) for k in range(n)], np.int32), device=packed.device)
    digits = packed.reshape(packed.shape + (1,)).floor_divide(steps)  # floor: two's complement fields
    span = 1 << bits
    field_ = digits.remainder(span)  # in [0, 2^bits)
    values = (field_ + span // 2).remainder(span) - span // 2  # sign-extend
    values = values.reshape(packed.shape[:-1] + (packed.shape[-1] * n,))
    if packed.shape[-1] * n != length:
        values = values[..., :length]
    return values


def dequantize(stored: Tensor, scales: Tensor, scheme: QuantScheme, shape: tuple, dtype=dt.float32) -> Tensor:
    """``q · s`` in ``dtype``, shape ``shape``: the inverse of :func:`quantize` up to rounding.

    Args:
        stored: the int32 values (or packed words) from :func:`quantize`.
        scales: the scale grid from :func:`quantize`.
        scheme: the scheme they were quantized with.
        shape: the original tensor's shape.
        dtype: the float dtype of the result.
    """
    shape = tuple(shape)
    dtype = dt.dtype(dtype)
    if stored.dtype is not dt.int32 or stored.shape != scheme.stored_shape(shape):
        raise ValueError(
            f"dequantize: expected int32 values of shape {list(scheme.stored_shape(shape))} for a "
            f"{list(shape)} tensor ({scheme.store.name}), got {stored.dtype} {list(stored.shape)}"
        )
    if tuple(scales.shape) != scheme.scales_shape(shape):
        raise ValueError(
            f"dequantize: expected scales of shape {list(scheme.scales_shape(shape))} for a "
            f"{list(shape)} tensor, got {list(scales.shape)}"
        )
    full = shape or (1,)
    if scheme.store is QuantStore.PackedU32:
        values = _unpack(stored, scheme.value.bits, full[-1])
    else:
        values = stored.reshape(full)
    values = values.to(dtype)
    scale = scales.to(dtype)
    block = scheme.block_dims(full)
    if block is None:
        return (values * scale.reshape(())).reshape(shape)
    split, grid = [], []
    for d, b in zip(full, block):
        split += [d // b, b]
        grid += [d // b, 1]
    return (values.reshape(tuple(split)) * scale.reshape(tuple(grid))).reshape(shape)


class QuantizedStorage(Module):
    """The reparameterization of a quantized parameter: its stored value is the int32 values
    (or packed words), and ``Param.val()`` returns them dequantized.

    Args:
        scales: the scale grid (a frozen parameter, saved with the model).
        scheme: the scheme the values were quantized with.
        shape: the parameter's logical (unpacked) shape.
        dtype: the float dtype it dequantizes to (the parameter's dtype before quantization).
    """

    NAME = "quant"  # the path component of the scales: "<param>.quant.scales"

    def __init__(self, scales: Param, scheme: QuantScheme, shape: tuple, dtype):
        self.scales = scales
        self.scheme = scheme
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dt.dtype(dtype)

    @classmethod
    def quantize(
        cls, x: Tensor, scheme: QuantScheme, calibration: Calibration = Calibration.MinMax
    ) -> tuple[Tensor, "QuantizedStorage"]:
        """Quantize ``x``: the int32 tensor to store and the storage that reads it back."""
        stored, scales = quantize(x, scheme, calibration)
        return stored, cls(Param(scales, None, False), scheme, x.shape, x.dtype)

    def dequantize(self, stored: Tensor, dtype=None) -> Tensor:
        """The stored values as floats in ``dtype`` (the original dtype when None)."""
        return dequantize(stored, self.scales.val(), self.scheme, self.shape, dtype or self.dtype)

    def materialize(self, base: Tensor) -> Tensor:
        return self.dequantize(base)

    def forward(self, base: Tensor) -> Tensor:
        return self.materialize(base)

    def extra_repr(self) -> dict:
        block = "tensor" if self.scheme.block_size is None else list(self.scheme.block_size)
        return {
            "value": self.scheme.value.name,
            "block": block,
            "store": self.scheme.store.name,
            "shape": list(self.shape),
        }

    @property
    def nbytes(self) -> int:
        """Bytes the stored values and the scales take."""
        words = math.prod(self.scheme.stored_shape(self.shape))
        return 4 * words + self.scales.numel * self.scales.dtype.itemsize
