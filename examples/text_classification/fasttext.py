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

The pieces live in modules of their own, re-exported here: the model and its batches in
:mod:`text_classification.fasttext_model`, the tokenized datasets and batchers in
:mod:`text_classification.fasttext_data`, the preset in :mod:`text_classification.recipes`;
this module holds the run (its config, training, loading, evaluation).

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
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

import ember
from ember.data import DataLoaderBuilder, SamplerDataset
from ember.optim import AdamConfig, AdamWConfig, LinearLrSchedulerConfig, SgdConfig
from ember.record.config import ConfigError
from ember.train import Learner, SupervisedTraining
from text_classification.classifier import accuracy
from text_classification.fasttext_data import (
    FastTextBatcher,
    FastTextInferenceBatcher,
    TokenizedDataset,
    TokenizedItem,
)
from text_classification.fasttext_model import (
    FastTextBatch,
    FastTextConfig,
    FastTextInferenceBatch,
    FastTextModel,
)
from text_classification.ngrams import HASH_VERSION
from text_classification.recipes import FASTTEXT_RECIPE
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
_DEFAULT = FASTTEXT_RECIPE["dbpedia"]


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
    return accuracy(model, batcher, dataset, device, batch_size)


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
