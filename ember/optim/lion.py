"""Lion: sign-of-momentum updates with decoupled weight decay (not in Burn)."""

from __future__ import annotations

from ember.kernels.arg_checks import finite_scalar
from ember.kernels.families.optimizer_args import LionArgs, LionState
from ember.optim.clipping import GradientClippingConfig
from ember.optim.optimizer import Optimizer, OptimizerConfig

__all__ = ["Lion", "LionConfig"]

EXP_AVG = "momentum.exp_avg"


class Lion(Optimizer):
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms", Alg. 2).
    Per element, with λ the decoupled weight decay::

        c = β1·m + (1 − β1)·g
        θ ← θ·(1 − lr·λ) − lr·sign(c)          (sign(0) = 0)
        m ← β2·m + (1 − β2)·g

    Neither Burn nor PyTorch ships Lion; its typical learning rate is 3-10x smaller than
    AdamW's. State: ``momentum.exp_avg`` (an ember name; Burn has no Lion record).

    Row-sparse gradients (:class:`ember.RowSparse`) are **densified** (the default
    :meth:`Optimizer.update_sparse`): the result is exactly the dense update, and the step
    costs the whole table. Use SGD, Adam or AdamW for lazy O(rows) steps on large tables.

    Args:
        beta_1: β1 in [0, 1).
        beta_2: β2 in [0, 1).
        weight_decay: λ (0 disables).
    """

    def __init__(self, beta_1: float = 0.9, beta_2: float = 0.99, weight_decay: float = 0.0):
        self.beta_1 = finite_scalar("Lion", "beta_1", beta_1, unit_interval=True)
        self.beta_2 = finite_scalar("Lion", "beta_2", beta_2, unit_interval=True)
        self.weight_decay = finite_scalar("Lion", "weight_decay", weight_decay)

    def state_names(self) -> tuple[str, ...]:
        return (EXP_AVG,)

    def update(self, backend, params, grads, states, lr, steps, fresh):
        args = LionArgs(lr, self.beta_1, self.beta_2, self.weight_decay)
        new_p, new = backend.lion_update(params, grads, LionState(states[EXP_AVG]), args)
        return new_p, {EXP_AVG: new.exp_avg}


class LionConfig(OptimizerConfig):
    """Configuration of :class:`Lion`.

    Args:
        beta_1: β1. Default 0.9.
        beta_2: β2. Default 0.99.
        weight_decay: decoupled decay λ. Default 0.
        grad_clipping: optional clipping, applied by ``init()`` to the ``all()`` group.
    """

    beta_1: float = 0.9
    beta_2: float = 0.99
    weight_decay: float = 0.0
    grad_clipping: GradientClippingConfig | None = None

    _optimizer = Lion
