"""L-BFGS with an optional strong-Wolfe line search (Burn's ``LBFGS``, a port of PyTorch's).

Unlike the other optimizers, L-BFGS re-evaluates the loss several times per step, so it takes
a **closure** and keeps one state for the whole module (not per parameter)::

    lbfgs = LbfgsConfig(line_search_fn=LineSearchFn.StrongWolfe).init()

    def closure(model):
        loss = loss_fn(model(x), y)
        return loss, GradientsParams.from_grads(loss.backward(), model)

    model, loss = lbfgs.step(1.0, model, closure)
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ember._deprecation import renamed_globals
from ember.optim.grads_params import GradientsParams, require_module
from ember.optim.line_search import dot, strong_wolfe
from ember.optim.optimizer_record import SavedAsRecord, StateRecord
from ember.record import UInt
from ember.record.config import Config
from ember.tensor.creation import tensor as make_tensor
from ember.tensor.creation import zeros
from ember.tensor.grad_mode import enable_grad, no_grad
from ember.tensor.op_functions import cat
from ember.tensor.sparse import is_row_sparse
from ember.tensor.tensor import Tensor

__all__ = ["Lbfgs", "LbfgsConfig", "LbfgsRecord", "LineSearchFn"]

_CURVATURE_MIN = 1e-10  # a pair (s, y) with y·s at or below this is not stored (PyTorch's bound)


class LineSearchFn(enum.Enum):
    """The line search of :class:`Lbfgs` (Burn's ``LineSearchFn``; ``None`` is the field set
    to None: fixed steps of length lr)."""

    StrongWolfe = "StrongWolfe"
    """A step meeting the strong Wolfe conditions (c1 = 1e-4, c2 = 0.9)."""


class LbfgsConfig(Config):
    """Configuration of :class:`Lbfgs` (Burn's ``LBFGSConfig``; defaults are Burn's and PyTorch's).

    Args:
        max_iter: the most iterations per :meth:`Lbfgs.step`. Default 20.
        history_size: the number of ``(s, y)`` pairs kept. Default 100.
        tolerance_grad: stop once ``max|g| <=`` this. Default 1e-7.
        tolerance_change: stop once the step or the loss change is below this. Default 1e-9.
        max_eval: the most closure calls per step; ``max_iter·5/4`` when None.
        line_search_fn: ``LineSearchFn.StrongWolfe`` (or ``"strong_wolfe"``), or None.
    """

    _former_names = ("LBFGSConfig",)  # config files written before the rename say this

    max_iter: int = 20
    history_size: int = 100
    tolerance_grad: float = 1e-7
    tolerance_change: float = 1e-9
    max_eval: int | None = None
    line_search_fn: LineSearchFn | None = None

    def init(self) -> "Lbfgs":
        """An :class:`Lbfgs` with fresh state."""
        return Lbfgs(self)


class LbfgsRecord(StateRecord):
    """The state of an :class:`Lbfgs` as a burnpack record, in Burn's layout: tensors
    ``history_s.{i}``, ``history_y.{i}``, ``d``, ``prev_flat_grad`` (no parameter ids) and
    scalars ``history_s.len``, ``history_y.len``, ``g_iter`` (``UInt``), ``t``, ``prev_loss``.

    Args:
        tensors: name -> NumPy array.
        scalars: name -> int / float.
    """

    def __init__(self, tensors: Mapping[str, Any] | None = None, scalars: Mapping[str, Any] | None = None):
        self.tensors = {name: np.asarray(array) for name, array in (tensors or {}).items()}
        self.scalars = dict(scalars or {})

    def _payload(self) -> tuple[dict, None, dict]:
        return self.tensors, None, self.scalars

    @classmethod
    def _from_record(cls, record) -> "LbfgsRecord":
        return cls({n: v.numpy() for n, v in record.tensors.items()}, record.scalars)


def _whole(owner: str, name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{owner}: `{name}` must be an int >= {minimum}, got {value!r}")
    return value


def _tolerance(owner: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or math.isinf(value):
        raise ValueError(f"{owner}: `{name}` must be a finite number >= 0, got {value!r}")
    return float(value)


def _line_search(value) -> LineSearchFn | None:
    if value is None or isinstance(value, LineSearchFn):
        return value
    if isinstance(value, str) and value.lower().replace("_", "") == "strongwolfe":
        return LineSearchFn.StrongWolfe
    raise ValueError(
        f"LbfgsConfig: `line_search_fn` must be LineSearchFn.StrongWolfe, 'strong_wolfe' or None, got {value!r}"
    )


class Lbfgs(SavedAsRecord):
    """Limited-memory BFGS (Nocedal 1980; Liu & Nocedal 1989), as Burn and PyTorch run it.

    Each :meth:`step` runs up to ``max_iter`` iterations on the flattened trainable
    parameters x, with g the flat gradient::

        first iteration ever:  d = −g, history cleared, t = min(1, 1/‖g‖₁)·lr
        later:                 s = t·d_prev, y = g − g_prev; keep (s, y) when y·s > 1e-10
                               (the oldest pair dropped past history_size);
                               d = −H·g by the two-loop recursion, H₀ = (y·s)/(y·y) of the
                               newest pair; t = lr
        stop if g·d > −tolerance_change
        x ← x + t·d   (t from the strong-Wolfe search when line_search_fn is set)

    and stops early when ``max|g| <= tolerance_grad``, ``max|t·d| <= tolerance_change``,
    the loss changes by less than ``tolerance_change`` or ``max_eval`` closure calls are
    spent. The history, direction, step and previous gradient carry over to the next
    :meth:`step`. Parameters that do not require grad are left alone; a trainable parameter
    without a gradient counts as a zero gradient (PyTorch's rule). Trajectories equal
    ``torch.optim.LBFGS``'s for equal settings; as in Burn, the line search may spend only
    the evaluations left in ``max_eval``, and :meth:`step` returns the loss at the final point.

    Args:
        config: an :class:`LbfgsConfig`.
    """

    _record_type = LbfgsRecord

    def __init__(self, config: LbfgsConfig | None = None):
        config = LbfgsConfig() if config is None else config
        if not isinstance(config, LbfgsConfig):
            raise TypeError(f"Lbfgs: expected an LbfgsConfig, got {type(config).__name__}")
        owner = "LbfgsConfig"
        self.max_iter = _whole(owner, "max_iter", config.max_iter, 1)
        self.history_size = _whole(owner, "history_size", config.history_size, 1)
        self.tolerance_grad = _tolerance(owner, "tolerance_grad", config.tolerance_grad)
        self.tolerance_change = _tolerance(owner, "tolerance_change", config.tolerance_change)
        max_eval = config.max_eval if config.max_eval is not None else self.max_iter * 5 // 4
        self.max_eval = _whole(owner, "max_eval", max_eval, 1)
        self.line_search_fn = _line_search(config.line_search_fn)
        self._reset()

    def _reset(self) -> None:
        self.history_s: list[Tensor] = []
        self.history_y: list[Tensor] = []
        self.d: Tensor | None = None
        self.t: float | None = 1.0
        self.prev_flat_grad: Tensor | None = None
        self.prev_loss: float | None = None
        self.g_iter = 0

    # ---- flattening ---------------------------------------------------------------------------
    @staticmethod
    def _trainable(module) -> list:
        require_module("Lbfgs.step", module)
        params = [p for _, p in module.named_parameters() if p.is_require_grad()]
        if not params:
            raise ValueError("Lbfgs.step: the module has no trainable parameter")
        first = params[0].value
        for path, p in module.named_parameters():
            if p.is_require_grad() and (p.value.dtype is not first.dtype or p.value.device != first.device):
                raise ValueError(
                    f"Lbfgs.step: every trainable parameter must share one dtype and device "
                    f"(flattened into one vector); '{path}' is {p.value.dtype} on {p.value.device}, "
                    f"the first is {first.dtype} on {first.device}"
                )
        return params

    @staticmethod
    def _flat_params(params) -> Tensor:
        return cat([p.value.reshape(-1) for p in params], 0)

    @staticmethod
    def _flat_grad(params, grads) -> Tensor:
        if not isinstance(grads, GradientsParams):
            raise TypeError(
                "Lbfgs.step: the closure must return (loss, GradientsParams), got gradients of type "
                f"{type(grads).__name__}"
            )
        if len(grads) and not any(p.id in grads for p in params):
            # all zeros would read as a converged minimum: nothing would move, silently
            raise ValueError(
                f"Lbfgs.step: the closure's GradientsParams holds {len(grads)} gradients but none of them "
                f"belongs to one of the module's {len(params)} trainable parameters: they were taken from "
                "another model; return GradientsParams.from_grads(loss.backward(), m) for the module m "
                "the closure is given"
            )
        pieces = []
        for p in params:
            g = grads.get(p.id)
            if g is None:
                g = zeros(p.numel, dtype=p.value.dtype, device=p.value.device)
            else:
                if is_row_sparse(g):
                    g = g.to_dense()
                if g.shape != p.value.shape:
                    raise ValueError(
                        f"Lbfgs.step: a gradient has shape {list(g.shape)}, its parameter {list(p.value.shape)}"
                    )
                g = g.to(p.value.device, p.value.dtype).reshape(-1)
            pieces.append(g)
        return cat(pieces, 0)

    @staticmethod
    def _set_params(params, flat: Tensor) -> None:
        offset = 0
        for p in params:
            size = p.numel
            p.set_value(flat[offset : offset + size].reshape(p.value.shape))
            offset += size

    # ---- the step -------------------------------------------------------------------------------
    def step(self, lr: float, module, closure: Callable) -> tuple[Any, float]:
        """Run up to ``max_iter`` L-BFGS iterations on ``module``'s trainable parameters.

        Args:
            lr: the learning rate (the fixed step, or the line search's first step).
            module: the model; its parameters are updated in place (same ids).
            closure: ``closure(module) -> (loss, GradientsParams)``: evaluates the loss at the
                module's current parameters (a float or a 0-d tensor) and its gradients.

        Returns:
            ``(module, loss)``, the loss at the last point evaluated.
        """
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr):
            raise ValueError(f"Lbfgs.step: `lr` must be a finite number, got {lr!r}")
        lr = float(lr)
        params = self._trainable(module)

        def evaluate() -> tuple[float, Tensor]:
            with enable_grad():  # the closure runs its own forward and backward
                result = closure(module)
            if not isinstance(result, tuple) or len(result) != 2:
                raise TypeError("Lbfgs.step: the closure must return (loss, GradientsParams)")
            loss, grads = result
            loss = float(loss.item()) if isinstance(loss, Tensor) else float(loss)
            with no_grad():
                return loss, self._flat_grad(params, grads)

        loss, flat_grad = evaluate()
        with no_grad():
            return module, self._iterate(lr, params, evaluate, loss, flat_grad)

    def _iterate(self, lr, params, evaluate, loss, flat_grad) -> float:
        evals = 1
        self._place_state(flat_grad)
        if float(flat_grad.abs().max().item()) <= self.tolerance_grad:
            return loss
        x = self._flat_params(params)
        d = self.d if self.d is not None else -flat_grad
        t = self.t if self.t is not None else lr
        prev_flat_grad = self.prev_flat_grad
        for _ in range(self.max_iter):
            self.g_iter += 1
            if self.g_iter == 1:
                d = -flat_grad
                self.history_s, self.history_y = [], []
            else:
                if prev_flat_grad is not None:
                    self._remember(d * t, flat_grad - prev_flat_grad)
                d = self._direction(flat_grad)
            prev_flat_grad = flat_grad
            prev_loss = loss
            if self.g_iter == 1:
                t = min(1.0, 1.0 / float(flat_grad.abs().sum().item())) * lr
            else:
                t = lr
            gtd = dot(flat_grad, d)
            if gtd > -self.tolerance_change:
                break
            if self.line_search_fn is LineSearchFn.StrongWolfe:
                base = x

                def objective(step: float, base=base, d=d) -> tuple[float, Tensor]:
                    self._set_params(params, base + d * step)
                    return evaluate()

                loss, flat_grad, t, ls_evals = strong_wolfe(
                    objective,
                    t,
                    d,
                    loss,
                    flat_grad,
                    gtd,
                    1e-4,
                    0.9,
                    self.tolerance_change,
                    self.max_eval - evals,
                )
                x = x + d * t
                self._set_params(params, x)
            else:
                x = x + d * t
                self._set_params(params, x)
                loss, flat_grad = evaluate()
                ls_evals = 1
            evals += ls_evals
            if evals >= self.max_eval:
                break
            if float(flat_grad.abs().max().item()) <= self.tolerance_grad:
                break
            if float((d * t).abs().max().item()) <= self.tolerance_change:
                break
            if abs(loss - prev_loss) < self.tolerance_change:
                break
        self.d, self.t, self.prev_flat_grad, self.prev_loss = d, t, prev_flat_grad, loss
        return loss

    def _remember(self, s: Tensor, y: Tensor) -> None:
        if dot(y, s) > _CURVATURE_MIN:
            if len(self.history_s) >= self.history_size:
                self.history_s.pop(0)
                self.history_y.pop(0)
            self.history_s.append(s)
            self.history_y.append(y)

    def _direction(self, flat_grad: Tensor) -> Tensor:
        """``−H·g`` by the two-loop recursion over the stored pairs."""
        q = -flat_grad
        if not self.history_s:
            return q
        rho = [1.0 / dot(y, s) for s, y in zip(self.history_s, self.history_y)]
        alphas = [0.0] * len(rho)
        for i in range(len(rho) - 1, -1, -1):
            alphas[i] = rho[i] * dot(self.history_s[i], q)
            q = q - self.history_y[i] * alphas[i]
        last_s, last_y = self.history_s[-1], self.history_y[-1]
        r = q * (dot(last_y, last_s) / dot(last_y, last_y))
        for i, (s, y) in enumerate(zip(self.history_s, self.history_y)):
            beta = rho[i] * dot(y, r)
            r = r + s * (alphas[i] - beta)
        return r

    def _place_state(self, like: Tensor) -> None:
        """Move the carried-over vectors to the gradient's device and dtype (after a load)."""

        def place(v):
            if v is None or (v.device == like.device and v.dtype is like.dtype):
                return v
            return v.to(like.device, like.dtype)

        self.history_s = [place(v) for v in self.history_s]
        self.history_y = [place(v) for v in self.history_y]
        self.d, self.prev_flat_grad = place(self.d), place(self.prev_flat_grad)

    # ---- records --------------------------------------------------------------------------------
    def to_record(self) -> LbfgsRecord:
        """The state as an :class:`LbfgsRecord` (Burn's ``LBFGSState`` leaves), on the host."""
        tensors: dict[str, np.ndarray] = {}
        scalars: dict[str, Any] = {}
        for name, vectors in (("history_s", self.history_s), ("history_y", self.history_y)):
            scalars[f"{name}.len"] = UInt(len(vectors))
            for i, v in enumerate(vectors):
                tensors[f"{name}.{i}"] = v.numpy().copy()
        if self.d is not None:
            tensors["d"] = self.d.numpy().copy()
        if self.t is not None:
            scalars["t"] = float(self.t)
        if self.prev_flat_grad is not None:
            tensors["prev_flat_grad"] = self.prev_flat_grad.numpy().copy()
        if self.prev_loss is not None:
            scalars["prev_loss"] = float(self.prev_loss)
        scalars["g_iter"] = UInt(self.g_iter)
        return LbfgsRecord(tensors, scalars)

    def load_record(self, record: LbfgsRecord) -> "Lbfgs":
        """Replace the state with ``record``'s; returns ``self``. A record missing a required
        leaf (the history lengths and vectors, ``g_iter``) leaves the state unchanged, as Burn.
        The vectors move to the parameters' device and dtype on the next :meth:`step`."""
        if not isinstance(record, LbfgsRecord):
            raise TypeError(f"Lbfgs.load_record: expected an LbfgsRecord, got {type(record).__name__}")
        scalars, tensors = record.scalars, record.tensors

        def count(name):
            value = scalars.get(name)
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            return int(value) if ok else None

        def number(name):
            value = scalars.get(name)
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        def vector(name):
            return None if name not in tensors else make_tensor(np.array(tensors[name], copy=True))

        histories = {}
        for name in ("history_s", "history_y"):
            n = count(f"{name}.len")
            if n is None or any(f"{name}.{i}" not in tensors for i in range(n)):
                return self
            histories[name] = [vector(f"{name}.{i}") for i in range(n)]
        g_iter = count("g_iter")
        if g_iter is None:
            return self
        self.history_s, self.history_y = histories["history_s"], histories["history_y"]
        self.d, self.prev_flat_grad = vector("d"), vector("prev_flat_grad")
        self.t, self.prev_loss, self.g_iter = number("t"), number("prev_loss"), g_iter
        return self

    def to_device(self, device) -> "Lbfgs":
        """Move the carried-over vectors to ``device``; returns ``self``."""
        self.history_s = [v.to(device) for v in self.history_s]
        self.history_y = [v.to(device) for v in self.history_y]
        self.d = None if self.d is None else self.d.to(device)
        self.prev_flat_grad = None if self.prev_flat_grad is None else self.prev_flat_grad.to(device)
        return self

    def __repr__(self) -> str:
        return (
            f"Lbfgs(max_iter={self.max_iter}, history_size={self.history_size}, "
            f"max_eval={self.max_eval}, line_search_fn={self.line_search_fn}, "
            f"{len(self.history_s)} pairs, g_iter={self.g_iter})"
        )


# The names before the acronym rule (README, "Names"), kept one release: each use warns.
__getattr__ = renamed_globals(
    __name__, {"LBFGS": "Lbfgs", "LBFGSConfig": "LbfgsConfig", "LBFGSRecord": "LbfgsRecord"}
)
