"""The guide's inference (Burn book, "Inference"): reload the trained model and predict.

Two things are needed to rebuild a trained model: its config (``config.json``, which holds
the model's config) and its record (``model.bpk``). ``config.model.init(device)`` builds a
model of the right shape and ``load_file`` puts the trained values (batch-norm running
statistics included) into it; ``valid()`` makes the inference copy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from guide.data import MnistBatcher, MnistItem
from guide.training import TrainingConfig

__all__ = ["Prediction", "evaluate", "infer", "load_model"]


@dataclass(frozen=True)
class Prediction:
    """One image's predicted and expected digit."""

    predicted: int
    expected: int


def load_model(artifact_dir: str | os.PathLike, device="cpu"):
    """``(config, model)`` from ``config.json`` and ``model.bpk``; the model is in inference mode.

    Args:
        artifact_dir: the training's artifact directory.
        device: where the model is loaded.
    """
    config_path = os.path.join(artifact_dir, "config.json")
    model_path = os.path.join(artifact_dir, "model.bpk")
    for path, what in ((config_path, "config"), (model_path, "trained model")):
        if not os.path.exists(path):
            raise FileNotFoundError(f"infer: the {what} {path} does not exist; run the training first")
    config = TrainingConfig.load(config_path)
    model = config.model.init(device).load_file(model_path).valid()
    return config, model


def infer(artifact_dir: str | os.PathLike, device, items: list[MnistItem], log=print) -> list[Prediction]:
    """Predict the digits of ``items`` with the model saved in ``artifact_dir``.

    Args:
        artifact_dir: the training's artifact directory.
        device: where the model runs.
        items: the images (raw intensities, as the dataset gives them) and their labels.
        log: where the ``Predicted {p} Expected {e}`` lines go (None: nowhere).

    Returns:
        One :class:`Prediction` per item.
    """
    config, model = load_model(artifact_dir, device)
    batch = MnistBatcher.for_source(config.source).batch(list(items), device)  # the training's normalisation
    output = model(batch.images)
    predicted = output.argmax(1).tolist()
    predictions = [Prediction(int(p), int(item.label)) for p, item in zip(predicted, items)]
    if log is not None:
        for p in predictions:
            log(f"Predicted {p.predicted} Expected {p.expected}")
    return predictions


def evaluate(artifact_dir: str | os.PathLike, device, dataset, batch_size: int = 256) -> float:
    """Accuracy (%) of the model saved in ``artifact_dir`` over every item of ``dataset``.

    Args:
        artifact_dir: the training's artifact directory.
        device: where the model runs.
        dataset: a dataset of :class:`MnistItem` (e.g. the test split).
        batch_size: images per forward pass.
    """
    config, model = load_model(artifact_dir, device)
    batcher = MnistBatcher.for_source(config.source)
    correct = 0
    for start in range(0, len(dataset), batch_size):
        items = [dataset[i] for i in range(start, min(start + batch_size, len(dataset)))]
        batch = batcher.batch(items, device)
        correct += int((model(batch.images).argmax(1) == batch.targets).int().sum().item())
    return 100.0 * correct / max(len(dataset), 1)
