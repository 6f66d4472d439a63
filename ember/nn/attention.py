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

Cross-attention is the same layer with key/value from another sequence (``Sk`` may differ
from ``Sq``). For autoregressive inference, :meth:`MultiHeadAttention.forward_step` attends
only new query positions against the keys/values kept in an :class:`MhaCache`, and
:meth:`MultiHeadAttention.forward_cache` is Burn's form of it (inputs hold the whole
sequence so far).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple, TypeVar

from ember.nn.attention_cache import MhaCache
from ember.nn.dropout import Dropout
from ember.nn.init import Initializer, default_linear_initializer
from ember.nn.linear import LinearConfig
from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.movement import cat
from ember.tensor.ops.nn import attention, quiet_softmax, softmax
from ember.tensor.tensor import Tensor

__all__ = [
    "MhaCache",
    "MhaInput",
    "MhaOutput",
    "MultiHeadAttention",
    "MultiHeadAttentionConfig",
    "set_projections",
]

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
            raise ValueError(
                f"MultiHeadAttentionConfig: d_model ({self.d_model}) must be a positive "
                f"multiple of n_heads ({self.n_heads})"
            )

        def linear(bias):
            return LinearConfig(self.d_model, self.d_model, bias, self.initializer).init(device, dtype)

        return MultiHeadAttention(
            linear(self.query_bias),
            linear(self.key_bias),
            linear(self.value_bias),
            linear(self.output_bias),
            Dropout(self.dropout),
            self.n_heads,
            self.min_float,
            self.quiet_softmax,
        )


_Masked = TypeVar("_Masked", bound="_MaskedInput")


class _MaskedInput:
    """The masks of an attention input, set Burn's way (``.mask_pad(m).mask_attn(a)``), shared
    by :class:`MhaInput` and :class:`~ember.nn.TransformerEncoderInput` (for self-attention,
    ``Sq = Sk = seq``)."""

    __slots__ = ("attn", "pad")

    def __init__(self):
        self.pad = None
        self.attn = None

    def mask_pad(self: _Masked, mask: Tensor | None) -> _Masked:
        """Padding mask ``[B, Sk]`` bool, True where the key is padding. Returns self."""
        self.pad = mask
        return self

    def mask_attn(self: _Masked, mask: Tensor | None) -> _Masked:
        """Attention mask ``[B, Sq, Sk]`` bool, True where attention is forbidden. Returns self."""
        self.attn = mask
        return self


class MhaInput(_MaskedInput):
    """Inputs of :class:`MultiHeadAttention`, built like Burn's:
    ``MhaInput(q, k, v).mask_pad(m).mask_attn(a)`` or ``MhaInput.self_attn(x)``.

    Args:
        query: ``[B, Sq, D]``.
        key: ``[B, Sk, D]`` (``query`` when None).
        value: ``[B, Sk, D]`` (``key`` when None).
    """

    __slots__ = ("key", "query", "value")

    def __init__(self, query: Tensor, key: Tensor | None = None, value: Tensor | None = None):
        super().__init__()
        self.query = query
        self.key = query if key is None else key
        self.value = self.key if value is None else value

    @classmethod
    def self_attn(cls, x: Tensor) -> "MhaInput":
        """Self-attention: query, key and value are all ``x``."""
        return cls(x, x, x)


class MhaOutput(NamedTuple):
    """``weights [B, H, Sq, Sk]`` when requested (else None) and ``context [B, Sq, D]``
    (Burn's field order)."""

    weights: Tensor | None
    context: Tensor


def _unpack(input, key, value, mask_pad, mask_attn) -> tuple:
    """``(query, key, value, mask_pad, mask_attn)`` from either calling form: an
    :class:`MhaInput` (explicit masks override its own) or tensors (key defaults to the
    query, value to the key)."""
    if isinstance(input, MhaInput):
        return (
            input.query,
            input.key,
            input.value,
            input.pad if mask_pad is None else mask_pad,
            input.attn if mask_attn is None else mask_attn,
        )
    key = input if key is None else key
    return input, key, key if value is None else value, mask_pad, mask_attn


