"""The fastText-style model: :class:`FastTextConfig` -> :class:`FastTextModel` (the mean of a
text's word-piece and hashed n-gram embeddings, then a linear head) and its batches
:class:`FastTextBatch` / :class:`FastTextInferenceBatch`. The rest of the fastText pieces:
:mod:`text_classification.fasttext_data` (tokenized datasets, batchers) and
:mod:`text_classification.fasttext` (the run: config, training, loading).

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.fasttext_model import FastTextConfig``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import ember
from ember import nn
from ember.nn.init import Initializer, Zeros
from text_classification.classifier import ClassifierModule, on_device
from text_classification.ngrams import DEFAULT_BUCKETS, NGramHasher


class FastTextConfig(ember.Config):
    """Configuration of :class:`FastTextModel` (a run's :class:`FastTextExperimentConfig`, its
    ``config.json``, implies it through :func:`fasttext_model_config`).

    Args:
        vocab_size: unigram rows (the tokenizer's ``vocab_size()``).
        n_classes: number of classes.
        d_model: embedding size (64).
        buckets: hashed n-gram rows after the vocabulary (2^19).
        ngrams: the longest n-gram: 1 unigrams only, 2 adds hashed bigrams, 3 trigrams.
        max_tokens: word pieces kept per text (its first ones).
        head_tokens: the first ``head_tokens`` word pieces also count as separate hashed head
            features (0: none; see :class:`~text_classification.ngrams.NGramHasher`).
        initializer: of the table; default U(±1/d_model), as fastText's input matrix.
        label_smoothing: label smoothing α of the training loss in [0, 1).
    """

    vocab_size: int
    n_classes: int
    d_model: int = 64
    buckets: int = DEFAULT_BUCKETS
    ngrams: int = 2
    max_tokens: int = 512
    head_tokens: int = 0
    initializer: Initializer | None = None
    label_smoothing: float = 0.0

    def validate(self) -> "FastTextConfig":
        """Check the values; returns self (raises ``ValueError`` naming the field)."""
        for name, low in (
            ("vocab_size", 1),
            ("n_classes", 1),
            ("d_model", 1),
            ("buckets", 0),
            ("ngrams", 1),
            ("max_tokens", 1),
            ("head_tokens", 0),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"FastTextConfig: {name} must be an int >= {low}, got {value!r}")
        if (self.ngrams > 1 or self.head_tokens > 0) and self.buckets < 1:
            raise ValueError(
                f"FastTextConfig: ngrams={self.ngrams} / head_tokens={self.head_tokens} need buckets >= 1"
            )
        if not 0.0 <= float(self.label_smoothing) < 1.0:
            raise ValueError(
                f"FastTextConfig: label_smoothing must be in [0, 1), got {self.label_smoothing!r}"
            )
        return self

    @property
    def num_rows(self) -> int:
        """Rows of the embedding table: ``vocab_size + buckets``."""
        return self.vocab_size + self.buckets

    def hasher(self, drop_ids: Sequence[int] = ()) -> NGramHasher:
        """The :class:`~text_classification.ngrams.NGramHasher` of this model's features."""
        return NGramHasher(
            self.vocab_size, self.buckets, self.ngrams, self.max_tokens, self.head_tokens, drop_ids
        )

    def init(self, device=None, dtype=None) -> "FastTextModel":
        """Build the model on ``device`` with float ``dtype`` (float32 by default).

        The default table U(±1/d_model) is drawn by NumPy's PCG64 from a seed drawn from ember's
        generator (so ``ember.seed`` reproduces it): ten times faster than ``nn.init.Uniform``
        for a table of 35 million values, which would otherwise cost a second per run.
        """
        self.validate()
        if self.initializer is not None:
            embedding = nn.EmbeddingBagConfig(
                self.num_rows, self.d_model, mode="mean", initializer=self.initializer, sparse=True
            ).init(device, dtype)
        else:
            bound = 1.0 / self.d_model
            seed = int(ember.randint(0, 2**62, (1,)).item())
            table = np.random.default_rng(seed).random((self.num_rows, self.d_model), dtype=np.float32)
            table *= 2.0 * bound
            table -= bound
            value = ember.from_numpy(table, device=device)
            if dtype is not None and value.dtype != ember.dtype(dtype):
                value = value.to(ember.dtype(dtype))
            embedding = nn.EmbeddingBag(nn.Param(value), mode="mean", sparse=True)
        output = nn.LinearConfig(self.d_model, self.n_classes, initializer=Zeros()).init(device, dtype)
        return FastTextModel(embedding, output, self.n_classes, float(self.label_smoothing))


@dataclass
class FastTextBatch:
    """A training/validation batch.

    Args:
        indices: ``[N]`` int64 row ids, bag after bag.
        offsets: ``[B]`` int64, where each bag starts.
        labels: ``[B]`` int64 classes.
    """

    indices: ember.Tensor
    offsets: ember.Tensor
    labels: ember.Tensor


@dataclass
class FastTextInferenceBatch:
    """An inference batch: ``indices [N]`` and ``offsets [B]`` (int64)."""

    indices: ember.Tensor
    offsets: ember.Tensor


class FastTextModel(ClassifierModule):
    """Mean of the bag's embeddings -> linear head.

    Args:
        embedding: ``EmbeddingBag [vocab_size + buckets, d_model]``, mode mean.
        output: ``Linear(d_model, n_classes)``.
        n_classes: number of classes.
        label_smoothing: label smoothing α of :meth:`loss`.
    """

    def __init__(
        self, embedding: nn.EmbeddingBag, output: nn.Linear, n_classes: int, label_smoothing: float = 0.0
    ):
        self.embedding = embedding
        self.output = output
        self.n_classes = int(n_classes)
        self.label_smoothing = float(label_smoothing)

    def logits(self, indices: ember.Tensor, offsets: ember.Tensor) -> ember.Tensor:
        """Class logits ``[B, n_classes]``.

        Args:
            indices: ``[N]`` int row ids in ``[0, vocab_size + buckets)``.
            offsets: ``[B]`` int bag starts (``offsets[0] = 0``).

        Raises:
            IndexError: an id outside the table, naming its size.
        """
        device = self.embedding.weight.device
        return self.output(self.embedding(on_device(indices, device), on_device(offsets, device)))

    def batch_logits(self, batch: FastTextBatch | FastTextInferenceBatch) -> ember.Tensor:
        """:meth:`logits` of a batch of the fastText batchers."""
        return self.logits(batch.indices, batch.offsets)
