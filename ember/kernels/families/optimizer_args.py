"""The arguments of the optimizer updates: one object per update kind, the same for every backend.

Each update of :class:`~ember.kernels.families.optimizer.OptimizerOps` takes the arrays it
updates — ``params`` and ``grads`` (or a table's ``param``, ``rows``, ``values``) and one
*state* (:class:`SgdState`, :class:`AdamState` ...: the per-parameter buffers, lists or
handles from ``optim_pack``, None for a buffer the settings do not use) — and one *args*
object (:class:`SgdArgs`, :class:`AdamArgs` ...: hyper-parameters and step numbers). The
composed default (the formula), the cpu and cuda kernels and their tests all read these
objects, so the signature is written once here.

An args object checks its values when built, with the words every backend used before
(``adam_update: `beta1` must be in [0, 1), got 1.0``). ``lr`` (and ``steps``,
``first_step``) is a scalar for the group or one value per tensor; its length is checked
against the group when it is used (:meth:`lr_per_tensor`). The dense and the row-sparse
update of a kind take the same args class (the row-sparse one a scalar ``lr`` and step).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ember.kernels.arg_checks import finite_scalar, finite_values, per_tensor, step_numbers

__all__ = [
    "AdagradArgs",
    "AdagradState",
    "AdamArgs",
    "AdamState",
    "LionArgs",
    "LionState",
    "RmspropArgs",
    "RmspropState",
    "SgdArgs",
    "SgdState",
]

Rate = float | Sequence[float]
Steps = int | Sequence[int]


# ---- per-parameter state: one buffer list (or handle, or one array for a row-sparse table)
# per field; the updates return a new state object with the buffers they wrote.


class SgdState(NamedTuple):
    """SGD's velocity buffers (None without momentum)."""

    momentum_bufs: Any = None


class AdamState(NamedTuple):
    """Adam's first and second moments, and AMSGrad's running maxima of v (None for Adam)."""

    m: Any
    v: Any
    vmax: Any = None


class RmspropState(NamedTuple):
    """RMSprop's s, and ḡ (centered) and b (momentum) buffers, None when unused."""

    square_avg: Any
    grad_avg: Any = None
    momentum_bufs: Any = None


class AdagradState(NamedTuple):
    """AdaGrad's sums of squared gradients."""

    sums: Any


class LionState(NamedTuple):
    """Lion's momentum m."""

    exp_avg: Any


# ---- hyper-parameters


class _Rated:
    """What every args object has: ``lr`` (scalar or per tensor), the update's name and the
    checks of its fields (``CHECKS``: field -> ``check(op, name, value)``, which returns the
    value to keep), run once when it is built."""

    __slots__ = ()
    op = "update"
    CHECKS: dict = {}

    def __post_init__(self):
        for name, check in self.CHECKS.items():
            value = getattr(self, name)
            kept = check(self.op, name, value)
            if kept is not value:
                object.__setattr__(self, name, kept)  # normalising a frozen dataclass's field

    def lr_per_tensor(self, n: int, op: str | None = None) -> np.ndarray:
        """``lr`` as ``n`` float64 values (checks a per-tensor ``lr`` has ``n``)."""
        return _per_tensor(op or self.op, "lr", self.lr, n)

    def steps_per_tensor(self, n: int) -> np.ndarray:
        """``steps`` (checked when built) as ``n`` float64 values."""
        return _per_tensor(self.op, "steps", self.steps, n)


def _flag(op: str, name: str, value: object) -> bool:
    return bool(value)


def _unit(op: str, name: str, value: object) -> float:
    return finite_scalar(op, name, value, unit_interval=True)


def _steps(op: str, name: str, value: Steps) -> Steps:
    """``value`` checked as 1-based step numbers: a scalar as given, a sequence as float64."""
    if type(value) is int and value >= 1:  # one step for the group: nothing to convert
        return value
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0:
        step_numbers(op, name, value, 1)
        return value
    return step_numbers(op, name, value, array.size)


