"""Transformer encoder (Burn's ``TransformerEncoder``) and its position-wise feed-forward.

One layer, with ``drop`` the layer's residual dropout:

* post-norm (``norm_first=False``, default):
  ``x = norm_1(x + drop(mha(x)))``; ``x = norm_2(x + drop(pwff(x)))``
* pre-norm (``norm_first=True``):
  ``x = x + drop(mha(norm_2(x)))``; ``x = x + drop(pwff(norm_1(x)))`` — no final norm.

Parameter paths match Burn's: ``layers.{i}.mha.query.weight``, ``layers.{i}.pwff.linear_inner``,
``layers.{i}.norm_1.gamma``...
"""
from __future__ import annotations

from dataclasses import field

from ember.nn.activation import ActivationConfig
from ember.nn.attention import MhaInput, MultiHeadAttentionConfig
from ember.nn.dropout import Dropout
from ember.nn.init import Initializer, default_linear_initializer
from ember.nn.linear import LinearConfig
from ember.nn.module import Module
from ember.nn.norm import LayerNormConfig
from ember.record.config import Config
from ember.tensor.tensor import Tensor

__all__ = ["PositionWiseFeedForward", "PositionWiseFeedForwardConfig", "TransformerEncoder",
           "TransformerEncoderConfig", "TransformerEncoderInput", "TransformerEncoderLayer"]


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
        return PositionWiseFeedForward(inner, outer, Dropout(self.dropout), self.activation.init(device, dtype))


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


class TransformerEncoderConfig(Config):
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

    def init(self, device=None, dtype=None) -> "TransformerEncoder":
        """Build ``n_layers`` layers."""
        if self.n_layers < 0:
            raise ValueError(f"TransformerEncoderConfig: n_layers must be >= 0, got {self.n_layers}")
        layers = [self.init_layer(device, dtype) for _ in range(self.n_layers)]
        return TransformerEncoder(layers, self.d_model, self.d_ff, self.n_heads, self.dropout, self.norm_first,
                                  self.quiet_softmax)

    def init_layer(self, device=None, dtype=None) -> "TransformerEncoderLayer":
        """Build one :class:`TransformerEncoderLayer`."""
        mha = MultiHeadAttentionConfig(self.d_model, self.n_heads, dropout=self.dropout,
                                       quiet_softmax=self.quiet_softmax,
                                       initializer=self.initializer).init(device, dtype)
        pwff = PositionWiseFeedForwardConfig(self.d_model, self.d_ff, self.dropout, self.initializer,
                                             self.activation).init(device, dtype)
        norm = LayerNormConfig(self.d_model, self.layer_norm_eps)
        return TransformerEncoderLayer(mha, pwff, norm.init(device, dtype), norm.init(device, dtype),
                                       Dropout(self.dropout), self.norm_first)


class TransformerEncoderInput:
    """Input of :class:`TransformerEncoder`: ``TransformerEncoderInput(x).mask_pad(m).mask_attn(a)``.

    Args:
        tensor: ``[batch, seq, d_model]``.
    """

    __slots__ = ("tensor", "pad", "attn")

    def __init__(self, tensor: Tensor):
        self.tensor = tensor
        self.pad = None
        self.attn = None

    def mask_pad(self, mask: Tensor | None) -> "TransformerEncoderInput":
        """``[batch, seq]`` bool, True at padding positions. Returns self."""
        self.pad = mask
        return self

    def mask_attn(self, mask: Tensor | None) -> "TransformerEncoderInput":
        """``[batch, seq, seq]`` bool, True where attention is forbidden. Returns self."""
        self.attn = mask
        return self


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
        residual = self.norm_2(x) if self.norm_first else x
        attn_in = MhaInput.self_attn(residual).mask_pad(mask_pad).mask_attn(mask_attn)
        x = x + self.dropout(self.mha(attn_in).context)
        if self.norm_first:
            residual = self.norm_1(x)
        else:
            x = self.norm_1(x)
            residual = x
        x = x + self.dropout(self.pwff(residual))
        if not self.norm_first:
            x = self.norm_2(x)
        return x


class TransformerEncoder(Module):
    """A stack of :class:`TransformerEncoderLayer` (no final norm, as in Burn).

    Args:
        layers: the layers.
        d_model, d_ff, n_heads, dropout, norm_first, quiet_softmax: recorded for display.
    """

    def __init__(self, layers: list, d_model: int, d_ff: int, n_heads: int, dropout: float = 0.1,
                 norm_first: bool = False, quiet_softmax: bool = False):
        self.layers = list(layers)
        self.d_model = int(d_model)
        self.d_ff = int(d_ff)
        self.n_heads = int(n_heads)
        self.n_layers = len(self.layers)
        self.dropout = float(dropout)
        self.norm_first = bool(norm_first)
        self.quiet_softmax = bool(quiet_softmax)

    def forward(self, input, mask_pad: Tensor | None = None, mask_attn: Tensor | None = None) -> Tensor:
        """Args:
            input: a :class:`TransformerEncoderInput`, or the tensor ``[batch, seq, d_model]``.
            mask_pad: ``[batch, seq]`` bool (overrides the input's).
            mask_attn: ``[batch, seq, seq]`` bool (overrides the input's).
        Returns:
            ``[batch, seq, d_model]``.
        """
        if isinstance(input, TransformerEncoderInput):
            x = input.tensor
            mask_pad = input.pad if mask_pad is None else mask_pad
            mask_attn = input.attn if mask_attn is None else mask_attn
        else:
            x = input
        for layer in self.layers:
            x = layer(x, mask_pad, mask_attn)
        return x
