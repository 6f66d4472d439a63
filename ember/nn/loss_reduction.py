"""``Reduction`` (Burn's ``burn_nn::loss::Reduction``) and the checks every loss shares.

A loss reduces its per-element values with ``Mean``, ``Sum``, ``BatchMean`` (the sum divided by
the batch size, dim 0) or ``Auto`` (the loss's natural reduction: the mean for all losses but
KL divergence, whose ``Auto`` is ``BatchMean``). Losses that Burn does not define a reduction for
raise a ``ValueError`` naming it, where Burn panics.
"""

from __future__ import annotations

import enum

from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["Reduction", "as_reduction", "check_float", "check_same_shape", "reduce_loss"]


class Reduction(enum.Enum):
    """How per-element losses are combined."""

    Mean = "Mean"
    Sum = "Sum"
    BatchMean = "BatchMean"  # the sum divided by the batch size (dim 0)
    Auto = "Auto"  # the loss's natural reduction


_BY_LOWER = {member.name.lower(): member for member in Reduction}


def as_reduction(op: str, reduction) -> Reduction:
    """A :class:`Reduction` from a member or its name (any case: ``"mean"``, ``"batchmean"``)."""
    if isinstance(reduction, Reduction):
        return reduction
    if isinstance(reduction, str) and reduction.lower().replace("_", "") in _BY_LOWER:
        return _BY_LOWER[reduction.lower().replace("_", "")]
    raise ValueError(
        f"{op}: unsupported reduction {reduction!r}; expected a Reduction (Mean, Sum, BatchMean or Auto)"
    )


def reduce_loss(
    op: str,
    loss: Tensor,
    reduction,
    auto: Reduction = Reduction.Mean,
    supported=(Reduction.Mean, Reduction.Sum),
) -> Tensor:
    """Reduce per-element losses to a 0-d tensor.

    Args:
        op: the loss's name, for errors.
        loss: the per-element losses.
        reduction: the requested reduction.
        auto: what ``Auto`` means for this loss.
        supported: the reductions this loss accepts besides ``Auto``.
    """
    reduction = as_reduction(op, reduction)
    if reduction is Reduction.Auto:
        reduction = auto
    if reduction not in supported:
        names = ", ".join(r.name for r in supported)
        raise ValueError(f"{op}: {reduction.name} reduction is not supported; use {names} or Auto")
    if reduction is Reduction.Sum:
        return loss.sum()
    if reduction is Reduction.BatchMean:
        if loss.ndim == 0:
            raise ValueError(f"{op}: BatchMean needs a batch dim, got a 0-d loss")
        return loss.sum() / float(loss.shape[0])
    return loss.mean()


def check_float(op: str, name: str, x) -> None:
    """``x`` must be a float tensor."""
    if not isinstance(x, Tensor) or not x.dtype.is_float:
        got = x.dtype if isinstance(x, Tensor) else type(x).__name__
        raise TypeError(f"{op}: {name} must be a float tensor, got {got}")


def check_same_shape(op: str, names: tuple[str, str], a: Tensor, b) -> None:
    """``b`` must be a tensor of ``a``'s shape."""
    if not isinstance(b, Tensor) or b.shape != a.shape:
        got = shape_str(b.shape) if isinstance(b, Tensor) else type(b).__name__
        raise ValueError(
            f"{op}: {names[1]} must have the shape of {names[0]} {shape_str(a.shape)}, got {got}"
        )