def set_projections(attention: Module, query, key, value, output, dropout) -> None:
    """Give an attention module Burn's attention record layout: the ``query``, ``key``, ``value``
    and ``output`` projections (their record paths), then its ``dropout``."""
    attention.query = query
    attention.key = key
    attention.value = value
    attention.output = output
    attention.dropout = dropout


class MultiHeadAttention(Module):
    """Multi-head attention (see the module docstring for the exact computation).

    Args:
        query, key, value, output: ``Linear(d_model, d_model)`` projections.
        dropout: dropout on the pre-softmax scores.
        n_heads: number of heads.
        min_float: fill value of masked scores.
        quiet_softmax: use the quiet softmax.
    """

    def __init__(
        self,
        query,
        key,
        value,
        output,
        dropout: Dropout,
        n_heads: int,
        min_float: float = -1.0e4,
        quiet_softmax: bool = False,
    ):
        set_projections(self, query, key, value, output, dropout)
        self.d_model = query.weight.shape[0]
        self.n_heads = int(n_heads)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"MultiHeadAttention: d_model {self.d_model} is not divisible by n_heads {n_heads}"
            )
        self.d_k = self.d_model // self.n_heads
        self.min_float = float(min_float)
        self.quiet_softmax = bool(quiet_softmax)

    def forward(
        self,
        input,
        key: Tensor | None = None,
        value: Tensor | None = None,
        mask_pad: Tensor | None = None,
        mask_attn: Tensor | None = None,
        need_weights: bool = False,
    ) -> MhaOutput:
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
        q_in, k_in, v_in, mask_pad, mask_attn = _unpack(input, key, value, mask_pad, mask_attn)
        b, sq, _sk = self._check(q_in, k_in, v_in, mask_pad, mask_attn)

        q = self._heads(self.query(q_in))
        k = self._heads(self.key(k_in))
        v = self._heads(self.value(v_in))
        weights, context = self._attend(q, k, v, mask_pad, mask_attn, need_weights)
        context = context.swap_dims(1, 2).reshape(b, sq, self.d_model)
        return MhaOutput(weights, self.output(context))

    def forward_packed(self, x: Tensor, packing) -> Tensor:
        """Self-attention of packed real tokens (see :mod:`ember.nn.token_packing`).

        The projections run on the ``N`` packed rows only; queries, keys and values are
        scattered into the batch's span layout ``[B, span]`` (zeros at padding, which the
        packing's ``span_mask`` hides) for the attention itself, and the context is packed
        again before the output projection.

        Args:
            x: ``[N, D]``, the real tokens of ``packing``.
            packing: a :class:`~ember.nn.token_packing.TokenPacking` of the padding mask.

        Returns:
            ``[N, D]``: the context of the real tokens after the output projection.
        """
        q = self._heads(packing.unpack_span(self.query(x)))
        k = self._heads(packing.unpack_span(self.key(x)))
        v = self._heads(packing.unpack_span(self.value(x)))
        _, context = self._attend(q, k, v, packing.span_mask, None, False)
        context = context.swap_dims(1, 2).reshape(packing.batch, packing.span, self.d_model)
        return self.output(packing.pack_span(context))

    def forward_packed_first(self, x: Tensor, packing) -> Tensor:
        """:meth:`forward_packed` for each row's position 0 only: its query attends to every
        real token as :meth:`forward_packed` does, and no other query is computed.

        Args:
            x: ``[N, D]``, the real tokens of ``packing``.
            packing: a :class:`~ember.nn.token_packing.TokenPacking` of the padding mask.

        Returns:
            ``[B, 1, D]``: the context of position 0 after the output projection (rows whose
            position 0 is padding hold the value of a zero query: the caller discards them).
        """
        q = self._heads(self.query(packing.firsts(x)))
        k = self._heads(packing.unpack_span(self.key(x)))
        v = self._heads(packing.unpack_span(self.value(x)))
        _, context = self._attend(q, k, v, packing.span_mask, None, False)
        return self.output(context.swap_dims(1, 2).reshape(packing.batch, 1, self.d_model))

    @property
    def masks_exactly(self) -> bool:
        """Whether a masked key's weight is exactly 0 (its fill value's exponential underflows
        in float32 and wider), so padded positions can be left out of everything else."""
        return self.min_float <= _FUSED_MIN_FLOAT

    def forward_step(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        cache: MhaCache,
        mask_pad: Tensor | None = None,
        mask_attn: Tensor | None = None,
        need_weights: bool = False,
    ) -> MhaOutput:
        """Attend only the new positions, reusing the keys/values held by ``cache``.

        Args:
            query: the new positions ``[B, n, D]``.
            key, value: self-attention cache: the new positions' inputs ``[B, n_k, D]`` (appended
                to the cache); cross-attention cache: the memory ``[B, Sm, D]`` (projected on the
                first step, then only checked to keep its shape).
            cache: an :class:`MhaCache`, advanced in place.
            mask_pad: ``[B, Sk]`` bool over every key attended (cached and new).
            mask_attn: ``[B, n, Sk]`` bool, the rows of the new query positions.
            need_weights: also return the weights ``[B, H, n, Sk]`` of the new rows.

        Returns:
            :class:`MhaOutput` with the context of the new positions ``[B, n, D]``.
        """
        op = "MultiHeadAttention.forward_step"
        if not isinstance(cache, MhaCache):
            raise TypeError(
                f"{op}: cache must be an MhaCache (MhaCache.autoregressive() or "
                f"MhaCache.autoregressive_cross_attention()), got {type(cache).__name__}"
            )
        b, n, _ = self._check_input(op, "query", query)
        for name, t in (("key", key), ("value", value)):
            self._check_input(op, name, t)
        if key.shape != value.shape or key.shape[0] != b:
            raise ValueError(
                f"{op}: key {shape_str(key.shape)} and value {shape_str(value.shape)} must match "
                f"each other and the query batch {b}"
            )
        sk = cache.key_length_after(op, key)  # checked before the cache changes
        self._check_masks(op, mask_pad, mask_attn, b, n, sk)
        k, v = cache.advance(
            key, value, lambda t: self._heads(self.key(t)), lambda t: self._heads(self.value(t))
        )
        q = self._heads(self.query(query))
        weights, context = self._attend(q, k, v, mask_pad, mask_attn, need_weights)
        cache.length += n
        context = context.swap_dims(1, 2).reshape(b, n, self.d_model)
        return MhaOutput(weights, self.output(context))

    def forward_cache(
        self,
        input,
        cache: MhaCache,
        key: Tensor | None = None,
        value: Tensor | None = None,
        mask_pad: Tensor | None = None,
        mask_attn: Tensor | None = None,
        need_weights: bool = False,
    ) -> MhaOutput:
        """Burn's ``forward_cache``: the inputs hold the whole sequence so far; only the
        positions after the cached ones are computed.

        Each call must add at least one query position. The result is what :meth:`forward`
        gives on the same inputs (rows of the cached positions are the stored outputs).

        Args:
            input: an :class:`MhaInput`, or the query ``[B, Sq, D]`` (the whole sequence so far).
            cache: an :class:`MhaCache`, advanced in place.
            key, value: when ``input`` is a tensor: ``[B, Sk, D]``, the whole sequence so far
                (self-attention) or the fixed memory (cross-attention).
            mask_pad: ``[B, Sk]`` bool.
            mask_attn: ``[B, Sq, Sk]`` bool (only the rows of the new positions are used).
            need_weights: also return the weights of the new rows ``[B, H, new, Sk]``.

        Returns:
            :class:`MhaOutput` with the context of every position ``[B, Sq, D]``.
        """
        op = "MultiHeadAttention.forward_cache"
        q_in, k_in, v_in, mask_pad, mask_attn = _unpack(input, key, value, mask_pad, mask_attn)
        if not isinstance(cache, MhaCache):
            raise TypeError(f"{op}: cache must be an MhaCache, got {type(cache).__name__}")
        _, sq, sk = self._check(q_in, k_in, v_in, mask_pad, mask_attn)
        done = cache.length
        kept = 0 if cache.context is None else cache.context.shape[1]
        if kept != done:
            raise ValueError(
                f"{op}: this cache was advanced by forward_step, which keeps no outputs; use one "
                f"of forward_cache / forward_step per cache"
            )
        if sq <= done:
            raise ValueError(
                f"{op}: the query has {sq} positions but the cache already holds {done}; pass the "
                f"whole sequence so far (the cached positions and at least one new one)"
            )
        if cache.cross:
            k_new, v_new = k_in, v_in
        else:
            if sk < cache.key_length:
                raise ValueError(
                    f"{op}: the key has {sk} positions but the cache already holds "
                    f"{cache.key_length}; pass the whole sequence so far"
                )
            k_new, v_new = k_in[:, cache.key_length :], v_in[:, cache.key_length :]
        rows = None if mask_attn is None else mask_attn[:, done:]
        out = self.forward_step(q_in[:, done:], k_new, v_new, cache, mask_pad, rows, need_weights)
        cache.context = out.context if cache.context is None else cat([cache.context, out.context], 1)
        return MhaOutput(out.weights, cache.context)

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, mask_pad, mask_attn, need_weights: bool):
        """Scores, masks, (quiet) softmax and the weighted values on heads ``[B, H, S, d_k]``:
        ``(weights or None, context [B, H, Sq, d_k])``."""
        b, _, sq, _ = q.shape
        sk = k.shape[2]
        p = self.dropout.prob if self._training else 0.0
        fused = mask_attn is None and not need_weights and self.min_float == _FUSED_MIN_FLOAT and p < 1.0
        if fused:
            return None, attention(q, k, v, mask_pad, None, self.quiet_softmax, p)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / self.d_k**0.5)
        scores = self.dropout(scores)
        if mask_pad is not None:
            scores = scores.mask_fill(mask_pad.reshape(b, 1, 1, sk), self.min_float)
        if mask_attn is not None:
            scores = scores.mask_fill(mask_attn.reshape(b, 1, sq, sk), self.min_float)
        weights = quiet_softmax(scores, -1) if self.quiet_softmax else softmax(scores, -1)
        return (weights if need_weights else None), weights @ v

    def _heads(self, x: Tensor) -> Tensor:
        b, s, _ = x.shape
        return x.reshape(b, s, self.n_heads, self.d_k).swap_dims(1, 2)

    def _check_input(self, op: str, name: str, t) -> tuple:
        if not isinstance(t, Tensor) or t.ndim != 3 or t.shape[-1] != self.d_model:
            got = shape_str(t.shape) if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(f"{op}: {name} must be [batch, seq, {self.d_model}], got {got}")
        return t.shape

    def _check_masks(self, op: str, mask_pad, mask_attn, b: int, sq: int, sk: int) -> None:
        for name, m, shape in (("mask_pad", mask_pad, (b, sk)), ("mask_attn", mask_attn, (b, sq, sk))):
            if m is not None and (not isinstance(m, Tensor) or not m.dtype.is_bool or m.shape != shape):
                got = f"{m.dtype} {shape_str(m.shape)}" if isinstance(m, Tensor) else type(m).__name__
                raise ValueError(f"{op}: {name} must be a bool tensor {shape_str(shape)}, got {got}")

    def _check(self, q, k, v, mask_pad, mask_attn):
        op = "MultiHeadAttention"
        for name, t in (("query", q), ("key", k), ("value", v)):
            self._check_input(op, name, t)
        b, sq, _ = q.shape
        if k.shape != v.shape or k.shape[0] != b:
            raise ValueError(
                f"{op}: key {shape_str(k.shape)} and value {shape_str(v.shape)} must "
                f"match each other and the query batch {b}"
            )
        sk = k.shape[1]
        self._check_masks(op, mask_pad, mask_attn, b, sq, sk)
        return b, sq, sk

    def extra_repr(self) -> dict:
        return {
            "d_model": self.d_model,
            "n_heads": self.n_heads,
            "d_k": self.d_k,
            "dropout": self.dropout.prob,
            "min_float": self.min_float,
            "quiet_softmax": self.quiet_softmax,
        }
