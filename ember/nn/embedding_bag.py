"""Embedding bags: the sum, mean or max of table rows over ragged bags of ids (PyTorch's
``nn.EmbeddingBag``; Burn has none), with a row-sparse gradient for large tables."""

from __future__ import annotations

from dataclasses import field

from ember.nn.init import Initializer, Normal
from ember.nn.module import Module
from ember.nn.param import Param
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.nn import _BAG_MODES, embedding_bag
from ember.tensor.tensor import Tensor

__all__ = ["EmbeddingBag", "EmbeddingBagConfig"]


class EmbeddingBagConfig(Config):
    """Configuration of :class:`EmbeddingBag`.

    Args:
        n_embedding: number of rows (vocabulary or hash buckets).
        d_model: size of each row.
        mode: "mean" (default, as PyTorch), "sum" or "max".
        initializer: default N(0, 1), as :class:`~ember.nn.EmbeddingConfig`.
        sparse: give the table a row-sparse gradient (:class:`ember.RowSparse`, only the
            rows a batch touched) so optimizer steps cost what the batch touches. Default True.
    """

    n_embedding: int
    d_model: int
    mode: str = "mean"
    initializer: Initializer = field(default_factory=lambda: Normal(0.0, 1.0))
    sparse: bool = True

    def init(self, device=None, dtype=None) -> "EmbeddingBag":
        """Build the layer on ``device`` with float ``dtype``."""
        if self.n_embedding <= 0 or self.d_model <= 0:
            raise ValueError(
                f"EmbeddingBagConfig: n_embedding and d_model must be positive, got "
                f"{self.n_embedding} and {self.d_model}"
            )
        if self.mode not in _BAG_MODES:
            raise ValueError(f"EmbeddingBagConfig: mode must be one of {list(_BAG_MODES)}, got {self.mode!r}")
        weight = self.initializer.init(
            (self.n_embedding, self.d_model), device, dtype, fan_in=self.n_embedding, fan_out=self.d_model
        )
        return EmbeddingBag(weight, self.mode, self.sparse)


class EmbeddingBag(Module):
    """Reduces bags of rows of ``weight [n_embedding, d_model]`` to one row per bag.

    Its record holds ``weight`` only, exactly as :class:`~ember.nn.Embedding`'s, so either
    layer loads the other's table.

    Args:
        weight: Param ``[n_embedding, d_model]``.
        mode: "mean", "sum" or "max".
        sparse: produce a row-sparse gradient for ``weight``.
    """

    def __init__(self, weight: Param, mode: str = "mean", sparse: bool = True):
        if weight.ndim != 2:
            raise ValueError(
                f"EmbeddingBag: weight must be [n_embedding, d_model], got {shape_str(weight.shape)}"
            )
        if mode not in _BAG_MODES:
            raise ValueError(f"EmbeddingBag: mode must be one of {list(_BAG_MODES)}, got {mode!r}")
        self.weight = weight
        self.mode = mode
        self.sparse = bool(sparse)

    def forward(
        self,
        indices: Tensor,
        offsets: Tensor | None = None,
        per_sample_weights: Tensor | None = None,
        mask: Tensor | None = None,
    ) -> Tensor:
        """Args:
            indices: int ids, either flat ``[N]`` (with ``offsets``) or padded ``[B, L]``.
            offsets: int ``[B]``, the start of each bag in flat ``indices`` (offsets[0] = 0;
                the last bag runs to the end); an empty bag gives a zero row.
            per_sample_weights: float factors shaped like ``indices``; mode "sum" only.
            mask: bool ``[B, L]`` for padded ``indices``, True at padding (ember's convention).

        Returns:
            ``[B, d_model]``.
        """
        return embedding_bag(
            self.weight.val(), indices, offsets, per_sample_weights, mask, self.mode, self.sparse
        )

    def extra_repr(self) -> dict:
        n, d = self.weight.shape
        return {"n_embedding": n, "d_model": d, "mode": self.mode, "sparse": self.sparse}
