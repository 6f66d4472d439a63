"""Transformer encoder (Burn's ``TransformerEncoder``) and its position-wise feed-forward.

One layer, with ``drop`` the layer's residual dropout:

* post-norm (``norm_first=False``, default):
  ``x = norm_1(x + drop(mha(x)))``; ``x = norm_2(x + drop(pwff(x)))``
* pre-norm (``norm_first=True``):
  ``x = x + drop(mha(norm_2(x)))``; ``x = x + drop(pwff(norm_1(x)))`` — no final norm.

Parameter paths match Burn's: ``layers.{i}.mha.query.weight``, ``layers.{i}.pwff.linear_inner``,
``layers.{i}.norm_1.gamma``...

Autoregressive inference (a causal encoder used as a decoder-only model): with the cache
from ``new_autoregressive_cache()``, :meth:`TransformerEncoder.forward_step` runs only the new
positions (the self-attention keys/values of the earlier ones are cached), and
:meth:`TransformerEncoder.forward_autoregressive_inference` is Burn's form of it, taking the
whole sequence so far.
"""

from __future__ import annotations

from dataclasses import field

from ember.nn.activation import ActivationConfig
from ember.nn.attention import MhaInput, MultiHeadAttentionConfig, _MaskedInput
from ember.nn.attention_cache import MhaCache
from ember.nn.dropout import Dropout
from ember.nn.init import Initializer, default_linear_initializer
from ember.nn.linear import LinearConfig
from ember.nn.module import Module
from ember.nn.norm import LayerNormConfig
from ember.nn.token_packing import TokenPacking
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.movement import cat
from ember.tensor.tensor import Tensor

__all__ = [
    "PositionWiseFeedForward",
    "PositionWiseFeedForwardConfig",
    "TransformerEncoder",
    "TransformerEncoderAutoregressiveCache",
    "TransformerEncoderConfig",
    "TransformerEncoderInput",
    "TransformerEncoderLayer",
    "TransformerEncoderLayerAutoregressiveCache",
]


def _activation(value) -> ActivationConfig:
    if isinstance(value, ActivationConfig):
        return value
    if isinstance(value, str):
        return ActivationConfig(value)
    raise TypeError(f"activation must be an ActivationConfig or a name such as 'gelu', got {value!r}")


class PositionWiseFeedForwardConfig(Config):
    """Configuration of :class:`PositionWiseFeedForward`.

    Args:
        d_model: input and output size.
        d_ff: hidden size.
        dropout: dropout after the activation (0.1).
        initializer: for both linears (KaimingUniform(1/√3)).
        activation: the activation (GELU).
    """

    d_model: int
    d_ff: int
    dropout: float = 0.1
    initializer: Initializer = field(default_factory=default_linear_initializer)
    activation: ActivationConfig = field(default_factory=ActivationConfig)

    def __post_init__(self):
        self.activation = _activation(self.activation)

    def init(self, device=None, dtype=None) -> "PositionWiseFeedForward":
        inner = LinearConfig(self.d_model, self.d_ff, True, self.initializer).init(device, dtype)
        outer = LinearConfig(self.d_ff, self.d_model, True, self.initializer).init(device, dtype)
        return PositionWiseFeedForward(
            inner, outer, Dropout(self.dropout), self.activation.init(device, dtype)
        )


class PositionWiseFeedForward(Module):
    """``linear_outer(dropout(activation(linear_inner(x))))``.

    Args:
        linear_inner: ``Linear(d_model, d_ff)``.
        linear_outer: ``Linear(d_ff, d_model)``.
        dropout: applied after the activation.
        activation: the activation module.
    """

    def __init__(self, linear_inner, linear_outer, dropout: Dropout, activation: Module):
        self.linear_inner = linear_inner
        self.linear_outer = linear_outer
        self.dropout = dropout
        self.activation = activation

    def forward(self, x: Tensor) -> Tensor:
        return self.linear_outer(self.dropout(self.activation(self.linear_inner(x))))

    def extra_repr(self) -> dict:
        d_model, d_ff = self.linear_inner.weight.shape
        return {"d_model": d_model, "d_ff": d_ff, "prob": self.dropout.prob}


