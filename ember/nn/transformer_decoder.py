"""Transformer decoder (Burn's ``TransformerDecoder``): causal self-attention, cross-attention
to the encoder's output (the *memory*) and a position-wise feed-forward, each a residual block.

One layer, with ``drop`` the layer's residual dropout:

* post-norm (``norm_first=False``, default):
  ``x = norm_1(x + drop(self_attn(x)))``; ``x = norm_2(x + drop(cross_attn(x, memory)))``;
  ``x = norm_3(x + drop(pwff(x)))``
* pre-norm (``norm_first=True``):
  ``x = x + drop(self_attn(norm_3(x)))``; ``x = x + drop(cross_attn(norm_1(x), memory))``;
  ``x = x + drop(pwff(norm_2(x)))`` — no final norm.

The norms are numbered as Burn numbers them (so records match), which is why pre-norm
starts with ``norm_3``. Parameter paths: ``layers.{i}.cross_attn.query.weight``,
``layers.{i}.self_attn...``, ``layers.{i}.pwff.linear_inner...``, ``layers.{i}.norm_1.gamma``.
The causal mask is the caller's, as in Burn: ``target_mask_attn(generate_autoregressive_mask(...))``.

Autoregressive inference: :meth:`TransformerDecoder.forward_step` runs only new target
positions, reusing the self-attention keys/values of the earlier ones and the memory's
projections (computed once) from the cache of ``new_autoregressive_cache()``; each generated
token costs one position per layer. :meth:`TransformerDecoder.forward_autoregressive_inference`
is Burn's form of it (the input holds the whole target so far, the result every position).
"""

from __future__ import annotations

from ember.nn.attention import MhaInput
from ember.nn.attention_cache import MhaCache
from ember.nn.dropout import Dropout
from ember.nn.module import Module
from ember.nn.transformer import (
    _append_positions,
    _cached_outputs,
    _check_cache,
    _check_cache_batch,
    _check_model_input,
    _check_stack_cache,
    _continuation,
    _LayerCache,
    _mask_rows,
    _residual_blocks,
    _StackCache,
    _TransformerConfig,
    _TransformerStack,
)
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = [
    "TransformerDecoder",
    "TransformerDecoderAutoregressiveCache",
    "TransformerDecoderConfig",
    "TransformerDecoderInput",
    "TransformerDecoderLayer",
    "TransformerDecoderLayerAutoregressiveCache",
]


class TransformerDecoderConfig(_TransformerConfig):
    """Configuration of :class:`TransformerDecoder` (Burn's defaults): the fields of
    :class:`~ember.nn.TransformerEncoderConfig`, ``n_heads`` counting the heads of each of the
    two attentions."""

    def init(self, device=None, dtype=None) -> "TransformerDecoder":
        """Build ``n_layers`` layers."""
        return self._init_stack(TransformerDecoder, device, dtype)

    def init_layer(self, device=None, dtype=None) -> "TransformerDecoderLayer":
        """Build one :class:`TransformerDecoderLayer`."""
        self_attn = self._init_attention(device, dtype)
        cross_attn = self._init_attention(device, dtype)
        return TransformerDecoderLayer(
            cross_attn,
            self_attn,
            self._init_feed_forward(device, dtype),
            self._init_norm(device, dtype),
            self._init_norm(device, dtype),
            self._init_norm(device, dtype),
            Dropout(self.dropout),
            self.norm_first,
        )


