"""The optimizer op family of the backend contract: multi-tensor updates and gradient clipping.

Burn splits its backend traits into op families; so does ember (:mod:`ember.kernels.families`),
and this is the optimizer family. Each method has a default composed from the
backend's primitives (``binary``, ``unary``, ``where``...), computed per tensor; a backend with
fused multi-tensor kernels (``cpu``: :mod:`ember.kernels.cpu.optim_updates`, ``cuda``:
:mod:`ember.kernels.cuda.optimizers`) overrides them and must agree with these defaults.

Conventions: each update takes ``(params, grads, state, args)``: lists of same-dtype arrays (or
handles from :meth:`OptimizerOps.optim_pack`), the per-parameter buffers as one state object
and the hyper-parameters as one args object (:mod:`ember.kernels.families.optimizer_args`:
``AdamState``, ``AdamArgs``...); it returns ``(params, state)`` with the updated arrays as
lists in the same order. The defaults never write their inputs (new arrays are returned); a
fused override may update its inputs in place and return those same arrays. State buffers
start as zeros. These defaults are the formulas in code, each written once: the fused
kernels are tested against them on the same args. Each update rule is stated once in words,
in its optimizer's docstring in ``ember/optim/`` (the clipping rules in
``ember/optim/clipping.py``); each method names its own.
"""

from __future__ import annotations

import math

from ember.core import dtypes as dt
from ember.kernels.families.declare import composite
from ember.kernels.families.optimizer_args import (
    AdagradArgs,
    AdagradState,
    AdamArgs,
    AdamState,
    LionArgs,
    LionState,
    RmspropArgs,
    RmspropState,
    SgdArgs,
    SgdState,
)

__all__ = ["SMALLEST_NORMAL", "OptimizerOps"]

SMALLEST_NORMAL = {"float16": 2.0**-14, "bfloat16": 2.0**-126, "float32": 2.0**-126, "float64": 2.0**-1022}
"""Smallest positive normal number per float dtype name: Burn's ``min_positive``, the ``tiny``
of norm clipping."""


