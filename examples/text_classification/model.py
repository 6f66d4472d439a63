"""The example's Transformer classifier (Burn's ``src/model.rs``).

Token embedding ``[vocab, d_model]`` plus position embedding ``[max_seq_length, d_model]``,
summed and halved, a :class:`ember.nn.TransformerEncoder` with the padding mask, and a linear
head on the first token's output, trained with cross-entropy. Burn applies the head to every
position and keeps position 0; applying it to position 0 only gives the same logits for less
work.

Beyond Burn (both off by default, so Burn's recipe stays Burn's): ``pooling="mean"`` feeds the
head the mean of the encoder outputs over the non-padding tokens instead of token 0, and
``label_smoothing`` α trains against ``(1 − α)·onehot + α/C``.

Parameter paths match Burn's record: ``transformer.*``, ``embedding_token.weight``,
``embedding_pos.weight``, ``output.weight``, ``output.bias``.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.model import TextClassificationModelConfig``.
"""

from __future__ import annotations

import ember
from ember import nn
from ember.record.config import Config
from text_classification.batcher import TextClassificationInferenceBatch, TextClassificationTrainingBatch
from text_classification.classifier import ClassifierModule, on_device

POOLINGS = ("first", "mean")


class TextClassificationModelConfig(Config):
    """Configuration of :class:`TextClassificationModel` (saved as the run's ``config.json``).

    Args:
        transformer: the encoder's configuration.
        n_classes: number of classes.
        vocab_size: number of token ids (the tokenizer's ``vocab_size()``).
        max_seq_length: the longest sequence (rows of the position embedding).
        pooling: what the head sees: ``"first"`` the first token's output (Burn), ``"mean"``
            the mean over the non-padding tokens.
        label_smoothing: label smoothing α of the training loss in [0, 1) (0: none, Burn).
    """

    transformer: nn.TransformerEncoderConfig
    n_classes: int
    vocab_size: int
    max_seq_length: int
    pooling: str = "first"
    label_smoothing: float = 0.0

    def init(self, device=None, dtype=None) -> "TextClassificationModel":
        """Build the model on ``device`` with float ``dtype`` (float32 by default)."""
        for name in ("n_classes", "vocab_size", "max_seq_length"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(
                    f"TextClassificationModelConfig: {name} must be a positive int, got {value!r}"
                )
        if self.pooling not in POOLINGS:
            raise ValueError(
                f"TextClassificationModelConfig: pooling must be one of {', '.join(POOLINGS)}, "
                f"got {self.pooling!r}"
            )
        if not 0.0 <= float(self.label_smoothing) < 1.0:
            raise ValueError(
                f"TextClassificationModelConfig: label_smoothing must be in [0, 1), "
                f"got {self.label_smoothing!r}"
            )
        d_model = self.transformer.d_model
        return TextClassificationModel(
            transformer=self.transformer.init(device, dtype),
            embedding_token=nn.EmbeddingConfig(self.vocab_size, d_model).init(device, dtype),
            embedding_pos=nn.EmbeddingConfig(self.max_seq_length, d_model).init(device, dtype),
            output=nn.LinearConfig(d_model, self.n_classes).init(device, dtype),
            n_classes=self.n_classes,
            max_seq_length=self.max_seq_length,
            pooling=self.pooling,
            label_smoothing=float(self.label_smoothing),
        )


class TextClassificationModel(ClassifierModule):
    """Embeddings -> TransformerEncoder -> linear head on token 0 (or on the mean of the tokens).

    Args:
        transformer: the encoder.
        embedding_token: ``[vocab_size, d_model]`` token embedding.
        embedding_pos: ``[max_seq_length, d_model]`` position embedding.
        output: the head, ``Linear(d_model, n_classes)``.
        n_classes: number of classes.
        max_seq_length: the longest sequence accepted.
        pooling: ``"first"`` or ``"mean"`` (see :class:`TextClassificationModelConfig`).
        label_smoothing: label smoothing α of :meth:`loss`.
    """

    def __init__(
        self,
        transformer: nn.TransformerEncoder,
        embedding_token: nn.Embedding,
        embedding_pos: nn.Embedding,
        output: nn.Linear,
        n_classes: int,
        max_seq_length: int,
        pooling: str = "first",
        label_smoothing: float = 0.0,
    ):
        self.transformer = transformer
        self.embedding_token = embedding_token
        self.embedding_pos = embedding_pos
        self.output = output
        self.n_classes = int(n_classes)
        self.max_seq_length = int(max_seq_length)
        self.pooling = str(pooling)
        self.label_smoothing = float(label_smoothing)

    # ---- computation --------------------------------------------------------------------------
    def logits(self, tokens: ember.Tensor, mask_pad: ember.Tensor) -> ember.Tensor:
        """Class logits ``[B, n_classes]``.

        Args:
            tokens: ``[B, S]`` int token ids, S <= max_seq_length.
            mask_pad: ``[B, S]`` bool, True at padding.
        """
        if tokens.ndim != 2:
            raise ValueError(
                f"TextClassificationModel: tokens must be [batch, seq], got shape {tuple(tokens.shape)}"
            )
        batch_size, seq_length = tokens.shape
        if seq_length > self.max_seq_length:
            raise ValueError(
                f"TextClassificationModel: sequences of {seq_length} tokens exceed max_seq_length "
                f"{self.max_seq_length} (the position embedding's size); batch with a seq length "
                f"<= {self.max_seq_length}"
            )
        if tuple(mask_pad.shape) != (batch_size, seq_length):
            raise ValueError(
                f"TextClassificationModel: mask_pad must be [{batch_size}, {seq_length}] like tokens, "
                f"got {tuple(mask_pad.shape)}"
            )
        device = self.embedding_token.weight.device
        tokens, mask_pad = on_device(tokens, device), on_device(mask_pad, device)
        positions = ember.arange(seq_length, device=device)
        embedding = (self.embedding_pos(positions) + self.embedding_token(tokens)) / 2  # [S,d] + [B,S,d]
        encoder_input = nn.TransformerEncoderInput(embedding).mask_pad(mask_pad)
        if self.pooling == "first":  # the last layer computes position 0 only
            return self.output(self.transformer.forward_first_token(encoder_input))
        encoded = self.transformer(encoder_input)
        keep = (~mask_pad).to(encoded.dtype).reshape(batch_size, seq_length, 1)  # 1 at real tokens
        pooled = (encoded * keep).sum(1) / keep.sum(1).clamp_min(1.0)
        return self.output(pooled)

    def batch_logits(
        self, batch: TextClassificationTrainingBatch | TextClassificationInferenceBatch
    ) -> ember.Tensor:
        """:meth:`logits` of a batch of the example's batchers."""
        return self.logits(batch.tokens, batch.mask_pad)

    # ---- fine-tuning ----------------------------------------------------------------------------
    def reset_head(self, n_classes: int) -> "TextClassificationModel":
        """Replace the head by a fresh, trainable ``Linear(d_model, n_classes)`` (in place; returns self).

        Args:
            n_classes: the new number of classes.
        """
        if not isinstance(n_classes, int) or isinstance(n_classes, bool) or n_classes < 1:
            raise ValueError(
                f"TextClassificationModel.reset_head: n_classes must be a positive int, got {n_classes!r}"
            )
        weight = self.embedding_token.weight
        d_model = weight.shape[1]
        self.output = nn.LinearConfig(d_model, n_classes).init(weight.device, weight.dtype)
        self.n_classes = n_classes
        return self