class TransformerDecoderInput:
    """Input of :class:`TransformerDecoder`, built like Burn's:
    ``TransformerDecoderInput(target, memory).target_mask_attn(causal).memory_mask_pad(pad)``.

    Args:
        target: ``[batch, seq, d_model]`` (the decoder's own sequence).
        memory: ``[batch, seq_mem, d_model]`` (the encoder's output).
    """

    __slots__ = ("memory", "memory_attn", "memory_pad", "target", "target_attn", "target_pad")

    def __init__(self, target: Tensor, memory: Tensor):
        self.target = target
        self.memory = memory
        self.target_pad = None
        self.target_attn = None
        self.memory_pad = None
        self.memory_attn = None

    def target_mask_pad(self, mask: Tensor | None) -> "TransformerDecoderInput":
        """``[batch, seq]`` bool, True at padded target positions. Returns self."""
        self.target_pad = mask
        return self

    def target_mask_attn(self, mask: Tensor | None) -> "TransformerDecoderInput":
        """``[batch, seq, seq]`` bool, True where self-attention is forbidden (the causal mask).
        Returns self."""
        self.target_attn = mask
        return self

    def memory_mask_pad(self, mask: Tensor | None) -> "TransformerDecoderInput":
        """``[batch, seq_mem]`` bool, True at padded memory positions. Returns self."""
        self.memory_pad = mask
        return self

    def memory_mask_attn(self, mask: Tensor | None) -> "TransformerDecoderInput":
        """``[batch, seq, seq_mem]`` bool, True where cross-attention is forbidden. Returns self."""
        self.memory_attn = mask
        return self

    def _with_target(self, target: Tensor, target_attn, memory_attn) -> "TransformerDecoderInput":
        out = TransformerDecoderInput(target, self.memory)
        out.target_pad, out.target_attn = self.target_pad, target_attn
        out.memory_pad, out.memory_attn = self.memory_pad, memory_attn
        return out


class TransformerDecoderLayer(Module):
    """One decoder layer (see the module docstring).

    Args:
        cross_attn: attention of the target to the memory.
        self_attn: self-attention of the target.
        pwff: position-wise feed-forward.
        norm_1, norm_2, norm_3: layer norms (Burn's numbering).
        dropout: residual-branch dropout.
        norm_first: pre-norm when True.
    """

    def __init__(
        self,
        cross_attn: Module,
        self_attn: Module,
        pwff: Module,
        norm_1: Module,
        norm_2: Module,
        norm_3: Module,
        dropout: Dropout,
        norm_first: bool = False,
    ):
        self.cross_attn = cross_attn
        self.self_attn = self_attn
        self.pwff = pwff
        self.norm_1 = norm_1
        self.norm_2 = norm_2
        self.norm_3 = norm_3
        self.dropout = dropout
        self.norm_first = bool(norm_first)

    def forward(self, input: TransformerDecoderInput) -> TransformerDecoderInput:
        """Returns the input with its ``target`` replaced by the layer's output (Burn's form)."""
        x = _layer_input("TransformerDecoderLayer", input)

        def self_attend(h):
            return self.self_attn(
                MhaInput.self_attn(h).mask_pad(x.target_pad).mask_attn(x.target_attn)
            ).context

        def cross_attend(h):
            return self.cross_attn(
                MhaInput(h, x.memory, x.memory).mask_pad(x.memory_pad).mask_attn(x.memory_attn)
            ).context

        return x._with_target(self._run(x.target, self_attend, cross_attend), x.target_attn, x.memory_attn)

    def forward_step(
        self, input: TransformerDecoderInput, cache: "TransformerDecoderLayerAutoregressiveCache"
    ) -> Tensor:
        """The layer on new target positions only.

        Args:
            input: ``target`` holds the new positions ``[batch, n, d_model]``; masks:
                ``target_mask_pad [batch, cached + n]``, ``target_mask_attn [batch, n, cached + n]``,
                ``memory_mask_pad [batch, seq_mem]``, ``memory_mask_attn [batch, n, seq_mem]``.
            cache: this layer's cache, advanced in place.

        Returns:
            ``[batch, n, d_model]``.
        """
        op = "TransformerDecoderLayer.forward_step"
        _check_cache(op, cache, TransformerDecoderLayerAutoregressiveCache)
        x = _layer_input(op, input)

        def self_attend(h):
            return self.self_attn.forward_step(h, h, h, cache.self_attn, x.target_pad, x.target_attn).context

        def cross_attend(h):
            return self.cross_attn.forward_step(
                h, x.memory, x.memory, cache.cross_attn, x.memory_pad, x.memory_attn
            ).context

        return self._run(x.target, self_attend, cross_attend)

    def forward_autoregressive_inference(
        self, input: TransformerDecoderInput, cache: "TransformerDecoderLayerAutoregressiveCache"
    ) -> TransformerDecoderInput:
        """Burn's form: ``input.target`` is the whole target so far (masks over it); only the
        positions after the cached ones are computed. Returns the input with ``target``
        replaced by every position's output, as :meth:`forward` would."""
        op = "TransformerDecoderLayer.forward_autoregressive_inference"
        _check_cache(op, cache, TransformerDecoderLayerAutoregressiveCache)
        done = _cached_outputs(op, cache)
        step = _new_positions(op, _layer_input(op, input), done)
        cache.output = _append_positions(cache.output, self.forward_step(step, cache))
        return input._with_target(cache.output, input.target_attn, input.memory_attn)

    def _run(self, x: Tensor, self_attend, cross_attend) -> Tensor:
        """The three residual blocks around the given attention functions."""
        return _residual_blocks(
            x,
            (self_attend, cross_attend, self.pwff),
            (self.norm_1, self.norm_2, self.norm_3),
            self.norm_first,
            self.dropout,
        )


