"""Stochastic gradient descent with optional weight decay and momentum (Burn's ``Sgd``)."""

from __future__ import annotations

from ember._deprecation import renamed_method
from ember.kernels.arg_checks import finite_scalar
from ember.kernels.families.optimizer_args import SgdArgs, SgdState
from ember.optim.clipping import GradientClippingConfig
from ember.optim.optimizer import Optimizer, OptimizerConfig, WeightDecayConfig
from ember.record.config import Config

__all__ = ["MomentumConfig", "Sgd", "SgdConfig"]

_VELOCITY = "momentum.velocity"


class MomentumConfig(Config):
    """Momentum of :class:`SgdConfig` (Burn's ``MomentumConfig``).

    Args:
        momentum: μ. Default 0.9.
        dampening: d. Default 0.1 (PyTorch's default is 0).
        nesterov: use the Nesterov look-ahead gradient. Default False.
    """

    momentum: float = 0.9
    dampening: float = 0.1
    nesterov: bool = False


class Sgd(Optimizer):
    """SGD, per element, with λ the L2 penalty, μ the momentum and d the dampening::

        g ← g + λ·θ                                   (weight decay)
        v ← g                       on the first step  (momentum)
        v ← μ·v + (1 − d)·g         afterwards
        g ← g + μ·v  (Nesterov)  or  g ← v
        θ ← θ − lr·g

    Identical to PyTorch's ``SGD`` for equal arguments (PyTorch rejects Nesterov with
    non-zero dampening; Burn allows it). State: ``momentum.velocity`` when momentum is on.

    Row-sparse gradients (:class:`ember.RowSparse`, e.g. from ``nn.EmbeddingBag``) update
    only the rows they hold, with the formula above per row, in O(rows · d):

    * plain SGD (no momentum, no weight decay) is **exactly** the dense update, everywhere
      (the dense gradient is zero on the other rows);
    * with momentum and/or weight decay the update is **lazy**: the rows not in the gradient
      keep their value and velocity for that step (the dense rule would keep moving them by
      μ·v and decay them by λ·θ). On the rows in the gradient it equals the dense update as
      long as the other rows' velocity is zero (e.g. the first steps on fresh rows). A row's
      first touch after the table's first step uses ``v ← μ·0 + (1 − d)·g``, as dense.

    Args:
        weight_decay: λ (0 disables).
        momentum: a :class:`MomentumConfig`, or None for plain SGD.
    """

    def __init__(self, weight_decay: float = 0.0, momentum: MomentumConfig | None = None):
        self.weight_decay = finite_scalar("Sgd", "weight_decay", weight_decay)
        if momentum is not None and not isinstance(momentum, MomentumConfig):
            raise TypeError(f"Sgd: `momentum` must be a MomentumConfig or None, got {momentum!r}")
        if momentum is not None:
            finite_scalar("SgdConfig", "momentum.momentum", momentum.momentum)
            finite_scalar("SgdConfig", "momentum.dampening", momentum.dampening)
        self.momentum = momentum

    def state_names(self) -> tuple[str, ...]:
        return (_VELOCITY,) if self.momentum is not None else ()

    def update(self, backend, params, grads, states, lr, steps, fresh):
        return self._step(backend.sgd_update, (params, grads), states, lr, list(fresh))

    def update_sparse(self, backend, param, rows, values, states, lr, step, fresh):
        return self._step(backend.sparse_sgd_update, (param, rows, values), states, lr, bool(fresh))

    def _step(self, update, head: tuple, states, lr, first_step):
        """``update(*head, state, args)``, the dense or row-sparse backend step; ``first_step``
        (which velocities start this step) matters only with momentum."""
        mom = self.momentum
        if mom is None:
            new_p, _ = update(*head, SgdState(None), SgdArgs(lr, self.weight_decay))
            return new_p, {}
        args = SgdArgs(
            lr,
            self.weight_decay,
            float(mom.momentum),
            float(mom.dampening),
            bool(mom.nesterov),
            first_step,
        )
        new_p, new = update(*head, SgdState(states[_VELOCITY]), args)
        return new_p, {_VELOCITY: new.momentum_bufs}


class SgdConfig(OptimizerConfig):
    """Configuration of :class:`Sgd` (Burn's ``SgdConfig``).

    Args:
        weight_decay: optional L2 weight decay.
        momentum: optional :class:`MomentumConfig`.
        gradient_clipping: optional clipping, applied by ``init()`` to the ``all()`` group;
            Burn's field name, kept for its config files. Set it with ``with_grad_clipping``
            like every optimizer config's.
    """

    _clipping_field = "gradient_clipping"
    # the field's generated setter would be this name: the one setter is with_grad_clipping
    with_gradient_clipping = renamed_method("with_gradient_clipping", "with_grad_clipping")

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig | None = None
    gradient_clipping: GradientClippingConfig | None = None

    _optimizer = Sgd
    _weight_decay_config = True
