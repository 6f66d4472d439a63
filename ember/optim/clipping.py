"""Gradient clipping (Burn's ``GradientClippingConfig`` / ``GradientClipping``).

Three rules, applied to a parameter group's gradients before its optimizer update:

* ``GradientClippingConfig.Value(t)`` — clamp every element to ``[-t, t]`` (NaN stays NaN);
* ``GradientClippingConfig.Norm(m)`` — **per tensor**, as Burn:
  ``g ← g · min(1, m / (‖g‖ + tiny))`` with ``tiny`` the dtype's smallest positive normal;
* ``GradientClippingConfig.GlobalNorm(m)`` — beyond Burn, PyTorch's ``clip_grad_norm_``:
  one coefficient ``min(1, m / (‖g‖_global + tiny))`` over all gradients of the group,
  ``‖g‖_global = sqrt(Σ_i ‖g_i‖²)`` accumulated in float64.

A config is attached to an optimizer config (``AdamConfig(grad_clipping=...)``), which
applies it to its first (``all()``) group on ``init()``, or passed per group to
``ModuleOptimizer.with_group``. Saved as JSON it reads ``{"Norm": {"max_norm": 1.0}}``
(Burn writes ``{"Norm": 1.0}``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from ember.kernels.arg_checks import finite_scalar
from ember.kernels.families.optimizer import SMALLEST_NORMAL
from ember.record.config import Config
from ember.tensor.ops._core import wrap
from ember.tensor.sparse import RowSparse, is_row_sparse

__all__ = ["GradientClipping", "GradientClippingConfig", "clip_buckets"]

_KINDS = ("Value", "Norm", "GlobalNorm")


class GradientClipping:
    """A ready-to-apply clipping rule (built by ``GradientClippingConfig.init()``).

    Args:
        kind: ``"Value"``, ``"Norm"`` or ``"GlobalNorm"``.
        value: the threshold (Value) or maximal norm (Norm, GlobalNorm), finite and >= 0.
    """

    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: float):
        if kind not in _KINDS:
            raise ValueError(f"GradientClipping: `kind` must be one of {list(_KINDS)}, got {kind!r}")
        self.kind = kind
        self.value = finite_scalar(f"GradientClipping.{kind}", "value", value, minimum=0.0)

    @classmethod
    def Value(cls, threshold: float) -> "GradientClipping":  # Burn's variant name
        return cls("Value", threshold)

    @classmethod
    def Norm(cls, max_norm: float) -> "GradientClipping":
        return cls("Norm", max_norm)

    @classmethod
    def GlobalNorm(cls, max_norm: float) -> "GradientClipping":
        return cls("GlobalNorm", max_norm)

    def clip_gradient(self, grad):
        """Clip one gradient tensor (Burn's ``clip_gradient``); GlobalNorm over a single
        tensor is Norm. Returns a new tensor.

        Args:
            grad: an ember Tensor or a :class:`ember.RowSparse` (its values are clipped; their
                norm equals the dense gradient's).
        """
        backend = grad.device.backend
        if is_row_sparse(grad):  # clip the stored rows: by value per element, by norm with the (equal) norm
            (out,) = clip_buckets(self, [(backend, [grad.values._data])])
            return RowSparse._trusted(grad.indices, wrap(out[0], grad.device, grad.dtype), grad.shape)
        (out,) = clip_buckets(self, [(backend, [grad._data])])
        return wrap(out[0], grad.device, grad.dtype)

    def __eq__(self, other) -> bool:
        return isinstance(other, GradientClipping) and (self.kind, self.value) == (other.kind, other.value)

    def __hash__(self) -> int:
        return hash((self.kind, self.value))

    def __repr__(self) -> str:
        return f"GradientClipping.{self.kind}({self.value!r})"


def clip_buckets(clipping: GradientClipping, buckets: Sequence[tuple]) -> list[list]:
    """Apply ``clipping`` to the gradients of one parameter group.

    Args:
        clipping: the rule.
        buckets: ``(backend, [grad arrays])`` pairs — a group's gradients split by device and
            dtype; GlobalNorm computes one norm over all of them.

    Returns:
        The clipped gradient arrays, one list per bucket (new arrays where clipped).
    """
    if clipping.kind == "Value":
        return [backend.clip_by_value(grads, clipping.value) for backend, grads in buckets]
    if clipping.kind == "Norm":
        return [backend.clip_by_norm(grads, clipping.value) for backend, grads in buckets]
    squares = sum(backend.grads_norm(grads) ** 2 for backend, grads in buckets if grads)
    nonempty = [(b, g) for b, g in buckets if g]
    if not nonempty:
        return [list(grads) for _, grads in buckets]
    backend, grads = nonempty[0]
    tiny = SMALLEST_NORMAL[backend.dtype_of(grads[0]).name]
    coef = clipping.value / (math.sqrt(squares) + tiny)
    if coef >= 1.0:  # also False for a NaN norm, which then makes every gradient NaN
        return [list(grads) for _, grads in buckets]
    return [backend.scale_grads(grads, coef) for backend, grads in buckets]


class GradientClippingConfig(Config):
    """Configuration of gradient clipping: use ``GradientClippingConfig.Value(threshold)``,
    ``.Norm(max_norm)`` or ``.GlobalNorm(max_norm)``; ``init()`` gives the rule."""

    def __post_init__(self) -> None:
        if type(self) is GradientClippingConfig:
            raise TypeError(
                "GradientClippingConfig: construct a variant, e.g. "
                "GradientClippingConfig.Norm(1.0), GradientClippingConfig.Value(0.5) "
                "or GradientClippingConfig.GlobalNorm(1.0)"
            )
        name, bound = self._bound()
        finite_scalar(f"GradientClippingConfig.{type(self).__name__}", name, bound, minimum=0.0)

    def _bound(self) -> tuple[str, float]:
        """The variant's one field, its bound (finite, >= 0): name and value."""
        (field,) = dataclasses.fields(self)
        return field.name, getattr(self, field.name)

    def init(self) -> GradientClipping:
        """The clipping rule described by this config (its kind is the variant's name)."""
        return GradientClipping(type(self).__name__, self._bound()[1])


class Value(GradientClippingConfig):
    """Clamp every gradient element to ``[-threshold, threshold]``.

    Args:
        threshold: the bound, finite and >= 0.
    """

    threshold: float


class Norm(GradientClippingConfig):
    """Rescale each gradient tensor whose L2 norm exceeds ``max_norm`` (per tensor, as Burn).

    Args:
        max_norm: the largest allowed norm, finite and >= 0.
    """

    max_norm: float


class GlobalNorm(GradientClippingConfig):
    """Rescale all gradients of a group together so their global L2 norm is at most
    ``max_norm`` (PyTorch's ``clip_grad_norm_``; not in Burn).

    Args:
        max_norm: the largest allowed global norm, finite and >= 0.
    """

    max_norm: float


GradientClippingConfig.Value = Value
GradientClippingConfig.Norm = Norm
GradientClippingConfig.GlobalNorm = GlobalNorm


def as_clipping(owner: str, value) -> GradientClipping | None:
    """A :class:`GradientClipping` from a rule, a config or None."""
    if value is None or isinstance(value, GradientClipping):
        return value
    if isinstance(value, GradientClippingConfig):
        return value.init()
    raise TypeError(
        f"{owner}: gradient clipping must be a GradientClippingConfig (e.g. "
        f"GradientClippingConfig.Norm(1.0)), a GradientClipping or None, got "
        f"{type(value).__name__} ({value!r})"
    )
