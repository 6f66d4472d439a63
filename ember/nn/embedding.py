"""Embedding table: integer ids -> rows of a ``[n_embedding, d_model]`` weight."""

from __future__ import annotations

from dataclasses import field

from ember.nn.init import Initializer, Normal
from ember.nn.module import Module
from ember.nn.param import Param
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.nn import embedding
from ember.tensor.tensor import Tensor

__all__ = ["Embedding", "EmbeddingConfig"]


class EmbeddingConfig(Config):
    """Configuration of :class:`Embedding`.

    Args:
        n_embedding: number of rows (vocabulary size).
        d_model: size of each row.
        initializer: default N(0, 1), as in Burn.
    """

    n_embedding: int
    d_model: int
    initializer: Initializer = field(default_factory=lambda: Normal(0.0, 1.0))

    def init(self, device=None, dtype=None) -> "Embedding":
        """Build the layer on ``device`` with float ``dtype``."""
        if self.n_embedding <= 0 or self.d_model <= 0:
            raise ValueError(
                f"EmbeddingConfig: n_embedding and d_model must be positive, got "
                f"{self.n_embedding} and {self.d_model}"
            )
        weight = self.initializer.init(
            (self.n_embedding, self.d_model), device, dtype, fan_in=self.n_embedding, fan_out=self.d_model
        )
        return Embedding(weight)


class Embedding(Module):
    """Looks up rows of ``weight`` [n_embedding, d_model]: ids ``[...]`` -> ``[..., d_model]``.

    Args:
        weight: Param ``[n_embedding, d_model]``.
    """

    def __init__(self, weight: Param):
        if weight.ndim != 2:
            raise ValueError(
                f"Embedding: weight must be [n_embedding, d_model], got {shape_str(weight.shape)}"
            )
        self.weight = weight

    def forward(self, ids: Tensor) -> Tensor:
        """Args:
        ids: int tensor of any shape (usually ``[batch, seq]``), values in [0, n_embedding).
        """
        if not isinstance(ids, Tensor) or not ids.dtype.is_int:
            got = ids.dtype if isinstance(ids, Tensor) else type(ids).__name__
            raise TypeError(f"Embedding: ids must be an int tensor, got {got}")
        return embedding(self.weight.val(), ids)

    def extra_repr(self) -> dict:
        n, d = self.weight.shape
        return {"n_embedding": n, "d_model": d}
