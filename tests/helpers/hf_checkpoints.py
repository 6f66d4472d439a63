"""Tiny randomly initialised BERT-family checkpoints saved by ``transformers`` (``save_pretrained``),
with a ``tokenizers`` WordPiece tokenizer trained on the fly. Nothing is downloaded; every
function skips the calling test when ``transformers`` / ``tokenizers`` / ``torch`` are missing."""

from __future__ import annotations

import pytest

VOCAB = 64
NUM_LABELS = 3
TEXTS = [
    "the market rallied as stocks rose",
    "the team won the final game",
    "new chips make phones faster",
    "rain and storms hit the coast",
] * 4


# transformers initialises weights with N(0, 0.02): on a 32-wide model the attention scores are
# then ~1e-3 and every softmax is nearly uniform, so a wrong scale or mask would hardly show.
# N(0, 0.2) gives peaked attention and activations of the size a trained model has.
INIT_STD = 0.2


# The tiny model's shape, in BERT's and RoBERTa's field names; DistilBERT names some differently.
SHAPE = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=40,
    initializer_range=INIT_STD,
)
DISTILBERT_NAMES = {
    "hidden_size": "dim",
    "num_hidden_layers": "n_layers",
    "num_attention_heads": "n_heads",
    "intermediate_size": "hidden_dim",
}


def make_config(family: str, **extra):
    transformers = pytest.importorskip("transformers")
    if family == "distilbert":
        args = {DISTILBERT_NAMES.get(name, name): value for name, value in SHAPE.items()}
        return transformers.DistilBertConfig(num_labels=NUM_LABELS, **{**args, **extra})
    cls = transformers.BertConfig if family == "bert" else transformers.RobertaConfig
    return cls(num_labels=NUM_LABELS, **{**SHAPE, **extra})


def save_tokenizer(directory, vocab_size: int = VOCAB) -> None:
    """A WordPiece tokenizer with BERT's special tokens, trained on TEXTS."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, normalizers, pre_tokenizers, processors, trainers

    tok = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(TEXTS, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=special))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    tok.save(str(directory / "tokenizer.json"))


def save_checkpoint(directory, family: str, head: bool = True, seed: int = 0, **extra):
    """``save_pretrained`` of a random ``*ForSequenceClassification`` (or bare ``*Model``)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(seed)
    config = make_config(family, **extra)
    cls = transformers.AutoModelForSequenceClassification if head else transformers.AutoModel
    model = cls.from_config(config).eval()
    model.save_pretrained(directory)
    save_tokenizer(directory)
    return model
