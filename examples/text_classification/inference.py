"""Inference with a trained text classifier (Burn's ``src/inference.rs``), generic over the dataset class.

:func:`infer` loads the run's ``config.json`` and ``model.bpk``, batches the texts, and prints,
exactly as Burn's example::

    Loading weights ...
    Creating model ...
    Running inference ...

    === Item 0 ===
    - Text: <text>
    - Logits: [p0, p1, ...]
    - Prediction: <ClassName>
    ================

(the "logits" are the softmax probabilities, printed as Rust prints an ``f32`` slice with
``{:?}``). :func:`load_model` and :func:`evaluate` serve the demo and the tests.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.inference import infer``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import ember
from ember.record.config import ConfigError
from ember.train.metric import format_f64_debug
from text_classification.batcher import TextClassificationBatcher, TextClassificationInferenceBatcher
from text_classification.classifier import accuracy
from text_classification.tokenizer import load_tokenizer
from text_classification.training import ExperimentConfig, model_config


class ArtifactError(RuntimeError):
    """A run's artifacts are missing or do not fit together; the message says what to do."""


@dataclass(frozen=True)
class Prediction:
    """One text's class probabilities and predicted class.

    Attributes:
        text: the input text.
        probabilities: the softmax output, one float per class.
        label: the predicted class index.
        class_name: its name.
    """

    text: str
    probabilities: tuple[float, ...]
    label: int
    class_name: str


def format_f32_debug(x: float) -> str:
    """``x`` rounded to ``f32`` and printed as Rust's ``{:?}`` prints an ``f32``: the shortest
    digits that round-trip as ``f32``, at least one fractional digit, exponent notation below
    1e-4 or from 1e16 (``0.25``, ``1.0``, ``3.5e-5``)."""
    # The shortest f32 digits, read back as a float, print as the same digits in f64 Debug.
    return format_f64_debug(float(np.format_float_scientific(np.float32(x), unique=True)))


def format_logits(probabilities: Sequence[float]) -> str:
    """``[p0, p1, ...]`` as Rust's ``{:?}`` of an ``f32`` slice."""
    return "[" + ", ".join(format_f32_debug(p) for p in probabilities) + "]"


def _config_path(artifact_dir: str | os.PathLike) -> Path:
    """The run's ``config.json``; :class:`ArtifactError` saying what to do when it is missing."""
    path = Path(artifact_dir) / "config.json"
    if not path.is_file():
        raise ArtifactError(
            f"no training config at {path}: train a model into {Path(artifact_dir)} first, or "
            "pass --artifact-dir with the directory of a finished run"
        )
    return path


def run_model_kind(artifact_dir: str | os.PathLike) -> str:
    """Which model a run holds: its ``config.json``'s ``"model"`` (``"fasttext"``), else
    ``"transformer"`` (the Transformer's config has no such key)."""
    path = _config_path(artifact_dir)
    try:
        fields = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ArtifactError(f"{path} is not a readable JSON config: {error}") from error
    kind = fields.get("model", "transformer") if isinstance(fields, dict) else None
    if kind not in ("transformer", "fasttext"):
        raise ArtifactError(
            f"{path} names an unknown model {kind!r}; this example trains 'transformer' and 'fasttext' runs"
        )
    return kind


def load_config(artifact_dir: str | os.PathLike) -> ExperimentConfig:
    """The run's ``config.json`` (keys added since it was written take their defaults)."""
    path = _config_path(artifact_dir)
    try:
        return ExperimentConfig.load(path, fill_defaults=True)
    except (ConfigError, ValueError) as error:
        raise ArtifactError(f"{path} is not an ExperimentConfig of this example: {error}") from error


