"""The BERT-family encoder built from ``ember.nn`` layers.

Every family is the same post-LayerNorm Transformer encoder::

    h   = LayerNorm(x + dropout(attention(x, mask)))
    out = LayerNorm(h + dropout(ffn_out(gelu(ffn_in(h)))))

with erf GELU (or its tanh approximation when the config asks) and attention
``softmax(q·kᵀ/√d_k + mask)·v``. The attention is composed here rather than taken from
:class:`ember.nn.MultiHeadAttention`, because BERT drops out the attention *probabilities*
while ember's layer (like Burn's) drops out the scores before the softmax. At inference, or
with no attention dropout, it runs the fused ``ember.attention`` kernel (same maths, one
kernel); a padded key gets the fill −1e4 where ``transformers`` adds the dtype's minimum,
which gives the same probabilities (both underflow to 0) whenever a row has a real key.
"""

from __future__ import annotations

from ember import nn
from ember.nn.attention import set_projections
from ember.nn.init import Normal, Zeros
from ember.nn.param import Param
from ember.pretrained.config import EncoderSpec
from ember.pretrained.embeddings import EncoderEmbeddings
from ember.pretrained.head import ACTIVATIONS, ClassificationHead
from ember.tensor.grad_mode import is_grad_enabled
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.nn import attention
from ember.tensor.tensor import Tensor

__all__ = ["EncoderAttention", "EncoderLayer", "PretrainedEncoder", "build_encoder", "new_head"]

_MASK_FILL = -1.0e4  # the fused kernel's fill value; the composed path uses the same
_INIT_STD = 0.02  # transformers' initializer_range, for a head the checkpoint lacks


class EncoderAttention(nn.Module):
    """Self-attention with dropout on the probabilities (BERT's placement).

    Args:
        query, key, value, output: ``Linear(D, D)``.
        dropout: dropout on the attention probabilities.
        n_heads: number of heads.
    """

    def __init__(self, query, key, value, output, dropout, n_heads: int):
        set_projections(self, query, key, value, output, dropout)
        self.n_heads = int(n_heads)

    def _heads(self, x: Tensor) -> Tensor:
        b, s, d = x.shape
        return x.reshape(b, s, self.n_heads, d // self.n_heads).swap_dims(1, 2)

    def forward(self, x: Tensor, mask_pad: Tensor | None = None) -> Tensor:
        """``x`` ``[B, S, D]``, ``mask_pad`` ``[B, S]`` bool (True = padding) -> ``[B, S, D]``."""
        b, s, d = x.shape
        q, k, v = self._heads(self.query(x)), self._heads(self.key(x)), self._heads(self.value(x))
        if self.dropout.prob > 0.0 and self._training and is_grad_enabled():
            scores = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.n_heads) ** 0.5)
            if mask_pad is not None:
                scores = scores.mask_fill(mask_pad.reshape(b, 1, 1, s), _MASK_FILL)
            context = self.dropout(scores.softmax(-1)) @ v
        else:
            context = attention(q, k, v, mask_pad)
        return self.output(context.swap_dims(1, 2).reshape(b, s, d))


class EncoderLayer(nn.Module):
    """One post-LayerNorm encoder layer (see the module docstring).

    Args:
        attention: the :class:`EncoderAttention`.
        attention_norm: LayerNorm after the attention's residual sum.
        ffn_in: ``Linear(D, d_ff)``.
        ffn_out: ``Linear(d_ff, D)``.
        output_norm: LayerNorm after the feed-forward residual sum.
        activation: the GELU.
        dropout: dropout on each sub-layer's output.
    """

    def __init__(self, attention, attention_norm, ffn_in, ffn_out, output_norm, activation, dropout):
        self.attention = attention
        self.attention_norm = attention_norm
        self.ffn_in = ffn_in
        self.ffn_out = ffn_out
        self.output_norm = output_norm
        self.activation = activation
        self.dropout = dropout

    def forward(self, x: Tensor, mask_pad: Tensor | None = None) -> Tensor:
        h = self.attention_norm(x + self.dropout(self.attention(x, mask_pad)))
        return self.output_norm(h + self.dropout(self.ffn_out(self.activation(self.ffn_in(h)))))


