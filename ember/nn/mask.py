"""Attention masks: padding masks from token lists, autoregressive masks (Burn's ``mask.rs``).

Masks are bool tensors where True means *masked* (padding, or a forbidden position).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ember.record.config import Config
from ember.tensor.creation import from_numpy
from ember.tensor.tensor import Tensor

__all__ = [
    "Fixed",
    "GeneratePaddingMask",
    "Max",
    "NoMax",
    "SeqLength",
    "generate_autoregressive_mask",
    "generate_padding_mask",
]


class SeqLength(Config, frozen=True):
    """How long padded sequences are (Burn's ``SeqLengthOption``):

    * ``SeqLength.NoMax``: the longest sequence of the batch;
    * ``SeqLength.Max(n)``: the longest sequence, but at most ``n``;
    * ``SeqLength.Fixed(n)``: exactly ``n``.

    ``None`` and plain ints are accepted where a SeqLength is expected (None = NoMax,
    n = Max(n)), as Burn converts ``Option<usize>``.
    """

    def size(self, longest: int) -> int:
        """The padded length for a batch whose longest sequence has ``longest`` tokens."""
        raise NotImplementedError

    @staticmethod
    def of(value) -> "SeqLength":
        """Normalise None / an int / a SeqLength."""
        if isinstance(value, SeqLength):
            return value
        if value is None:
            return NoMax()
        if isinstance(value, int) and not isinstance(value, bool):
            return Max(value)
        raise TypeError(
            f"seq_length: expected SeqLength.NoMax, SeqLength.Max(n), SeqLength.Fixed(n), None or "
            f"an int, got {value!r}"
        )


class NoMax(SeqLength):
    """Pad to the longest sequence of the batch."""

    def size(self, longest: int) -> int:
        return longest


class _CountedSeqLength(SeqLength):
    """A SeqLength given a token count ``n`` (:class:`Max`, :class:`Fixed`)."""

    n: int

    def __post_init__(self):
        if self.n < 0:
            raise ValueError(f"SeqLength.{type(self).__name__}: n must be >= 0, got {self.n}")


class Max(_CountedSeqLength):
    """Pad to the longest sequence, truncating to at most ``n`` tokens."""

    def size(self, longest: int) -> int:
        return min(longest, self.n)


class Fixed(_CountedSeqLength):
    """Pad or truncate every sequence to exactly ``n`` tokens."""

    def size(self, longest: int) -> int:
        return self.n


SeqLength.NoMax = NoMax()
SeqLength.Max = Max
SeqLength.Fixed = Fixed


class GeneratePaddingMask(NamedTuple):
    """``tensor``: ``[B, S]`` int64 token ids padded with the pad token; ``mask``: ``[B, S]``
    bool, True where ``tensor`` equals the pad token."""

    tensor: Tensor
    mask: Tensor


def generate_padding_mask(
    pad_token: int, sequences: Sequence[Sequence[int]], seq_length=None, device=None
) -> GeneratePaddingMask:
    """Pad token sequences into one ``[B, S]`` tensor and its padding mask.

    Sequences longer than S keep their first S tokens. As in Burn, the mask is
    ``tensor == pad_token``, so a real token equal to the pad id is masked too.

    Args:
        pad_token: the padding id.
        sequences: B lists of token ids.
        seq_length: ``SeqLength.NoMax`` (None), ``SeqLength.Max(n)`` (an int) or
            ``SeqLength.Fixed(n)``.
        device: where to create the tensors.
    """
    rule = SeqLength.of(seq_length)
    seqs = [list(s) for s in sequences]
    longest = max((len(s) for s in seqs), default=1)
    size = rule.size(longest)
    out = np.full((len(seqs), size), int(pad_token), dtype=np.int64)
    for i, tokens in enumerate(seqs):
        n = min(len(tokens), size)
        if n:
            out[i, :n] = np.asarray(tokens[:n], dtype=np.int64)
    mask = out == int(pad_token)
    return GeneratePaddingMask(from_numpy(out, device), from_numpy(mask, device))


def generate_autoregressive_mask(batch_size: int, seq_length: int, device=None) -> Tensor:
    """``[batch, seq, seq]`` bool, True above the diagonal: position i may not attend to j > i."""
    upper = np.triu(np.ones((seq_length, seq_length), dtype=bool), k=1)
    return from_numpy(
        np.ascontiguousarray(np.broadcast_to(upper, (batch_size, seq_length, seq_length))), device
    )
