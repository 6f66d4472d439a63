"""LoRA fine-tuning of a trained classifier on another dataset (Burn's ``src/finetune.rs``).

:func:`lora_finetuning` builds the model with the number of classes it was trained with
(``num_classes_before``, 14 for a DbPedia model), loads its ``model.bpk`` (a path given by
the caller — Burn reads ``model.bpk`` relative to the working directory; here it is an
explicit path, by default the DbPedia run's), applies LoRA (rank 8, alpha 16: every float
parameter frozen, low-rank adapters on every weight matrix), resets the head to the new
dataset's classes (a fresh, trainable ``Linear``), and trains with the same loaders, metrics,
checkpointers and summary as :func:`~text_classification.training.train`, at the config's
schedule (Burn: a constant 1e-3). The saved ``model.bpk`` has the adapters merged into the
weights, so it loads into a plain model of the new class count.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.finetune import lora_finetuning``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import ember
from ember import nn
from text_classification.inference import load_weights
from text_classification.tokenizer import load_tokenizer
from text_classification.training import ExperimentConfig, create_artifact_dir, fit, model_config

LORA_RANK = 8
LORA_ALPHA = 2.0 * LORA_RANK  # Burn: LoraConfig::new(r, 2.0 * r)


def lora_finetuning(
    artifact_dir: str | os.PathLike,
    dataset_train,
    dataset_test,
    config: ExperimentConfig,
    pretrained: str | os.PathLike,
    num_classes_before: int,
    device="cpu",
    dataset_cls: Any = None,
    dtype=None,
    renderer=None,
    checkpoint: int | None = None,
    tokenizer=None,
    lora: nn.Lora | None = None,
    plots: bool = False,
):
    """Fine-tune the model in ``pretrained`` on ``dataset_train`` with LoRA adapters and a new head.

    Args:
        artifact_dir: where the fine-tuning run's artifacts go.
        dataset_train: the new dataset's training split.
        dataset_test: the split used for validation.
        config: the experiment (its ``transformer``, ``seq_length`` and ``pooling`` must be those
            of the pretrained model; its schedule is the fine-tuning's).
        pretrained: the pretrained ``model.bpk``.
        num_classes_before: the pretrained model's number of classes.
        device: ``"cpu"``, ``"reference"`` or ``"cuda:N"``.
        dataset_cls: the new dataset's class (default ``type(dataset_train)``).
        dtype: the float dtype (None: float32).
        renderer: the display (None: the default).
        checkpoint: resume from the checkpoint of this epoch.
        tokenizer: a tokenizer (default ``load_tokenizer(config.tokenizer)``).
        lora: the LoRA settings (default ``nn.Lora(rank=8, alpha=16.0)``).
        plots: draw metric plots after every epoch.

    Returns:
        The ``LearningResult``; ``result.model`` has the adapters merged.
    """
    config.validate()
    dataset_cls = type(dataset_train) if dataset_cls is None else dataset_cls
    pretrained = Path(pretrained)
    if not pretrained.is_file():  # before creating anything
        load_weights(None, pretrained, f"the pretrained model ({num_classes_before} classes)")
    artifact_dir = create_artifact_dir(artifact_dir)
    ember.seed(config.seed)
    tokenizer = load_tokenizer(config.tokenizer) if tokenizer is None else tokenizer

    model = model_config(config, num_classes_before, tokenizer.vocab_size()).init(device, dtype)
    model = load_weights(
        model,
        pretrained,
        f"the pretrained model ({num_classes_before} classes)",
        None if dtype is None else _cast_policy(),
    )
    model.apply_lora(lora if lora is not None else nn.Lora(rank=LORA_RANK, alpha=LORA_ALPHA))
    model.reset_head(dataset_cls.num_classes())

    return fit(
        artifact_dir,
        model,
        dataset_train,
        dataset_test,
        config,
        tokenizer,
        device,
        renderer,
        checkpoint,
        plots,
    )


def _cast_policy():
    from ember.nn.module_record import DTypePolicy

    return DTypePolicy.CastToModule
