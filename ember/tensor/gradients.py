"""The ``Gradients`` container returned by ``Tensor.backward()``."""

from __future__ import annotations

from ember.tensor.tensor import Tensor, as_tensor


class Gradients:
    """Gradients of a backward pass, keyed by the tensors (graph leaves) they belong to.

    Nothing is ever written onto tensors: read a gradient with ``grads[t]`` (a ``KeyError``
    that says why when there is none) or ``grads.get(t)`` (None then), test with ``t in grads``.
    A tensor-like key (an ``nn.Param``) stands for its tensor.
    """

    def __init__(self):
        self._by_node: dict = {}

    @staticmethod
    def _tensor(key, owner: str):
        tensor = as_tensor(key)
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"Gradients.{owner}: expected the Tensor (or nn.Param) whose gradient to read, got "
                f"{type(key).__name__}; gradients keyed by ParamId come from "
                f"GradientsParams.from_grads(grads, model)"
            )
        return tensor

    @classmethod
    def _key(cls, tensor, owner: str = "get") -> int | None:
        node = cls._tensor(tensor, owner)._node
        return None if node is None else node.id

    def get(self, tensor):
        """The gradient of ``tensor`` (a Tensor), or ``None`` if it has none."""
        return self._by_node.get(self._key(tensor, "get"))

    def __getitem__(self, tensor):
        """The gradient of ``tensor``.

        Raises:
            KeyError: it has none, saying why (it does not require grad, it is not a graph
                leaf, or the loss does not depend on it / its gradient was removed).
        """
        t = self._tensor(tensor, "__getitem__")
        node = t._node
        if node is not None and node.id in self._by_node:
            return self._by_node[node.id]
        what = f"Gradients: no gradient for the tensor of shape {list(t.shape)} ({t.dtype}): "
        if node is None:
            raise KeyError(
                what + "it does not require grad; mark it with t.require_grad() (or make it a "
                "trainable nn.Param) before the forward pass"
            )
        if not node.is_leaf:
            raise KeyError(
                what + f"it is the result of op '{node.op}', and backward() returns the gradients "
                f"of graph leaves only (tensors marked with require_grad(), parameters)"
            )
        raise KeyError(
            what + "the differentiated tensor does not depend on it, or its gradient was already "
            "taken out (remove(), GradientsParams.from_grads)"
        )

    def remove(self, tensor):
        """Remove and return the gradient of ``tensor`` (``None`` if absent)."""
        return self._by_node.pop(self._key(tensor, "remove"), None)

    def _put(self, node_id: int, grad) -> None:
        self._by_node[node_id] = grad

    def __contains__(self, tensor) -> bool:
        return self._key(tensor, "__contains__") in self._by_node

    def __len__(self) -> int:
        return len(self._by_node)

    def __repr__(self) -> str:
        return f"Gradients({len(self)} tensors)"