def load_weights(model, path: str | os.PathLike, what: str = "the model", dtype_policy=None):
    """``model.load_file(path)`` with errors that say which file and what to do.

    Args:
        model: the freshly built model.
        path: the ``model.bpk`` file.
        what: how the error messages name the model.
        dtype_policy: ``DTypePolicy`` of the load (None: the record's dtypes).
    """
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(
            f"no trained weights at {path}: train {what} first (its run writes model.bpk), or "
            "point the option at an existing model.bpk"
        )
    try:
        return model.load_file(path, dtype_policy=dtype_policy)
    except Exception as error:  # RecordError and friends: name the file and the cause
        raise ArtifactError(
            f"the weights in {path} do not fit {what} as its config.json describes it "
            f"(was config.json or model.bpk replaced?): {error}"
        ) from error


def load_model(artifact_dir: str | os.PathLike, dataset_cls, device="cpu", dtype=None, tokenizer=None):
    """``(config, tokenizer, model)`` from ``config.json`` and ``model.bpk``; the model is in
    inference mode (``valid()``).

    Args:
        artifact_dir: the training's artifact directory.
        dataset_cls: the dataset class (``num_classes()``).
        device: where the model runs.
        dtype: the float dtype to build the model in (None: float32).
        tokenizer: a tokenizer (default: the one the run recorded, see ``ExperimentConfig.tokenizer``).
    """
    from ember.nn.module_record import DTypePolicy

    artifact_dir = Path(artifact_dir)
    config = load_config(artifact_dir)
    weights = artifact_dir / "model.bpk"
    what = f"a {dataset_cls.__name__} model"
    if not weights.is_file():
        load_weights(None, weights, what)  # raises the missing-file error before any work
    if config.pretrained is not None:  # a fine-tuned Hugging Face encoder: rebuilt from its copied config
        from ember.pretrained import PretrainedError
        from text_classification.pretrained import classifier_from_artifacts

        try:
            model, checkpoint_tokenizer = classifier_from_artifacts(
                artifact_dir, dataset_cls.num_classes(), device, dtype
            )
        except PretrainedError as error:
            raise ArtifactError(
                f"{artifact_dir} is a run fine-tuned from {config.pretrained}, and the checkpoint's "
                f"config.json / tokenizer.json it keeps cannot be read: {error}"
            ) from error
        tokenizer = checkpoint_tokenizer if tokenizer is None else tokenizer
    else:
        tokenizer = load_tokenizer(config.tokenizer) if tokenizer is None else tokenizer
        model = model_config(config, dataset_cls.num_classes(), tokenizer.vocab_size()).init(device, dtype)
    policy = DTypePolicy.CastToModule if dtype is not None else None
    return config, tokenizer, load_weights(model, weights, what, policy).valid()


def predict(model, tokenizer, seq_length: int, texts: Sequence[str], dataset_cls, device) -> list[Prediction]:
    """Class probabilities of ``texts`` in one batch."""
    batch = TextClassificationInferenceBatcher(tokenizer, seq_length).batch(list(texts), device)
    with ember.no_grad():
        probabilities = model.infer(batch).float().numpy()
    return _predictions(texts, probabilities, dataset_cls)


def _predictions(texts: Sequence[str], probabilities: np.ndarray, dataset_cls) -> list[Prediction]:
    out = []
    for text, row in zip(texts, probabilities):
        label = int(np.argmax(row))
        out.append(Prediction(text, tuple(float(p) for p in row), label, dataset_cls.class_name(label)))
    return out


