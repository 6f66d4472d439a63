"""Batchers of the example (Burn's ``src/data/batcher.rs``): items -> token ids, padding mask, labels.

Texts are tokenized together (``encode_batch``, parallel in the ``tokenizers`` library), then
padded or cut to ``max_seq_length`` by :func:`ember.nn.generate_padding_mask` with
``SeqLength.Fixed``: a longer text keeps its first ``max_seq_length`` tokens, as in Burn, and
the mask is True at padding. Both batchers are picklable (the data loader's workers run them).

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.batcher import TextClassificationBatcher``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

import ember
from ember import nn

from text_classification.dataset import TextClassificationItem

__all__ = ["TextClassificationBatcher", "TextClassificationInferenceBatch", "TextClassificationInferenceBatcher",
           "TextClassificationTrainingBatch"]


@dataclass
class TextClassificationTrainingBatch:
    """A training/validation batch.

    Args:
        tokens: ``[B, S]`` int64 token ids, padded with the pad id.
        labels: ``[B]`` int64 classes.
        mask_pad: ``[B, S]`` bool, True at padding.
    """

    tokens: ember.Tensor
    labels: ember.Tensor
    mask_pad: ember.Tensor


@dataclass
class TextClassificationInferenceBatch:
    """An inference batch.

    Args:
        tokens: ``[B, S]`` int64 token ids, padded with the pad id.
        mask_pad: ``[B, S]`` bool, True at padding.
    """

    tokens: ember.Tensor
    mask_pad: ember.Tensor


class _TokenizingBatcher:
    def __init__(self, tokenizer, max_seq_length: int, device=None):
        if not isinstance(max_seq_length, int) or isinstance(max_seq_length, bool) or max_seq_length < 1:
            raise ValueError(f"{type(self).__name__}: max_seq_length must be a positive int, got {max_seq_length!r}")
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.device = device

    def _tokens_and_mask(self, texts: Sequence[str], device) -> nn.GeneratePaddingMask:
        if not texts:
            raise ValueError(f"{type(self).__name__}: cannot build a batch from no items")
        size = self.max_seq_length
        # Cut first (cheap list slices), then let generate_padding_mask pad and build the mask.
        ids = [seq[:size] for seq in self.tokenizer.encode_batch(texts)]
        return nn.generate_padding_mask(self.tokenizer.pad_token(), ids, nn.SeqLength.Fixed(size),
                                        self.device if device is None else device)


class TextClassificationBatcher(_TokenizingBatcher):
    """:class:`TextClassificationItem` list -> :class:`TextClassificationTrainingBatch`.

    Args:
        tokenizer: a :class:`~text_classification.tokenizer.BertCasedTokenizer` (anything with
            ``encode_batch`` and ``pad_token``).
        max_seq_length: the fixed sequence length S.
        device: the default device for :meth:`batch` when it is given none.
    """

    def batch(self, items: Sequence[TextClassificationItem], device: Any = None) -> TextClassificationTrainingBatch:
        """Tokenize, pad/cut to S, and stack the labels.

        Args:
            items: the batch's items.
            device: where to create the tensors (default: the batcher's device).
        """
        items = list(items)
        padded = self._tokens_and_mask([item.text for item in items], device)
        labels = np.fromiter((item.label for item in items), dtype=np.int64, count=len(items))
        labels_t = ember.from_numpy(labels, device=self.device if device is None else device)
        return TextClassificationTrainingBatch(tokens=padded.tensor, labels=labels_t, mask_pad=padded.mask)


class TextClassificationInferenceBatcher(_TokenizingBatcher):
    """list of texts -> :class:`TextClassificationInferenceBatch`.

    Args:
        tokenizer: a :class:`~text_classification.tokenizer.BertCasedTokenizer`.
        max_seq_length: the fixed sequence length S.
        device: the default device for :meth:`batch` when it is given none.
    """

    def batch(self, items: Sequence[str], device: Any = None) -> TextClassificationInferenceBatch:
        """Tokenize and pad/cut to S.

        Args:
            items: the texts.
            device: where to create the tensors (default: the batcher's device).
        """
        texts = [item.text if isinstance(item, TextClassificationItem) else item for item in items]
        padded = self._tokens_and_mask(texts, device)
        return TextClassificationInferenceBatch(tokens=padded.tensor, mask_pad=padded.mask)
