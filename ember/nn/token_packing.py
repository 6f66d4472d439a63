"""The real tokens of a padded batch packed into the rows of one matrix, and back.

A Transformer layer is token-wise everywhere except in attention: its projections, norms,
feed-forward, dropout and residuals treat each position on its own. Attention reads the padded
positions only as keys, and a padded key's weight is exactly zero (its score is filled with a
large negative value whose exponential underflows to 0), so nothing a real position computes
depends on what a padded position holds. An encoder can therefore run its token-wise parts on
the ``N`` real tokens only — a batch whose texts fill 60% of the sequence length does 60% of the
products — and scatter them back into the ``[B, S, ·]`` layout just around attention. There the
batch is cut to its *span*, the columns up to the last one holding a real token, so the padding
that ends every row of a batch (sequences padded to a fixed length) costs attention nothing
either.

``pack`` gathers rows with the ``index`` op and ``unpack`` scatters them with ``index_put`` into
zeros; each one's gradient is the other, over the same unique rows.
"""

from __future__ import annotations

import numpy as np

from ember.tensor.creation import tensor, zeros
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["TokenPacking"]


class TokenPacking:
    """The real (not padded) positions of a ``[B, S]`` padding mask.

    Args:
        mask_pad: ``[B, S]`` bool tensor, True at padding.

    Attributes:
        batch, seq: B and S.
        count: N, the number of real positions.
        span: the columns up to the last one that holds a real token (at most S).
        span_mask: ``mask_pad[:, :span]``, the padding mask of the span layout.
    """

    __slots__ = (
        "_first_at",
        "_first_rows",
        "_rows",
        "_span_rows",
        "batch",
        "count",
        "seq",
        "span",
        "span_mask",
    )

    def __init__(self, mask_pad: Tensor):
        if not isinstance(mask_pad, Tensor) or mask_pad.ndim != 2 or not mask_pad.dtype.is_bool:
            got = (
                f"{mask_pad.dtype} {shape_str(mask_pad.shape)}" if isinstance(mask_pad, Tensor) else mask_pad
            )
            raise ValueError(f"TokenPacking: mask_pad must be a [batch, seq] bool tensor, got {got}")
        self.batch, self.seq = mask_pad.shape
        device = mask_pad.device
        real = ~mask_pad.numpy()
        rows = np.flatnonzero(real.reshape(-1))
        self.count = int(rows.size)
        self._rows = tensor(rows.astype(np.int64), device=device)
        columns = np.flatnonzero(real.any(axis=0))
        self.span = int(columns[-1]) + 1 if columns.size else min(self.seq, 1)
        self.span_mask = mask_pad[:, : self.span] if self.span < self.seq else mask_pad
        span_rows = (rows // self.seq) * self.span + rows % self.seq
        self._span_rows = tensor(span_rows.astype(np.int64), device=device)
        # where each row's position 0 sits among the packed rows, for the rows where it is real
        first_real = np.flatnonzero(real[:, 0]) if self.seq else np.zeros(0, np.int64)
        self._first_rows = tensor(first_real.astype(np.int64), device=device)
        self._first_at = tensor(np.searchsorted(rows, first_real * self.seq).astype(np.int64), device=device)

    @property
    def fraction(self) -> float:
        """N / (B·S): the share of positions that are real."""
        total = self.batch * self.seq
        return self.count / total if total else 1.0

    def pack(self, x: Tensor) -> Tensor:
        """``[B, S, ...]`` -> ``[N, ...]``: the real positions' rows, in batch-major order."""
        return self._gather("pack", x, self.seq, self._rows)

    def unpack(self, h: Tensor) -> Tensor:
        """``[N, ...]`` -> ``[B, S, ...]``, zeros at the padded positions."""
        return self._scatter("unpack", h, self.seq, self._rows)

    def pack_span(self, x: Tensor) -> Tensor:
        """``[B, span, ...]`` -> ``[N, ...]``, as :meth:`pack` for the span layout."""
        return self._gather("pack_span", x, self.span, self._span_rows)

    def unpack_span(self, h: Tensor) -> Tensor:
        """``[N, ...]`` -> ``[B, span, ...]``, zeros at the padded positions."""
        return self._scatter("unpack_span", h, self.span, self._span_rows)

    def firsts(self, h: Tensor) -> Tensor:
        """``[N, ...]`` -> ``[B, 1, ...]``: each row's position 0, zeros where it is padding."""
        self._check("firsts", h, (self.count,))
        rest = tuple(h.shape[1:])
        out = zeros((self.batch,) + rest, dtype=h.dtype, device=h.device)
        return out.index_put(self._first_rows, h[self._first_at]).reshape((self.batch, 1) + rest)

    def _gather(self, op: str, x: Tensor, width: int, rows: Tensor) -> Tensor:
        self._check(op, x, (self.batch, width))
        return x.reshape((self.batch * width,) + tuple(x.shape[2:]))[rows]

    def _scatter(self, op: str, h: Tensor, width: int, rows: Tensor) -> Tensor:
        self._check(op, h, (self.count,))
        rest = tuple(h.shape[1:])
        out = zeros((self.batch * width,) + rest, dtype=h.dtype, device=h.device)
        return out.index_put(rows, h).reshape((self.batch, width) + rest)

    def _check(self, op: str, t: Tensor, lead: tuple) -> None:
        if not isinstance(t, Tensor) or tuple(t.shape[: len(lead)]) != lead:
            got = shape_str(t.shape) if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(f"TokenPacking.{op}: expected a tensor of shape {list(lead)} + [...], got {got}")