class _TransformerConfig(Config):
    """The fields of :class:`TransformerEncoderConfig` and
    :class:`~ember.nn.TransformerDecoderConfig`, and the parts both build."""

    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    dropout: float = 0.1
    norm_first: bool = False
    quiet_softmax: bool = False
    initializer: Initializer = field(default_factory=default_linear_initializer)
    activation: ActivationConfig = field(default_factory=ActivationConfig)
    layer_norm_eps: float = 1e-5

    def __post_init__(self):
        self.activation = _activation(self.activation)

    def _init_stack(self, stack: type, device, dtype):
        """``stack`` of ``n_layers`` layers from ``init_layer``."""
        if self.n_layers < 0:
            raise ValueError(f"{type(self).__name__}: n_layers must be >= 0, got {self.n_layers}")
        layers = [self.init_layer(device, dtype) for _ in range(self.n_layers)]
        return stack(
            layers, self.d_model, self.d_ff, self.n_heads, self.dropout, self.norm_first, self.quiet_softmax
        )

    def _init_attention(self, device, dtype):
        return MultiHeadAttentionConfig(
            self.d_model,
            self.n_heads,
            dropout=self.dropout,
            quiet_softmax=self.quiet_softmax,
            initializer=self.initializer,
        ).init(device, dtype)

    def _init_feed_forward(self, device, dtype) -> "PositionWiseFeedForward":
        return PositionWiseFeedForwardConfig(
            self.d_model, self.d_ff, self.dropout, self.initializer, self.activation
        ).init(device, dtype)

    def _init_norm(self, device, dtype):
        return LayerNormConfig(self.d_model, self.layer_norm_eps).init(device, dtype)


class TransformerEncoderConfig(_TransformerConfig):
    """Configuration of :class:`TransformerEncoder`.

    Args:
        d_model: model size.
        d_ff: feed-forward hidden size.
        n_heads: attention heads.
        n_layers: number of layers.
        dropout: dropout of attention scores, feed-forward and residual branches (0.1).
        norm_first: pre-norm layers (normalise before each block).
        quiet_softmax: attention may attend to nothing (``exp(x)/(1+Σexp(x))``).
        initializer: for every linear (KaimingUniform(1/√3)).
        activation: feed-forward activation (GELU).
        layer_norm_eps: epsilon of the layer norms (1e-5).
    """

    def init(self, device=None, dtype=None) -> "TransformerEncoder":
        """Build ``n_layers`` layers."""
        return self._init_stack(TransformerEncoder, device, dtype)

    def init_layer(self, device=None, dtype=None) -> "TransformerEncoderLayer":
        """Build one :class:`TransformerEncoderLayer`."""
        return TransformerEncoderLayer(
            self._init_attention(device, dtype),
            self._init_feed_forward(device, dtype),
            self._init_norm(device, dtype),
            self._init_norm(device, dtype),
            Dropout(self.dropout),
            self.norm_first,
        )


class TransformerEncoderInput(_MaskedInput):
    """Input of :class:`TransformerEncoder`: ``TransformerEncoderInput(x).mask_pad(m).mask_attn(a)``,
    with ``m`` ``[batch, seq]`` bool (True at padding positions) and ``a`` ``[batch, seq, seq]``
    bool (True where attention is forbidden).

    Args:
        tensor: ``[batch, seq, d_model]``.
    """

    __slots__ = ("tensor",)

    def __init__(self, tensor: Tensor):
        super().__init__()
        self.tensor = tensor


