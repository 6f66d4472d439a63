"""Adan: adaptive Nesterov momentum with proximal or decoupled weight decay (Burn's ``Adan``)."""

from __future__ import annotations

from ember.kernels.arg_checks import finite_scalar, per_tensor, step_numbers
from ember.optim.clipping import GradientClippingConfig
from ember.optim.optimizer import Optimizer, OptimizerConfig

__all__ = ["Adan", "AdanConfig"]

EXP_AVG = "momentum.exp_avg"
EXP_AVG_SQ = "momentum.exp_avg_sq"
EXP_AVG_DIFF = "momentum.exp_avg_diff"
NEG_PRE_GRAD = "momentum.neg_pre_grad"
TIME = "momentum.time"


class Adan(Optimizer):
    """Adan (Xie et al. 2022, "Adan: Adaptive Nesterov Momentum Algorithm for Faster
    Optimizing Deep Models", Alg. 1), in Burn's form. Per element, with t the parameter's
    1-based step, g its gradient and λ the weight decay::

        step 1:   m = (1 − β1)·g      v = 0      n = (1 − β3)·g²
        step t:   d = g − g_prev
                  m ← β1·m + (1 − β1)·g
                  v ← β2·v + (1 − β2)·d
                  n ← β3·n + (1 − β3)·(g + β2·d)²
        D = √n / √(1 − β3ᵗ) + ε
        u = m / (1 − β1ᵗ) / D + β2·v / (1 − β2ᵗ) / D
        θ ← (θ − lr·u) / (1 + lr·λ)                  (proximal decay, the default)
        θ ← θ·(1 − lr·λ) − lr·u                      (``no_prox``: decoupled decay)

    State (Burn's record leaves): ``momentum.exp_avg`` (m), ``momentum.exp_avg_diff`` (v),
    ``momentum.exp_avg_sq`` (n), ``momentum.neg_pre_grad`` (−g of the previous step) and
    the step count ``momentum.time``.

    Row-sparse gradients (:class:`ember.RowSparse`) are **densified** (the default
    :meth:`Optimizer.update_sparse`): the result is exactly the dense update.

    Args:
        beta_1: β1 in [0, 1), the first moment's decay.
        beta_2: β2 in [0, 1), the gradient-difference momentum's decay.
        beta_3: β3 in [0, 1), the second moment's decay.
        epsilon: ε >= 0.
        weight_decay: λ (0 disables).
        no_prox: use the decoupled decay instead of the proximal one.
    """

    counter = TIME
    required_states = (EXP_AVG, EXP_AVG_SQ, EXP_AVG_DIFF, NEG_PRE_GRAD)

    def __init__(
        self,
        beta_1: float = 0.98,
        beta_2: float = 0.92,
        beta_3: float = 0.99,
        epsilon: float = 1e-8,
        weight_decay: float = 0.0,
        no_prox: bool = False,
    ):
        self.beta_1 = finite_scalar("Adan", "beta_1", beta_1, unit_interval=True)
        self.beta_2 = finite_scalar("Adan", "beta_2", beta_2, unit_interval=True)
        self.beta_3 = finite_scalar("Adan", "beta_3", beta_3, unit_interval=True)
        self.epsilon = finite_scalar("Adan", "epsilon", epsilon, minimum=0.0)
        self.weight_decay = finite_scalar("Adan", "weight_decay", weight_decay)
        self.no_prox = bool(no_prox)

    def state_names(self) -> tuple[str, ...]:
        return (EXP_AVG, EXP_AVG_SQ, EXP_AVG_DIFF, NEG_PRE_GRAD)

    def update(self, backend, params, grads, states, lr, steps, fresh):
        # composed from the backend's primitives, one tensor at a time (no fused kernel)
        params = list(getattr(params, "arrays", params))
        grads = list(grads)
        state_lists = {
            name: list(getattr(states[name], "arrays", states[name])) for name in self.state_names()
        }
        rates = per_tensor("Adan.update", "lr", lr, len(params)).tolist()
        times = step_numbers("Adan.update", "steps", steps, len(params)).tolist()
        first = per_tensor("Adan.update", "fresh", fresh, len(params)).tolist()
        b1, b2, b3 = self.beta_1, self.beta_2, self.beta_3

        def scale(x, value):
            return backend.binary("mul", x, backend._scalar(value, x))

        def add(a, b):
            return backend.binary("add", a, b)

        new_params = []
        out = {name: [] for name in self.state_names()}
        for i, (p, g) in enumerate(zip(params, grads)):
            if first[i]:  # Burn's state-less first step: no previous gradient, no difference
                m = scale(g, 1.0 - b1)
                v = backend.full(g.shape, 0.0, backend.dtype_of(g))
                n = scale(backend.unary("square", g), 1.0 - b3)
            else:
                d = add(state_lists[NEG_PRE_GRAD][i], g)
                m = add(scale(state_lists[EXP_AVG][i], b1), scale(g, 1.0 - b1))
                v = add(scale(state_lists[EXP_AVG_DIFF][i], b2), scale(d, 1.0 - b2))
                n = add(
                    scale(state_lists[EXP_AVG_SQ][i], b3),
                    scale(backend.unary("square", add(scale(d, b2), g)), 1.0 - b3),
                )
            t = times[i]
            denom = add(
                scale(backend.unary("sqrt", n), 1.0 / (1.0 - b3**t) ** 0.5),
                backend._scalar(self.epsilon, n),
            )
            direction = backend.binary(
                "div", add(scale(m, 1.0 / (1.0 - b1**t)), scale(v, b2 / (1.0 - b2**t))), denom
            )
            decay = rates[i] * self.weight_decay
            step = scale(direction, rates[i])
            if self.no_prox:
                new_p = backend.binary("sub", p if decay == 0.0 else scale(p, 1.0 - decay), step)
            else:
                new_p = backend.binary("sub", p, step)
                if decay != 0.0:
                    new_p = scale(new_p, 1.0 / (1.0 + decay))
            new_params.append(new_p)
            out[EXP_AVG].append(m)
            out[EXP_AVG_DIFF].append(v)
            out[EXP_AVG_SQ].append(n)
            out[NEG_PRE_GRAD].append(scale(g, -1.0))
        return new_params, out


class AdanConfig(OptimizerConfig):
    """Configuration of :class:`Adan` (Burn's ``AdanConfig``; defaults are Burn's).

    Args:
        beta_1: β1. Default 0.98.
        beta_2: β2. Default 0.92.
        beta_3: β3. Default 0.99.
        epsilon: ε. Default 1e-8.
        weight_decay: λ. Default 0.
        no_prox: decoupled instead of proximal weight decay. Default False.
        grad_clipping: optional clipping, applied by ``init()`` to the ``all()`` group.
    """

    beta_1: float = 0.98
    beta_2: float = 0.92
    beta_3: float = 0.99
    epsilon: float = 1e-8
    weight_decay: float = 0.0
    no_prox: bool = False
    grad_clipping: GradientClippingConfig | None = None

    _optimizer = Adan
