"""Sinusoidal positional encoding (Burn's ``PositionalEncoding``)."""

from __future__ import annotations

import numpy as np

from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.creation import from_numpy
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["PositionalEncoding", "PositionalEncodingConfig", "generate_sinusoids"]


def generate_sinusoids(
    length: int, d_model: int, max_timescale: int = 10_000, device=None, dtype=None
) -> Tensor:
    """The ``[length, d_model]`` table: for position i and even k, with
    ``div = exp(−k·ln(max_timescale)/d_model)``, column k is ``sin(div·i)`` and k+1 is
    ``cos(div·i)`` (sin and cos interleaved, computed in float32 as Burn does).

    Args:
        length: number of positions.
        d_model: encoding size (even).
        max_timescale: the longest wavelength; must be >= ``length``.
        device: where to create the table.
        dtype: float dtype (float32).
    """
    if d_model <= 0 or d_model % 2:
        raise ValueError(f"generate_sinusoids: d_model must be even and positive, got {d_model}")
    if max_timescale < length:
        raise ValueError(f"generate_sinusoids: max_timescale ({max_timescale}) must be >= length ({length})")
    increment = np.float32(-np.log(np.float32(max_timescale))) / np.float32(d_model)
    k = np.arange(0, d_model, 2, dtype=np.float32)
    div = np.exp(k * increment).astype(np.float32)
    angles = np.arange(length, dtype=np.float32)[:, None] * div[None, :]
    table = np.empty((length, d_model), dtype=np.float32)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    out = from_numpy(table, device)
    return out.to(dtype) if dtype is not None else out


class PositionalEncodingConfig(Config):
    """Configuration of :class:`PositionalEncoding`.

    Args:
        d_model: encoding size (even).
        max_sequence_size: longest sequence supported (5000).
        max_timescale: longest wavelength (10000); must be >= ``max_sequence_size``.
    """

    d_model: int
    max_sequence_size: int = 5_000
    max_timescale: int = 10_000

    def init(self, device=None, dtype=None) -> "PositionalEncoding":
        table = generate_sinusoids(self.max_sequence_size, self.d_model, self.max_timescale, device, dtype)
        return PositionalEncoding(table.unsqueeze(0), self.max_timescale)


class PositionalEncoding(Module):
    """Adds the sinusoid table to ``[batch, seq, d_model]`` inputs.

    The table is a constant (moved by ``to``, not trained, not saved), as in Burn.

    Args:
        sinusoids: ``[1, max_sequence_size, d_model]``.
        max_timescale: recorded for display.
    """

    def __init__(self, sinusoids: Tensor, max_timescale: int = 10_000):
        if sinusoids.ndim != 3 or sinusoids.shape[0] != 1:
            raise ValueError(
                f"PositionalEncoding: sinusoids must be [1, length, d_model], got "
                f"{shape_str(sinusoids.shape)}"
            )
        self.sinusoids = sinusoids
        self.max_sequence_size = sinusoids.shape[1]
        self.max_timescale = int(max_timescale)

    def forward(self, x: Tensor) -> Tensor:
        _, length, d_model = self.sinusoids.shape
        if not isinstance(x, Tensor) or x.ndim != 3:
            raise ValueError(
                f"PositionalEncoding: expected [batch, seq, d_model] input, got "
                f"{shape_str(x.shape) if isinstance(x, Tensor) else type(x).__name__}"
            )
        if x.shape[1] > length:
            raise ValueError(
                f"PositionalEncoding: sequence length {x.shape[1]} exceeds max_sequence_size {length}"
            )
        if x.shape[2] != d_model:
            raise ValueError(
                f"PositionalEncoding: d_model of the input ({x.shape[2]}) must equal the "
                f"encoding's ({d_model})"
            )
        return x + self.sinusoids[:, : x.shape[1], :].to(x.device)

    def extra_repr(self) -> dict:
        return {
            "d_model": self.sinusoids.shape[2],
            "max_sequence_size": self.max_sequence_size,
            "max_timescale": self.max_timescale,
        }
