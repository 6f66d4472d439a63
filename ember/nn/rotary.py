"""Rotary positional encoding, RoPE (Burn's ``RotaryEncoding``; Su et al., RoFormer, 2021).

Each consecutive pair of features ``(x[2i], x[2i+1])`` at position ``p`` is rotated by the
angle ``p·θ_i`` with ``θ_i = theta^(−2i/d_model)``:

    out[2i]   = x[2i]·cos(p·θ_i) − x[2i+1]·sin(p·θ_i)
    out[2i+1] = x[2i]·sin(p·θ_i) + x[2i+1]·cos(p·θ_i)

so the dot product of a rotated query and key depends only on their relative position.
Applied to queries and keys ``[batch, heads, seq, d_head]`` (any input ``[..., seq, d_model]``).

The table ``freq_complex [max_sequence_length, d_model, 2]`` holds ``(cos, sin)`` of each
position and feature (each angle twice, once per feature of its pair), as Burn stores it; it
and ``theta`` are constants (moved by ``to``, not trained, not saved). ``shift(start)`` slides
the table's window to positions ``start..start + max_sequence_length`` for sequences longer
than the table, as Burn does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor import dtypes as dt
from ember.tensor.creation import from_numpy
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["RotaryEncoding", "RotaryEncodingConfig"]


def _host_precision(dtype) -> np.dtype:
    """Compute the table in float64 for a float64 module, else in float32 as Burn does."""
    return (
        np.dtype(np.float64) if dtype is not None and dt.dtype(dtype) is dt.float64 else np.dtype(np.float32)
    )


def _rotary_frequencies(start: int, stop: int, theta: np.ndarray) -> np.ndarray:
    """``[stop − start, 2·len(theta), 2]``: (cos, sin) of ``p·θ_i`` for positions p in
    ``start..stop``, each angle repeated for both features of its pair."""
    positions = np.arange(start, stop, dtype=theta.dtype)
    angles = positions[:, None] * theta[None, :]
    pairs = np.stack([np.cos(angles), np.sin(angles)], axis=-1)  # [seq, d/2, 2]
    return np.repeat(pairs, 2, axis=1).astype(theta.dtype, copy=False)


class RotaryEncodingConfig(Config):
    """Configuration of :class:`RotaryEncoding`.

    Args:
        max_sequence_length: the number of positions in the table.
        d_model: size of the rotated (last) dim; must be even.
        theta: base of the frequencies ``theta^(−2i/d_model)`` (10000).
    """

    max_sequence_length: int
    d_model: int
    theta: float = 10_000.0

    def init(self, device=None, dtype=None) -> "RotaryEncoding":
        """Build the table on ``device`` in float ``dtype`` (float32)."""
        return self.init_with_frequency_scaling(None, device, dtype)

    def init_with_frequency_scaling(
        self, scaling: Callable[[Tensor], Tensor] | None, device=None, dtype=None
    ) -> "RotaryEncoding":
        """Build the table with the base frequencies passed through ``scaling`` first (a
        function of the ``[d_model / 2]`` frequency tensor returning one of the same shape),
        for RoPE extensions such as Llama 3's frequency scaling."""
        op = "RotaryEncodingConfig"
        if self.d_model <= 0 or self.d_model % 2:
            raise ValueError(
                f"{op}: d_model must be even and positive (features are rotated in pairs), got {self.d_model}"
            )
        if not self.theta > 0:
            raise ValueError(f"{op}: theta must be positive (default 10000), got {self.theta}")
        if self.max_sequence_length <= 0:
            raise ValueError(f"{op}: max_sequence_length must be positive, got {self.max_sequence_length}")
        precision = _host_precision(dtype)
        exponent = np.arange(0, self.d_model, 2, dtype=precision) / precision.type(self.d_model)
        theta = np.reciprocal(np.exp(exponent * np.log(precision.type(self.theta))))
        if scaling is not None:
            scaled = scaling(from_numpy(theta, device))
            if not isinstance(scaled, Tensor) or tuple(scaled.shape) != theta.shape:
                got = shape_str(scaled.shape) if isinstance(scaled, Tensor) else type(scaled).__name__
                raise ValueError(
                    f"{op}.init_with_frequency_scaling: scaling must return a tensor "
                    f"{shape_str(theta.shape)} like its input, got {got}"
                )
            theta = np.asarray(scaled.numpy(), dtype=precision)
        table = _rotary_frequencies(0, self.max_sequence_length, theta)
        cast = (lambda t: t) if dtype is None else (lambda t: t.to(dtype))
        return RotaryEncoding(cast(from_numpy(table, device)), cast(from_numpy(theta, device)))


