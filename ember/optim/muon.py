"""Muon: momentum SGD whose update is orthogonalised by a Newton–Schulz iteration (Burn's ``Muon``)."""

from __future__ import annotations

import dataclasses
import enum

from ember.kernels.arg_checks import finite_scalar, per_tensor
from ember.optim.optimizer import Optimizer, OptimizerConfig, WeightDecayConfig
from ember.optim.sgd import MomentumConfig

__all__ = ["AdjustLrFn", "Muon", "MuonConfig"]

VELOCITY = "momentum.velocity"


class AdjustLrFn(enum.Enum):
    """How Muon scales the learning rate by the shape ``[A, B]`` of a weight (Burn's ``AdjustLrFn``)."""

    Original = "Original"
    """Keller Jordan's ``√max(1, A/B)``."""
    MatchRmsAdamW = "MatchRmsAdamW"
    """Moonshot's ``0.2·√max(A, B)``, which matches AdamW's update RMS."""

    def ratio(self, shape) -> float:
        """The factor applied to the learning rate of a parameter of this shape (1 below 2-D)."""
        if len(shape) < 2:
            return 1.0
        rows, cols = float(shape[0]), float(shape[1])
        if self is AdjustLrFn.Original:
            return max(1.0, rows / cols) ** 0.5
        return 0.2 * max(rows, cols) ** 0.5


class Muon(Optimizer):
    """Muon (K. Jordan 2024, "Muon: An optimizer for hidden layers in neural networks"), as
    Burn defines it, for **2-D** weights. With μ the momentum, d the dampening, λ the
    weight decay and (a, b, c) the Newton–Schulz coefficients::

        v ← g on the first step, then v ← μ·v + (1 − d)·g
        u = g + μ·v  (Nesterov)  or  u = v
        X = uᵀ if u has more rows than columns, else u
        X ← X / max(‖X‖_F, ε)
        repeat ns_steps times:  A = X·Xᵀ;  X ← a·X + (b·A + c·A·A)·X
        O = X, transposed back
        θ ← θ·(1 − lr·λ) − lr·r·O          r = adjust_lr_fn.ratio(shape of θ)

    The weight decay uses the unadjusted lr, the update the adjusted one (Burn's order). As
    in Burn, a parameter that is not 2-D is an error: route biases, norms and embeddings to
    another optimizer, e.g. ``MuonConfig().init().with_group(ParamGroup.from_predicate("bias"),
    AdamWConfig())``. State: ``momentum.velocity`` (Burn's record leaf).

    Row-sparse gradients (:class:`ember.RowSparse`) are densified (the default
    :meth:`Optimizer.update_sparse`).

    Args:
        momentum: a :class:`MomentumConfig` (Muon always uses momentum).
        ns_coefficients: the quintic iteration's (a, b, c).
        ns_steps: the number of Newton–Schulz iterations (>= 0).
        epsilon: ε > 0, the smallest norm divided by.
        weight_decay: λ (0 disables).
        adjust_lr_fn: an :class:`AdjustLrFn`.
    """

    def __init__(
        self,
        momentum: MomentumConfig | None = None,
        ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315),
        ns_steps: int = 5,
        epsilon: float = 1e-7,
        weight_decay: float = 0.0,
        adjust_lr_fn: AdjustLrFn = AdjustLrFn.Original,
    ):
        momentum = MomentumConfig(0.95, 0.0, True) if momentum is None else momentum
        if not isinstance(momentum, MomentumConfig):
            raise TypeError(f"Muon: `momentum` must be a MomentumConfig, got {momentum!r}")
        self.momentum = finite_scalar("Muon", "momentum.momentum", momentum.momentum)
        self.dampening = finite_scalar("Muon", "momentum.dampening", momentum.dampening)
        self.nesterov = bool(momentum.nesterov)
        coefficients = tuple(ns_coefficients)
        if len(coefficients) != 3:
            raise ValueError(
                f"Muon: `ns_coefficients` must be three numbers (a, b, c), got {ns_coefficients!r}"
            )
        self.ns_coefficients = tuple(
            finite_scalar("Muon", f"ns_coefficients[{i}]", c) for i, c in enumerate(coefficients)
        )
        if isinstance(ns_steps, bool) or not isinstance(ns_steps, int) or ns_steps < 0:
            raise ValueError(f"Muon: `ns_steps` must be an int >= 0, got {ns_steps!r}")
        self.ns_steps = ns_steps
        self.epsilon = finite_scalar("Muon", "epsilon", epsilon, minimum=0.0)
        if self.epsilon == 0.0:  # a zero update would divide 0 by 0
            raise ValueError(f"Muon: `epsilon` must be > 0, got {epsilon!r}")
        self.weight_decay = finite_scalar("Muon", "weight_decay", weight_decay)
        if not isinstance(adjust_lr_fn, AdjustLrFn):
            raise TypeError(f"Muon: `adjust_lr_fn` must be an AdjustLrFn, got {adjust_lr_fn!r}")
        self.adjust_lr_fn = adjust_lr_fn

    def state_names(self) -> tuple[str, ...]:
        return (VELOCITY,)

    def orthogonalize(self, backend, u):
        """The Newton–Schulz approximation of the orthogonal factor of the 2-D array ``u``.

        Args:
            backend: the array's backend.
            u: a ``[rows, cols]`` array.

        Returns:
            An array of ``u``'s shape (≈ U·Vᵀ for ``u = U·S·Vᵀ``).
        """
        a, b, c = self.ns_coefficients
        tall = u.shape[0] > u.shape[1]
        x = backend.permute(u, (1, 0)) if tall else u
        norm = backend.unary("sqrt", backend.reduce("sum", backend.unary("square", x), (0, 1), False))
        x = backend.binary("div", x, backend.binary("maximum", norm, backend._scalar(self.epsilon, x)))
        for _ in range(self.ns_steps):
            gram = backend.matmul(x, backend.permute(x, (1, 0)))
            poly = backend.binary(
                "add", _scale(backend, gram, b), _scale(backend, backend.matmul(gram, gram), c)
            )
            x = backend.binary("add", _scale(backend, x, a), backend.matmul(poly, x))
        return backend.permute(x, (1, 0)) if tall else x

    def update(self, backend, params, grads, states, lr, steps, fresh):
        # composed from the backend's primitives, one tensor at a time (no fused kernel)
        params = list(getattr(params, "arrays", params))
        grads = list(grads)
        velocities = list(getattr(states[VELOCITY], "arrays", states[VELOCITY]))
        rates = per_tensor("Muon.update", "lr", lr, len(params)).tolist()
        first = per_tensor("Muon.update", "fresh", fresh, len(params)).tolist()
        for p in params:
            if p.ndim != 2:
                raise ValueError(
                    f"Muon: the Newton-Schulz iteration needs 2-D parameters, got shape {list(p.shape)}; "
                    "optimize the others with another optimizer in their own group, e.g. "
                    "with_group(ParamGroup.from_predicate('bias'), AdamWConfig())"
                )
        new_params, new_velocities = [], []
        for i, (p, g) in enumerate(zip(params, grads)):
            if first[i]:
                v = g
            else:
                v = backend.binary(
                    "add",
                    _scale(backend, g, 1.0 - self.dampening),
                    _scale(backend, velocities[i], self.momentum),
                )
            u = backend.binary("add", _scale(backend, v, self.momentum), g) if self.nesterov else v
            direction = self.orthogonalize(backend, u)
            if self.weight_decay != 0.0:
                p = _scale(backend, p, 1.0 - rates[i] * self.weight_decay)
            adjusted = rates[i] * self.adjust_lr_fn.ratio(p.shape)
            new_params.append(backend.binary("sub", p, _scale(backend, direction, adjusted)))
            new_velocities.append(v)
        return new_params, {VELOCITY: new_velocities}