def _per_tensor(op: str, name: str, value: float | np.ndarray, n: int) -> np.ndarray:
    """A value checked when its args object was built, as ``n`` float64 values; only the
    length of a per-tensor value is left to check."""
    if type(value) is not np.ndarray:
        return np.full(n, float(value))
    return value if value.shape == (n,) else per_tensor(op, name, value, n)  # raises: wrong length


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class SgdArgs(_Rated):
    """SGD: rule :class:`ember.optim.Sgd`.

    Args:
        lr: learning rate, for the group or per tensor.
        weight_decay: L2 penalty λ added to the gradient.
        momentum: μ (needs ``SgdState.momentum_bufs`` when non-zero).
        dampening: d.
        nesterov: use the Nesterov look-ahead gradient.
        first_step: whether this is each tensor's first step (velocity = gradient).
    """

    lr: Rate
    weight_decay: float = 0.0
    momentum: float = 0.0
    dampening: float = 0.0
    nesterov: bool = False
    first_step: bool | Sequence[bool] = False
    op = "sgd_update"

    CHECKS = {
        "lr": finite_values,
        "weight_decay": finite_scalar,
        "momentum": finite_scalar,
        "dampening": finite_scalar,
        "nesterov": _flag,
    }

    def first_per_tensor(self, n: int) -> np.ndarray:
        """``first_step`` as ``n`` booleans."""
        return np.broadcast_to(np.asarray(self.first_step, dtype=np.bool_), (n,))

    def check_state(self, has_bufs: bool, op: str | None = None) -> None:
        """Refuse momentum without velocity buffers (``SgdState.momentum_bufs``)."""
        if not has_bufs and (self.momentum != 0.0 or self.nesterov):
            raise ValueError(
                f"{op or self.op}: momentum={self.momentum!r}, nesterov={self.nesterov!r} need `momentum_bufs`"
            )


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class AdamArgs(_Rated):
    """Adam / AdamW (``decoupled``, ``cautious``); AMSGrad is ``AdamState.vmax`` given.
    Rules: :class:`ember.optim.Adam`, :class:`ember.optim.AdamW`.

    Args:
        lr: learning rate, for the group or per tensor.
        beta1: β1 in [0, 1).
        beta2: β2 in [0, 1).
        eps: ε added to the (bias-corrected) root of v.
        weight_decay: λ; L2 when not ``decoupled``, decoupled decay otherwise.
        decoupled: AdamW-style decay.
        cautious: cautious decoupled decay (requires ``decoupled``).
        steps: t >= 1 for each tensor (1 on its first update).
    """

    lr: Rate
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-5
    weight_decay: float = 0.0
    decoupled: bool = False
    cautious: bool = False
    steps: Steps = 1
    op = "adam_update"

    CHECKS = {
        "lr": finite_values,
        "beta1": _unit,
        "beta2": _unit,
        "eps": finite_scalar,
        "weight_decay": finite_scalar,
        "decoupled": _flag,
        "cautious": _flag,
        "steps": _steps,
    }

    def __post_init__(self):
        if self.cautious and not self.decoupled:
            raise ValueError(
                f"{self.op}: cautious weight decay applies to decoupled decay; set decoupled=True"
            )
        _Rated.__post_init__(self)

    @property
    def mode(self) -> int:
        """The kernels' decay mode: 0 Adam (or AdamW without decay), 1 AdamW, 2 cautious AdamW."""
        if not self.decoupled or self.weight_decay == 0.0:
            return 0
        return 2 if self.cautious else 1

    @property
    def betas(self) -> tuple[float, float, float, float]:
        """``(β1, 1 − β1, β2, 1 − β2)``, as the kernels take them."""
        return (self.beta1, 1.0 - self.beta1, self.beta2, 1.0 - self.beta2)

    def per_tensor(self, n: int) -> np.ndarray:
        """What the fused dense kernels take per tensor: float64 ``[n, 6]``, rows
        ``(lr, corr, eps_eff, l2, keep, decay)`` with ``corr = √(1 − β2ᵗ)/(1 − β1ᵗ)``,
        ``eps_eff = ε·√(1 − β2ᵗ)`` (Adam's form of the step), ``l2 = λ`` for Adam (else 0),
        ``keep = 1 − lr·λ`` and ``decay = lr·λ`` for AdamW (else 1 and 0). The cpu and cuda
        kernels both round these float64 values to their arithmetic dtype, so they agree."""
        rates, t = self.lr_per_tensor(n), self.steps_per_tensor(n)
        bc2_sqrt = np.sqrt(1.0 - self.beta2**t)
        decay = rates * self.weight_decay if self.decoupled else np.zeros(n)
        l2 = 0.0 if self.decoupled else self.weight_decay
        return np.stack(
            [
                rates,
                bc2_sqrt / (1.0 - self.beta1**t),
                self.eps * bc2_sqrt,
                np.full(n, l2),
                1.0 - decay,
                decay,
            ],
            axis=1,
        )

    def sparse_step_size(self, op: str = "sparse_adam_update") -> float:
        """The row-sparse (SparseAdam) step's ``lr·√(1 − β2ᵗ)/(1 − β1ᵗ)``, for a scalar ``lr``
        and step (ε is added to √v there)."""
        t = self.steps
        if isinstance(t, np.ndarray):
            raise ValueError(f"{op}: `steps` must be one integer >= 1 (a table's step), got {t!r}")
        lr = finite_scalar(op, "lr", self.lr)
        return lr * math.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class RmspropArgs(_Rated):
    """RMSprop: rule :class:`ember.optim.RmsProp`.

    Args:
        lr: learning rate, for the group or per tensor.
        alpha: smoothing constant α in [0, 1).
        eps: ε added to the root.
        weight_decay: L2 penalty λ.
        momentum: μ >= 0; 0 disables the momentum buffer (``RmspropState.momentum_bufs``).
        centered: subtract the squared mean gradient (``RmspropState.grad_avg``).
    """

    lr: Rate
    alpha: float = 0.99
    eps: float = 1e-5
    weight_decay: float = 0.0
    momentum: float = 0.9
    centered: bool = False
    op = "rmsprop_update"

    CHECKS = {
        "lr": finite_values,
        "alpha": _unit,
        "eps": finite_scalar,
        "weight_decay": finite_scalar,
        "momentum": finite_scalar,
        "centered": _flag,
    }


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class AdagradArgs(_Rated):
    """AdaGrad with learning-rate decay: rule :class:`ember.optim.AdaGrad`.

    Args:
        lr: learning rate, for the group or per tensor.
        lr_decay: decay of the rate per step.
        eps: ε added to the root.
        weight_decay: L2 penalty λ.
        steps: t >= 1 for each tensor.
    """

    lr: Rate
    lr_decay: float = 0.0
    eps: float = 1e-5
    weight_decay: float = 0.0
    steps: Steps = 1
    op = "adagrad_update"

    CHECKS = {
        "lr": finite_values,
        "lr_decay": finite_scalar,
        "eps": finite_scalar,
        "weight_decay": finite_scalar,
        "steps": _steps,
    }

    def decayed_lr(self, n: int) -> np.ndarray:
        """Each tensor's rate at its step: ``lr / (1 + (t − 1)·lr_decay)``, float64 ``[n]``."""
        return self.lr_per_tensor(n) / (1.0 + (self.steps_per_tensor(n) - 1.0) * self.lr_decay)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class LionArgs(_Rated):
    """Lion: rule :class:`ember.optim.Lion`.

    Args:
        lr: learning rate, for the group or per tensor.
        beta1: interpolation factor of the update direction, in [0, 1).
        beta2: decay of the momentum, in [0, 1).
        weight_decay: decoupled decay λ.
    """

    lr: Rate
    beta1: float = 0.9
    beta2: float = 0.99
    weight_decay: float = 0.0
    op = "lion_update"

    CHECKS = {"lr": finite_values, "beta1": _unit, "beta2": _unit, "weight_decay": finite_scalar}