class TransformerEncoderLayer(Module):
    """One encoder layer (see the module docstring).

    Args:
        mha: self-attention.
        pwff: position-wise feed-forward.
        norm_1, norm_2: layer norms.
        dropout: residual-branch dropout.
        norm_first: pre-norm when True.
    """

    def __init__(self, mha, pwff, norm_1, norm_2, dropout: Dropout, norm_first: bool = False):
        self.mha = mha
        self.pwff = pwff
        self.norm_1 = norm_1
        self.norm_2 = norm_2
        self.dropout = dropout
        self.norm_first = bool(norm_first)

    def forward(self, x: Tensor, mask_pad: Tensor | None = None, mask_attn: Tensor | None = None) -> Tensor:
        """Args:
        x: ``[batch, seq, d_model]``.
        mask_pad: ``[batch, seq]`` bool, True = padding.
        mask_attn: ``[batch, seq, seq]`` bool, True = forbidden.
        """

        def attend(h):
            return self.mha(MhaInput.self_attn(h).mask_pad(mask_pad).mask_attn(mask_attn)).context

        return self._run(x, attend)

    def forward_packed(self, x: Tensor, packing: TokenPacking) -> Tensor:
        """The layer on packed real tokens ``[N, d_model]`` (see :mod:`ember.nn.token_packing`);
        equal, on those tokens, to :meth:`forward` on the padded batch."""

        def attend(h):
            return self.mha.forward_packed(h, packing)

        return self._run(x, attend)

    def forward_first(self, x: Tensor, mask_pad: Tensor | None = None) -> Tensor:
        """:meth:`forward`'s output at position 0 only, ``[batch, 1, d_model]``: the keys and
        values still come from every position, but no other position's query, output
        projection or feed-forward is computed."""

        def attend(h):
            return self.mha(MhaInput(h[:, :1], h, h).mask_pad(mask_pad)).context

        return self._run(x, attend, first=lambda t: t[:, :1])

    def forward_packed_first(self, x: Tensor, packing: TokenPacking) -> Tensor:
        """:meth:`forward_first` on packed real tokens ``[N, d_model]``: ``[batch, 1, d_model]``
        (rows whose position 0 is padding hold values the caller discards)."""

        def attend(h):
            return self.mha.forward_packed_first(h, packing)

        return self._run(x, attend, first=packing.firsts)

    def forward_step(
        self,
        x: Tensor,
        cache: "TransformerEncoderLayerAutoregressiveCache",
        mask_pad: Tensor | None = None,
        mask_attn: Tensor | None = None,
    ) -> Tensor:
        """The layer on new positions only, attending to them and to the cached ones.

        Args:
            x: the new positions ``[batch, n, d_model]``.
            cache: this layer's cache, advanced in place.
            mask_pad: ``[batch, cached + n]`` bool.
            mask_attn: ``[batch, n, cached + n]`` bool, the rows of the new positions.

        Returns:
            ``[batch, n, d_model]``.
        """
        _check_cache(
            "TransformerEncoderLayer.forward_step", cache, TransformerEncoderLayerAutoregressiveCache
        )

        def attend(h):
            return self.mha.forward_step(h, h, h, cache.mha, mask_pad, mask_attn).context

        return self._run(x, attend)

    def forward_autoregressive_inference(
        self,
        x: Tensor,
        mask_pad: Tensor | None,
        mask_attn: Tensor | None,
        cache: "TransformerEncoderLayerAutoregressiveCache",
    ) -> Tensor:
        """Burn's form: ``x`` is the whole sequence so far ``[batch, seq, d_model]`` (masks
        ``[batch, seq]`` / ``[batch, seq, seq]``); only positions after the cached ones are
        computed. Returns every position's output, equal to :meth:`forward` on ``x``."""
        op = "TransformerEncoderLayer.forward_autoregressive_inference"
        _check_cache(op, cache, TransformerEncoderLayerAutoregressiveCache)
        done = _cached_outputs(op, cache)
        new = _continuation(op, x, done)
        out = self.forward_step(new, cache, mask_pad, _mask_rows(op, mask_attn, x, done))
        cache.output = _append_positions(cache.output, out)
        return cache.output

    def _run(self, x: Tensor, attend, first=None) -> Tensor:
        """The layer around ``attend`` (self-attention of its normalised/raw input); with
        ``first``, attention's residual is ``first(x)`` (the positions ``attend`` returns)."""
        return _residual_blocks(
            x, (attend, self.pwff), (self.norm_1, self.norm_2), self.norm_first, self.dropout, first
        )


class _TransformerStack(Module):
    """A stack of transformer layers (no final norm, as in Burn): the constructor of
    :class:`TransformerEncoder` and :class:`~ember.nn.TransformerDecoder`.

    Args:
        layers: the layers.
        d_model, d_ff, n_heads, dropout, norm_first, quiet_softmax: recorded for display.
    """

    _skips_padding = False  # the encoder's forward may run on the real tokens only

    def __init__(
        self,
        layers: list,
        d_model: int,
        d_ff: int,
        n_heads: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        quiet_softmax: bool = False,
    ):
        self.layers = list(layers)
        self.d_model = int(d_model)
        self.d_ff = int(d_ff)
        self.n_heads = int(n_heads)
        self.n_layers = len(self.layers)
        self.dropout = float(dropout)
        self.norm_first = bool(norm_first)
        self.quiet_softmax = bool(quiet_softmax)
        if self._skips_padding:
            self.skip_padding = True