class TransformerDecoder(_TransformerStack):
    """A stack of :class:`TransformerDecoderLayer` (no final norm, as in Burn).

    Args:
        layers: the layers.
        d_model, d_ff, n_heads, dropout, norm_first, quiet_softmax: recorded for display.
    """

    def forward(self, input, memory: Tensor | None = None, **masks) -> Tensor:
        """Args:
            input: a :class:`TransformerDecoderInput`, or the target ``[batch, seq, d_model]``.
            memory: ``[batch, seq_mem, d_model]`` when ``input`` is a tensor.
            masks: ``target_mask_pad``, ``target_mask_attn``, ``memory_mask_pad``,
                ``memory_mask_attn`` (override the input's).

        Returns:
            ``[batch, seq, d_model]``.
        """
        x = self._input("TransformerDecoder", input, memory, masks)
        for layer in self.layers:
            x = layer(x)
        return x.target

    def forward_step(
        self, input, cache: "TransformerDecoderAutoregressiveCache", memory: Tensor | None = None, **masks
    ) -> Tensor:
        """Run new target positions only, attending to them, to the cached positions and to the
        memory (projected once per cache): a decoding step costs one position per layer.

        Args:
            input: a :class:`TransformerDecoderInput` (or the target tensor with ``memory``) whose
                target holds the new positions ``[batch, n, d_model]``; mask shapes:
                ``target_mask_pad [batch, cached + n]``, ``target_mask_attn [batch, n, cached + n]``
                (none is needed for one new position: it may see every earlier one),
                ``memory_mask_pad [batch, seq_mem]``, ``memory_mask_attn [batch, n, seq_mem]``.
            cache: from :meth:`new_autoregressive_cache`, advanced in place.
            memory, masks: as in :meth:`forward`.

        Returns:
            ``[batch, n, d_model]``, the outputs of the new positions.
        """
        op = "TransformerDecoder.forward_step"
        x = self._input(op, input, memory, masks)
        _check_stack_cache(op, cache, TransformerDecoderAutoregressiveCache, self.n_layers)
        _check_cache_batch(op, cache, x.target.shape[0])
        out = x.target
        for layer, layer_cache in zip(self.layers, cache.layers):
            out = layer.forward_step(x._with_target(out, x.target_attn, x.memory_attn), layer_cache)
        cache.output = _append_positions(cache.output, out)
        return out

    def forward_autoregressive_inference(
        self, input, cache: "TransformerDecoderAutoregressiveCache", memory: Tensor | None = None, **masks
    ) -> Tensor:
        """Burn's ``forward_autoregressive_inference``: the target holds the whole sequence so
        far ``[batch, seq, d_model]``, with masks over it (``target_mask_attn`` =
        ``generate_autoregressive_mask(batch, seq)``); only the positions after the cached
        ones are computed. Returns ``[batch, seq, d_model]``, equal to :meth:`forward` on
        the same input."""
        op = "TransformerDecoder.forward_autoregressive_inference"
        x = self._input(op, input, memory, masks)
        _check_stack_cache(op, cache, TransformerDecoderAutoregressiveCache, self.n_layers)
        self.forward_step(_new_positions(op, x, cache.length), cache)
        return cache.output

    def new_autoregressive_cache(self) -> "TransformerDecoderAutoregressiveCache":
        """An empty cache for :meth:`forward_autoregressive_inference` / :meth:`forward_step`."""
        return TransformerDecoderAutoregressiveCache.empty(self.n_layers)

    def _input(self, op: str, input, memory, masks: dict) -> TransformerDecoderInput:
        """A checked :class:`TransformerDecoderInput` from either calling form."""
        unknown = set(masks) - _MASK_SETTERS.keys()
        if unknown:
            raise TypeError(
                f"{op}: unknown keyword argument(s) {sorted(unknown)}; the masks are {sorted(_MASK_SETTERS)}"
            )
        if isinstance(input, TransformerDecoderInput):
            if memory is not None:
                raise TypeError(
                    f"{op}: memory is given twice (in the TransformerDecoderInput and as an argument)"
                )
            x = input._with_target(input.target, input.target_attn, input.memory_attn)
        else:
            if memory is None:
                raise TypeError(
                    f"{op}: a target tensor needs its memory: forward(target, memory) or "
                    f"forward(TransformerDecoderInput(target, memory))"
                )
            x = TransformerDecoderInput(input, memory)
        for name, mask in masks.items():
            if mask is not None:
                setattr(x, _MASK_SETTERS[name], mask)
        _check_model_input(op, "target", x.target, self.d_model)
        _check_model_input(op, "memory", x.memory, self.d_model)
        if x.memory.shape[0] != x.target.shape[0]:
            raise ValueError(
                f"{op}: target {shape_str(x.target.shape)} and memory {shape_str(x.memory.shape)} "
                f"must have the same batch size"
            )
        return x


