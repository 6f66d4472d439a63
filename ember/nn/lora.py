"""LoRA: low-rank adapters on frozen weights (Burn's ``Lora`` reparameterizer).

``apply_lora(module, Lora(rank, alpha))`` freezes **every** float parameter and gives each
rank-2 parameter that matches the group (Linear and Embedding weights, by default all of
them) a :class:`LoraAdapter`: ``a: [d_in, r] ~ N(0, std²)`` (std = ``init_std`` or 1/r),
``b: [r, d_out] = 0`` and ``scale = alpha / r``. The layer then sees the effective weight
``base + scale · (a @ b)`` through ``Param.val()``; with ``b = 0`` the output is unchanged
at first. The factors are ordinary trainable parameters at ``<weight path>.lora.a`` and
``<weight path>.lora.b``, so optimizers, gradients and records handle them like any other.
``merge_lora`` folds the adapters back into the weights (``Module.valid()`` does too) and
gives back the trainability ``apply_lora`` took: every parameter that was trainable before
is trainable again, so the merged model trains (or takes new adapters) like the original.
QLoRA (adapters over quantized bases) builds on this in ``ember.nn.qlora``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ember._deprecation import renamed_method
from ember.nn.module import INFERENCE_COPY_HOOKS, Module, _group_matches, register_methods
from ember.nn.param import Param, _as_leaf
from ember.tensor import dtypes as dt
from ember.tensor.creation import randn, zeros
from ember.tensor.grad_mode import no_grad
from ember.tensor.tensor import Tensor

__all__ = ["Lora", "LoraAdapter", "apply_lora", "merge_lora"]


class LoraAdapter(Module):
    """The low-rank factors of one adapted weight ``[d_in, d_out]``.

    Args:
        a: the down-projection ``[d_in, rank]`` (trainable).
        b: the up-projection ``[rank, d_out]`` (trainable).
        scale: the factor applied to ``a @ b`` (``alpha / rank``).
    """

    NAME = "lora"  # the path component of the factors: "<weight>.lora.a"

    def __init__(self, a: Param, b: Param, scale: float):
        self.a = a
        self.b = b
        self.scale = float(scale)

    def delta(self) -> Tensor:
        """``scale · (a @ b)``, shape ``[d_in, d_out]``; differentiable in ``a`` and ``b``."""
        return (self.a.val() @ self.b.val()) * self.scale

    def materialize(self, base: Tensor) -> Tensor:
        """The effective weight ``base + delta`` (the base cast to the factors' dtype)."""
        delta = self.delta()
        if base.dtype is not delta.dtype:
            base = base.to(delta.dtype)
        return base + delta.reshape(base.shape)

    def forward(self, base: Tensor) -> Tensor:
        return self.materialize(base)

    def extra_repr(self) -> dict:
        return {"rank": self.a.shape[1], "scale": self.scale}


@dataclass
class Lora:
    """LoRA settings for :func:`apply_lora`.

    Args:
        rank: rank r of the decomposition (>= 1).
        alpha: scaling numerator; the adapter contributes ``alpha / r · (a @ b)``.
        init_std: standard deviation of ``a``'s normal init; 1/r when None.
        dtype: float dtype of the factors; the base weight's dtype when None.
        param_group: which rank-2 parameters get adapters — an object with
            ``matches(path, param_id)`` (``ember.optim.ParamGroup``), a callable
            ``(path, param_id) -> bool``, or None for all of them. Every float parameter is
            frozen whatever the group.
    """

    rank: int
    alpha: float
    init_std: float | None = None
    dtype: Any = None
    param_group: Any = None

    def __post_init__(self):
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 1:
            raise ValueError(f"Lora: rank must be a positive int, got {self.rank!r}")
        self.alpha = float(self.alpha)
        if self.init_std is not None and self.init_std < 0:
            raise ValueError(f"Lora: init_std must be >= 0, got {self.init_std}")
        if self.dtype is not None:
            self.dtype = dt.dtype(self.dtype)
            if not self.dtype.is_float:
                raise TypeError(f"Lora: dtype must be a float dtype, got {self.dtype}")

    @property
    def scale(self) -> float:
        """``alpha / rank``."""
        return self.alpha / self.rank

    def with_param_group(self, group) -> "Lora":
        """A copy that adapts only parameters matching ``group`` (Burn's ``set_param_group``)."""
        return replace(self, param_group=group)

    def with_dtype(self, dtype) -> "Lora":
        """A copy whose factors are built in ``dtype`` (Burn's ``set_dtype``)."""
        return replace(self, dtype=dtype)

    def with_init_std(self, std: float) -> "Lora":
        """A copy with another standard deviation for ``a``."""
        return replace(self, init_std=std)

    # Burn's names, one release: every config setter here is with_<field>
    set_param_group = renamed_method("set_param_group", "with_param_group")
    set_dtype = renamed_method("set_dtype", "with_dtype")


def _make_adapter(lora: Lora, base: Tensor) -> LoraAdapter:
    d_in, d_out = base.shape
    dtype = lora.dtype or base.dtype
    std = lora.init_std if lora.init_std is not None else 1.0 / lora.rank
    a = randn((d_in, lora.rank), dtype=dtype, device=base.device, mean=0.0, std=std)
    b = zeros((lora.rank, d_out), dtype=dtype, device=base.device)
    return LoraAdapter(Param(a, None, True), Param(b, None, True), lora.scale)


def _check_no_adapters(op: str, params) -> None:
    """Refuse a second reparameterization: adapters (or quantized storage) do not nest."""
    adapted = [path for path, p in params if p._adapter is not None]
    if adapted:
        raise ValueError(
            f"{op}: parameters {adapted} already have LoRA adapters or quantized storage; "
            f"call merge_lora() before applying new ones"
        )


def apply_lora(module: Module, lora: Lora) -> Module:
    """Freeze every float parameter of ``module`` and attach adapters to its rank-2 ones.

    Changes the module in place and returns it.

    Args:
        module: the model.
        lora: the settings (rank, alpha, init_std, dtype, param_group).

    Raises:
        ValueError: the module already carries adapters (merge them first with merge_lora).
    """
    if not isinstance(lora, Lora):
        raise TypeError(f"apply_lora: expected a Lora, got {type(lora).__name__}")
    params = list(module.named_parameters())
    _check_no_adapters("apply_lora", params)
    for path, p in params:
        if not p.dtype.is_float:
            continue
        p._lora_restore_grad = p.is_require_grad()  # merge_lora gives it back
        p.set_require_grad(False)
        if p.ndim == 2 and _group_matches(lora.param_group, path, p.id):
            p._adapter = _make_adapter(lora, p._value)
    return module


def merge_lora(module: Module) -> Module:
    """Fold every adapter into its weight (``base ← base + scale·(a@b)``), remove it, and
    give back the trainability ``apply_lora`` took.

    After ``apply_qlora`` the quantized bases are dequantized too (``dequantize(base) +
    delta``, or just ``dequantize(base)`` where no adapter was attached): the result is a
    plain float model.

    The merged weights keep their ids. Each parameter that ``apply_lora`` froze is trainable
    again if it was before; one trainable now (unfrozen meanwhile) stays trainable. In place;
    returns the module.
    """
    for _, p in list(module.named_parameters()):
        adapter = p._adapter
        if adapter is not None:
            with no_grad():
                merged = adapter.materialize(p._value).detach()
            p._adapter = None
            p._value = _as_leaf(merged, p._require_grad)
        if p._lora_restore_grad is not None:
            p.set_require_grad(p.is_require_grad() or p._lora_restore_grad)
            p._lora_restore_grad = None
    return module


@register_methods
class _LoraMethods:
    """Module's LoRA methods, registered from here: Module itself knows nothing of LoRA."""

    def apply_lora(self, lora) -> "Module":
        """Attach LoRA adapters (see :func:`ember.nn.lora.apply_lora`). In place."""
        return apply_lora(self, lora)

    def merge_lora(self) -> "Module":
        """Fold LoRA adapters into their weights (see :func:`ember.nn.lora.merge_lora`). In place."""
        return merge_lora(self)


# Module.valid() folds the adapters into the weights of its inference copy.
INFERENCE_COPY_HOOKS.append(merge_lora)