class TransformerEncoder(_TransformerStack):
    """A stack of :class:`TransformerEncoderLayer` (no final norm, as in Burn).

    Args:
        layers: the layers.
        d_model, d_ff, n_heads, dropout, norm_first, quiet_softmax: recorded for display.

    Attributes:
        skip_padding: run the layers on the real tokens only when a padding mask allows it
            (True; see :meth:`forward`).
    """

    _skips_padding = True

    def forward(self, input, mask_pad: Tensor | None = None, mask_attn: Tensor | None = None) -> Tensor:
        """Args:
            input: a :class:`TransformerEncoderInput`, or the tensor ``[batch, seq, d_model]``.
            mask_pad: ``[batch, seq]`` bool (overrides the input's).
            mask_attn: ``[batch, seq, seq]`` bool (overrides the input's).

        Returns:
            ``[batch, seq, d_model]``. With a padding mask (and no attention mask) the layers
            run on the real tokens only and padded positions come out as 0: what they would
            hold never reaches a real position (set ``skip_padding = False`` on the encoder to
            compute them anyway, as Burn does).
        """
        x, mask_pad, mask_attn = self._unpack(input, mask_pad, mask_attn)
        if self._packs(x, mask_pad, mask_attn):
            packing = TokenPacking(mask_pad)
            if packing.count < packing.batch * packing.seq and packing.count:
                h = packing.pack(x)
                for layer in self.layers:
                    h = layer.forward_packed(h, packing)
                return packing.unpack(h)
        for layer in self.layers:
            x = layer(x, mask_pad, mask_attn)
        return x

    def forward_first_token(self, input, mask_pad: Tensor | None = None) -> Tensor:
        """``forward(input)[:, 0]``, ``[batch, d_model]``, for a head that reads the first token
        (BERT's ``[CLS]``, Burn's text classifier): the last layer computes position 0 only. Its
        keys and values still cover every token, but the other positions' queries, attention,
        output projection and feed-forward are left out: all of that layer's work but its key
        and value projections.

        Args:
            input: a :class:`TransformerEncoderInput` (an attention mask is taken as
                :meth:`forward` takes it, every position computed), or ``[batch, seq, d_model]``.
            mask_pad: ``[batch, seq]`` bool (overrides the input's).
        """
        x, mask_pad, mask_attn = self._unpack(input, mask_pad, None)
        if mask_attn is not None or not self.layers or not isinstance(x, Tensor) or x.ndim != 3:
            return self.forward(input, mask_pad)[:, 0]
        *body, last = self.layers
        if self._packs(x, mask_pad, mask_attn):
            packing = TokenPacking(mask_pad)
            if packing.count < packing.batch * packing.seq and packing.count:
                h = packing.pack(x)
                for layer in body:
                    h = layer.forward_packed(h, packing)
                out = last.forward_packed_first(h, packing)[:, 0]
                # as forward's, position 0 comes out as 0 where it is padding
                return out.mask_fill(mask_pad[:, :1], 0.0)
        for layer in body:
            x = layer(x, mask_pad)
        return last.forward_first(x, mask_pad)[:, 0]

    def _packs(self, x, mask_pad, mask_attn) -> bool:
        """Whether the layers may run on the real tokens only: a padding mask of the input's
        [batch, seq], no attention mask, and masking that gives padded keys exactly 0 weight."""
        return (
            self.skip_padding
            and mask_pad is not None
            and mask_attn is None
            and isinstance(x, Tensor)
            and x.ndim == 3
            and isinstance(mask_pad, Tensor)
            and tuple(mask_pad.shape) == tuple(x.shape[:2])
            and mask_pad.dtype.is_bool
            and all(layer.mha.masks_exactly for layer in self.layers)
        )

    def forward_step(
        self,
        input,
        cache: "TransformerEncoderAutoregressiveCache",
        mask_pad: Tensor | None = None,
        mask_attn: Tensor | None = None,
    ) -> Tensor:
        """Run new positions only, attending to them and to every cached position: one
        decoding step costs one position per layer, not a re-run over the prefix.

        Args:
            input: a :class:`TransformerEncoderInput` or the new positions ``[batch, n, d_model]``.
            cache: from :meth:`new_autoregressive_cache`, advanced in place.
            mask_pad: ``[batch, cached + n]`` bool.
            mask_attn: ``[batch, n, cached + n]`` bool, the rows of the new positions (none is
                needed for one new position of a causal model: it may see every earlier one).

        Returns:
            ``[batch, n, d_model]``, the outputs of the new positions.
        """
        op = "TransformerEncoder.forward_step"
        x, mask_pad, mask_attn = self._cached_input(op, input, cache, mask_pad, mask_attn)
        _check_cache_batch(op, cache, x.shape[0])
        for layer, layer_cache in zip(self.layers, cache.layers):
            x = layer.forward_step(x, layer_cache, mask_pad, mask_attn)
        cache.output = _append_positions(cache.output, x)
        return x

    def forward_autoregressive_inference(
        self,
        input,
        cache: "TransformerEncoderAutoregressiveCache",
        mask_pad: Tensor | None = None,
        mask_attn: Tensor | None = None,
    ) -> Tensor:
        """Burn's ``forward_autoregressive_inference``: ``input`` holds the whole sequence so
        far ``[batch, seq, d_model]`` with masks ``[batch, seq]`` / ``[batch, seq, seq]``
        (e.g. :func:`~ember.nn.generate_autoregressive_mask`); only the positions after the
        cached ones are computed. Returns ``[batch, seq, d_model]``, equal to :meth:`forward`
        on the same input."""
        op = "TransformerEncoder.forward_autoregressive_inference"
        x, mask_pad, mask_attn = self._cached_input(op, input, cache, mask_pad, mask_attn)
        done = cache.length
        new = _continuation(op, x, done)
        self.forward_step(new, cache, mask_pad, _mask_rows(op, mask_attn, x, done))
        return cache.output

    def new_autoregressive_cache(self) -> "TransformerEncoderAutoregressiveCache":
        """An empty cache for :meth:`forward_autoregressive_inference` / :meth:`forward_step`."""
        return TransformerEncoderAutoregressiveCache.empty(self.n_layers)

    def _cached_input(self, op: str, input, cache, mask_pad, mask_attn) -> tuple:
        """``(x, mask_pad, mask_attn)`` of a call that runs on ``cache``, the cache and the
        input checked against this encoder."""
        x, mask_pad, mask_attn = self._unpack(input, mask_pad, mask_attn)
        _check_stack_cache(op, cache, TransformerEncoderAutoregressiveCache, self.n_layers)
        _check_model_input(op, "input", x, self.d_model)
        return x, mask_pad, mask_attn

    @staticmethod
    def _unpack(input, mask_pad, mask_attn):
        if isinstance(input, TransformerEncoderInput):
            return (
                input.tensor,
                input.pad if mask_pad is None else mask_pad,
                input.attn if mask_attn is None else mask_attn,
            )
        return input, mask_pad, mask_attn


