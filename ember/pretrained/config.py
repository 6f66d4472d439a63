"""Reading a Hugging Face ``config.json`` into the few numbers an ember encoder needs.

BERT, RoBERTa and DistilBERT spell the same quantities differently (``hidden_size`` vs
``dim``, ``num_hidden_layers`` vs ``n_layers``...); :func:`read_config` normalises them into
one :class:`EncoderSpec` and refuses, naming the file and the field, anything ember's encoder
would compute differently (another architecture, another activation, relative positions).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ember.pretrained.errors import PretrainedError

__all__ = ["FAMILIES", "EncoderSpec", "read_config"]

FAMILIES = ("bert", "roberta", "distilbert")
# hidden_act values and whether they are the tanh approximation of GELU
_ACTIVATIONS = {"gelu": False, "gelu_new": True, "gelu_pytorch_tanh": True}


@dataclass(frozen=True)
class EncoderSpec:
    """What an encoder checkpoint's ``config.json`` says, in one spelling for every family.

    Args:
        family: ``"bert"``, ``"roberta"`` or ``"distilbert"``.
        vocab_size, d_model, n_layers, n_heads, d_ff: the sizes.
        max_positions: rows of the position embedding.
        type_vocab_size: rows of the token-type embedding (0: none, DistilBERT).
        layer_norm_eps: the LayerNorms' epsilon.
        pad_token_id: the padding id (RoBERTa's positions start after it).
        gelu_tanh: the feed-forward GELU is the tanh approximation.
        dropout: dropout on embeddings and sub-layer outputs.
        attention_dropout: dropout on the attention probabilities.
        classifier_dropout: dropout in the classification head.
        num_labels: the classes a classification checkpoint was saved with.
        path: the ``config.json`` read.
    """

    family: str
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    pad_token_id: int
    gelu_tanh: bool
    dropout: float
    attention_dropout: float
    classifier_dropout: float
    num_labels: int
    path: Path


def _get(raw: dict, path: Path, key: str, kind=int, default=None):
    value = raw.get(key, default)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PretrainedError(f"{path}: field {key!r} must be a number, got {value!r}")
    if kind is int and (value != int(value) or value < 0):
        raise PretrainedError(f"{path}: field {key!r} must be a non-negative integer, got {value!r}")
    return kind(value)


def _num_labels(raw: dict) -> int:
    if "num_labels" in raw:
        return int(raw["num_labels"])
    return len(raw.get("id2label") or {}) or 2  # transformers' default


def read_config(path: str | os.PathLike) -> EncoderSpec:
    """Read ``config.json`` (or the directory holding it).

    Raises:
        PretrainedError: the file is missing or not JSON, its ``model_type`` is not one of
            :data:`FAMILIES`, or a field has a value ember's encoder does not implement.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise PretrainedError(
            f"{path}: no config.json (a checkpoint directory holds config.json + model.safetensors)"
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PretrainedError(f"{path}: cannot read the config: {error}") from None
    if not isinstance(raw, dict):
        raise PretrainedError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    family = raw.get("model_type")
    if family not in FAMILIES:
        archs = raw.get("architectures")
        raise PretrainedError(
            f"{path}: model_type {family!r} (architectures {archs}) is not an encoder ember can "
            f"build; supported: {', '.join(FAMILIES)}"
        )
    if family == "distilbert":
        activation = raw.get("activation", "gelu")
        # sinusoidal_pos_embds: the sinusoids are saved as the position weight, so loading is the same
        spec = dict(
            d_model=_get(raw, path, "dim"),
            n_layers=_get(raw, path, "n_layers"),
            n_heads=_get(raw, path, "n_heads"),
            d_ff=_get(raw, path, "hidden_dim"),
            type_vocab_size=0,
            layer_norm_eps=1e-12,  # DistilBERT's LayerNorms are built with eps=1e-12
            dropout=_get(raw, path, "dropout", float, 0.1),
            attention_dropout=_get(raw, path, "attention_dropout", float, 0.1),
            classifier_dropout=_get(raw, path, "seq_classif_dropout", float, 0.2),
            pad_token_id=_get(raw, path, "pad_token_id", int, 0),
        )
        activation_field = "activation"
    else:
        activation = raw.get("hidden_act", "gelu")
        position_type = raw.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise PretrainedError(
                f"{path}: position_embedding_type {position_type!r} is not supported; ember's "
                f"encoder has absolute positions only"
            )
        hidden_dropout = _get(raw, path, "hidden_dropout_prob", float, 0.1)
        classifier = raw.get("classifier_dropout")
        spec = dict(
            d_model=_get(raw, path, "hidden_size"),
            n_layers=_get(raw, path, "num_hidden_layers"),
            n_heads=_get(raw, path, "num_attention_heads"),
            d_ff=_get(raw, path, "intermediate_size"),
            type_vocab_size=_get(raw, path, "type_vocab_size", int, 2),
            layer_norm_eps=_get(raw, path, "layer_norm_eps", float, 1e-12),
            dropout=hidden_dropout,
            attention_dropout=_get(raw, path, "attention_probs_dropout_prob", float, 0.1),
            classifier_dropout=hidden_dropout
            if classifier is None
            else _get(raw, path, "classifier_dropout", float),
            pad_token_id=_get(raw, path, "pad_token_id", int, 1 if family == "roberta" else 0),
        )
        activation_field = "hidden_act"
    if activation not in _ACTIVATIONS:
        raise PretrainedError(
            f"{path}: {activation_field} {activation!r} is not supported; expected one of {sorted(_ACTIVATIONS)}"
        )
    if spec["d_model"] == 0 or spec["n_heads"] == 0 or spec["d_model"] % spec["n_heads"]:
        raise PretrainedError(
            f"{path}: the model size {spec['d_model']} must be a positive multiple of the "
            f"{spec['n_heads']} attention heads"
        )
    return EncoderSpec(
        family=family,
        vocab_size=_get(raw, path, "vocab_size"),
        max_positions=_get(raw, path, "max_position_embeddings", int, 512),
        gelu_tanh=_ACTIVATIONS[activation],
        num_labels=_num_labels(raw),
        path=path,
        **spec,
    )
