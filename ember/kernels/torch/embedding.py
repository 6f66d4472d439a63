"""Embedding lookups through PyTorch's ``embedding`` and its dense backward."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ember.kernels.backend import fused


class TorchEmbeddingOps:
    """The embedding family's composites PyTorch fuses (the bags keep the composed defaults)."""

    @fused  # a gather: float16 rows are copied exactly, as through float32
    def embedding(self, weight, ids):
        return F.embedding(ids.long(), weight)

    @fused(half=True)  # sums of rows: float16 accumulates in float32, as the default
    def embedding_backward(self, dout, ids, num_embeddings):
        return torch.ops.aten.embedding_dense_backward(dout, ids.long(), num_embeddings, -1, False)