class RotaryEncoding(Module):
    """Rotates feature pairs by position-dependent angles (see the module docstring).

    Args:
        freq_complex: ``[max_sequence_length, d_model, 2]`` (cos, sin) table.
        theta: ``[d_model / 2]`` frequencies.
        start_offset: the position of the table's first row (moved by :meth:`shift`).
    """

    def __init__(self, freq_complex: Tensor, theta: Tensor, start_offset: int = 0):
        if not isinstance(freq_complex, Tensor) or freq_complex.ndim != 3 or freq_complex.shape[2] != 2:
            got = (
                shape_str(freq_complex.shape)
                if isinstance(freq_complex, Tensor)
                else type(freq_complex).__name__
            )
            raise ValueError(
                f"RotaryEncoding: freq_complex must be [max_sequence_length, d_model, 2], got {got}"
            )
        if not isinstance(theta, Tensor) or tuple(theta.shape) != (freq_complex.shape[1] // 2,):
            got = shape_str(theta.shape) if isinstance(theta, Tensor) else type(theta).__name__
            raise ValueError(
                f"RotaryEncoding: theta must be [{freq_complex.shape[1] // 2}] (d_model / 2), got {got}"
            )
        self.freq_complex = freq_complex
        self.theta = theta
        self.start_offset = int(start_offset)

    @property
    def max_sequence_length(self) -> int:
        return self.freq_complex.shape[0]

    @property
    def d_model(self) -> int:
        return self.freq_complex.shape[1]

    def forward(self, x: Tensor) -> Tensor:
        """``apply(x, 0)``."""
        return self.apply(x, 0)

    def apply(self, x: Tensor, start: int = 0) -> Tensor:
        """Rotate ``x`` ``[..., seq, d_model]`` (e.g. ``[batch, heads, seq, d_head]``) as
        positions ``start..start + seq`` of the table's window.

        Args:
            x: float tensor with at least 2 dims.
            start: the position of ``x``'s first row, relative to ``start_offset``.
        """
        op = "RotaryEncoding.apply"
        if not isinstance(x, Tensor) or x.ndim < 2:
            got = shape_str(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"{op}: expected [..., seq, d_model] with at least 2 dims, got {got}")
        if not x.dtype.is_float:
            raise TypeError(f"{op}: expected a float tensor, got {x.dtype}")
        seq, d = x.shape[-2], x.shape[-1]
        if d != self.d_model:
            raise ValueError(
                f"{op}: the last dim of the input {shape_str(x.shape)} must be the encoding's "
                f"d_model {self.d_model}"
            )
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or start < 0:
            raise ValueError(f"{op}: start must be a non-negative int, got {start!r}")
        if start + seq > self.max_sequence_length:
            raise ValueError(
                f"{op}: positions {start}..{start + seq} exceed the table's "
                f"max_sequence_length {self.max_sequence_length} (relative to start_offset "
                f"{self.start_offset}; shift() moves the window)"
            )
        freqs = self.freq_complex[start : start + seq].to(x.device)
        if freqs.dtype is not x.dtype:
            freqs = freqs.to(x.dtype)
        cos, sin = freqs[..., 0], freqs[..., 1]  # [seq, d_model] each
        # (x[2i], x[2i+1]) -> (−x[2i+1], x[2i]): the pair rotated by 90°
        pairs = x.reshape(x.shape[:-1] + (d // 2, 2)).flip(-1)
        sign = from_numpy(np.array([-1.0, 1.0], dtype=x.dtype.numpy), x.device)
        turned = (pairs * sign).reshape(x.shape)
        return x * cos + turned * sin

    def shift(self, start: int) -> None:
        """Move the table's window to positions ``start..start + max_sequence_length``
        (``start`` must grow from call to call); rows still inside the window are kept, the
        others computed."""
        if start <= self.start_offset:
            raise ValueError(
                f"RotaryEncoding.shift: shift start position must be monotonically increasing "
                f"(the window starts at {self.start_offset}, got {start})"
            )
        length = self.max_sequence_length
        end = self.start_offset + length
        theta = self._host_theta()
        if start >= end:
            table = _rotary_frequencies(start, start + length, theta)
        else:
            kept = self.freq_complex[start - self.start_offset :].numpy()
            table = np.concatenate(
                [kept.astype(theta.dtype, copy=False), _rotary_frequencies(end, start + length, theta)],
                axis=0,
            )
        self._set_table(table)
        self.start_offset = int(start)

    def reset(self) -> None:
        """Move the window back to positions ``0..max_sequence_length``."""
        if self.start_offset == 0:
            return
        self._set_table(_rotary_frequencies(0, self.max_sequence_length, self._host_theta()))
        self.start_offset = 0

    def _host_theta(self) -> np.ndarray:
        precision = np.float64 if self.theta.dtype is dt.float64 else np.float32
        return np.asarray(self.theta.numpy(), dtype=precision)

    def _set_table(self, table: np.ndarray) -> None:
        self.freq_complex = from_numpy(np.ascontiguousarray(table), self.freq_complex.device).to(
            self.freq_complex.dtype
        )

    def extra_repr(self) -> dict:
        return {"d_model": self.d_model, "max_sequence_length": self.max_sequence_length}
