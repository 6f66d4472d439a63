"""The embeddings of a BERT-family encoder: token + position (+ token type), LayerNorm, dropout.

Positions are ``0..S-1`` for BERT and DistilBERT. RoBERTa numbers only the real tokens,
starting after the padding id: ``position = cumsum(id != pad) · (id != pad) + pad``, so a
padding token gets position ``pad`` and the first real token ``pad + 1`` (what
``create_position_ids_from_input_ids`` does in ``transformers``).
"""

from __future__ import annotations

import ember
from ember import nn
from ember.tensor.tensor import Tensor

__all__ = ["EncoderEmbeddings"]


class EncoderEmbeddings(nn.Module):
    """``LayerNorm(word[ids] + position[pos] + token_type[types])`` then dropout.

    Args:
        word: ``[vocab, D]`` token embedding.
        position: ``[max_positions, D]`` position embedding.
        token_type: ``[type_vocab, D]`` segment embedding, or None (DistilBERT has none).
        norm: the LayerNorm.
        dropout: the dropout after it.
        pad_offset: None for positions ``0..S-1``; RoBERTa's padding id for its numbering.
    """

    def __init__(self, word, position, token_type, norm, dropout, pad_offset: int | None = None):
        self.word = word
        self.position = position
        self.token_type = token_type
        self.norm = norm
        self.dropout = dropout
        self.pad_offset = pad_offset

    def positions(self, ids: Tensor) -> Tensor:
        """Position ids ``[S]`` (or ``[B, S]`` for RoBERTa) of ``ids`` ``[B, S]``."""
        if self.pad_offset is None:
            return ember.arange(ids.shape[1], device=ids.device)
        real = ids.ne(self.pad_offset).to(ember.int64)
        return real.cumsum(1) * real + self.pad_offset

    def forward(self, ids: Tensor, token_type_ids: Tensor | None = None) -> Tensor:
        """Args:
            ids: ``[B, S]`` int token ids.
            token_type_ids: ``[B, S]`` int segment ids (zeros when None; ignored without a
                token-type embedding).

        Returns:
            ``[B, S, D]``.
        """
        x = self.word(ids) + self.position(self.positions(ids))
        if self.token_type is not None:
            types = ember.zeros_like(ids) if token_type_ids is None else token_type_ids
            x = x + self.token_type(types)
        return self.dropout(self.norm(x))
