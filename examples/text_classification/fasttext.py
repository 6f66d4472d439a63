"""A fastText-style text classifier (Joulin et al. 2017, "Bag of Tricks for Efficient Text
Classification"): the mean of the embeddings of a text's word-piece unigrams and hashed
n-grams, then a linear head, trained with cross-entropy.

* :class:`FastTextConfig` → :class:`FastTextModel`: ``nn.EmbeddingBag(vocab_size + buckets,
  d_model, mode="mean", sparse=True)`` (a row-sparse gradient: a step costs the rows a batch
  touches, not the 500,000-row table) and ``nn.Linear(d_model, n_classes)``. Parameter paths:
  ``embedding.weight``, ``output.weight``, ``output.bias``.
* :class:`FastTextBatcher` / :class:`FastTextInferenceBatcher`: texts (or pre-tokenized
  items, see :class:`TokenizedDataset`) → flat ``indices`` + ``offsets`` (+ ``labels``), the
  features of :mod:`text_classification.ngrams`.
* :func:`train_fasttext`: the run through :class:`ember.train.SupervisedTraining` with the
  example's metrics, checkpoints, ``config.json`` (a :class:`FastTextExperimentConfig`) and
  ``model.bpk``, as :func:`text_classification.training.train` does for the Transformer;
  :func:`load_fasttext` and :func:`evaluate_fasttext` read a run back.
* :data:`FASTTEXT_RECIPE`: the settings measured best on AG News and the DbPedia sample.

Both splits are tokenized once (:class:`TokenizedDataset`), not in every epoch: the tokenizer
costs about as much as a whole training epoch of this model; the batcher then only hashes the
n-grams of the stored ids, a small fraction of a step.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.fasttext import FastTextExperimentConfig, train_fasttext``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import ember
from ember import nn
from ember.data import DataLoaderBuilder, Dataset, SamplerDataset, check_index
from ember.nn.init import Initializer, Zeros
from ember.optim import AdamConfig, AdamWConfig, LinearLrSchedulerConfig, SgdConfig
from ember.record.config import ConfigError
from ember.train import Learner, SupervisedTraining
from text_classification.ngrams import DEFAULT_BUCKETS, HASH_VERSION, NGramHasher, flatten
from text_classification.tokenizer import load_tokenizer

__all__ = [
    "FASTTEXT_RECIPE",
    "LR_SCHEDULES",
    "FastTextBatch",
    "FastTextBatcher",
    "FastTextConfig",
    "FastTextExperimentConfig",
    "FastTextInferenceBatch",
    "FastTextInferenceBatcher",
    "FastTextModel",
    "TokenizedDataset",
    "TokenizedItem",
    "evaluate_fasttext",
    "fasttext_experiment",
    "fasttext_model_config",
    "load_fasttext",
    "predict_fasttext",
    "train_fasttext",
]

LR_SCHEDULES = ("linear", "constant")

# The settings measured best, per dataset (``TextClassificationDataset.NAME``), on 2 cores:
# AG News 46,432 train rows -> the full 7,600-row test split, and the shipped DbPedia sample
# (4,000 train -> 1,000 held-out). Both: lazy Adam (SparseAdam semantics on the table, dense on
# the head), the rate decayed linearly to 0 as fastText decays its SGD rate, label smoothing
# 0.2, batches of 64. AG News has 12x the rows: a lower rate, a narrower but larger table, and
# the first 24 word pieces (the title) as extra head features.
FASTTEXT_RECIPE: dict[str, dict[str, Any]] = {
    "ag_news": {
        "d_model": 16,
        "buckets": 2**21,
        "ngrams": 2,
        "head_tokens": 24,
        "max_tokens": 512,
        "label_smoothing": 0.2,
        "optimizer": "adam",
        "lr": 0.005,
        "lr_schedule": "linear",
        "batch_size": 64,
        "num_epochs": 5,
    },
    "dbpedia": {
        "d_model": 64,
        "buckets": 2**19,
        "ngrams": 2,
        "head_tokens": 0,
        "max_tokens": 512,
        "label_smoothing": 0.2,
        "optimizer": "adam",
        "lr": 0.05,
        "lr_schedule": "linear",
        "batch_size": 64,
        "num_epochs": 8,
    },
}
_DEFAULT = FASTTEXT_RECIPE["dbpedia"]


# ---------------------------------------------------------------------------------- model
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


class FastTextModel(nn.Module):
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
        return self.output(self.embedding(_on(indices, device), _on(offsets, device)))

    def loss(self, logits: ember.Tensor, labels: ember.Tensor) -> ember.Tensor:
        """Mean cross-entropy of ``logits [B, C]`` against ``labels [B]``."""
        smoothing = self.label_smoothing or None
        return nn.CrossEntropyLossConfig(smoothing=smoothing).init()(logits, _on(labels, logits.device))

    def forward(self, batch: FastTextBatch):
        """``ClassificationOutput(loss, logits, labels)`` of a training batch."""
        from ember.train import ClassificationOutput

        logits = self.logits(batch.indices, batch.offsets)
        labels = _on(batch.labels, logits.device)
        return ClassificationOutput(self.loss(logits, labels), logits, labels)

    def infer(self, batch: FastTextInferenceBatch) -> ember.Tensor:
        """Class probabilities ``[B, n_classes]`` (softmax of the logits)."""
        return ember.softmax(self.logits(batch.indices, batch.offsets), dim=1)

    def train_step(self, batch: FastTextBatch):
        """``TrainOutput(model, loss.backward(), ClassificationOutput)`` for ``SupervisedTraining``."""
        from ember.train import TrainOutput

        item = self.forward(batch)
        return TrainOutput(self, item.loss.backward(), item)

    def inference_step(self, batch: FastTextBatch):
        """The validation output (on ``model.valid()``): a ``ClassificationOutput``."""
        return self.forward(batch)


def _on(tensor: ember.Tensor, device) -> ember.Tensor:
    return tensor if tensor.device == device else tensor.to(device)


# ---------------------------------------------------------------------------------- data
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


# ---------------------------------------------------------------------------------- experiment
class FastTextExperimentConfig(ember.Config):
    """A fastText run's settings, saved as its ``config.json``. The defaults are
    ``FASTTEXT_RECIPE["dbpedia"]``; :func:`fasttext_experiment` gives each dataset's recipe.

    Args:
        d_model, buckets, ngrams, max_tokens, head_tokens, label_smoothing: the model (see
            :class:`FastTextConfig`).
        optimizer: ``AdamConfig`` (lazy Adam on the table, dense on the head), ``AdamWConfig``
            or ``SgdConfig``.
        lr: the peak rate.
        lr_schedule: ``"linear"`` (from ``lr`` to 0 over the run, as fastText) or ``"constant"``.
        batch_size: texts per batch.
        num_epochs: passes over the training split.
        train_samples: texts per epoch (0: the whole split, reshuffled every epoch).
        valid_samples: texts per validation (0: the whole split, in order).
        num_workers: data-loader worker processes (0: batches built in the training thread).
        seed: seeds the parameters and the shuffling.
        tokenizer: the tokenizer (None: the shipped bert-base-cased vocabulary).
        hash: the n-gram hash the run used (:data:`~text_classification.ngrams.HASH_VERSION`).
        model: ``"fasttext"`` (what the example's scripts dispatch on).
        recipe: the preset the run started from (informative).
    """

    d_model: int = _DEFAULT["d_model"]
    buckets: int = _DEFAULT["buckets"]
    ngrams: int = _DEFAULT["ngrams"]
    max_tokens: int = _DEFAULT["max_tokens"]
    head_tokens: int = _DEFAULT["head_tokens"]
    label_smoothing: float = _DEFAULT["label_smoothing"]
    optimizer: AdamConfig | AdamWConfig | SgdConfig = field(default_factory=lambda: AdamConfig(epsilon=1e-8))
    lr: float = _DEFAULT["lr"]
    lr_schedule: str = _DEFAULT["lr_schedule"]
    batch_size: int = _DEFAULT["batch_size"]
    num_epochs: int = _DEFAULT["num_epochs"]
    train_samples: int = 0
    valid_samples: int = 0
    num_workers: int = 0
    seed: int = 42
    tokenizer: str | None = None
    hash: str = HASH_VERSION
    model: str = "fasttext"
    recipe: str = "ember"

    def validate(self) -> "FastTextExperimentConfig":
        """Check the values; returns self (raises ``ValueError`` naming the field)."""
        for name in ("batch_size", "num_epochs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"FastTextExperimentConfig: {name} must be a positive int, got {value!r}")
        for name in ("train_samples", "valid_samples", "num_workers", "seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"FastTextExperimentConfig: {name} must be an int >= 0, got {value!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(
                f"FastTextExperimentConfig: lr_schedule must be one of {', '.join(LR_SCHEDULES)}, "
                f"got {self.lr_schedule!r}"
            )
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and 0 < self.lr <= 1):
            raise ValueError(f"FastTextExperimentConfig: lr must be in (0, 1], got {self.lr!r}")
        if self.hash != HASH_VERSION:
            raise ValueError(
                f"FastTextExperimentConfig: the run hashed its n-grams with {self.hash!r}, this code "
                f"with {HASH_VERSION!r}; its model would see other rows"
            )
        if self.model != "fasttext":
            raise ValueError(f"FastTextExperimentConfig: model must be 'fasttext', got {self.model!r}")
        if not isinstance(self.optimizer, (AdamConfig, AdamWConfig, SgdConfig)):
            raise TypeError(
                f"FastTextExperimentConfig: optimizer must be an AdamConfig, AdamWConfig or SgdConfig, "
                f"got {type(self.optimizer).__name__}"
            )
        return self


def fasttext_experiment(dataset: Any = "dbpedia", **overrides: Any) -> FastTextExperimentConfig:
    """The recipe of ``dataset`` in :data:`FASTTEXT_RECIPE` as a :class:`FastTextExperimentConfig`,
    with ``overrides`` applied.

    Args:
        dataset: a key of :data:`FASTTEXT_RECIPE` (``"ag_news"``, ``"dbpedia"``) or a dataset
            class / instance whose ``NAME`` is one.
        **overrides: fields of :class:`FastTextExperimentConfig`; ``optimizer`` may be
            ``"adam"``, ``"adamw"``, ``"sgd"`` or an optimizer config.
    """
    name = dataset if isinstance(dataset, str) else getattr(dataset, "NAME", None)
    if name not in FASTTEXT_RECIPE:
        raise ValueError(
            f"fasttext_experiment: no recipe for {dataset!r}; recipes exist for {', '.join(FASTTEXT_RECIPE)}"
        )
    settings = {**FASTTEXT_RECIPE[name], **overrides}
    optimizer = settings.pop("optimizer")
    if isinstance(optimizer, str):
        builders = {
            "adam": lambda: AdamConfig(epsilon=1e-8),
            "adamw": lambda: AdamWConfig(epsilon=1e-8),
            "sgd": SgdConfig,
        }
        if optimizer not in builders:
            raise ValueError(
                f"fasttext_experiment: optimizer must be one of {', '.join(builders)} or a config, "
                f"got {optimizer!r}"
            )
        optimizer = builders[optimizer]()
    return FastTextExperimentConfig(optimizer=optimizer, **settings).validate()


def fasttext_model_config(
    config: FastTextExperimentConfig, n_classes: int, vocab_size: int
) -> FastTextConfig:
    """The model configuration an experiment implies."""
    return FastTextConfig(
        vocab_size,
        n_classes,
        d_model=config.d_model,
        buckets=config.buckets,
        ngrams=config.ngrams,
        max_tokens=config.max_tokens,
        head_tokens=config.head_tokens,
        label_smoothing=config.label_smoothing,
    ).validate()


def _build_dataloaders(dataset_train, dataset_test, config: FastTextExperimentConfig, batcher, device):
    train = dataset_train
    if config.train_samples:
        train = SamplerDataset(train, config.train_samples, with_replacement=False, seed=config.seed)
    builder = (
        DataLoaderBuilder(batcher)
        .batch_size(config.batch_size)
        .num_workers(config.num_workers)
        .set_device(device)
    )
    loader_train = builder.shuffle(config.seed).build(train)
    test = dataset_test
    if config.valid_samples:
        test = SamplerDataset(test, config.valid_samples, with_replacement=False, seed=config.seed + 1)
    loader_test = (
        DataLoaderBuilder(batcher)
        .batch_size(max(config.batch_size, 256))
        .num_workers(config.num_workers)
        .set_device(device)
        .build(test)
    )
    return loader_train, loader_test


def _lr_scheduler(config: FastTextExperimentConfig, total_steps: int):
    if config.lr_schedule == "constant" or total_steps < 2:
        return config.lr
    return LinearLrSchedulerConfig(config.lr, 0.0, total_steps)


def train_fasttext(
    artifact_dir: str | os.PathLike,
    dataset_train,
    dataset_test,
    config: FastTextExperimentConfig,
    device="cpu",
    dataset_cls: Any = None,
    dtype=None,
    renderer=None,
    checkpoint: int | None = None,
    tokenizer=None,
    plots: bool = False,
    pretokenize: bool = True,
):
    """Train a fastText-style classifier for ``dataset_cls``; save ``config.json`` and ``model.bpk``.

    The artifact layout, metrics (train: iteration speed, loss, accuracy, learning rate; valid:
    loss, accuracy), checkpoints and summary are :func:`text_classification.training.train`'s.

    Args:
        artifact_dir: where every artifact goes (created; a stale ``experiment.log`` removed).
        dataset_train: the training split (items ``TextClassificationItem``).
        dataset_test: the split used for validation.
        config: the run's settings (e.g. :func:`fasttext_experiment`).
        device: ``"cpu"``, ``"reference"`` or ``"cuda:N"``.
        dataset_cls: the dataset class giving ``num_classes()`` (default ``type(dataset_train)``).
        dtype: the float dtype of the model (None: float32).
        renderer: the display (None: the dashboard on a terminal, plain lines otherwise).
        checkpoint: resume from the checkpoint of this epoch.
        tokenizer: a tokenizer object (default ``load_tokenizer(config.tokenizer)``).
        plots: draw ``plots/<Metric>.png`` after every epoch (needs matplotlib).
        pretokenize: tokenize both splits once up front (:class:`TokenizedDataset`) instead of
            in every batch of every epoch.

    Returns:
        The ``LearningResult`` (``result.model`` is the trained model in inference mode).
    """
    from text_classification.training import create_artifact_dir, register_metrics

    config.validate()
    dataset_cls = type(dataset_train) if dataset_cls is None else dataset_cls
    artifact_dir = create_artifact_dir(artifact_dir)
    ember.seed(config.seed)
    tokenizer = load_tokenizer(config.tokenizer) if tokenizer is None else tokenizer
    model_config = fasttext_model_config(config, dataset_cls.num_classes(), tokenizer.vocab_size())
    model = model_config.init(device, dtype)
    if pretokenize:
        dataset_train = TokenizedDataset(dataset_train, tokenizer)
        dataset_test = TokenizedDataset(dataset_test, tokenizer)
    batcher = FastTextBatcher(tokenizer, model_config)
    loader_train, loader_test = _build_dataloaders(dataset_train, dataset_test, config, batcher, device)
    lr_scheduler = _lr_scheduler(config, config.num_epochs * len(loader_train))

    training = register_metrics(SupervisedTraining(artifact_dir, loader_train, loader_test), device)
    training = training.with_default_checkpointers().num_epochs(config.num_epochs).summary().with_plots(plots)
    if renderer is not None:
        training = training.renderer(renderer)
    if checkpoint is not None:
        training = training.checkpoint(checkpoint)
    result = training.launch(Learner(model, config.optimizer.init(), lr_scheduler))
    config.save(artifact_dir / "config.json")
    result.model.save_file(artifact_dir / "model.bpk")
    return result


def load_fasttext(artifact_dir: str | os.PathLike, dataset_cls, device="cpu", dtype=None, tokenizer=None):
    """``(config, tokenizer, model)`` of a fastText run from its ``config.json`` and ``model.bpk``;
    the model is in inference mode.

    Args:
        artifact_dir: the run's artifact directory.
        dataset_cls: the dataset class (``num_classes()``).
        device: where the model runs.
        dtype: the float dtype to build the model in (None: float32).
        tokenizer: a tokenizer (default: the one the run recorded).
    """
    from ember.nn.module_record import DTypePolicy

    artifact_dir = Path(artifact_dir)
    path = artifact_dir / "config.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no training config at {path}: train a fastText model into {artifact_dir} first"
        )
    try:
        config = FastTextExperimentConfig.load(path, fill_defaults=True).validate()
    except (ConfigError, ValueError, TypeError) as error:
        raise ValueError(
            f"{path} is not the config of a fastText run of this example ({error}); train one with "
            "train_fasttext, or load a Transformer run with text_classification.inference"
        ) from error
    weights = artifact_dir / "model.bpk"
    if not weights.is_file():
        raise FileNotFoundError(
            f"no trained weights at {weights}: train a fastText model into {artifact_dir} first"
        )
    tokenizer = load_tokenizer(config.tokenizer) if tokenizer is None else tokenizer
    model = fasttext_model_config(config, dataset_cls.num_classes(), tokenizer.vocab_size()).init(
        device, dtype
    )
    policy = DTypePolicy.CastToModule if dtype is not None else None
    return config, tokenizer, model.load_file(weights, dtype_policy=policy).valid()


def evaluate_fasttext(
    model: FastTextModel, batcher: FastTextBatcher, dataset, device="cpu", batch_size: int = 1024
) -> float:
    """Accuracy (%) of ``model`` over every item of ``dataset``, in order.

    Args:
        model: a trained model (inference mode).
        batcher: a :class:`FastTextBatcher` of the model's config.
        dataset: items ``TextClassificationItem`` or ``TokenizedItem``.
        device: where the model runs.
        batch_size: items per forward pass.
    """
    correct = 0
    with ember.no_grad():
        for start in range(0, len(dataset), batch_size):
            items = [dataset[i] for i in range(start, min(start + batch_size, len(dataset)))]
            batch = batcher.batch(items, device)
            predicted = model.logits(batch.indices, batch.offsets).numpy().argmax(1)
            correct += int((predicted == batch.labels.numpy()).sum())
    return 100.0 * correct / max(len(dataset), 1)


def predict_fasttext(
    model: FastTextModel, tokenizer, model_config: FastTextConfig, texts: Sequence[str], device="cpu"
) -> np.ndarray:
    """Class probabilities ``[len(texts), n_classes]`` (float32 NumPy) of ``texts`` in one batch.

    Args:
        model: a trained model (inference mode).
        tokenizer: its tokenizer.
        model_config: its :class:`FastTextConfig` (``fasttext_model_config(config, n_classes,
            tokenizer.vocab_size())`` of the run's config).
        texts: the strings.
        device: where the model runs.
    """
    batch = FastTextInferenceBatcher(tokenizer, model_config).batch(list(texts), device)
    with ember.no_grad():
        return model.infer(batch).float().numpy()