class _LayerCache:
    """A layer's autoregressive cache: its attention caches (set by the subclass) and its
    outputs so far, kept only when the layer is advanced by its own
    ``forward_autoregressive_inference`` (a stack's cache keeps them once, at the top)."""

    __slots__ = ("output",)

    def __init__(self):
        self.output = None

    @classmethod
    def empty(cls):
        """An empty cache."""
        return cls()


class TransformerEncoderLayerAutoregressiveCache(_LayerCache):
    """The autoregressive cache of one :class:`TransformerEncoderLayer` (Burn's): the
    self-attention keys/values, and the layer's outputs when advanced by the layer's own
    ``forward_autoregressive_inference``.

    Attributes:
        mha: the self-attention :class:`~ember.nn.MhaCache`.
        output: ``[batch, length, d_model]`` outputs so far (None while empty, and when the
            layer is advanced through the encoder's cache, which keeps them once at the top).
    """

    __slots__ = ("mha",)

    def __init__(self):
        super().__init__()
        self.mha = MhaCache.autoregressive()

    @property
    def length(self) -> int:
        """How many positions have been processed."""
        return self.mha.length


class _StackCache:
    """A stack's autoregressive cache: one layer cache per layer (``_layer_cache``) and the
    stack's outputs so far."""

    __slots__ = ("layers", "output")
    _layer_cache: type

    def __init__(self, layers: list):
        self.layers = list(layers)
        self.output = None

    @classmethod
    def empty(cls, num_layers: int):
        """An empty cache for ``num_layers`` layers."""
        return cls([cls._layer_cache.empty() for _ in range(num_layers)])

    @property
    def length(self) -> int:
        """How many positions have been processed."""
        return 0 if self.output is None else self.output.shape[1]


