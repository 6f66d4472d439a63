"""RMSprop, optionally centered and with momentum (Burn's ``RmsProp``)."""

from __future__ import annotations

from ember.kernels.arg_checks import finite_scalar
from ember.kernels.families.optimizer_args import RmspropArgs, RmspropState
from ember.optim.clipping import GradientClippingConfig
from ember.optim.optimizer import Optimizer, OptimizerConfig, WeightDecayConfig

__all__ = ["RmsProp", "RmsPropConfig"]

SQUARE, GRAD_AVG, AVG, BUF = ("square_avg.square_avg", "centered.grad_avg", "centered.avg", "momentum.buf")


class RmsProp(Optimizer):
    """RMSprop (Hinton's lecture 6e). Per element, with α the smoothing constant, μ the
    momentum, λ the L2 penalty::

        g ← g + λ·θ
        s ← α·s + (1 − α)·g²
        ḡ ← α·ḡ + (1 − α)·g;  a = s − ḡ²        (centered)      a = s  (otherwise)
        d = g / (√a + ε)
        b ← μ·b + d;  d ← b                     (when μ > 0)
        θ ← θ − lr·d

    Identical to PyTorch's ``RMSprop`` for equal arguments (Burn's defaults: μ 0.9, ε 1e-5;
    PyTorch: μ 0, ε 1e-8). State: ``square_avg.square_avg``, ``centered.grad_avg``
    (centered), ``momentum.buf`` (μ > 0); records also hold Burn's derived ``centered.avg``.

    Row-sparse gradients (:class:`ember.RowSparse`) are **densified** (the default
    :meth:`Optimizer.update_sparse`): the result is exactly the dense update, and the step
    costs the whole table. Use SGD, Adam or AdamW for lazy O(rows) steps on large tables.

    Args:
        alpha: α in [0, 1).
        momentum: μ >= 0 (0 disables the buffer).
        epsilon: ε >= 0.
        centered: normalise by an estimate of the gradient's variance.
        weight_decay: λ (0 disables).
    """

    required_states = (SQUARE,)

    def __init__(
        self,
        alpha: float = 0.99,
        momentum: float = 0.9,
        epsilon: float = 1e-5,
        centered: bool = False,
        weight_decay: float = 0.0,
    ):
        self.alpha = finite_scalar("RmsProp", "alpha", alpha, unit_interval=True)
        self.momentum = finite_scalar("RmsProp", "momentum", momentum, minimum=0.0)
        self.epsilon = finite_scalar("RmsProp", "epsilon", epsilon, minimum=0.0)
        self.centered = bool(centered)
        self.weight_decay = finite_scalar("RmsProp", "weight_decay", weight_decay)

    def state_names(self) -> tuple[str, ...]:
        return (SQUARE,) + ((GRAD_AVG,) if self.centered else ()) + ((BUF,) if self.momentum > 0 else ())

    def update(self, backend, params, grads, states, lr, steps, fresh):
        state = RmspropState(states[SQUARE], states.get(GRAD_AVG), states.get(BUF))
        args = RmspropArgs(lr, self.alpha, self.epsilon, self.weight_decay, self.momentum, self.centered)
        new_p, new = backend.rmsprop_update(params, grads, state, args)
        out = {SQUARE: new.square_avg}
        if self.centered:
            out[GRAD_AVG] = new.grad_avg
        if self.momentum > 0:
            out[BUF] = new.momentum_bufs
        return new_p, out

    def record_extras(self, backend, arrays):
        s = arrays[SQUARE]
        if not self.centered:
            return {AVG: s}
        return {AVG: backend.binary("sub", s, backend.unary("square", arrays[GRAD_AVG]))}


class RmsPropConfig(OptimizerConfig):
    """Configuration of :class:`RmsProp` (Burn's ``RmsPropConfig``; defaults are Burn's).

    Args:
        alpha: α. Default 0.99.
        momentum: μ. Default 0.9.
        epsilon: ε. Default 1e-5.
        centered: centered RMSprop. Default False.
        weight_decay: optional L2 weight decay.
        grad_clipping: optional clipping, applied by ``init()`` to the ``all()`` group.
    """

    alpha: float = 0.99
    momentum: float = 0.9
    epsilon: float = 1e-5
    centered: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    _optimizer = RmsProp
    _weight_decay_config = True
