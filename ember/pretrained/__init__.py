"""Hugging Face BERT-family checkpoints as ember modules.

    from ember.pretrained import from_pretrained, load_tokenizer

    model = from_pretrained("path/to/checkpoint", num_classes=4).valid()
    logits = model(input_ids, attention_mask)          # [B, 4]; without num_classes [B, S, D]
    tokenizer = load_tokenizer("path/to/checkpoint")   # a tokenizers.Tokenizer

Families: BERT, RoBERTa, DistilBERT (``config.json``'s ``model_type``). Each maps the
checkpoint's names onto ember's layers through one declared table in
:mod:`ember.pretrained.key_tables`. Importing this package imports neither ``transformers`` nor
``torch``; ``huggingface_hub`` is imported only to resolve a Hub name, ``tokenizers`` only to
load a tokenizer.
"""

from ember.pretrained.config import FAMILIES, EncoderSpec, read_config
from ember.pretrained.encoder import PretrainedEncoder
from ember.pretrained.errors import PretrainedError
from ember.pretrained.hub import resolve_checkpoint
from ember.pretrained.loading import from_pretrained
from ember.pretrained.tokenizer import load_tokenizer

__all__ = [
    "FAMILIES",
    "EncoderSpec",
    "PretrainedEncoder",
    "PretrainedError",
    "from_pretrained",
    "load_tokenizer",
    "read_config",
    "resolve_checkpoint",
]
