"""Cross-attention with grouped key/value heads (Burn's ``CrossAttention``).

Queries come from one sequence ``[B, Lq, d_model]`` (a decoder state), keys and values from a
context ``[B, Lk, d_context]`` of another size (an encoder's output). With ``n_heads`` query
heads sharing ``n_heads_kv`` key/value heads (``n_heads_kv = n_heads``: multi-head,
``1``: multi-query, between: grouped-query attention), each of size ``d_head``:

    q = query(x)        [B, n_heads,    Lq, d_head]
    k, v = key(c), value(c)  [B, n_heads_kv, Lk, d_head], each repeated n_heads / n_heads_kv
                        times (query head j reads key/value head j // (n_heads / n_heads_kv))
    weights = softmax(q·kᵀ / √d_head, masked with min_float where ``mask [B, Lk]`` is True)
    out = output(dropout(weights) @ v)

Unlike :class:`~ember.nn.MultiHeadAttention`, dropout acts on the weights *after* the
softmax, as in Burn. The projections are initialised KaimingUniform with gain 1/√d_head.
:meth:`CrossAttention.forward_cache` projects a fixed context once per
:class:`CrossAttentionCache` (for decoding against an unchanging encoder output).
"""

from __future__ import annotations

import math

from ember.nn.attention import set_projections
from ember.nn.dropout import Dropout
from ember.nn.init import KaimingUniform
from ember.nn.linear import Linear, LinearConfig
from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.grad_mode import is_grad_enabled
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.nn import attention, quiet_softmax, softmax
from ember.tensor.tensor import Tensor

__all__ = ["CrossAttention", "CrossAttentionCache", "CrossAttentionConfig"]

_FUSED_MIN_FLOAT = -1.0e4  # the fill value the fused attention kernel uses


class CrossAttentionConfig(Config):
    """Configuration of :class:`CrossAttention` (Burn's fields and defaults).

    Args:
        d_model: size of the queries (and of the output).
        d_context: size of the context features.
        n_heads: query heads.
        n_heads_kv: key/value heads; must divide ``n_heads``.
        d_head: size of each head.
        dropout: dropout on the attention weights (0.1).
        min_float: the value masked scores are filled with (−1e4).
        quiet_softmax: use ``exp(x)/(1 + Σexp(x))`` so a head may attend to nothing.
    """

    d_model: int
    d_context: int
    n_heads: int
    n_heads_kv: int
    d_head: int
    dropout: float = 0.1
    min_float: float = -1.0e4
    quiet_softmax: bool = False

    def init(self, device=None, dtype=None) -> "CrossAttention":
        """Build the layer: ``query [d_model, n_heads·d_head]``, ``key``/``value``
        ``[d_context, n_heads_kv·d_head]``, ``output [n_heads·d_head, d_model]``, with biases."""
        sizes = {
            "d_model": self.d_model,
            "d_context": self.d_context,
            "n_heads": self.n_heads,
            "n_heads_kv": self.n_heads_kv,
            "d_head": self.d_head,
        }
        bad = [f"{k}={v}" for k, v in sizes.items() if v <= 0]
        if bad:
            raise ValueError(f"CrossAttentionConfig: sizes must be positive, got {', '.join(bad)}")
        if self.n_heads % self.n_heads_kv:
            raise ValueError(
                f"CrossAttentionConfig: query heads must be divisible by key/value heads, got "
                f"n_heads={self.n_heads}, n_heads_kv={self.n_heads_kv}"
            )
        initializer = KaimingUniform(gain=1.0 / math.sqrt(self.d_head), fan_out_only=False)

        def linear(d_in, d_out):
            return LinearConfig(d_in, d_out, True, initializer).init(device, dtype)

        inner, inner_kv = self.n_heads * self.d_head, self.n_heads_kv * self.d_head
        return CrossAttention(
            linear(self.d_model, inner),
            linear(self.d_context, inner_kv),
            linear(self.d_context, inner_kv),
            linear(inner, self.d_model),
            Dropout(self.dropout),
            self.n_heads,
            self.n_heads_kv,
            self.min_float,
            self.quiet_softmax,
        )


class CrossAttentionCache:
    """The context's key/value projections kept across calls of
    :meth:`CrossAttention.forward_cache` (Burn's ``CrossAttentionCache``).

    Attributes:
        k, v: ``[B, n_heads_kv, Lk, d_head]`` (None while empty).
    """

    __slots__ = ("_context_shape", "k", "v")

    def __init__(self):
        self.k = None
        self.v = None
        self._context_shape = None

    @classmethod
    def new(cls) -> "CrossAttentionCache":
        """An empty cache."""
        return cls()


