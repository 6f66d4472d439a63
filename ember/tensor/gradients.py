"""The ``Gradients`` container returned by ``Tensor.backward()``."""
from __future__ import annotations


class Gradients:
    """Gradients of a backward pass, keyed by the tensors (graph leaves) they belong to.

    Nothing is ever written onto tensors: read a gradient with ``grads.get(t)``.
    """

    def __init__(self):
        self._by_node: dict = {}

    @staticmethod
    def _key(tensor) -> int | None:
        node = tensor._node
        return None if node is None else node.id

    def get(self, tensor):
        """The gradient of ``tensor`` (a Tensor), or ``None`` if it has none."""
        return self._by_node.get(self._key(tensor))

    def remove(self, tensor):
        """Remove and return the gradient of ``tensor`` (``None`` if absent)."""
        return self._by_node.pop(self._key(tensor), None)

    def get_by_id(self, node_id: int):
        return self._by_node.get(node_id)

    def remove_by_id(self, node_id: int):
        return self._by_node.pop(node_id, None)

    def _put(self, node_id: int, grad) -> None:
        self._by_node[node_id] = grad

    def __contains__(self, tensor) -> bool:
        return self._key(tensor) in self._by_node

    def __len__(self) -> int:
        return len(self._by_node)

    def __repr__(self) -> str:
        return f"Gradients({len(self)} tensors)"
