"""Fine-tuning a pretrained Hugging Face encoder (BERT, RoBERTa, DistilBERT) in the example.

``--pretrained NAME_OR_DIR`` on the train scripts (and a checkpoint directory or Hub name as
the fine-tune script's ``--pretrained``) replaces the example's Transformer with the
checkpoint's encoder and a sequence-classification head
(:func:`ember.pretrained.from_pretrained`), and its tokenizer with the checkpoint's
``tokenizer.json``. Every parameter trains (full fine-tuning), or with ``--lora-rank R`` the
encoder is frozen under LoRA adapters of rank R and only the adapters and the head train.

The run's artifacts hold what inference needs without the original checkpoint: the usual
``config.json`` and ``model.bpk`` (LoRA merged), and the checkpoint's ``config.json`` and
``tokenizer.json`` copied into ``<artifact_dir>/pretrained/``.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.pretrained import PretrainedClassifier``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import ember
from ember import nn
from text_classification.model import TextClassificationModel
from text_classification.tokenizer import BertCasedTokenizer

ARTIFACT_SUBDIR = "pretrained"  # <artifact_dir>/pretrained/{config.json, tokenizer.json}
LORA_ALPHA_PER_RANK = 2.0  # Burn's fine-tuning: alpha = 2 · rank


def is_checkpoint(name_or_path: str | os.PathLike) -> bool:
    """Whether ``--pretrained`` names a Hugging Face checkpoint (a directory with safetensors
    weights, or a Hub name) rather than one of the example's ``model.bpk`` files."""
    path = Path(name_or_path)
    if path.is_dir():
        return (path / "model.safetensors").is_file() or (path / "model.safetensors.index.json").is_file()
    return not path.exists() and path.suffix != ".bpk" and not str(name_or_path).startswith(("/", "."))


class CheckpointTokenizer(BertCasedTokenizer):
    """A checkpoint's ``tokenizer.json`` behind the example tokenizer's interface, padding with
    the id the checkpoint's config names (RoBERTa's is ``<pad>``, not ``[PAD]``).

    Args:
        tokenizer: the ``tokenizers.Tokenizer``.
        pad_id: the checkpoint's ``pad_token_id``.
        source: where it came from.
    """

    def __init__(self, tokenizer, pad_id: int, source: str = ""):
        self._tokenizer = tokenizer
        self._json = None
        self.source = source
        tokenizer.no_truncation()  # the batcher cuts and pads
        tokenizer.no_padding()
        self._pad = int(pad_id)

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "CheckpointTokenizer":
        from ember.pretrained import load_tokenizer, read_config

        return cls(load_tokenizer(directory), read_config(directory).pad_token_id, str(directory))

    def __repr__(self) -> str:
        return f"CheckpointTokenizer(source={self.source!r})"


class PretrainedClassifier(TextClassificationModel):
    """A pretrained encoder with a classification head on ``[CLS]``, in place of the example's
    Transformer: the same ``forward`` / ``infer`` / ``train_step`` / ``inference_step`` / ``loss``
    (inherited), with the checkpoint's encoder computing the logits.

    Args:
        encoder: an :class:`ember.pretrained.PretrainedEncoder` with a head.
    """

    def __init__(self, encoder):
        if encoder.head is None:
            raise ValueError("PretrainedClassifier: the encoder needs a classification head (num_classes)")
        self.encoder = encoder
        self.n_classes = encoder.num_classes
        self.label_smoothing = 0.0

    def logits(self, tokens: ember.Tensor, mask_pad: ember.Tensor) -> ember.Tensor:
        """Class logits ``[B, n_classes]`` of ``tokens`` ``[B, S]`` (``mask_pad`` True at padding)."""
        device = self.encoder.embeddings.word.weight.device
        return self.encoder(tokens.to(device), mask_pad.to(device).logical_not())

    def reset_head(self, n_classes: int) -> "PretrainedClassifier":
        """A fresh, trainable head of ``n_classes`` (in place; returns self)."""
        self.encoder.reset_head(n_classes)
        self.n_classes = n_classes
        return self


def encoder_shape(spec) -> nn.TransformerEncoderConfig:
    """The checkpoint's sizes as the experiment's ``transformer`` field (what ``config.json``
    reports, and Noam's model size); the encoder itself is the checkpoint's."""
    return nn.TransformerEncoderConfig(
        spec.d_model, spec.d_ff, spec.n_heads, spec.n_layers, dropout=spec.dropout
    )


def max_seq_length(spec) -> int:
    """The longest sequence the checkpoint's position embedding covers (RoBERTa numbers
    positions after its padding id)."""
    return spec.max_positions - (spec.pad_token_id + 1 if spec.family == "roberta" else 0)


def _lora(model: PretrainedClassifier, rank: int) -> PretrainedClassifier:
    """Freeze the encoder under rank-``rank`` adapters; the head stays fully trainable."""
    head = model.encoder.head
    model.encoder.head = None
    model.encoder.apply_lora(nn.Lora(rank=rank, alpha=LORA_ALPHA_PER_RANK * rank))
    model.encoder.head = head
    return model


def classifier_from_checkpoint(
    name_or_dir: str,
    n_classes: int,
    artifact_dir: str | os.PathLike,
    device="cpu",
    dtype=None,
    lora_rank: int = 0,
) -> tuple[PretrainedClassifier, CheckpointTokenizer]:
    """``(model, tokenizer)`` for fine-tuning ``name_or_dir`` on ``n_classes`` classes; copies
    the checkpoint's ``config.json`` and ``tokenizer.json`` into ``<artifact_dir>/pretrained``."""
    from ember.pretrained import from_pretrained, resolve_checkpoint

    directory = resolve_checkpoint(name_or_dir)
    tokenizer = CheckpointTokenizer.load(directory)  # checked against the vocabulary first
    encoder = from_pretrained(directory, num_classes=n_classes, device=device, dtype=dtype)
    keep = Path(artifact_dir) / ARTIFACT_SUBDIR
    keep.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json"):
        shutil.copyfile(directory / name, keep / name)
    model = PretrainedClassifier(encoder)
    return (_lora(model, lora_rank) if lora_rank else model), tokenizer


def classifier_from_artifacts(
    artifact_dir: str | os.PathLike, n_classes: int, device="cpu", dtype=None
) -> tuple[PretrainedClassifier, CheckpointTokenizer]:
    """``(model, tokenizer)`` of a finished run, built from ``<artifact_dir>/pretrained``; the
    caller loads ``model.bpk`` into the model."""
    from ember.pretrained import read_config
    from ember.pretrained.encoder import build_encoder

    directory = Path(artifact_dir) / ARTIFACT_SUBDIR
    spec = read_config(directory)
    return PretrainedClassifier(build_encoder(spec, n_classes, device, dtype)), CheckpointTokenizer.load(
        directory
    )
