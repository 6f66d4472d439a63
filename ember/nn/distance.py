"""Similarity and distance between two batches of vectors: Burn's ``CosineSimilarity`` and
``PairwiseDistance`` modules, and the functions they run (:func:`cosine_similarity`,
:func:`pairwise_distance`, :func:`lp_norm`).

Both inputs have the same rank; their shapes broadcast against each other (one query row
against a batch, as PyTorch allows). The compared dim is reduced in the output.
"""

from __future__ import annotations

import math

from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.grad_mode import no_grad
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.elementwise import binary
from ember.tensor.tensor import Tensor

__all__ = [
    "CosineSimilarity",
    "CosineSimilarityConfig",
    "PairwiseDistance",
    "PairwiseDistanceConfig",
    "cosine_similarity",
    "lp_norm",
    "pairwise_distance",
]


def lp_norm(x: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """The p-norm of ``x`` along ``dim``, as Burn's ``lp_norm``: p = 0 counts the non-zeros,
    ``inf`` / ``-inf`` take the largest / smallest magnitude, even integers skip the ``abs``
    (same value, and a gradient defined at 0), other p use ``(Σ|x|ᵖ)^(1/p)``."""
    if p == 0:
        return (x != 0).to(x.dtype).sum(dim, keepdim=keepdim)
    if p == 1:
        return x.abs().sum(dim, keepdim=keepdim)
    if p == 2:
        return x.square().sum(dim, keepdim=keepdim).sqrt()
    if p == math.inf:
        return x.abs().max(dim, keepdim=keepdim)
    if p == -math.inf:
        return x.abs().min(dim, keepdim=keepdim)
    powered = x**p if float(p).is_integer() and int(p) % 2 == 0 else x.abs() ** p
    return powered.sum(dim, keepdim=keepdim) ** (1.0 / p)


def _broadcast_shape(a: tuple, b: tuple) -> tuple | None:
    out = []
    for m, n in zip(a, b):
        if m != n and 1 not in (m, n):
            return None
        out.append(n if m == 1 else m)
    return tuple(out)


def _check_pair(op: str, x1, x2) -> tuple:
    for name, x in (("x1", x1), ("x2", x2)):
        if not isinstance(x, Tensor) or not x.dtype.is_float:
            got = f"{x.dtype} tensor" if isinstance(x, Tensor) else type(x).__name__
            raise TypeError(f"{op}: {name} must be a float Tensor, got {got}")
    shape = _broadcast_shape(tuple(x1.shape), tuple(x2.shape)) if x1.ndim == x2.ndim else None
    if shape is None or x1.ndim == 0:
        raise ValueError(
            f"{op}: x1 {shape_str(x1.shape)} and x2 {shape_str(x2.shape)} must have the same rank "
            f"(>= 1) and broadcastable shapes"
        )
    if x1.dtype != x2.dtype:
        raise TypeError(f"{op}: x1 is {x1.dtype} but x2 is {x2.dtype}")
    return shape


def _check_number(op: str, name: str, value, allow_inf: bool = False) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or math.isnan(value)
        or (not allow_inf and math.isinf(value))
    ):
        raise ValueError(f"{op}: {name} must be a {'' if allow_inf else 'finite '}number, got {value!r}")


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``Σ x1·x2 / (max(‖x1‖, eps) · max(‖x2‖, eps))`` along ``dim`` (reduced).

    Args:
        x1, x2: float tensors of the same rank with broadcastable shapes.
        dim: the compared dim; negative counts from the end.
        eps: lower bound of each norm (a zero vector gives similarity 0, not NaN).
    """
    shape = _check_pair("cosine_similarity", x1, x2)
    if not -len(shape) <= dim < len(shape):
        raise IndexError(f"cosine_similarity: dim {dim} is out of range for inputs of rank {len(shape)}")
    # broadcast first: a norm taken along a broadcast dim must see the repeated entries
    x1 = x1 if tuple(x1.shape) == shape else x1.expand(*shape)
    x2 = x2 if tuple(x2.shape) == shape else x2.expand(*shape)
    # Each vector divided by its largest |x| first (the value is unchanged: a positive scale of
    # a vector and its eps bound cancel), so the dot and the norms cannot overflow: at 3e38 in
    # float32 they were inf/inf = NaN where the similarity is finite.
    s1, s2 = _scale(x1, dim), _scale(x2, dim)
    y1, y2 = x1 / s1, x2 / s2
    dot = (y1 * y2).sum(dim)
    n1 = binary("maximum", lp_norm(y1, 2, dim), (eps / s1).squeeze(dim))
    n2 = binary("maximum", lp_norm(y2, 2, dim), (eps / s2).squeeze(dim))
    return dot / (n1 * n2)


def _scale(x: Tensor, dim: int) -> Tensor:
    """The largest |x| along ``dim`` (kept), 1 where that is 0 or not finite; a constant."""
    with no_grad():
        m = x.abs().max(dim, keepdim=True)
        return m.mask_fill(~(m.isfinite() & (m > 0)), 1.0)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6) -> Tensor:
    """``‖x1 − x2 + eps‖_p`` along the last dim (reduced); ``eps`` keeps the 2-norm's
    gradient finite for equal rows.

    Args:
        x1, x2: float tensors of the same rank with broadcastable shapes.
        p: the norm (see :func:`lp_norm`).
        eps: added to every difference.
    """
    _check_pair("pairwise_distance", x1, x2)
    return lp_norm(x1 - x2 + eps, p, -1)


class CosineSimilarityConfig(Config):
    """Configuration of :class:`CosineSimilarity` (Burn's and PyTorch's defaults).

    Args:
        dim: the compared dim (1); negative counts from the end.
        eps: lower bound of each vector's norm (1e-8).
    """

    dim: int = 1
    eps: float = 1e-8

    def init(self, device=None, dtype=None) -> "CosineSimilarity":
        """Build the layer (it has no parameters)."""
        return CosineSimilarity(self.dim, self.eps)


class CosineSimilarity(Module):
    """Cosine similarity of ``x1`` and ``x2`` along ``dim`` (see :func:`cosine_similarity`):
    ``[batch, features]`` pairs give ``[batch]``.

    Args:
        dim, eps: as in the config.
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise ValueError(f"CosineSimilarity: dim must be an int, got {dim!r}")
        _check_number("CosineSimilarity", "eps", eps)
        self.dim = dim
        self.eps = float(eps)

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self) -> dict:
        return {"dim": self.dim, "eps": self.eps}


class PairwiseDistanceConfig(Config):
    """Configuration of :class:`PairwiseDistance` (Burn's and PyTorch's defaults).

    Args:
        p: the norm (2.0); 0, ``inf`` and ``-inf`` as in :func:`lp_norm`.
        eps: added to every difference (1e-6).
    """

    p: float = 2.0
    eps: float = 1e-6

    def init(self, device=None, dtype=None) -> "PairwiseDistance":
        """Build the layer (it has no parameters)."""
        return PairwiseDistance(self.p, self.eps)


class PairwiseDistance(Module):
    """p-norm distance between the rows of ``x1`` and ``x2`` over the last dim (see
    :func:`pairwise_distance`): ``[batch, features]`` pairs give ``[batch]``.

    Args:
        p, eps: as in the config.
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6):
        _check_number("PairwiseDistance", "p", p, allow_inf=True)
        _check_number("PairwiseDistance", "eps", eps)
        self.p = float(p)
        self.eps = float(eps)

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return pairwise_distance(x1, x2, self.p, self.eps)