def _layer_input(op: str, input) -> TransformerDecoderInput:
    if not isinstance(input, TransformerDecoderInput):
        raise TypeError(
            f"{op}: expected a TransformerDecoderInput(target, memory), got {type(input).__name__} "
            f"(the whole TransformerDecoder also takes (target, memory) tensors)"
        )
    return input


_MASK_SETTERS = {
    "target_mask_pad": "target_pad",
    "target_mask_attn": "target_attn",
    "memory_mask_pad": "memory_pad",
    "memory_mask_attn": "memory_attn",
}


def _new_positions(op: str, input: TransformerDecoderInput, done: int) -> TransformerDecoderInput:
    """The step input of a whole-sequence input: the target positions after the ``done``
    cached ones, and the rows of the attention masks for them."""
    target = input.target
    new = _continuation(op, target, done)
    target_attn = _mask_rows(op, input.target_attn, target, done, name="target_mask_attn")
    memory_keys = (
        input.memory.shape[1] if isinstance(input.memory, Tensor) and input.memory.ndim == 3 else None
    )
    memory_attn = _mask_rows(op, input.memory_attn, target, done, keys=memory_keys, name="memory_mask_attn")
    return input._with_target(new, target_attn, memory_attn)


class TransformerDecoderLayerAutoregressiveCache(_LayerCache):
    """The autoregressive cache of one :class:`TransformerDecoderLayer` (Burn's).

    Attributes:
        self_attn: the self-attention :class:`~ember.nn.MhaCache` (keys/values appended per step).
        cross_attn: the cross-attention :class:`~ember.nn.MhaCache` (the memory's projections).
        output: ``[batch, length, d_model]`` outputs so far when advanced by the layer's own
            ``forward_autoregressive_inference`` (None otherwise: the decoder's cache keeps
            them once, at the top).
    """

    __slots__ = ("cross_attn", "self_attn")

    def __init__(self):
        super().__init__()
        self.self_attn = MhaCache.autoregressive()
        self.cross_attn = MhaCache.autoregressive_cross_attention()

    @property
    def length(self) -> int:
        """How many target positions have been processed."""
        return self.self_attn.length


class TransformerDecoderAutoregressiveCache(_StackCache):
    """The autoregressive cache of a :class:`TransformerDecoder` (Burn's): one
    :class:`TransformerDecoderLayerAutoregressiveCache` per layer and the decoder's outputs
    so far (``length``: target positions processed). Make one with
    ``decoder.new_autoregressive_cache()``; one cache serves one batch of sequences and one memory.

    Attributes:
        layers: the per-layer caches.
        output: ``[batch, length, d_model]`` outputs so far (None while empty).
    """

    __slots__ = ()
    _layer_cache = TransformerDecoderLayerAutoregressiveCache
