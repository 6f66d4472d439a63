"""Refit the rational factor of the float32 normal tail in ``ember/kernels/cpu/vecmath.py``.

    python -m tools.fit_normal_tail

The upper tail of the standard normal is ``T(a) = exp(-a^2 / 2) R(a)`` with
``R(a) = erfcx(a / sqrt2) / 2``, smooth and positive on ``a >= 0`` and close to
``1 / (a sqrt(2 pi))`` far out, so a ratio ``P(a) / Q(a)`` of degrees 4 and 5 (Q's constant
term 1) follows it. The fit minimises the largest relative error on ``[0, 14]`` (the tail
leaves float32's normal range at about 13.2): a linearised least-squares fit reweighted by the
error it leaves (Loeb's iteration with Lawson's weights), which settles on the equioscillating
minimax solution. It prints the coefficients, highest degree first, and the error of the ratio
in float64 and evaluated in float32 with FMA steps. Needs SciPy (for ``erfcx``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import erfcx

NUM_DEGREE, DEN_DEGREE, UPPER = 4, 5, 14.0


def fit(iterations: int = 200) -> tuple[np.ndarray, np.ndarray, float]:
    """``(p, q, error)``: coefficients lowest degree first, ``q[0] = 1``."""
    a = np.unique(np.concatenate([np.linspace(0.0, UPPER, 6000), np.geomspace(1e-4, UPPER, 2000)]))
    r = erfcx(a / np.sqrt(2.0)) / 2.0
    powers = a[:, None] ** np.arange(max(NUM_DEGREE, DEN_DEGREE) + 1)
    # P(a) - r Q(a) = r, linear in the unknowns once Q's constant term is fixed at 1
    design = np.hstack([powers[:, : NUM_DEGREE + 1], -r[:, None] * powers[:, 1 : DEN_DEGREE + 1]])
    previous_den, weight, best = np.ones_like(a), np.ones_like(a), None
    for _ in range(iterations):
        row_scale = np.sqrt(weight) / (r * previous_den)  # relative error of the ratio
        coef, *_ = np.linalg.lstsq(design * row_scale[:, None], r * row_scale, rcond=None)
        p = coef[: NUM_DEGREE + 1]
        q = np.concatenate([[1.0], coef[NUM_DEGREE + 1 :]])
        previous_den = powers[:, : DEN_DEGREE + 1] @ q
        error = (powers[:, : NUM_DEGREE + 1] @ p) / previous_den / r - 1.0
        worst = float(np.abs(error).max())
        if best is None or worst < best[2]:
            best = (p, q, worst)
        weight = weight * (np.abs(error) + 1e-3 * worst)
        weight /= weight.mean()
    return best


def _horner_float32(coefficients_low_first: np.ndarray, x: np.ndarray) -> np.ndarray:
    # float32 FMA steps, emulated exactly: the float32 product is exact in float64
    acc = np.full_like(x, np.float32(coefficients_low_first[-1]))
    for c in coefficients_low_first[-2::-1]:
        acc = (acc.astype(np.float64) * x + np.float64(np.float32(c))).astype(np.float32)
    return acc


def main() -> None:
    p, q, error = fit()
    a = np.linspace(0.0, UPPER, 200_001).astype(np.float32)
    ratio32 = _horner_float32(p, a).astype(np.float64) / _horner_float32(q, a)
    error32 = np.abs(ratio32 / (erfcx(a.astype(np.float64) / np.sqrt(2.0)) / 2.0) - 1.0).max()
    print(
        f"P{NUM_DEGREE}/Q{DEN_DEGREE} on [0, {UPPER}]: relative error {error:.3g} (float64), {error32:.3g} (float32)"
    )
    print("_NORMAL_TAIL_P =", tuple(float(c) for c in p[::-1]))
    print("_NORMAL_TAIL_Q =", tuple(float(c) for c in q[::-1]))


if __name__ == "__main__":
    main()
