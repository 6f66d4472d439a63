"""Adam and AMSGrad with optional L2 weight decay (Burn's ``Adam``)."""

from __future__ import annotations

from ember.kernels.arg_checks import finite_scalar
from ember.kernels.families.optimizer_args import AdamArgs, AdamState
from ember.optim.clipping import GradientClippingConfig
from ember.optim.optimizer import Optimizer, OptimizerConfig, WeightDecayConfig

__all__ = ["Adam", "AdamConfig"]

M1, M2, VMAX = "momentum.moment_1", "momentum.moment_2", "momentum.max_moment_2"
TIME = "momentum.time"


class Adam(Optimizer):
    """Adam (Kingma & Ba 2014), optionally AMSGrad (Reddi et al. 2018). Per element, with
    t the parameter's 1-based step and λ the L2 penalty::

        g ← g + λ·θ                                   (weight decay, L2)
        m ← β1·m + (1 − β1)·g
        v ← β2·v + (1 − β2)·g²
        v̂max ← max(v̂max, v); use v̂max for v           (AMSGrad)
        θ ← θ − lr · m·√(1 − β2ᵗ)/(1 − β1ᵗ) / (√v + ε·√(1 − β2ᵗ))

    The last line is Burn's form of ``θ ← θ − lr·m̂/(√v̂ + ε)`` (m̂ = m/(1 − β1ᵗ),
    v̂ = v/(1 − β2ᵗ)), identical to PyTorch's ``Adam`` for equal arguments; Burn's ε default
    is 1e-5 (PyTorch 1e-8). State: ``momentum.moment_1``, ``momentum.moment_2``,
    ``momentum.max_moment_2`` (AMSGrad) and the step count ``momentum.time``.

    Row-sparse gradients (:class:`ember.RowSparse`, e.g. from ``nn.EmbeddingBag``) get
    **lazy Adam**, exactly ``torch.optim.SparseAdam``: only the rows in the gradient have
    their m, v (v̂max, L2 decay) and weights updated, in O(rows · d); the other rows' moments
    are not decayed. t is the parameter's step (one counter per table, incremented by every
    step it gets a gradient, as SparseAdam's ``state['step']``), and the step is SparseAdam's
    form, with ε added to √v rather than to √v̂::

        θ ← θ − lr·√(1 − β2ᵗ)/(1 − β1ᵗ) · m / (√v + ε)

    With ε = 0 this equals the dense update on those rows; with ε > 0 it differs from the
    dense form by ε·(1 − √(1 − β2ᵗ)) in the denominator. (SparseAdam has no AMSGrad or weight
    decay; here both apply to the rows in the gradient only.)

    Args:
        beta_1: β1 in [0, 1).
        beta_2: β2 in [0, 1).
        epsilon: ε >= 0.
        amsgrad: use AMSGrad.
        weight_decay: λ (0 disables).
    """

    counter = TIME
    required_states = (M1, M2)

    def __init__(
        self,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-5,
        amsgrad: bool = False,
        weight_decay: float = 0.0,
    ):
        owner = type(self).__name__
        self.beta_1 = finite_scalar(owner, "beta_1", beta_1, unit_interval=True)
        self.beta_2 = finite_scalar(owner, "beta_2", beta_2, unit_interval=True)
        self.epsilon = finite_scalar(owner, "epsilon", epsilon, minimum=0.0)
        self.amsgrad = bool(amsgrad)
        self.weight_decay = finite_scalar(owner, "weight_decay", weight_decay)

    def state_names(self) -> tuple[str, ...]:
        return (M1, M2, VMAX) if self.amsgrad else (M1, M2)

    def update(self, backend, params, grads, states, lr, steps, fresh):
        return self._step(backend.adam_update, (params, grads), states, self._args(lr, list(steps)))

    def update_sparse(self, backend, param, rows, values, states, lr, step, fresh):
        return self._step(
            backend.sparse_adam_update, (param, rows, values), states, self._args(lr, int(step))
        )

    def _args(self, lr, steps) -> AdamArgs:
        """The backend update's arguments: this optimizer's hyper-parameters, ``lr`` and ``steps``."""
        return AdamArgs(lr, self.beta_1, self.beta_2, self.epsilon, self.weight_decay, steps=steps)

    def _step(self, update, head: tuple, states, args: AdamArgs):
        """``update(*head, state, args)``, the dense or row-sparse backend step."""
        state = AdamState(states[M1], states[M2], states[VMAX] if self.amsgrad else None)
        new_p, new = update(*head, state, args)
        out = {M1: new.m, M2: new.v}
        if self.amsgrad:
            out[VMAX] = new.vmax
        return new_p, out


class AdamConfig(OptimizerConfig):
    """Configuration of :class:`Adam` (Burn's ``AdamConfig``; defaults are Burn's).

    Args:
        beta_1: β1. Default 0.9.
        beta_2: β2. Default 0.999.
        epsilon: ε. Default 1e-5.
        amsgrad: use AMSGrad. Default False.
        weight_decay: optional L2 weight decay (:class:`WeightDecayConfig`).
        grad_clipping: optional clipping, applied by ``init()`` to the ``all()`` group.
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    amsgrad: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    _optimizer = Adam
    _weight_decay_config = True