class CrossAttention(Module):
    """Cross-attention (see the module docstring).

    Args:
        query: ``Linear(d_model, n_heads·d_head)``.
        key, value: ``Linear(d_context, n_heads_kv·d_head)``.
        output: ``Linear(n_heads·d_head, d_model)``.
        dropout: dropout on the attention weights.
        n_heads, n_heads_kv: query and key/value heads.
        min_float: fill value of masked scores.
        quiet_softmax: use the quiet softmax.
    """

    def __init__(
        self,
        query: Linear,
        key: Linear,
        value: Linear,
        output: Linear,
        dropout: Dropout,
        n_heads: int,
        n_heads_kv: int,
        min_float: float = -1.0e4,
        quiet_softmax: bool = False,
    ):
        set_projections(self, query, key, value, output, dropout)
        self.n_heads = int(n_heads)
        self.n_heads_kv = int(n_heads_kv)
        inner = query.weight.shape[1]
        if (
            self.n_heads <= 0
            or self.n_heads_kv <= 0
            or inner % self.n_heads
            or self.n_heads % self.n_heads_kv
        ):
            raise ValueError(
                f"CrossAttention: the query projection's {inner} outputs must split into n_heads "
                f"({n_heads}) heads, and n_heads must be a multiple of n_heads_kv ({n_heads_kv})"
            )
        self.d_head = inner // self.n_heads
        if key.weight.shape[1] != self.n_heads_kv * self.d_head or value.weight.shape != key.weight.shape:
            raise ValueError(
                f"CrossAttention: key/value projections must be [d_context, n_heads_kv·d_head = "
                f"{self.n_heads_kv * self.d_head}], got {shape_str(key.weight.shape)} and "
                f"{shape_str(value.weight.shape)}"
            )
        self.scale = 1.0 / math.sqrt(self.d_head)
        self.min_float = float(min_float)
        self.quiet_softmax = bool(quiet_softmax)

    @property
    def d_model(self) -> int:
        return self.query.weight.shape[0]

    @property
    def d_context(self) -> int:
        return self.key.weight.shape[0]

    def forward(self, query: Tensor, context: Tensor, mask: Tensor | None = None) -> Tensor:
        """Attend the query to the context.

        Args:
            query: ``[B, Lq, d_model]``.
            context: ``[B, Lk, d_context]``.
            mask: ``[B, Lk]`` bool, True where the context is padding.

        Returns:
            ``[B, Lq, d_model]``.
        """
        self._check("CrossAttention", query, context, mask)
        return self._attend(
            query, self._heads_kv(self.key(context)), self._heads_kv(self.value(context)), mask
        )

    def forward_cache(
        self, query: Tensor, context: Tensor, mask: Tensor | None, cache: CrossAttentionCache
    ) -> Tensor:
        """:meth:`forward`, with the context's keys/values projected on the first call and
        reused after (the context must keep its shape; start a new cache for a new one)."""
        op = "CrossAttention.forward_cache"
        if not isinstance(cache, CrossAttentionCache):
            raise TypeError(f"{op}: cache must be a CrossAttentionCache, got {type(cache).__name__}")
        self._check(op, query, context, mask)
        if cache.k is None:
            cache.k, cache.v = self._heads_kv(self.key(context)), self._heads_kv(self.value(context))
            cache._context_shape = tuple(context.shape)
        elif tuple(context.shape) != cache._context_shape:
            raise ValueError(
                f"{op}: the cache holds the projection of a context of shape "
                f"{shape_str(cache._context_shape)}, got {shape_str(context.shape)}"
            )
        return self._attend(query, cache.k, cache.v, mask)

    def _heads_kv(self, x: Tensor) -> Tensor:
        b, s, _ = x.shape
        return x.reshape(b, s, self.n_heads_kv, self.d_head).swap_dims(1, 2)

    def _attend(self, query: Tensor, k: Tensor, v: Tensor, mask) -> Tensor:
        b, lq, _ = query.shape
        lk = k.shape[2]
        q = self.query(query).reshape(b, lq, self.n_heads, self.d_head).swap_dims(1, 2)
        if self.n_heads != self.n_heads_kv:  # grouped heads: each key/value head serves n_rep query heads
            n_rep = self.n_heads // self.n_heads_kv
            k = (
                k.reshape(b, self.n_heads_kv, 1, lk, self.d_head)
                .expand(b, self.n_heads_kv, n_rep, lk, self.d_head)
                .reshape(b, self.n_heads, lk, self.d_head)
            )
            v = (
                v.reshape(b, self.n_heads_kv, 1, lk, self.d_head)
                .expand(b, self.n_heads_kv, n_rep, lk, self.d_head)
                .reshape(b, self.n_heads, lk, self.d_head)
            )
        dropout_active = self._training and self.dropout.prob > 0.0 and is_grad_enabled()
        if not dropout_active and self.min_float == _FUSED_MIN_FLOAT:
            context = attention(q, k, v, mask, self.scale, self.quiet_softmax, 0.0)
        else:
            scores = (q @ k.transpose(-2, -1)) * self.scale
            if mask is not None:
                scores = scores.mask_fill(mask.reshape(b, 1, 1, lk), self.min_float)
            weights = quiet_softmax(scores, -1) if self.quiet_softmax else softmax(scores, -1)
            context = self.dropout(weights) @ v
        context = context.swap_dims(1, 2).reshape(b, lq, self.n_heads * self.d_head)
        return self.output(context)

    def _check(self, op: str, query, context, mask) -> None:
        for name, t, d in (("query", query, self.d_model), ("context", context, self.d_context)):
            if not isinstance(t, Tensor) or t.ndim != 3 or t.shape[-1] != d:
                got = shape_str(t.shape) if isinstance(t, Tensor) else type(t).__name__
                raise ValueError(f"{op}: {name} must be [batch, seq, {d}], got {got}")
        if query.shape[0] != context.shape[0]:
            raise ValueError(
                f"{op}: query {shape_str(query.shape)} and context {shape_str(context.shape)} must "
                f"have the same batch size"
            )
        shape = (context.shape[0], context.shape[1])
        if mask is not None and (
            not isinstance(mask, Tensor) or not mask.dtype.is_bool or mask.shape != shape
        ):
            got = f"{mask.dtype} {shape_str(mask.shape)}" if isinstance(mask, Tensor) else type(mask).__name__
            raise ValueError(
                f"{op}: mask must be a bool tensor {shape_str(shape)} (the context's padding), got {got}"
            )

    def extra_repr(self) -> dict:
        return {
            "d_model": self.d_model,
            "d_context": self.d_context,
            "n_heads": self.n_heads,
            "n_heads_kv": self.n_heads_kv,
            "d_head": self.d_head,
            "dropout": self.dropout.prob,
            "min_float": self.min_float,
            "quiet_softmax": self.quiet_softmax,
        }