class OptimizerOps:
    """Optimizer composites of a backend; mixed into :class:`~ember.kernels.backend.Backend`,
    whose primitives they call."""

    @composite
    def optim_own(self, x, copy=False):
        """An array holding ``x``'s values that this backend's updates may write in place.

        Default: ``x`` itself (the default updates never write), or a copy when ``copy``.
        """
        return self.binary("add", x, self._scalar(0, x)) if copy else x

    @composite
    def optim_pack(self, arrays):
        """A handle for a list of arrays reused over many update calls (default: the list)."""
        return list(arrays)

    @composite
    def sgd_update(self, params, grads, state: SgdState, args: SgdArgs):
        """SGD with L2 decay and (Nesterov) momentum; returns ``(params, SgdState)``.

        Update rule: :class:`ember.optim.Sgd`."""
        params, grads = list(params), list(grads)
        n = len(params)
        rates = args.lr_per_tensor(n).tolist()
        first = args.first_per_tensor(n).tolist()
        bufs = None if state.momentum_bufs is None else list(state.momentum_bufs)
        args.check_state(bufs is not None)
        new_p, new_b = [], None if bufs is None else []
        for i, (p, g) in enumerate(zip(params, grads)):
            if args.weight_decay != 0.0:
                g = self.binary("add", g, self._optim_mul(p, args.weight_decay))
            if bufs is not None:
                v = (
                    g
                    if first[i]
                    else self.binary(
                        "add",
                        self._optim_mul(bufs[i], args.momentum),
                        self._optim_mul(g, 1.0 - args.dampening),
                    )
                )
                new_b.append(v)
                g = self.binary("add", g, self._optim_mul(v, args.momentum)) if args.nesterov else v
            new_p.append(self.binary("sub", p, self._optim_mul(g, rates[i])))
        return new_p, SgdState(new_b)

    @composite
    def adam_update(self, params, grads, state: AdamState, args: AdamArgs):
        """Adam / AdamW (``decoupled``, ``cautious``) / AMSGrad (``state.vmax`` given); returns
        ``(params, AdamState)``.

        Update rule: :class:`ember.optim.Adam`, :class:`ember.optim.AdamW` (Adam's form)."""
        return self._adam(params, grads, state, args, args.per_tensor(len(params)))

    def _adam(self, params, grads, state: AdamState, args: AdamArgs, per):
        """Adam's step with the per-tensor coefficients ``per`` (:meth:`AdamArgs.per_tensor`:
        lr, corr, eps_eff, l2, keep, decay), shared by the dense and the row-sparse update."""
        params, grads, m, v = list(params), list(grads), list(state.m), list(state.v)
        vmax = None if state.vmax is None else list(state.vmax)
        beta1, one_minus_beta1, beta2, one_minus_beta2 = args.betas
        out_p, out_m, out_v, out_vmax = [], [], [], None if vmax is None else []
        for i, (p, g) in enumerate(zip(params, grads)):
            lr, corr, eps, l2, keep, decay = per[i].tolist()
            if l2 != 0.0:
                g = self.binary("add", g, self._optim_mul(p, l2))
            mi = self.binary("add", self._optim_mul(m[i], beta1), self._optim_mul(g, one_minus_beta1))
            vi = self.binary(
                "add", self._optim_mul(v[i], beta2), self._optim_mul(self.unary("square", g), one_minus_beta2)
            )
            out_m.append(mi)
            out_v.append(vi)
            if vmax is not None:
                vi = self.binary("maximum", vmax[i], vi)
                out_vmax.append(vi)
            update = self.binary(
                "div",
                self._optim_mul(mi, corr),
                self.binary("add", self.unary("sqrt", vi), self._scalar(eps, p)),
            )
            if args.mode == 2:  # decay only where sign(θ) agrees with sign(m) (arXiv:2510.12402)
                zero = self._scalar(0.0, p)
                differ = self.binary("ne", self.binary("ge", p, zero), self.binary("ge", mi, zero))
                p = self.binary("sub", p, self.where(differ, zero, self._optim_mul(p, decay)))
            elif args.mode == 1:
                p = self._optim_mul(p, keep)
            out_p.append(self.binary("sub", p, self._optim_mul(update, lr)))
        return out_p, AdamState(out_m, out_v, out_vmax)

    @composite
    def rmsprop_update(self, params, grads, state: RmspropState, args: RmspropArgs):
        """RMSprop, optionally centered and with momentum; returns ``(params, RmspropState)``
        (None for the buffers the settings do not use).

        Update rule: :class:`ember.optim.RmsProp`."""
        params, grads, square_avg = list(params), list(grads), list(state.square_avg)
        rates = args.lr_per_tensor(len(params)).tolist()
        alpha, eps, wd, momentum = args.alpha, args.eps, args.weight_decay, args.momentum
        grad_avg = list(state.grad_avg) if args.centered else None
        bufs = list(state.momentum_bufs) if momentum > 0.0 else None
        out_p, out_s = [], []
        out_ga = None if grad_avg is None else []
        out_b = None if bufs is None else []
        for i, (p, g) in enumerate(zip(params, grads)):
            if wd != 0.0:
                g = self.binary("add", g, self._optim_mul(p, wd))
            s = self.binary(
                "add",
                self._optim_mul(square_avg[i], alpha),
                self._optim_mul(self.unary("square", g), 1.0 - alpha),
            )
            out_s.append(s)
            if grad_avg is not None:
                ga = self.binary("add", self._optim_mul(grad_avg[i], alpha), self._optim_mul(g, 1.0 - alpha))
                out_ga.append(ga)
                s = self.binary("sub", s, self.unary("square", ga))
            d = self.binary("div", g, self.binary("add", self.unary("sqrt", s), self._scalar(eps, p)))
            if bufs is not None:
                d = self.binary("add", self._optim_mul(bufs[i], momentum), d)
                out_b.append(d)
            out_p.append(self.binary("sub", p, self._optim_mul(d, rates[i])))
        return out_p, RmspropState(out_s, out_ga, out_b)

    @composite
    def adagrad_update(self, params, grads, state: AdagradState, args: AdagradArgs):
        """AdaGrad with learning-rate decay; returns ``(params, AdagradState)``.

        Update rule: :class:`ember.optim.AdaGrad`."""
        params, grads, sums = list(params), list(grads), list(state.sums)
        rates = args.decayed_lr(len(params)).tolist()
        out_p, out_s = [], []
        for i, (p, g) in enumerate(zip(params, grads)):
            if args.weight_decay != 0.0:
                g = self.binary("add", g, self._optim_mul(p, args.weight_decay))
            total = self.binary("add", sums[i], self.unary("square", g))
            out_s.append(total)
            step = self.binary(
                "div",
                self._optim_mul(g, rates[i]),
                self.binary("add", self.unary("sqrt", total), self._scalar(args.eps, p)),
            )
            out_p.append(self.binary("sub", p, step))
        return out_p, AdagradState(out_s)

    @composite
    def lion_update(self, params, grads, state: LionState, args: LionArgs):
        """Lion; returns ``(params, LionState)``.

        Update rule: :class:`ember.optim.Lion`."""
        params, grads, exp_avg = list(params), list(grads), list(state.exp_avg)
        rates = args.lr_per_tensor(len(params)).tolist()
        beta1, beta2 = args.beta1, args.beta2
        out_p, out_m = [], []
        for i, (p, g) in enumerate(zip(params, grads)):
            direction = self.unary(
                "sign",
                self.binary("add", self._optim_mul(exp_avg[i], beta1), self._optim_mul(g, 1.0 - beta1)),
            )
            out_p.append(
                self.binary(
                    "sub",
                    self._optim_mul(p, 1.0 - rates[i] * args.weight_decay),
                    self._optim_mul(direction, rates[i]),
                )
            )
            out_m.append(
                self.binary("add", self._optim_mul(exp_avg[i], beta2), self._optim_mul(g, 1.0 - beta2))
            )
        return out_p, LionState(out_m)

    # ---- lazy updates of row-sparse gradients: one table ``param [n, D]``, its gradient rows
    # ``rows [K]`` (int64, strictly increasing, in range) and ``values [K, D]``; the state holds
    # one ``[n, D]`` array per buffer and ``args`` a scalar lr and step. Only those rows of the
    # parameter and of the state buffers change. The defaults gather the rows, run the dense
    # formula on them and write them back (new arrays); a backend may update in place.
    def _gather_rows(self, state, rows):
        return type(state)(*(None if a is None else [self.getitem(a, rows)] for a in state))

    def _scatter_state(self, state, rows, new_rows):
        return type(state)(
            *(None if a is None else self.index_put(a, (rows,), b[0], False) for a, b in zip(state, new_rows))
        )

    @composite
    def sparse_sgd_update(self, param, rows, values, state: SgdState, args: SgdArgs):
        """:meth:`sgd_update` on the rows ``rows`` only; returns ``(param, SgdState)``.

        Update rule: :class:`ember.optim.Sgd` (row-sparse gradients)."""
        args.check_state(state.momentum_bufs is not None, "sparse_sgd_update")
        new_p, new_state = OptimizerOps.sgd_update(
            self, [self.getitem(param, rows)], [values], self._gather_rows(state, rows), args
        )
        param = self.index_put(param, (rows,), new_p[0], False)
        return param, self._scatter_state(state, rows, new_state)

    @composite
    def sparse_adam_update(self, param, rows, values, state: AdamState, args: AdamArgs):
        """Lazy Adam / AdamW on the rows ``rows`` only; returns ``(param, AdamState)``.

        Update rule: :class:`ember.optim.Adam` (row-sparse gradients: ``torch.optim.SparseAdam``'s
        step), with :class:`ember.optim.AdamW`'s decay when ``decoupled``."""
        per = args.per_tensor(1)
        per[0, 2] = args.eps  # SparseAdam adds ε to √v, where the dense form adds ε·√(1 − β2ᵗ)
        gathered = self._gather_rows(state, rows)
        new_p, new_state = self._adam([self.getitem(param, rows)], [values], gathered, args, per)
        param = self.index_put(param, (rows,), new_p[0], False)
        return param, self._scatter_state(state, rows, new_state)

    @composite
    def clip_by_value(self, grads, threshold):
        """Clip by value (rule ``Value`` in :mod:`ember.optim.clipping`); returns the grads."""
        out = []
        for g in grads:
            high, low = self._scalar(threshold, g), self._scalar(-threshold, g)
            out.append(
                self.where(self.binary("gt", g, high), high, self.where(self.binary("lt", g, low), low, g))
            )
        return out

    @composite
    def clip_by_norm(self, grads, max_norm):
        """Clip each tensor by its norm (rule ``Norm`` in :mod:`ember.optim.clipping`); returns
        the grads."""
        out = []
        for g in grads:
            coef = max_norm / (self._optim_sq_norm(g) ** 0.5 + SMALLEST_NORMAL[self.dtype_of(g).name])
            out.append(g if coef >= 1.0 else self._optim_mul(g, coef))  # a NaN coef scales to NaN
        return out

    @composite
    def grads_norm(self, grads) -> float:
        """The L2 norm of all the arrays together, accumulated in float64."""
        return math.sqrt(sum(self._optim_sq_norm(g) for g in grads))

    @composite
    def scale_grads(self, grads, coef):
        """Every array multiplied by the scalar ``coef``; returns the grads."""
        return [self._optim_mul(g, coef) for g in grads]

    def _optim_mul(self, x, value):
        return self.binary("mul", x, self._scalar(value, x))

    def _optim_sq_norm(self, g) -> float:
        g64 = self.cast(g, dt.float64)
        axes = tuple(range(g64.ndim))
        return float(self.to_host(self.reduce("sum", self.unary("square", g64), axes, False)))
