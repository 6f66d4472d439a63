"""AdamW: Adam with decoupled (optionally cautious) weight decay (Burn's ``AdamW``)."""

from __future__ import annotations

from ember.kernels.families.optimizer_args import AdamArgs
from ember.optim.adam import Adam
from ember.optim.clipping import GradientClippingConfig
from ember.optim.optimizer import OptimizerConfig

__all__ = ["AdamW", "AdamWConfig"]


class AdamW(Adam):
    """AdamW (Loshchilov & Hutter 2019). Per element, with t the 1-based step, λ the decay::

        m ← β1·m + (1 − β1)·g
        v ← β2·v + (1 − β2)·g²
        v̂max ← max(v̂max, v); use v̂max for v           (AMSGrad)
        u = m̂/(√v̂ + ε),   m̂ = m/(1 − β1ᵗ),  v̂ = v/(1 − β2ᵗ)
        θ ← θ·(1 − lr·λ)                                       (decoupled decay)
        θ ← θ − lr·λ·θ only where (θ ≥ 0) == (m ≥ 0)          (cautious decay instead)
        θ ← θ − lr·u

    The kernels compute u in :class:`Adam`'s form, equal in real arithmetic. Identical to
    PyTorch's ``AdamW`` for equal arguments (Burn's defaults: λ 1e-4, ε 1e-5;
    PyTorch: 1e-2, 1e-8). Cautious weight decay (arXiv:2510.12402) compares signs with the
    new m, as Burn; PyTorch has no such variant. State as :class:`Adam`.

    Row-sparse gradients get lazy AdamW: :class:`Adam`'s lazy rule (``torch.optim.SparseAdam``'s
    step, t the table's step) with the decoupled (or cautious) decay applied to the rows in
    the gradient only; the other rows are neither moved nor decayed that step.

    Args:
        beta_1: β1 in [0, 1).
        beta_2: β2 in [0, 1).
        epsilon: ε >= 0.
        weight_decay: λ.
        cautious_weight_decay: decay only where the parameter and the momentum agree in sign.
        amsgrad: use AMSGrad.
    """

    def __init__(
        self,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-5,
        weight_decay: float = 1e-4,
        cautious_weight_decay: bool = False,
        amsgrad: bool = False,
    ):
        super().__init__(beta_1, beta_2, epsilon, amsgrad, weight_decay)
        self.cautious_weight_decay = bool(cautious_weight_decay)

    def _args(self, lr, steps) -> AdamArgs:
        return AdamArgs(
            lr,
            self.beta_1,
            self.beta_2,
            self.epsilon,
            self.weight_decay,
            decoupled=True,
            cautious=self.cautious_weight_decay,
            steps=steps,
        )


class AdamWConfig(OptimizerConfig):
    """Configuration of :class:`AdamW` (Burn's ``AdamWConfig``; defaults are Burn's).

    Args:
        beta_1: β1. Default 0.9.
        beta_2: β2. Default 0.999.
        epsilon: ε. Default 1e-5.
        weight_decay: decoupled decay λ. Default 1e-4.
        cautious_weight_decay: cautious decay. Default False.
        amsgrad: use AMSGrad. Default False.
        grad_clipping: optional clipping, applied by ``init()`` to the ``all()`` group.
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    cautious_weight_decay: bool = False
    amsgrad: bool = False
    grad_clipping: GradientClippingConfig | None = None

    _optimizer = AdamW
