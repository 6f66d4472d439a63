"""Multi-head attention as in Burn's ``MultiHeadAttention``.

For queries ``[B, Sq, D]`` and keys/values ``[B, Sk, D]`` with H heads of size d_k = D/H:

    scores  = (q @ kᵀ) / √d_k                   per head, [B, H, Sq, Sk]
    scores  = dropout(scores)                    on the PRE-softmax scores (Burn's choice)
    scores  = fill(scores, mask_pad, min_float)  True = masked; mask_pad [B, Sk]
    scores  = fill(scores, mask_attn, min_float) mask_attn [B, Sq, Sk]
    weights = softmax(scores)  or quiet_softmax(scores) = exp(x)/(1 + Σexp(x))
    context = output(weights @ v)

Masked positions get the finite ``min_float`` (−1e4), not −∞: a fully padded row then
still attends uniformly instead of producing NaN. Without ``mask_attn`` (and unless the
weights are requested) the whole score/softmax/context chain runs as the fused
``ember.attention`` kernel, one kernel each way.
"""
from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from ember.nn.dropout import Dropout
from ember.nn.init import Initializer, default_linear_initializer
from ember.nn.linear import LinearConfig
from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.nn import attention, quiet_softmax, softmax
from ember.tensor.tensor import Tensor

__all__ = ["MhaInput", "MhaOutput", "MultiHeadAttention", "MultiHeadAttentionConfig"]

_FUSED_MIN_FLOAT = -1.0e4  # the fill value the fused attention kernel uses


class MultiHeadAttentionConfig(Config):
    """Configuration of :class:`MultiHeadAttention`.

    Args:
        d_model: model size D (divisible by ``n_heads``).
        n_heads: number of heads H.
        dropout: dropout probability on the pre-softmax scores (0.1).
        min_float: the value masked scores are filled with (−1e4).
        quiet_softmax: use ``exp(x)/(1 + Σexp(x))`` so a head may attend to nothing.
        initializer: for the four projections (KaimingUniform(1/√3)).
        query_bias, key_bias, value_bias, output_bias: biases of the projections.
    """

    d_model: int
    n_heads: int
    dropout: float = 0.1
    min_float: float = -1.0e4
    quiet_softmax: bool = False
    initializer: Initializer = field(default_factory=default_linear_initializer)
    key_bias: bool = True
    value_bias: bool = True
    query_bias: bool = True
    output_bias: bool = True

    def init(self, device=None, dtype=None) -> "MultiHeadAttention":
        """Build the layer: query/key/value/output are ``Linear(d_model, d_model)``."""
        if self.n_heads <= 0 or self.d_model <= 0 or self.d_model % self.n_heads:
            raise ValueError(f"MultiHeadAttentionConfig: d_model ({self.d_model}) must be a positive "
                             f"multiple of n_heads ({self.n_heads})")

        def linear(bias):
            return LinearConfig(self.d_model, self.d_model, bias, self.initializer).init(device, dtype)

        return MultiHeadAttention(linear(self.query_bias), linear(self.key_bias), linear(self.value_bias),
                                  linear(self.output_bias), Dropout(self.dropout), self.n_heads,
                                  self.min_float, self.quiet_softmax)


class MhaInput:
    """Inputs of :class:`MultiHeadAttention`, built like Burn's:
    ``MhaInput(q, k, v).mask_pad(m).mask_attn(a)`` or ``MhaInput.self_attn(x)``.

    Args:
        query: ``[B, Sq, D]``.
        key: ``[B, Sk, D]`` (``query`` when None).
        value: ``[B, Sk, D]`` (``key`` when None).
    """

    __slots__ = ("query", "key", "value", "pad", "attn")

    def __init__(self, query: Tensor, key: Tensor | None = None, value: Tensor | None = None):
        self.query = query
        self.key = query if key is None else key
        self.value = self.key if value is None else value
        self.pad = None
        self.attn = None

    @classmethod
    def self_attn(cls, x: Tensor) -> "MhaInput":
        """Self-attention: query, key and value are all ``x``."""
        return cls(x, x, x)

    def mask_pad(self, mask: Tensor | None) -> "MhaInput":
        """Padding mask ``[B, Sk]`` bool, True where the key is padding. Returns self."""
        self.pad = mask
        return self

    def mask_attn(self, mask: Tensor | None) -> "MhaInput":
        """Attention mask ``[B, Sq, Sk]`` bool, True where attention is forbidden. Returns self."""
        self.attn = mask
        return self


class MhaOutput(NamedTuple):
    """``weights [B, H, Sq, Sk]`` when requested (else None) and ``context [B, Sq, D]``
    (Burn's field order)."""

    weights: Tensor | None
    context: Tensor


