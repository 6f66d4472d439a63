"""The small encoder classifier that the LoRA and QLoRA tests adapt, and a batch of ids for it."""

from __future__ import annotations

import ember
from ember import nn
from helpers.devices import DEV

IDS = ember.tensor([[1, 2, 3, 4], [5, 6, 7, 0]], device=DEV)


class EncoderClassifier(nn.Module):
    """Embeddings of 20 tokens (width 8), a one-layer Transformer encoder, a linear head."""

    def __init__(self, num_classes: int):
        self.embedding = nn.EmbeddingConfig(20, 8).init(DEV)
        self.encoder = nn.TransformerEncoderConfig(8, 16, 2, 1, dropout=0.0).init(DEV)
        self.head = nn.LinearConfig(8, num_classes).init(DEV)

    def forward(self, ids):
        return self.head(self.encoder(self.embedding(ids)))