class TransformerEncoderAutoregressiveCache(_StackCache):
    """The autoregressive cache of a :class:`TransformerEncoder` (Burn's): one
    :class:`TransformerEncoderLayerAutoregressiveCache` per layer and the encoder's outputs
    so far. Make one with ``encoder.new_autoregressive_cache()``.

    Attributes:
        layers: the per-layer caches.
        output: ``[batch, length, d_model]`` outputs so far (None while empty).
    """

    __slots__ = ()
    _layer_cache = TransformerEncoderLayerAutoregressiveCache


# ---- helpers shared with the decoder's autoregressive inference --------------------------------
def _check_model_input(op: str, name: str, x, d_model: int) -> None:
    if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[-1] != d_model:
        got = shape_str(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{op}: {name} must be [batch, seq, {d_model}], got {got}")


def _check_cache(op: str, cache, kind: type) -> None:
    if not isinstance(cache, kind):
        raise TypeError(f"{op}: cache must be a {kind.__name__}, got {type(cache).__name__}")


def _check_stack_cache(op: str, cache, kind: type, n_layers: int) -> None:
    _check_cache(op, cache, kind)
    if len(cache.layers) != n_layers:
        raise ValueError(
            f"{op}: the cache has {len(cache.layers)} layer caches for {n_layers} layers; make it "
            f"with new_autoregressive_cache()"
        )


def _check_cache_batch(op: str, cache, batch: int) -> None:
    """New positions must continue the cached sequences: the same batch."""
    if cache.output is not None and cache.output.shape[0] != batch:
        raise ValueError(
            f"{op}: the cache holds a batch of {cache.output.shape[0]} sequences, got new "
            f"positions for {batch} (start a new cache for a new batch)"
        )


def _residual_blocks(x: Tensor, blocks, norms, norm_first: bool, dropout, first=None) -> Tensor:
    """Burn's residual sublayers: ``norms[i]`` follows block ``i`` (post-norm); pre-norm feeds
    block ``i`` through ``norms[i - 1]``, the first block through the last norm. With ``first``,
    the first block reads every position but returns fewer, and its residual is ``first(x)``."""
    for i, block in enumerate(blocks):
        residual = first(x) if first is not None and i == 0 else x
        if norm_first:
            x = residual + dropout(block(norms[i - 1](x)))
        else:
            x = norms[i](residual + dropout(block(x)))
    return x


def _cached_outputs(op: str, cache) -> int:
    """How many positions a layer cache holds outputs for; refuses a cache advanced without them."""
    kept = 0 if cache.output is None else cache.output.shape[1]
    if kept != cache.length:
        raise ValueError(
            f"{op}: this layer cache was advanced by forward_step (or by the whole model's "
            f"cache), which keeps no layer outputs; use one of the two per cache"
        )
    return kept


def _continuation(op: str, x: Tensor, done: int) -> Tensor:
    """The positions of the whole-sequence input ``x`` after the ``done`` cached ones."""
    if not isinstance(x, Tensor) or x.ndim != 3:
        got = shape_str(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{op}: expected the whole sequence so far [batch, seq, d_model], got {got}")
    if x.shape[1] <= done:
        raise ValueError(
            f"{op}: the input has {x.shape[1]} positions but the cache already holds {done}; pass "
            f"the whole sequence so far (the cached positions and at least one new one)"
        )
    return x[:, done:]


def _mask_rows(
    op: str, mask: Tensor | None, x: Tensor, done: int, keys: int | None = None, name: str = "mask_attn"
) -> Tensor | None:
    """The rows of the new positions of a whole-sequence attention mask ``[batch, seq, keys]``
    (``keys`` = seq for self-attention)."""
    if mask is None:
        return None
    b, seq = x.shape[0], x.shape[1]
    shape = (b, seq, seq if keys is None else keys)
    if not isinstance(mask, Tensor) or not mask.dtype.is_bool or tuple(mask.shape) != shape:
        got = f"{mask.dtype} {shape_str(mask.shape)}" if isinstance(mask, Tensor) else type(mask).__name__
        raise ValueError(
            f"{op}: {name} must be a bool tensor {shape_str(shape)} over the whole sequence so far, got {got}"
        )
    return mask[:, done:]


def _append_positions(history: Tensor | None, new: Tensor) -> Tensor:
    """``history`` with the ``new`` positions appended along the sequence dim."""
    return new if history is None else cat([history, new], 1)
