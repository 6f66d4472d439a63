"""The fastText-style model's data: :class:`TokenizedDataset` (a split tokenized once, held as one
flat array) and the batchers that turn texts or tokenized items into the hashed features of
:mod:`text_classification.ngrams` (:class:`FastTextBatcher`, :class:`FastTextInferenceBatcher`).

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.fasttext_data import FastTextBatcher``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import ember
from ember.data import Dataset, check_index
from text_classification.fasttext_model import FastTextBatch, FastTextConfig, FastTextInferenceBatch
from text_classification.ngrams import flatten


@dataclass(frozen=True)
class TokenizedItem:
    """One text's word-piece ids (special tokens included, as the tokenizer gives them) and label."""

    ids: np.ndarray
    label: int


class TokenizedDataset(Dataset[TokenizedItem]):
    """A dataset tokenized once, held as one flat int32 array (compact, quick to pickle).

    Args:
        dataset: items :class:`~text_classification.dataset.TextClassificationItem`.
        tokenizer: anything with ``encode_batch``.
        chunk: texts per ``encode_batch`` call.
    """

    def __init__(self, dataset, tokenizer, chunk: int = 4096):
        tokens, lengths, labels = [], [], []
        n = len(dataset)
        for start in range(0, n, chunk):
            items = (
                dataset.get_many(range(start, min(start + chunk, n)))
                if hasattr(dataset, "get_many")
                else [dataset[i] for i in range(start, min(start + chunk, n))]
            )
            flat, length = flatten(tokenizer.encode_batch([item.text for item in items]))
            tokens.append(flat.astype(np.int32))
            lengths.append(length)
            labels.append(np.fromiter((item.label for item in items), dtype=np.int64, count=len(items)))
        self.tokens = np.concatenate(tokens) if tokens else np.zeros(0, np.int32)
        lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
        self.starts = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.starts[1:])
        self.labels = np.concatenate(labels) if labels else np.zeros(0, np.int64)

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def get(self, index: int) -> TokenizedItem:
        i = check_index("TokenizedDataset", index, len(self))
        return TokenizedItem(self.tokens[self.starts[i] : self.starts[i + 1]], int(self.labels[i]))

    def get_many(self, indices: Sequence[int]) -> list[TokenizedItem]:
        n, tokens, starts, labels = len(self), self.tokens, self.starts, self.labels
        out = []
        for index in indices:
            i = check_index("TokenizedDataset", index, n)
            out.append(TokenizedItem(tokens[starts[i] : starts[i + 1]], int(labels[i])))
        return out

    def __repr__(self) -> str:
        return f"TokenizedDataset(len={len(self)}, tokens={self.tokens.shape[0]})"


class _FeatureBatcher:
    def __init__(self, tokenizer, config: FastTextConfig, device=None):
        if not isinstance(config, FastTextConfig):
            raise TypeError(
                f"{type(self).__name__}: config must be a FastTextConfig, got {type(config).__name__}"
            )
        self.tokenizer = tokenizer
        self.config = config.validate()
        special = (
            [tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]")]
            if callable(getattr(tokenizer, "token_to_id", None))
            else []
        )
        self.hasher = config.hasher([i for i in special if i is not None])
        self.device = device

    def _features(self, items: Sequence, device):
        if not items:
            raise ValueError(f"{type(self).__name__}: cannot build a batch from no items")
        tokenized = [isinstance(item, TokenizedItem) for item in items]
        if all(tokenized):
            tokens = np.concatenate([item.ids for item in items]).astype(np.int64, copy=False)
            lengths = np.fromiter((item.ids.shape[0] for item in items), dtype=np.int64, count=len(items))
            features = self.hasher.features_flat(tokens, lengths)
        elif any(tokenized):
            raise TypeError(
                f"{type(self).__name__}: a batch mixes TokenizedItem and text items; batch one kind"
            )
        else:
            texts = [item if isinstance(item, str) else item.text for item in items]
            features = self.hasher.features(self.tokenizer.encode_batch(texts))
        device = self.device if device is None else device
        return ember.from_numpy(features.indices, device=device), ember.from_numpy(
            features.offsets, device=device
        )


class FastTextBatcher(_FeatureBatcher):
    """Items (:class:`TextClassificationItem` or :class:`TokenizedItem`) -> :class:`FastTextBatch`.

    Args:
        tokenizer: a :class:`~text_classification.tokenizer.BertCasedTokenizer` (``encode_batch``,
            ``token_to_id``); its ``[CLS]``, ``[SEP]``, ``[PAD]`` are left out of the bags.
        config: the model's :class:`FastTextConfig` (vocabulary, buckets, n, max_tokens).
        device: the default device of :meth:`batch`.
    """

    def batch(self, items: Sequence, device: Any = None) -> FastTextBatch:
        """Tokenize (unless pre-tokenized), hash the n-grams, stack the labels."""
        items = list(items)
        indices, offsets = self._features(items, device)
        labels = np.fromiter((item.label for item in items), dtype=np.int64, count=len(items))
        return FastTextBatch(
            indices, offsets, ember.from_numpy(labels, device=self.device if device is None else device)
        )


class FastTextInferenceBatcher(_FeatureBatcher):
    """Texts (or items) -> :class:`FastTextInferenceBatch` (arguments as :class:`FastTextBatcher`)."""

    def batch(self, items: Sequence, device: Any = None) -> FastTextInferenceBatch:
        """Tokenize and hash the n-grams of ``items``."""
        return FastTextInferenceBatch(*self._features(list(items), device))
