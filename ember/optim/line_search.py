"""The strong-Wolfe line search of :class:`ember.optim.Lbfgs` (Burn's ``strong_wolfe``, itself
PyTorch's ``_strong_wolfe``, after Nocedal & Wright, "Numerical Optimization", Alg. 3.5/3.6).

Vectors are 1-D ember tensors; step sizes, losses and directional derivatives are Python
floats. The objective is called as ``objective(t)`` and returns ``(loss, flat_grad)`` at
``x + t·d``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ember.tensor.tensor import Tensor

__all__ = ["cubic_interpolate", "strong_wolfe"]


def dot(a: Tensor, b: Tensor) -> float:
    """``a · b`` as a Python float."""
    return float((a * b).sum().item())


def cubic_interpolate(
    x1: float,
    f1: float,
    g1: float,
    x2: float,
    f2: float,
    g2: float,
    bounds: tuple[float, float] | None = None,
) -> float:
    """The minimiser, clamped to ``bounds``, of the cubic through ``(x1, f1)`` and ``(x2, f2)``
    with slopes ``g1`` and ``g2``.

    Args:
        x1: first abscissa.
        f1: value at ``x1``.
        g1: derivative at ``x1``.
        x2: second abscissa.
        f2: value at ``x2``.
        g2: derivative at ``x2``.
        bounds: ``(low, high)``; the interval between ``x1`` and ``x2`` when None.

    Returns:
        The clamped minimiser, or the middle of the bounds when the cubic has no minimum.
    """
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0.0:
        return (low + high) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        position = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2.0 * d2))
    else:
        position = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2.0 * d2))
    return min(max(position, low), high)


@dataclass
class _Sample:
    t: float  # step size
    f: float  # loss
    g: Tensor  # flat gradient
    gtd: float  # directional derivative g·d


def strong_wolfe(
    objective: Callable[[float], tuple[float, Tensor]],
    t: float,
    d: Tensor,
    f: float,
    g: Tensor,
    gtd: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, Tensor, float, int]:
    """Find a step ``t`` along ``d`` meeting the strong Wolfe conditions
    ``f(t) <= f + c1·t·gtd`` and ``|g(t)·d| <= −c2·gtd``.

    A bracketing phase grows the step by cubic extrapolation until an interval holds an
    acceptable point, then a zoom phase shrinks it by cubic interpolation (safeguarded away
    from the interval's ends), both within ``max_ls`` further evaluations.

    Args:
        objective: ``objective(t) -> (loss, flat_grad)`` at the point ``x + t·d``.
        t: the first step tried.
        d: the search direction.
        f: the loss at ``t = 0``.
        g: the flat gradient at ``t = 0``.
        gtd: ``g·d`` (negative for a descent direction).
        c1: the sufficient-decrease constant.
        c2: the curvature constant.
        tolerance_change: stop zooming once the bracket times ``max|d|`` is below it.
        max_ls: the most iterations of the two phases together.

    Returns:
        ``(loss, flat_grad, t, evaluations)`` at the step chosen.
    """
    d_norm = float(d.abs().max().item())
    f_new, g_new = objective(t)
    evaluations = 1
    gtd_new = dot(g_new, d)
    prev = _Sample(0.0, f, g, gtd)
    bracket: list[_Sample] | None = None
    ls_iter = 0
    while ls_iter < max_ls:
        current = _Sample(t, f_new, g_new, gtd_new)
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= prev.f):
            bracket = [prev, current]
            break
        if abs(gtd_new) <= -c2 * gtd:
            return f_new, g_new, t, evaluations
        if gtd_new >= 0.0:
            bracket = [prev, current]
            break
        # extrapolate beyond t, between 1.01·t and 10·t (measured from the previous step)
        t_next = cubic_interpolate(
            prev.t, prev.f, prev.gtd, t, f_new, gtd_new, (t + 0.01 * (t - prev.t), t * 10.0)
        )
        prev = current
        t = t_next
        f_new, g_new = objective(t)
        evaluations += 1
        gtd_new = dot(g_new, d)
        ls_iter += 1
    if bracket is None:  # the budget ran out while bracketing
        bracket = [_Sample(0.0, f, g, gtd), _Sample(t, f_new, g_new, gtd_new)]

    low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
    insufficient_progress = False
    while ls_iter < max_ls:
        if abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change:
            break
        b0, b1 = bracket
        t = cubic_interpolate(b0.t, b0.f, b0.gtd, b1.t, b1.f, b1.gtd)
        b_min, b_max = min(b0.t, b1.t), max(b0.t, b1.t)
        eps = 0.1 * (b_max - b_min)
        if min(b_max - t, t - b_min) < eps:  # too close to an end of the bracket
            if insufficient_progress or t >= b_max or t <= b_min:
                t = b_max - eps if abs(t - b_max) < abs(t - b_min) else b_min + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = objective(t)
        evaluations += 1
        gtd_new = dot(g_new, d)
        ls_iter += 1
        sample = _Sample(t, f_new, g_new, gtd_new)
        if f_new > f + c1 * t * gtd or f_new >= bracket[low].f:
            bracket[high] = sample
        else:
            if abs(gtd_new) <= -c2 * gtd:
                return f_new, g_new, t, evaluations
            if gtd_new * (bracket[high].t - bracket[low].t) >= 0.0:
                bracket[high] = bracket[low]
            bracket[low] = sample
        low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
    best = bracket[low]
    return best.f, best.g, best.t, evaluations