def infer(
    artifact_dir: str | os.PathLike,
    dataset_cls,
    samples: Sequence[str],
    device="cpu",
    dtype=None,
    tokenizer=None,
    log: Callable[[str], None] | None = print,
    model: str | None = None,
) -> list[Prediction]:
    """Load the run in ``artifact_dir``, classify ``samples`` and print Burn's report.

    The run may hold the Transformer or the fastText-style model (its ``config.json`` says
    which); both print the same report.

    Args:
        artifact_dir: the training's artifact directory.
        dataset_cls: the dataset class (``num_classes()``, ``class_name()``).
        samples: the texts.
        device: where the model runs.
        dtype: the float dtype of the model (None: float32).
        tokenizer: a tokenizer (default: the run's).
        log: where the lines go (None: nowhere).
        model: ``"transformer"`` or ``"fasttext"``: the model the run must hold (an
            :class:`ArtifactError` otherwise); None accepts either.

    Returns:
        One :class:`Prediction` per sample.
    """
    samples = list(samples)
    if not samples:
        raise ValueError("infer: no texts to classify")
    log = log or (lambda line: None)
    kind = run_model_kind(artifact_dir)
    if model is not None and model != kind:
        raise ArtifactError(
            f"{Path(artifact_dir)} holds a {kind} run, not a {model} one: pass --model {kind}, or "
            f"--artifact-dir with the directory of a {model} run"
        )
    log("Loading weights ...")
    if kind == "fasttext":
        predictions = _predict_fasttext_run(artifact_dir, dataset_cls, samples, device, dtype, tokenizer, log)
    else:
        config, tokenizer, transformer = load_model(artifact_dir, dataset_cls, device, dtype, tokenizer)
        log("Creating model ...")
        log("Running inference ...")
        predictions = predict(transformer, tokenizer, config.seq_length, samples, dataset_cls, device)
    for i, p in enumerate(predictions):
        log(
            f"\n=== Item {i} ===\n- Text: {p.text}\n- Logits: {format_logits(p.probabilities)}\n"
            f"- Prediction: {p.class_name}\n================"
        )
    return predictions


def _predict_fasttext_run(
    artifact_dir, dataset_cls, samples, device, dtype, tokenizer, log
) -> list[Prediction]:
    from text_classification.fasttext import fasttext_model_config, load_fasttext, predict_fasttext

    try:
        config, tokenizer, model = load_fasttext(artifact_dir, dataset_cls, device, dtype, tokenizer)
    except (FileNotFoundError, ValueError) as error:
        raise ArtifactError(str(error)) from error
    except Exception as error:  # RecordError and friends: name the file and the cause
        raise ArtifactError(
            f"the weights in {Path(artifact_dir) / 'model.bpk'} do not fit a {dataset_cls.__name__} "
            f"fastText model as its config.json describes it: {error}"
        ) from error
    log("Creating model ...")
    log("Running inference ...")
    model_config = fasttext_model_config(config, dataset_cls.num_classes(), tokenizer.vocab_size())
    return _predictions(
        samples, predict_fasttext(model, tokenizer, model_config, samples, device), dataset_cls
    )


def evaluate_run(
    artifact_dir: str | os.PathLike, dataset_cls, dataset, device="cpu", dtype=None, tokenizer=None
) -> float:
    """Accuracy (%) over every item of ``dataset`` of the run saved in ``artifact_dir`` (the
    Transformer or the fastText-style model, as its ``config.json`` says), reloaded from its
    ``config.json`` and ``model.bpk``."""
    if run_model_kind(artifact_dir) == "fasttext":
        from text_classification.fasttext import (
            FastTextBatcher,
            evaluate_fasttext,
            fasttext_model_config,
            load_fasttext,
        )

        try:
            config, tokenizer, model = load_fasttext(artifact_dir, dataset_cls, device, dtype, tokenizer)
        except (FileNotFoundError, ValueError) as error:
            raise ArtifactError(str(error)) from error
        model_config = fasttext_model_config(config, dataset_cls.num_classes(), tokenizer.vocab_size())
        return evaluate_fasttext(model, FastTextBatcher(tokenizer, model_config), dataset, device)
    config, tokenizer, model = load_model(artifact_dir, dataset_cls, device, dtype, tokenizer)
    return evaluate(model, tokenizer, config.seq_length, dataset, device)


def evaluate(model, tokenizer, seq_length: int, dataset, device="cpu", batch_size: int = 128) -> float:
    """Accuracy (%) of ``model`` over every item of ``dataset``, in order.

    Args:
        model: a trained model (inference mode).
        tokenizer: its tokenizer.
        seq_length: the run's sequence length.
        dataset: items ``TextClassificationItem``.
        device: where the model runs.
        batch_size: items per forward pass.
    """
    return accuracy(model, TextClassificationBatcher(tokenizer, seq_length), dataset, device, batch_size)