class MultiHeadAttention(Module):
    """Multi-head attention (see the module docstring for the exact computation).

    Args:
        query, key, value, output: ``Linear(d_model, d_model)`` projections.
        dropout: dropout on the pre-softmax scores.
        n_heads: number of heads.
        min_float: fill value of masked scores.
        quiet_softmax: use the quiet softmax.
    """

    def __init__(self, query, key, value, output, dropout: Dropout, n_heads: int, min_float: float = -1.0e4,
                 quiet_softmax: bool = False):
        self.query = query
        self.key = key
        self.value = value
        self.output = output
        self.dropout = dropout
        self.d_model = query.weight.shape[0]
        self.n_heads = int(n_heads)
        if self.d_model % self.n_heads:
            raise ValueError(f"MultiHeadAttention: d_model {self.d_model} is not divisible by n_heads {n_heads}")
        self.d_k = self.d_model // self.n_heads
        self.min_float = float(min_float)
        self.quiet_softmax = bool(quiet_softmax)

    def forward(self, input, key: Tensor | None = None, value: Tensor | None = None, mask_pad: Tensor | None = None,
                mask_attn: Tensor | None = None, need_weights: bool = False) -> MhaOutput:
        """Attend.

        Args:
            input: an :class:`MhaInput`, or the query tensor ``[B, Sq, D]``.
            key, value: when ``input`` is a tensor (self-attention when omitted).
            mask_pad: ``[B, Sk]`` bool, True = padded key (overrides the MhaInput's).
            mask_attn: ``[B, Sq, Sk]`` bool, True = forbidden (overrides the MhaInput's).
            need_weights: also return the attention weights (computed without the fused kernel).

        Returns:
            :class:`MhaOutput` ``(weights, context)``.
        """
        if isinstance(input, MhaInput):
            q_in, k_in, v_in = input.query, input.key, input.value
            mask_pad = input.pad if mask_pad is None else mask_pad
            mask_attn = input.attn if mask_attn is None else mask_attn
        else:
            q_in = input
            k_in = q_in if key is None else key
            v_in = k_in if value is None else value
        b, sq, sk = self._check(q_in, k_in, v_in, mask_pad, mask_attn)

        q = self._heads(self.query(q_in))
        k = self._heads(self.key(k_in))
        v = self._heads(self.value(v_in))

        p = self.dropout.prob if self._training else 0.0
        fused = mask_attn is None and not need_weights and self.min_float == _FUSED_MIN_FLOAT and p < 1.0
        weights = None
        if fused:
            context = attention(q, k, v, mask_pad, None, self.quiet_softmax, p)
        else:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / self.d_k ** 0.5)
            scores = self.dropout(scores)
            if mask_pad is not None:
                scores = scores.mask_fill(mask_pad.reshape(b, 1, 1, sk), self.min_float)
            if mask_attn is not None:
                scores = scores.mask_fill(mask_attn.reshape(b, 1, sq, sk), self.min_float)
            weights = quiet_softmax(scores, -1) if self.quiet_softmax else softmax(scores, -1)
            context = weights @ v
        context = context.swap_dims(1, 2).reshape(b, sq, self.d_model)
        return MhaOutput(weights if need_weights else None, self.output(context))

    def _heads(self, x: Tensor) -> Tensor:
        b, s, _ = x.shape
        return x.reshape(b, s, self.n_heads, self.d_k).swap_dims(1, 2)

    def _check(self, q, k, v, mask_pad, mask_attn):
        for name, t in (("query", q), ("key", k), ("value", v)):
            if not isinstance(t, Tensor) or t.ndim != 3 or t.shape[-1] != self.d_model:
                got = shape_str(t.shape) if isinstance(t, Tensor) else type(t).__name__
                raise ValueError(f"MultiHeadAttention: {name} must be [batch, seq, {self.d_model}], got {got}")
        b, sq, _ = q.shape
        if k.shape != v.shape or k.shape[0] != b:
            raise ValueError(f"MultiHeadAttention: key {shape_str(k.shape)} and value {shape_str(v.shape)} must "
                             f"match each other and the query batch {b}")
        sk = k.shape[1]
        for name, m, shape in (("mask_pad", mask_pad, (b, sk)), ("mask_attn", mask_attn, (b, sq, sk))):
            if m is not None and (not isinstance(m, Tensor) or not m.dtype.is_bool or m.shape != shape):
                got = f"{m.dtype} {shape_str(m.shape)}" if isinstance(m, Tensor) else type(m).__name__
                raise ValueError(f"MultiHeadAttention: {name} must be a bool tensor {shape_str(shape)}, got {got}")
        return b, sq, sk

    def extra_repr(self) -> dict:
        return {"d_model": self.d_model, "n_heads": self.n_heads, "d_k": self.d_k, "dropout": self.dropout.prob,
                "min_float": self.min_float, "quiet_softmax": self.quiet_softmax}
