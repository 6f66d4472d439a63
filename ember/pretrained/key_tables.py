"""One declared table per family: checkpoint tensor name -> ember parameter path and layout.

Each row is ``(ember_path, checkpoint_key, layout)``. ``{i}`` stands for the layer index.
``layout`` is ``"linear"`` for a ``torch.nn.Linear`` weight (stored ``[out, in]``; ember's
:class:`~ember.nn.Linear` holds ``[in, out]``, so it is transposed) and ``"same"`` otherwise.
Encoder keys are written without the family prefix (``bert.``, ``roberta.``,
``distilbert.``); :func:`checkpoint_prefix` finds whether a file uses it (a
``*ForSequenceClassification`` or ``*ForMaskedLM`` save does, a bare ``*Model`` save does not).
Head keys are whole names: heads sit beside the encoder, never under its prefix.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "ENCODER_TABLES",
    "HEAD_TABLES",
    "LEGACY_NAMES",
    "PREFIXES",
    "checkpoint_prefix",
    "encoder_rows",
    "head_rows",
    "stored_key",
]

Row = tuple[str, str, str]


def _linear(ember: str, key: str) -> list[Row]:
    return [(f"{ember}.weight", f"{key}.weight", "linear"), (f"{ember}.bias", f"{key}.bias", "same")]


def _norm(ember: str, key: str) -> list[Row]:
    return [(f"{ember}.gamma", f"{key}.weight", "same"), (f"{ember}.beta", f"{key}.bias", "same")]


def _bert_layer() -> list[Row]:
    # RoBERTa's encoder layers are BERT's, name for name.
    a = "encoder.layer.{i}.attention"
    return [
        *_linear("layers.{i}.attention.query", f"{a}.self.query"),
        *_linear("layers.{i}.attention.key", f"{a}.self.key"),
        *_linear("layers.{i}.attention.value", f"{a}.self.value"),
        *_linear("layers.{i}.attention.output", f"{a}.output.dense"),
        *_norm("layers.{i}.attention_norm", f"{a}.output.LayerNorm"),
        *_linear("layers.{i}.ffn_in", "encoder.layer.{i}.intermediate.dense"),
        *_linear("layers.{i}.ffn_out", "encoder.layer.{i}.output.dense"),
        *_norm("layers.{i}.output_norm", "encoder.layer.{i}.output.LayerNorm"),
    ]


def _bert_embeddings() -> list[Row]:
    return [
        ("embeddings.word.weight", "embeddings.word_embeddings.weight", "same"),
        ("embeddings.position.weight", "embeddings.position_embeddings.weight", "same"),
        ("embeddings.token_type.weight", "embeddings.token_type_embeddings.weight", "same"),
        *_norm("embeddings.norm", "embeddings.LayerNorm"),
    ]


_DISTILBERT_LAYER = "transformer.layer.{i}"
ENCODER_TABLES: dict[str, tuple[list[Row], list[Row]]] = {
    # family: (rows once, rows per layer)
    "bert": (_bert_embeddings(), _bert_layer()),
    "roberta": (_bert_embeddings(), _bert_layer()),
    "distilbert": (
        [
            ("embeddings.word.weight", "embeddings.word_embeddings.weight", "same"),
            ("embeddings.position.weight", "embeddings.position_embeddings.weight", "same"),
            *_norm("embeddings.norm", "embeddings.LayerNorm"),
        ],
        [
            *_linear("layers.{i}.attention.query", f"{_DISTILBERT_LAYER}.attention.q_lin"),
            *_linear("layers.{i}.attention.key", f"{_DISTILBERT_LAYER}.attention.k_lin"),
            *_linear("layers.{i}.attention.value", f"{_DISTILBERT_LAYER}.attention.v_lin"),
            *_linear("layers.{i}.attention.output", f"{_DISTILBERT_LAYER}.attention.out_lin"),
            *_norm("layers.{i}.attention_norm", f"{_DISTILBERT_LAYER}.sa_layer_norm"),
            *_linear("layers.{i}.ffn_in", f"{_DISTILBERT_LAYER}.ffn.lin1"),
            *_linear("layers.{i}.ffn_out", f"{_DISTILBERT_LAYER}.ffn.lin2"),
            *_norm("layers.{i}.output_norm", f"{_DISTILBERT_LAYER}.output_layer_norm"),
        ],
    ),
}

# The sequence-classification heads of AutoModelForSequenceClassification. BERT's dense layer
# is the pooler, which sits under the encoder's prefix.
HEAD_TABLES: dict[str, list[Row]] = {
    "bert": [*_linear("head.dense", "bert.pooler.dense"), *_linear("head.output", "classifier")],
    "roberta": [*_linear("head.dense", "classifier.dense"), *_linear("head.output", "classifier.out_proj")],
    "distilbert": [*_linear("head.dense", "pre_classifier"), *_linear("head.output", "classifier")],
}

PREFIXES = {"bert": "bert.", "roberta": "roberta.", "distilbert": "distilbert."}
# Checkpoints converted from the original TensorFlow BERT name LayerNorm's parameters gamma/beta
# (transformers renames them on load too).
LEGACY_NAMES = {"LayerNorm.weight": "LayerNorm.gamma", "LayerNorm.bias": "LayerNorm.beta"}


def stored_key(key: str, keys) -> str:
    """``key``, or its legacy spelling when only that is in ``keys``."""
    if key in keys:
        return key
    for new, old in LEGACY_NAMES.items():
        if key.endswith(new) and key[: -len(new)] + old in keys:
            return key[: -len(new)] + old
    return key


def checkpoint_prefix(family: str, keys: Iterable[str]) -> str:
    """``"bert."`` (etc.) when the file's encoder keys carry the family prefix, else ``""``."""
    probe = PREFIXES[family] + "embeddings.word_embeddings.weight"
    return PREFIXES[family] if probe in set(keys) else ""


def encoder_rows(family: str, n_layers: int, prefix: str) -> list[Row]:
    """The encoder's rows for ``n_layers`` layers, checkpoint keys prefixed with ``prefix``."""
    once, per_layer = ENCODER_TABLES[family]
    rows = [(e, prefix + k, lay) for e, k, lay in once]
    for i in range(n_layers):
        rows += [(e.format(i=i), prefix + k.format(i=i), lay) for e, k, lay in per_layer]
    return rows


def head_rows(family: str, prefix: str) -> list[Row]:
    """The head's rows; BERT's pooler follows the file's prefix (a bare ``BertModel`` save
    names it ``pooler.dense``)."""
    rows = HEAD_TABLES[family]
    if family == "bert" and prefix == "":
        rows = [(e, k.removeprefix("bert."), lay) for e, k, lay in rows]
    return rows
