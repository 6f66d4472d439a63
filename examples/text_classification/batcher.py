"""Batchers of the example (Burn's ``src/data/batcher.rs``): items -> token ids, padding mask, labels.

Texts are tokenized together (``encode_batch``, parallel in the ``tokenizers`` library), then
padded or cut to ``max_seq_length`` by :func:`ember.nn.generate_padding_mask` with
``SeqLength.Fixed``: a longer text keeps its first ``max_seq_length`` tokens, as in Burn, and
the mask is True at padding. Both batchers are picklable (the data loader's workers run them).

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.batcher import TextClassificationBatcher``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import ember
from ember import nn
from text_classification.dataset import TextClassificationItem


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
            raise ValueError(
                f"{type(self).__name__}: max_seq_length must be a positive int, got {max_seq_length!r}"
            )
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.device = device

    def _tokens_and_mask(self, texts: Sequence[str], device, transform=None) -> nn.GeneratePaddingMask:
        if not texts:
            raise ValueError(f"{type(self).__name__}: cannot build a batch from no items")
        size = self.max_seq_length
        # Cut first (cheap list slices), then let generate_padding_mask pad and build the mask.
        ids = [seq[:size] for seq in self.tokenizer.encode_batch(texts)]
        if transform is not None:
            ids = transform(ids)
        return nn.generate_padding_mask(
            self.tokenizer.pad_token(),
            ids,
            nn.SeqLength.Fixed(size),
            self.device if device is None else device,
        )


class TextClassificationBatcher(_TokenizingBatcher):
    """:class:`TextClassificationItem` list -> :class:`TextClassificationTrainingBatch`.

    Args:
        tokenizer: a :class:`~text_classification.tokenizer.BertCasedTokenizer` (anything with
            ``encode_batch``, ``pad_token`` and, for ``token_dropout``, ``token_to_id``).
        max_seq_length: the fixed sequence length S.
        device: the default device for :meth:`batch` when it is given none.
        token_dropout: the probability that a word piece (not ``[CLS]``, ``[SEP]`` or padding)
            is replaced by ``[UNK]`` — an augmentation for training batches: the model cannot
            lean on any single word piece. 0 (the default) leaves the texts as they are.
        seed: seeds the replacement. Each batch draws from ``(seed, a hash of its token ids)``,
            so a batch is augmented the same way whichever worker builds it and after a resume,
            while the reshuffled batches of every epoch draw anew.
    """

    def __init__(
        self, tokenizer, max_seq_length: int, device=None, token_dropout: float = 0.0, seed: int = 0
    ):
        super().__init__(tokenizer, max_seq_length, device)
        if not (isinstance(token_dropout, (int, float)) and 0.0 <= token_dropout < 1.0):
            raise ValueError(
                f"TextClassificationBatcher: token_dropout must be in [0, 1), got {token_dropout!r}"
            )
        self.token_dropout = float(token_dropout)
        self.seed = seed
        if self.token_dropout:
            ids = {name: tokenizer.token_to_id(name) for name in ("[UNK]", "[CLS]", "[SEP]")}
            missing = [name for name, i in ids.items() if i is None]
            if missing:
                raise ValueError(
                    f"TextClassificationBatcher: token_dropout needs the tokens {missing} in the vocabulary"
                )
            self._unk = ids["[UNK]"]
            self._kept = np.array([ids["[CLS]"], ids["[SEP]"], tokenizer.pad_token()], dtype=np.int64)

    def _drop_tokens(self, ids: list[list[int]]) -> list[list[int]]:
        flat = np.fromiter((t for seq in ids for t in seq), dtype=np.int64)
        rng = np.random.default_rng((self.seed, zlib.crc32(flat.tobytes())))
        dropped = (rng.random(flat.size) < self.token_dropout) & ~np.isin(flat, self._kept)
        flat[dropped] = self._unk
        bounds = np.cumsum([0] + [len(seq) for seq in ids])
        return [flat[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]

    def batch(
        self, items: Sequence[TextClassificationItem], device: Any = None
    ) -> TextClassificationTrainingBatch:
        """Tokenize, pad/cut to S, and stack the labels.

        Args:
            items: the batch's items.
            device: where to create the tensors (default: the batcher's device).
        """
        items = list(items)
        transform = self._drop_tokens if self.token_dropout else None
        padded = self._tokens_and_mask([item.text for item in items], device, transform)
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