def _scale(backend, x, value):
    return backend.binary("mul", x, backend._scalar(value, x))


def _muon_momentum() -> MomentumConfig:
    return MomentumConfig(momentum=0.95, dampening=0.0, nesterov=True)


class MuonConfig(OptimizerConfig):
    """Configuration of :class:`Muon` (Burn's ``MuonConfig``; defaults are Burn's). Burn's
    ``MuonConfig`` has no gradient clipping; give ``ModuleOptimizer.with_group`` one instead.

    Args:
        weight_decay: optional weight decay (:class:`WeightDecayConfig`), applied decoupled.
        momentum: the momentum. Default μ 0.95, dampening 0, Nesterov.
        ns_coefficients: Newton–Schulz (a, b, c). Default (3.4445, -4.775, 2.0315).
        epsilon: ε. Default 1e-7.
        ns_steps: Newton–Schulz iterations. Default 5.
        adjust_lr_fn: learning-rate adjustment. Default ``AdjustLrFn.Original``.
    """

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig = dataclasses.field(default_factory=_muon_momentum)
    ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315)
    epsilon: float = 1e-7
    ns_steps: int = 5
    adjust_lr_fn: AdjustLrFn = AdjustLrFn.Original

    _optimizer = Muon
    _weight_decay_config = True

    def clipping(self):
        """None: Muon's config has no gradient clipping (as Burn's)."""
        return None

    def with_grad_clipping(self, clipping):
        raise TypeError(
            "MuonConfig has no gradient clipping (as Burn's); pass one to "
            "ModuleOptimizer(MuonConfig(), grad_clipping) or with_group(..., grad_clipping)"
        )
