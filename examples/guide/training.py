"""The guide's training (Burn book, "Training"): ``TrainingConfig`` and ``train``.

``train`` saves the config as ``config.json`` in the artifact directory, builds the two data
loaders, registers accuracy and loss on both splits, turns on the default checkpointers
(model, optimizer and scheduler after every epoch, under ``checkpoint/``), trains with
``SupervisedTraining`` and saves the trained model as ``model.bpk``. As in the book the test
split doubles as the validation split (do not do that for real work).

The artifact directory then holds (Burn's layout)::

    config.json  model.bpk  experiment.log
    checkpoint/{model,optim,scheduler}-<epoch>.bpk
    train/epoch-<e>/{Accuracy,Loss}.log   valid/epoch-<e>/{Accuracy,Loss}.log
"""

from __future__ import annotations

import os
from pathlib import Path

import ember
from ember.optim import AdamConfig
from ember.train import Learner, SupervisedTraining
from ember.train.metric import AccuracyMetric, LossMetric
from guide.data import SOURCES, load_loaders
from guide.model import ModelConfig

__all__ = ["TrainingConfig", "create_artifact_dir", "train"]


class TrainingConfig(ember.Config):
    """The experiment's settings, saved as ``config.json`` (the book's ``TrainingConfig``).

    Args:
        model: the model's config.
        optimizer: the optimizer's config (the book: ``AdamConfig::new()``).
        num_epochs: passes over the train split (10).
        batch_size: items per batch (64).
        num_workers: data-loader worker processes (the book uses 4; 0 here: the digits are
            tiny and batches are cheap to build in the training process).
        seed: seeds the parameters, dropout and the shuffling (42).
        learning_rate: a constant learning rate (1e-4).
        source: where the images come from, ``"digits"`` or ``"mnist"``; beyond the book,
            kept so that inference normalises images as training did.
    """

    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 0
    seed: int = 42
    learning_rate: float = 1e-4
    source: str = "digits"


def create_artifact_dir(artifact_dir: str | os.PathLike) -> None:
    """Create ``artifact_dir`` and remove the previous run's ``experiment.log`` (as the book)."""
    path = Path(artifact_dir)
    (path / "experiment.log").unlink(missing_ok=True)
    path.mkdir(parents=True, exist_ok=True)


def train(artifact_dir: str | os.PathLike, config: TrainingConfig, device="cpu", limit: int | None = None):
    """Train the guide's model and save ``config.json`` and ``model.bpk`` in ``artifact_dir``.

    Args:
        artifact_dir: where every artifact goes.
        config: the experiment's settings.
        device: where the model and batches live (``"cpu"``, ``"reference"``, ``"cuda:0"``).
        limit: use only the first ``limit`` train items (None: all); for quick runs and tests.

    Returns:
        The ``LearningResult`` of ``SupervisedTraining.launch`` (``result.model`` is the
        trained model in inference mode).
    """
    if config.source not in SOURCES:
        raise ValueError(f"train: unknown source {config.source!r}; expected one of {SOURCES}")
    artifact_dir = str(artifact_dir)
    create_artifact_dir(artifact_dir)
    config.save(f"{artifact_dir}/config.json")

    ember.seed(config.seed)
    dataloader_train, dataloader_test = load_loaders(config.source, config, device, limit)

    training = (
        SupervisedTraining(artifact_dir, dataloader_train, dataloader_test)
        .metrics(AccuracyMetric(), LossMetric())
        .with_default_checkpointers()
        .num_epochs(config.num_epochs)
        .summary()
    )

    model = config.model.init(device)
    result = training.launch(Learner(model, config.optimizer.init(), config.learning_rate))
    result.model.save_file(f"{artifact_dir}/model")  # -> model.bpk
    return result
