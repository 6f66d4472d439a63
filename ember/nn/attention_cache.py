"""The key/value cache of :class:`~ember.nn.MultiHeadAttention` for autoregressive inference
(Burn's ``MhaCache``).

Decoding one token at a time, the keys and values of the positions already seen do not
change: the cache keeps them, projected and split into heads (``[batch, heads, seq, d_k]``),
so each step projects only the new positions and attends their queries to every cached key.
Two kinds, as in Burn:

* ``MhaCache.autoregressive()``: self-attention; each step's new keys/values are appended.
* ``MhaCache.autoregressive_cross_attention()``: the keys/values come from a fixed memory
  (the encoder output), projected once on the first step and reused after.

A cache belongs to one layer and one sequence batch; start a new one for a new batch.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.tensor.ops._core import shape_str
from ember.tensor.ops.movement import cat
from ember.tensor.tensor import Tensor

__all__ = ["MhaCache"]


class MhaCache:
    """Keys/values of one attention layer kept across decoding steps.

    Attributes:
        cross: True for a cross-attention cache (keys/values from a fixed memory).
        key, value: the cached projections ``[batch, heads, seq_k, d_k]`` (None while empty).
        length: how many query positions have been processed.
        context: the outputs of every processed position ``[batch, length, d_model]``, kept by
            ``MultiHeadAttention.forward_cache`` only (None otherwise).
    """

    __slots__ = ("_source_shape", "context", "cross", "key", "length", "value")

    def __init__(self, cross: bool = False):
        self.cross = bool(cross)
        self.key = None
        self.value = None
        self.length = 0
        self.context = None
        self._source_shape = None  # the memory's shape, to refuse a different memory later

    @classmethod
    def autoregressive(cls) -> "MhaCache":
        """An empty self-attention cache: each step appends its keys and values."""
        return cls(cross=False)

    @classmethod
    def autoregressive_cross_attention(cls) -> "MhaCache":
        """An empty cross-attention cache: keys and values are projected once from the memory."""
        return cls(cross=True)

    @property
    def key_length(self) -> int:
        """How many key positions are cached."""
        return 0 if self.key is None else self.key.shape[2]

    def key_length_after(self, op: str, key: Tensor) -> int:
        """The number of keys the next step attends to, given this step's ``key`` input;
        raises if ``key`` does not continue the cached batch / memory."""
        if self.cross:
            if self._source_shape is not None and tuple(key.shape) != self._source_shape:
                raise ValueError(
                    f"{op}: this cross-attention cache holds the projection of a memory of shape "
                    f"{shape_str(self._source_shape)}, got a memory of shape {shape_str(key.shape)}; "
                    f"the memory is fixed while decoding (start a new cache for a new one)"
                )
            return key.shape[1]
        if self.key is not None and key.shape[0] != self.key.shape[0]:
            raise ValueError(
                f"{op}: the cache holds keys of batch size {self.key.shape[0]}, got new positions "
                f"of batch size {key.shape[0]} (start a new cache for a new batch)"
            )
        return self.key_length + key.shape[1]

    def advance(
        self,
        key: Tensor,
        value: Tensor,
        project_key: Callable[[Tensor], Tensor],
        project_value: Callable[[Tensor], Tensor],
    ) -> tuple[Tensor, Tensor]:
        """Take this step's ``key``/``value`` inputs and return all the keys/values to attend to.

        Self-attention: the new positions are projected and appended. Cross-attention: the
        memory is projected on the first step only.
        """
        if self.cross:
            if self.key is None:
                self.key, self.value = project_key(key), project_value(value)
                self._source_shape = tuple(key.shape)
            return self.key, self.value
        new_k, new_v = project_key(key), project_value(value)
        if self.key is None:
            self.key, self.value = new_k, new_v
        elif new_k.shape[2]:
            self.key = cat([self.key, new_k], 2)
            self.value = cat([self.value, new_v], 2)
        return self.key, self.value

    def __repr__(self) -> str:
        kind = "cross_attention" if self.cross else "autoregressive"
        return f"MhaCache({kind}, length={self.length}, keys={self.key_length})"
