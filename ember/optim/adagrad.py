"""AdaGrad with learning-rate decay (Burn's ``AdaGrad``)."""

from __future__ import annotations

from ember.kernels.arg_checks import finite_scalar
from ember.kernels.families.optimizer_args import AdagradArgs, AdagradState
from ember.optim.clipping import GradientClippingConfig
from ember.optim.optimizer import Optimizer, OptimizerConfig, WeightDecayConfig

__all__ = ["AdaGrad", "AdaGradConfig"]

SUM, TIME = "lr_decay.sum", "lr_decay.time"


class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al. 2011). Per element, with t the 1-based step, λ the L2 penalty::

        g ← g + λ·θ
        Σ ← Σ + g²
        lrₜ = lr / (1 + (t − 1)·lr_decay)
        θ ← θ − lrₜ·g / (√Σ + ε)

    Identical to PyTorch's ``Adagrad`` with ``initial_accumulator_value=0`` (Burn's ε default
    is 1e-5, PyTorch's 1e-10). State: ``lr_decay.sum`` and the step count ``lr_decay.time``.

    Row-sparse gradients (:class:`ember.RowSparse`) are **densified** (the default
    :meth:`Optimizer.update_sparse`): the result is exactly the dense update, and the step
    costs the whole table. Use SGD, Adam or AdamW for lazy O(rows) steps on large tables.

    Args:
        lr_decay: decay of the rate per step, >= 0.
        epsilon: ε >= 0.
        weight_decay: λ (0 disables).
    """

    counter = TIME
    required_states = (SUM,)

    def __init__(self, lr_decay: float = 0.0, epsilon: float = 1e-5, weight_decay: float = 0.0):
        self.lr_decay = finite_scalar("AdaGrad", "lr_decay", lr_decay, minimum=0.0)
        self.epsilon = finite_scalar("AdaGrad", "epsilon", epsilon, minimum=0.0)
        self.weight_decay = finite_scalar("AdaGrad", "weight_decay", weight_decay)

    def state_names(self) -> tuple[str, ...]:
        return (SUM,)

    def update(self, backend, params, grads, states, lr, steps, fresh):
        args = AdagradArgs(lr, self.lr_decay, self.epsilon, self.weight_decay, list(steps))
        new_p, new = backend.adagrad_update(params, grads, AdagradState(states[SUM]), args)
        return new_p, {SUM: new.sums}


class AdaGradConfig(OptimizerConfig):
    """Configuration of :class:`AdaGrad` (Burn's ``AdaGradConfig``; defaults are Burn's).

    Args:
        lr_decay: Default 0.
        epsilon: Default 1e-5.
        weight_decay: optional L2 weight decay.
        grad_clipping: optional clipping, applied by ``init()`` to the ``all()`` group.
    """

    lr_decay: float = 0.0
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    _optimizer = AdaGrad
    _weight_decay_config = True
