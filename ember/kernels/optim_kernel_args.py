"""Host-side arguments of the fused multi-tensor optimizer kernels.

The cpu (Numba) and cuda kernels take the same pre-computed per-tensor coefficients; both
backends validate and derive them here, so they agree to the bit (both round the same
float64 values to their arithmetic dtype) and refuse bad arguments with the same words.
The update rules themselves are stated in the optimizers' docstrings (``ember/optim/``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ember.kernels.arg_checks import finite_scalar, per_tensor, step_numbers

__all__ = ["adam_arguments"]


def adam_arguments(
    op: str,
    n: int,
    lr: float | Sequence[float],
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
    decoupled: bool,
    cautious: bool,
    steps: int | Sequence[int],
) -> tuple[np.ndarray, tuple[float, float, float, float], int]:
    """Validate Adam / AdamW hyper-parameters and derive what the fused kernels take.

    Args:
        op: name of the calling update, for error messages.
        n: number of tensors in the group.
        lr, beta1, beta2, eps, weight_decay, decoupled, cautious, steps: as ``adam_update``.

    Returns:
        ``(per, betas, mode)``: ``per`` float64 ``[n, 6]``, one row per tensor
        ``(lr, corr, eps_eff, l2, keep, decay)`` with ``corr = √(1 − β2ᵗ)/(1 − β1ᵗ)``,
        ``eps_eff = ε·√(1 − β2ᵗ)`` (Adam's form of the step), ``l2 = λ`` for Adam (else 0),
        ``keep = 1 − lr·λ`` and ``decay = lr·λ`` for AdamW (else 1 and 0); ``betas`` is
        ``(β1, 1 − β1, β2, 1 − β2)``; ``mode`` is 0 (Adam, or AdamW without decay), 1 (AdamW)
        or 2 (AdamW, cautious decay).

    Raises:
        ValueError: ``cautious`` without ``decoupled``, or a value out of its range.
    """
    if cautious and not decoupled:
        raise ValueError(f"{op}: cautious weight decay applies to decoupled decay; set decoupled=True")
    beta1 = finite_scalar(op, "beta1", beta1, unit_interval=True)
    beta2 = finite_scalar(op, "beta2", beta2, unit_interval=True)
    eps, wd = finite_scalar(op, "eps", eps), finite_scalar(op, "weight_decay", weight_decay)
    rates = per_tensor(op, "lr", lr, n)
    t = step_numbers(op, "steps", steps, n)
    bc1 = 1.0 - beta1**t
    bc2_sqrt = np.sqrt(1.0 - beta2**t)
    decay = rates * wd if decoupled else np.zeros(n)
    per = np.stack(
        [
            rates,
            bc2_sqrt / bc1,
            eps * bc2_sqrt,
            np.zeros(n) if decoupled else np.full(n, wd),
            1.0 - decay,
            decay,
        ],
        axis=1,
    )
    mode = (2 if cautious else 1) if decoupled and wd != 0.0 else 0
    return per, (beta1, 1.0 - beta1, beta2, 1.0 - beta2), mode
