"""Map PyTorch ``state_dict`` names and layouts onto ember's (Burn's) and back.

PyTorch and ember differ in three ways this adapter bridges:

1. ``nn.Linear.weight`` is ``[out, in]`` in PyTorch and ``[in, out]`` in ember/Burn, so
   linear weights are transposed.
2. Normalization layers (BatchNorm, LayerNorm, GroupNorm, RMSNorm...) call their affine
   parameters ``weight``/``bias`` in PyTorch and ``gamma``/``beta`` in ember/Burn.
3. BatchNorm's ``num_batches_tracked`` counter has no ember counterpart: it is dropped on
   import and (by default) written as 0 on export, so ``load_state_dict(strict=True)`` works.

A file alone cannot say which module a tensor belongs to, so the adapter decides from the
key's module path (the key minus its last component) with these rules, each of which can
be replaced by an explicit collection of module paths or a predicate ``path -> bool``:

- **embeddings** (never transposed): by default a module whose last name component
  contains ``"emb"`` (``tok_emb``, ``embedding``, ``word_embeddings``, ``embed_tokens``).
- **norms** (``weight``/``bias`` <-> ``gamma``/``beta``): a module with ``running_mean``
  or ``running_var`` (a batch norm) is always one; by default so is any module whose
  ``weight`` is 1-D (no other common PyTorch layer has a 1-D ``weight``, except ``PReLU``:
  name such modules in an explicit ``norms`` collection to keep them out). Given
  ``norms=...``, exactly those modules plus the batch norms are norms.
- **linear** (transposed): by default every 2-D ``weight`` of a module that is neither an
  embedding nor a norm. Convolution weights (3-D and up) share PyTorch's layout and are
  never touched. Given ``linear=...``, only those modules' 2-D weights are transposed.

On export a module is a norm exactly when it has ``gamma``/``beta``. Fused parameters such
as ``nn.MultiheadAttention.in_proj_weight`` are not split; rename them with ``remap``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, Union

import numpy as np

from .errors import RecordError

__all__ = ["ModuleSelector", "PyTorchAdapter", "apply_plan", "resolve_adapter"]

ModuleSelector = Union[Collection[str], Callable[[str], bool], None]

_BN_STATS = ("running_mean", "running_var")
_TO_EMBER = {"weight": "gamma", "bias": "beta"}
_TO_TORCH = {"gamma": "weight", "beta": "bias"}


def _split(key: str) -> tuple[str, str]:
    module, _, leaf = key.rpartition(".")
    return module, leaf


def _join(module: str, leaf: str) -> str:
    return f"{module}.{leaf}" if module else leaf


def _selector(selector: ModuleSelector, what: str) -> Callable[[str], bool] | None:
    if selector is None:
        return None
    if callable(selector):
        return selector
    if isinstance(selector, str):
        raise TypeError(
            f"{what} must be a collection of module paths or a predicate, got the "
            f"string {selector!r}; wrap it in a list"
        )
    paths = frozenset(selector)
    return paths.__contains__


def _default_is_embedding(module: str) -> bool:
    return "emb" in module.rpartition(".")[2].lower()


class PyTorchAdapter:
    """Converts between PyTorch ``state_dict`` naming/layout and ember's.

    Args:
        linear: module paths (or a predicate on the path) whose 2-D ``weight`` is a Linear
            weight to transpose; None: every 2-D weight that is not an embedding or norm.
        embeddings: module paths (or predicate) of embedding tables, never transposed;
            None: modules whose last name component contains ``"emb"``.
        norms: module paths (or predicate) of normalization layers; None: modules with a
            1-D ``weight``. Modules with ``running_mean``/``running_var`` always count.
        add_num_batches_tracked: on export, give every batch norm a
            ``num_batches_tracked`` int64 scalar 0, as ``torch.nn.BatchNorm*`` expects.
    """

    def __init__(
        self,
        *,
        linear: ModuleSelector = None,
        embeddings: ModuleSelector = None,
        norms: ModuleSelector = None,
        add_num_batches_tracked: bool = True,
    ):
        self._linear = _selector(linear, "linear")
        self._embedding = _selector(embeddings, "embeddings") or _default_is_embedding
        self._norms = _selector(norms, "norms")
        self.add_num_batches_tracked = add_num_batches_tracked

    # -- classification ------------------------------------------------------------------

    def _is_linear_weight(self, module: str, ndim: int) -> bool:
        if ndim != 2 or self._embedding(module):
            return False
        return self._linear(module) if self._linear is not None else True

    def _norm_modules(self, ndims: Mapping[str, int]) -> set[str]:
        leaves: dict[str, dict[str, int]] = {}
        for key, ndim in ndims.items():
            module, leaf = _split(key)
            leaves.setdefault(module, {})[leaf] = ndim
        norms = set()
        for module, params in leaves.items():
            if any(stat in params for stat in _BN_STATS):
                norms.add(module)
            elif self._norms is not None:
                if self._norms(module):
                    norms.add(module)
            elif params.get("weight") == 1:
                norms.add(module)
        return norms

    # -- plans: new name -> (source name or None, transpose) -------------------------------

    def plan_to_ember(self, ndims: Mapping[str, int]) -> dict[str, tuple[str, bool]]:
        """Decide the PyTorch -> ember conversion from key names and ranks alone.

        Args:
            ndims: PyTorch key -> number of dimensions of its tensor.

        Returns:
            ember name -> (PyTorch key it comes from, whether to swap its two axes).

        Raises:
            RecordError: two keys map onto the same ember name.
        """
        norms = self._norm_modules(ndims)
        plan: dict[str, tuple[str, bool]] = {}
        for key, ndim in ndims.items():
            module, leaf = _split(key)
            if leaf == "num_batches_tracked":
                continue
            if module in norms and leaf in _TO_EMBER:
                self._put(plan, _join(module, _TO_EMBER[leaf]), (key, False))
            else:
                transpose = leaf == "weight" and module not in norms and self._is_linear_weight(module, ndim)
                self._put(plan, key, (key, transpose))
        return plan

    def plan_to_pytorch(self, ndims: Mapping[str, int]) -> dict[str, tuple[str | None, bool]]:
        """Decide the ember -> PyTorch conversion (the inverse of :meth:`plan_to_ember`).

        Args:
            ndims: ember parameter path -> number of dimensions of its tensor.

        Returns:
            PyTorch key -> (ember name it comes from, whether to swap its two axes); the
            source is None for a ``num_batches_tracked`` counter to create (int64 zero).

        Raises:
            RecordError: two names map onto the same PyTorch key.
        """
        modules: dict[str, set[str]] = {}
        for key in ndims:
            module, leaf = _split(key)
            modules.setdefault(module, set()).add(leaf)
        plan: dict[str, tuple[str | None, bool]] = {}
        for key, ndim in ndims.items():
            module, leaf = _split(key)
            is_norm = bool(modules[module] & set(_TO_TORCH))
            if is_norm and leaf in _TO_TORCH:
                self._put(plan, _join(module, _TO_TORCH[leaf]), (key, False))
            else:
                transpose = leaf == "weight" and not is_norm and self._is_linear_weight(module, ndim)
                self._put(plan, key, (key, transpose))
        if self.add_num_batches_tracked:
            for module, leaves in modules.items():
                counter = _join(module, "num_batches_tracked")
                if set(_BN_STATS) <= leaves and counter not in plan:
                    plan[counter] = (None, False)
        return plan

    # -- conversions of arrays -----------------------------------------------------------

    def to_ember(self, tensors: Mapping[str, Any]) -> dict[str, Any]:
        """PyTorch ``state_dict`` layout -> ember layout.

        Args:
            tensors: key -> NumPy array (or array-like).

        Returns:
            A new dict; transposed arrays are views of the inputs.
        """
        plan = self.plan_to_ember({k: np.ndim(v) for k, v in tensors.items()})
        return apply_plan(plan, tensors)

    def to_pytorch(self, tensors: Mapping[str, Any]) -> dict[str, Any]:
        """ember layout -> PyTorch ``state_dict`` layout (the inverse of :meth:`to_ember`).

        Args:
            tensors: ember parameter path -> NumPy array (or array-like).

        Returns:
            A new dict in PyTorch naming and layout.
        """
        plan = self.plan_to_pytorch({k: np.ndim(v) for k, v in tensors.items()})
        return apply_plan(plan, tensors)

    @staticmethod
    def _put(plan: dict, name: str, source: tuple) -> None:
        if name in plan:
            raise RecordError(
                f"PyTorch adapter: '{source[0]}' maps to '{name}', which '{plan[name][0]}' already produced"
            )
        plan[name] = source

    def __repr__(self) -> str:
        return (
            f"PyTorchAdapter(linear={self._linear!r}, embeddings={self._embedding!r}, norms={self._norms!r})"
        )


def apply_plan(
    plan: Mapping[str, tuple[str | None, bool]],
    tensors: Mapping[str, Any],
    transpose: Callable[[Any], Any] | None = None,
    create: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """Build the converted mapping a plan describes.

    Args:
        plan: new name -> (source name or None, transpose flag), from a ``plan_to_*``.
        tensors: the source mapping.
        transpose: how to swap a value's two axes (default ``np.swapaxes(v, 0, 1)``).
        create: how to make a value with no source (default an int64 zero scalar).
    """
    transpose = transpose or (lambda v: np.swapaxes(v, 0, 1))
    create = create or (lambda name: np.zeros((), dtype=np.int64))
    out = {}
    for name, (source, flip) in plan.items():
        if source is None:
            out[name] = create(name)
        else:
            out[name] = transpose(tensors[source]) if flip else tensors[source]
    return out


def resolve_adapter(adapter: Any) -> PyTorchAdapter | None:
    """Accept None, ``"pytorch"`` or an adapter (anything with plan_to_ember/plan_to_pytorch)."""
    if adapter is None:
        return None
    if isinstance(adapter, str):
        if adapter.lower() in ("pytorch", "torch"):
            return PyTorchAdapter()
        raise ValueError(f"unknown adapter {adapter!r}; expected None, 'pytorch' or a PyTorchAdapter")
    if callable(getattr(adapter, "plan_to_ember", None)) and callable(
        getattr(adapter, "plan_to_pytorch", None)
    ):
        return adapter
    raise TypeError(f"adapter must be None, 'pytorch' or a PyTorchAdapter, got {type(adapter).__name__}")