class PretrainedEncoder(nn.Module):
    """A BERT, RoBERTa or DistilBERT encoder, optionally with a classification head.

    Called as ``model(input_ids, attention_mask)``: int ``[B, S]`` ids and a ``[B, S]`` mask
    (1 or True at real tokens, 0 or False at padding; None: no padding). Returns the last
    hidden state ``[B, S, D]``, or the logits ``[B, num_classes]`` when it has a head.

    Args:
        embeddings: the :class:`~ember.pretrained.embeddings.EncoderEmbeddings`.
        layers: the :class:`EncoderLayer` s.
        head: a :class:`~ember.pretrained.head.ClassificationHead` or None.
        spec: the checkpoint's :class:`~ember.pretrained.config.EncoderSpec`.
    """

    def __init__(self, embeddings, layers, head, spec: EncoderSpec):
        self.embeddings = embeddings
        self.layers = list(layers)
        self.head = head
        self.family = spec.family
        self._spec = spec  # not a module field: the config it came from
        self._fresh: list[str] = []  # head parameters the checkpoint did not provide

    @property
    def spec(self) -> EncoderSpec:
        return self._spec

    @property
    def fresh_parameters(self) -> list[str]:
        """Paths of the head parameters freshly initialised because the checkpoint lacked them."""
        return list(self._fresh)

    @property
    def num_classes(self) -> int | None:
        return None if self.head is None else self.head.num_classes

    def _mask_pad(self, attention_mask, shape) -> Tensor | None:
        op = "PretrainedEncoder"
        if attention_mask is None:
            return None
        if not isinstance(attention_mask, Tensor) or attention_mask.shape != shape:
            got = (
                shape_str(attention_mask.shape)
                if isinstance(attention_mask, Tensor)
                else type(attention_mask).__name__
            )
            raise ValueError(f"{op}: attention_mask must be {shape_str(shape)} like input_ids, got {got}")
        if attention_mask.dtype.is_bool:
            return attention_mask.logical_not()
        if not attention_mask.dtype.is_int:
            raise TypeError(f"{op}: attention_mask must be an int or bool tensor, got {attention_mask.dtype}")
        return attention_mask.eq(0)

    def hidden_state(
        self, input_ids: Tensor, attention_mask: Tensor | None = None, token_type_ids=None
    ) -> Tensor:
        """The last hidden state ``[B, S, D]`` (see the class docstring for the arguments)."""
        op = "PretrainedEncoder"
        if not isinstance(input_ids, Tensor) or input_ids.ndim != 2 or not input_ids.dtype.is_int:
            got = (
                f"{input_ids.dtype} {shape_str(input_ids.shape)}"
                if isinstance(input_ids, Tensor)
                else type(input_ids).__name__
            )
            raise TypeError(f"{op}: input_ids must be an int tensor [batch, seq], got {got}")
        seq = input_ids.shape[1]
        # RoBERTa's last position is pad + seq
        longest = seq + (0 if self.embeddings.pad_offset is None else self.embeddings.pad_offset + 1)
        if longest > self._spec.max_positions:
            raise ValueError(
                f"{op}: {seq} tokens need {longest} positions but the {self.family} checkpoint has "
                f"{self._spec.max_positions} (max_position_embeddings); cut the sequences shorter"
            )
        mask_pad = self._mask_pad(attention_mask, input_ids.shape)
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, mask_pad)
        return x

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, token_type_ids=None) -> Tensor:
        x = self.hidden_state(input_ids, attention_mask, token_type_ids)
        return x if self.head is None else self.head(x[:, 0])

    def reset_head(self, num_classes: int) -> "PretrainedEncoder":
        """A fresh, trainable head with ``num_classes`` outputs (in place; returns self)."""
        self.head = new_head(self._spec, num_classes, *self._place())
        self._fresh = [path for path, _ in self.head.named_parameters("head")]
        return self

    def _place(self):
        weight = self.embeddings.word.weight
        return weight.device, weight.dtype

    def extra_repr(self) -> dict:
        return {"family": self.family, "layers": len(self.layers), "num_classes": self.num_classes}


def _zeros(shape, device, dtype) -> Param:
    return Zeros().init(shape, device, dtype)


def _linear(d_in: int, d_out: int, device, dtype, fresh: bool = False) -> nn.Linear:
    # Placeholders (zeros) for what the checkpoint fills; transformers' N(0, 0.02) for a fresh layer.
    weight = (
        Normal(0.0, _INIT_STD).init((d_in, d_out), device, dtype)
        if fresh
        else _zeros((d_in, d_out), device, dtype)
    )
    return nn.Linear(weight, _zeros((d_out,), device, dtype))


def _norm(d: int, eps: float, device, dtype) -> nn.LayerNorm:
    return nn.LayerNormConfig(d, epsilon=eps).init(device, dtype)


def new_head(spec: EncoderSpec, num_classes: int, device=None, dtype=None) -> ClassificationHead:
    """A freshly initialised classification head of ``spec``'s family."""
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 1:
        raise ValueError(f"from_pretrained: num_classes must be a positive int, got {num_classes!r}")
    d = spec.d_model
    return ClassificationHead(
        _linear(d, d, device, dtype, fresh=True),
        _linear(d, num_classes, device, dtype, fresh=True),
        nn.Dropout(spec.classifier_dropout),
        ACTIVATIONS[spec.family],
        dropout_first=spec.family == "roberta",
    )


def build_encoder(
    spec: EncoderSpec, num_classes: int | None = None, device=None, dtype=None
) -> PretrainedEncoder:
    """The module ``spec`` describes, its encoder parameters zero (the loader fills them), and a
    fresh head when ``num_classes`` is given."""
    d, eps = spec.d_model, spec.layer_norm_eps

    def embedding(n: int) -> nn.Embedding:
        return nn.Embedding(_zeros((n, d), device, dtype))

    embeddings = EncoderEmbeddings(
        embedding(spec.vocab_size),
        embedding(spec.max_positions),
        embedding(spec.type_vocab_size) if spec.type_vocab_size else None,
        _norm(d, eps, device, dtype),
        nn.Dropout(spec.dropout),
        pad_offset=spec.pad_token_id if spec.family == "roberta" else None,
    )
    layers = []
    for _ in range(spec.n_layers):
        attn = EncoderAttention(
            *(_linear(d, d, device, dtype) for _ in range(4)),
            nn.Dropout(spec.attention_dropout),
            spec.n_heads,
        )
        layers.append(
            EncoderLayer(
                attn,
                _norm(d, eps, device, dtype),
                _linear(d, spec.d_ff, device, dtype),
                _linear(spec.d_ff, d, device, dtype),
                _norm(d, eps, device, dtype),
                nn.Gelu(approximate=spec.gelu_tanh),
                nn.Dropout(spec.dropout),
            )
        )
    head = None if num_classes is None else new_head(spec, num_classes, device, dtype)
    return PretrainedEncoder(embeddings, layers, head, spec)
