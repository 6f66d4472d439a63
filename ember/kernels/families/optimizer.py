"""The optimizer op family of the backend contract: multi-tensor updates and gradient clipping.

Burn splits its backend traits into op families; so does ember (:mod:`ember.kernels.families`),
and this is the optimizer family. Each method has a default composed from the
backend's primitives (``binary``, ``unary``, ``where``...), computed per tensor; a backend with
fused multi-tensor kernels (``cpu``: :mod:`ember.kernels.cpu.optim_updates`, ``cuda``:
:mod:`ember.kernels.cuda.optimizers`) overrides them and must agree with these defaults.

Conventions: each update takes lists of same-dtype arrays (params, grads, state buffers, or
handles from :meth:`OptimizerOps.optim_pack`) and returns the updated arrays as lists in the
same order. The defaults never write their inputs (new arrays are returned); a fused override
may update its inputs in place and return those same arrays. State buffers start as zeros.
``lr`` (and ``steps``, ``first_step_flags``) is a scalar for the group or one value per
tensor. Each update rule is stated once, in its optimizer's docstring in ``ember/optim/``
(the clipping rules in ``ember/optim/clipping.py``); each method names its own.
"""

from __future__ import annotations

import math

from ember.core import dtypes as dt
from ember.kernels.arg_checks import per_tensor, step_numbers
from ember.kernels.families.declare import composite

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
    def sgd_update(
        self,
        params,
        grads,
        momentum_bufs,
        lr,
        weight_decay=0.0,
        momentum=0.0,
        dampening=0.0,
        nesterov=False,
        first_step_flags=False,
    ):
        """SGD with L2 decay and (Nesterov) momentum; returns ``(params, momentum_bufs)``.

        Update rule: :class:`ember.optim.Sgd`."""
        params, grads = list(params), list(grads)
        rates = per_tensor("sgd_update", "lr", lr, len(params)).tolist()
        first = per_tensor("sgd_update", "first_step_flags", first_step_flags, len(params)).tolist()
        bufs = None if momentum_bufs is None else list(momentum_bufs)
        new_p, new_b = [], None if bufs is None else []
        for i, (p, g) in enumerate(zip(params, grads)):
            if weight_decay != 0.0:
                g = self.binary("add", g, self._optim_mul(p, weight_decay))
            if bufs is not None:
                v = (
                    g
                    if first[i]
                    else self.binary(
                        "add", self._optim_mul(bufs[i], momentum), self._optim_mul(g, 1.0 - dampening)
                    )
                )
                new_b.append(v)
                g = self.binary("add", g, self._optim_mul(v, momentum)) if nesterov else v
            new_p.append(self.binary("sub", p, self._optim_mul(g, rates[i])))
        return new_p, new_b

    @composite
    def adam_update(
        self,
        params,
        grads,
        m,
        v,
        vmax,
        lr,
        beta1=0.9,
        beta2=0.999,
        eps=1e-5,
        weight_decay=0.0,
        decoupled=False,
        cautious=False,
        steps=1,
    ):
        """Adam / AdamW (``decoupled``, ``cautious``) / AMSGrad (``vmax`` given); returns
        ``(params, m, v, vmax)``.

        Update rule: :class:`ember.optim.Adam`, :class:`ember.optim.AdamW` (Adam's form)."""
        params, grads, m, v = list(params), list(grads), list(m), list(v)
        n = len(params)
        rates = per_tensor("adam_update", "lr", lr, n).tolist()
        t = step_numbers("adam_update", "steps", steps, n).tolist()
        vmax = None if vmax is None else list(vmax)
        out_p, out_m, out_v, out_vmax = [], [], [], None if vmax is None else []
        for i, (p, g) in enumerate(zip(params, grads)):
            if weight_decay != 0.0 and not decoupled:
                g = self.binary("add", g, self._optim_mul(p, weight_decay))
            mi = self.binary("add", self._optim_mul(m[i], beta1), self._optim_mul(g, 1.0 - beta1))
            vi = self.binary(
                "add", self._optim_mul(v[i], beta2), self._optim_mul(self.unary("square", g), 1.0 - beta2)
            )
            out_m.append(mi)
            out_v.append(vi)
            if vmax is not None:
                vi = self.binary("maximum", vmax[i], vi)
                out_vmax.append(vi)
            bc2_sqrt = math.sqrt(1.0 - beta2 ** t[i])
            corr = bc2_sqrt / (1.0 - beta1 ** t[i])
            update = self.binary(
                "div",
                self._optim_mul(mi, corr),
                self.binary("add", self.unary("sqrt", vi), self._scalar(eps * bc2_sqrt, p)),
            )
            decay = rates[i] * weight_decay
            if decoupled and weight_decay != 0.0:
                if cautious:  # decay only where sign(θ) agrees with sign(m) (arXiv:2510.12402)
                    zero = self._scalar(0.0, p)
                    differ = self.binary("ne", self.binary("ge", p, zero), self.binary("ge", mi, zero))
                    p = self.binary("sub", p, self.where(differ, zero, self._optim_mul(p, decay)))
                else:
                    p = self._optim_mul(p, 1.0 - decay)
            out_p.append(self.binary("sub", p, self._optim_mul(update, rates[i])))
        return out_p, out_m, out_v, out_vmax

    @composite
    def rmsprop_update(
        self,
        params,
        grads,
        square_avg,
        grad_avg,
        momentum_bufs,
        lr,
        alpha=0.99,
        eps=1e-5,
        weight_decay=0.0,
        momentum=0.9,
        centered=False,
    ):
        """RMSprop, optionally centered and with momentum; returns
        ``(params, square_avg, grad_avg, momentum_bufs)`` (None for unused buffers).

        Update rule: :class:`ember.optim.RmsProp`."""
        params, grads, square_avg = list(params), list(grads), list(square_avg)
        rates = per_tensor("rmsprop_update", "lr", lr, len(params)).tolist()
        grad_avg = list(grad_avg) if centered else None
        bufs = list(momentum_bufs) if momentum > 0.0 else None
        out_p, out_s = [], []
        out_ga = None if grad_avg is None else []
        out_b = None if bufs is None else []
        for i, (p, g) in enumerate(zip(params, grads)):
            if weight_decay != 0.0:
                g = self.binary("add", g, self._optim_mul(p, weight_decay))
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
        return out_p, out_s, out_ga, out_b

    @composite
    def adagrad_update(self, params, grads, sums, lr, lr_decay=0.0, eps=1e-5, weight_decay=0.0, steps=1):
        """AdaGrad with learning-rate decay; returns ``(params, sums)``.

        Update rule: :class:`ember.optim.AdaGrad`."""
        params, grads, sums = list(params), list(grads), list(sums)
        rates = per_tensor("adagrad_update", "lr", lr, len(params)).tolist()
        t = step_numbers("adagrad_update", "steps", steps, len(params)).tolist()
        out_p, out_s = [], []
        for i, (p, g) in enumerate(zip(params, grads)):
            if weight_decay != 0.0:
                g = self.binary("add", g, self._optim_mul(p, weight_decay))
            total = self.binary("add", sums[i], self.unary("square", g))
            out_s.append(total)
            rate = rates[i] / (1.0 + (t[i] - 1.0) * lr_decay)
            step = self.binary(
                "div",
                self._optim_mul(g, rate),
                self.binary("add", self.unary("sqrt", total), self._scalar(eps, p)),
            )
            out_p.append(self.binary("sub", p, step))
        return out_p, out_s

    @composite
    def lion_update(self, params, grads, exp_avg, lr, beta1=0.9, beta2=0.99, weight_decay=0.0):
        """Lion; returns ``(params, exp_avg)``.

        Update rule: :class:`ember.optim.Lion`."""
        params, grads, exp_avg = list(params), list(grads), list(exp_avg)
        rates = per_tensor("lion_update", "lr", lr, len(params)).tolist()
        out_p, out_m = [], []
        for i, (p, g) in enumerate(zip(params, grads)):
            direction = self.unary(
                "sign",
                self.binary("add", self._optim_mul(exp_avg[i], beta1), self._optim_mul(g, 1.0 - beta1)),
            )
            out_p.append(
                self.binary(
                    "sub",
                    self._optim_mul(p, 1.0 - rates[i] * weight_decay),
                    self._optim_mul(direction, rates[i]),
                )
            )
            out_m.append(
                self.binary("add", self._optim_mul(exp_avg[i], beta2), self._optim_mul(g, 1.0 - beta2))
            )
        return out_p, out_m

    # ---- lazy updates of row-sparse gradients: one table ``param [n, D]``, its gradient rows
    # ``rows [K]`` (int64, strictly increasing, in range) and ``values [K, D]``; only those rows
    # of the parameter and of the state buffers change. The defaults gather the rows, run the
    # dense composite on them and write them back (new arrays); a backend may update in place.
    def _scatter_rows(self, x, rows, new_rows):
        return self.index_put(x, (rows,), new_rows, False)

    @composite
    def sparse_sgd_update(
        self,
        param,
        rows,
        values,
        momentum_buf,
        lr,
        weight_decay=0.0,
        momentum=0.0,
        dampening=0.0,
        nesterov=False,
        first_step=False,
    ):
        """:meth:`sgd_update` on the rows ``rows`` only; returns ``(param, momentum_buf)``.

        Update rule: :class:`ember.optim.Sgd` (row-sparse gradients)."""
        buf_rows = None if momentum_buf is None else [self.getitem(momentum_buf, rows)]
        new_p, new_b = OptimizerOps.sgd_update(
            self,
            [self.getitem(param, rows)],
            [values],
            buf_rows,
            lr,
            weight_decay,
            momentum,
            dampening,
            nesterov,
            first_step,
        )
        param = self._scatter_rows(param, rows, new_p[0])
        if momentum_buf is not None:
            momentum_buf = self._scatter_rows(momentum_buf, rows, new_b[0])
        return param, momentum_buf

    @composite
    def sparse_adam_update(
        self,
        param,
        rows,
        values,
        m,
        v,
        vmax,
        lr,
        beta1=0.9,
        beta2=0.999,
        eps=1e-5,
        weight_decay=0.0,
        decoupled=False,
        cautious=False,
        step=1,
    ):
        """Lazy Adam / AdamW on the rows ``rows`` only; returns ``(param, m, v, vmax)``.

        Update rule: :class:`ember.optim.Adam` (row-sparse gradients: ``torch.optim.SparseAdam``'s
        step), with :class:`ember.optim.AdamW`'s decay when ``decoupled``."""
        # the dense formula adds ε·√(1 − β2ᵗ) to √v: pass ε/√(1 − β2ᵗ) to add ε
        eps_dense = eps / math.sqrt(1.0 - beta2**step)
        gather = [self.getitem(a, rows) for a in (param, m, v)]
        vmax_rows = None if vmax is None else [self.getitem(vmax, rows)]
        new_p, new_m, new_v, new_vmax = OptimizerOps.adam_update(
            self,
            [gather[0]],
            [values],
            [gather[1]],
            [gather[2]],
            vmax_rows,
            lr,
            beta1,
            beta2,
            eps_dense,
            weight_decay,
            decoupled,
            cautious,
            step,
        )
        out = [self._scatter_rows(a, rows, b[0]) for a, b in ((param, new_p), (m, new_m), (v, new_v))]
        if vmax is not None:
            vmax = self._scatter_rows(vmax, rows, new_vmax[0])
        return out[0], out[1], out[2], vmax

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
