"""Lazy (row-sparse) optimizer updates for the ``cpu`` backend, in place, one Numba call each.

A row-sparse gradient of a table ``param [n, D]`` is ``rows [K]`` (int64, strictly
increasing, in ``[0, n)``) and ``values [K, D]``. These kernels run one parallel loop over
the K rows and update those rows of the parameter and of its state buffers in place; the
other ``n − K`` rows are never read or written, so a step costs O(K·D) whatever n is (no
``[n, D]`` temporary). The rows are validated before the unchecked loop runs.

The update rules are the lazy ones stated in the docstrings of :class:`ember.optim.Sgd` and
:class:`ember.optim.Adam` (``torch.optim.SparseAdam``'s step), applied to the listed rows, and
written in code in the composed defaults (``ember.kernels.families.optimizer``), which the
tests compare these kernels with. The host functions take the same state and args objects
as those defaults (:mod:`ember.kernels.families.optimizer_args`).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ember.kernels.arg_checks import finite_scalar
from ember.kernels.cpu.jit import kernel
from ember.kernels.cpu.optim_tables import FLOATS
from ember.kernels.families.optimizer_args import AdamArgs, AdamState, SgdArgs, SgdState

__all__ = ["check_rows", "sparse_adam_update", "sparse_sgd_update"]


# Update rule: the docstring in ember/optim/sgd.py (Sgd, row-sparse gradients).
@kernel
def _sparse_sgd_kernel(p, rows, g, b, hp, first, has_momentum, nesterov):
    lr, wd, mu, keep = hp[0], hp[1], hp[2], hp[3]
    d = p.shape[1]
    for k in prange(rows.shape[0]):
        r = rows[k]
        pr, gr, br = p[r], g[k], b[r]
        for j in range(d):
            step = gr[j] + wd * pr[j]
            if has_momentum:
                vel = step if first else mu * br[j] + keep * step
                br[j] = vel
                step = step + mu * vel if nesterov else vel
            pr[j] -= lr * step


# Update rule: the docstring in ember/optim/adam.py (Adam, row-sparse gradients: lazy Adam).
@kernel
def _sparse_adam_kernel(p, rows, g, m, v, vmax, hp, amsgrad, mode):
    b1, c1, b2, c2 = hp[0], hp[1], hp[2], hp[3]
    _lr, step_size, eps, l2, keep, decay, zero = hp[4], hp[5], hp[6], hp[7], hp[8], hp[9], hp[10]
    d = p.shape[1]
    for k in prange(rows.shape[0]):
        r = rows[k]
        pr, gr, mr, vr, xr = p[r], g[k], m[r], v[r], vmax[r]
        for j in range(d):
            theta = pr[j]
            grad = gr[j] + l2 * theta
            mj = b1 * mr[j] + c1 * grad
            vj = b2 * vr[j] + c2 * grad * grad
            mr[j] = mj
            vr[j] = vj
            if amsgrad:
                vj = max(xr[j], vj)
                xr[j] = vj
            update = mj / (np.sqrt(vj) + eps)
            if mode == 1:  # decoupled (AdamW)
                theta = theta * keep
            elif mode == 2:  # cautious decoupled decay
                if (theta >= zero) == (mj >= zero):
                    theta = theta - decay * theta
            pr[j] = theta - step_size * update


def check_rows(op: str, rows, values, param) -> tuple[np.ndarray, np.ndarray]:
    """Validate a row-sparse gradient against its table; returns contiguous (rows, values).

    Raises:
        TypeError / ValueError / IndexError: naming what does not match.
    """
    if not isinstance(param, np.ndarray) or param.ndim != 2 or param.dtype not in FLOATS:
        raise TypeError(
            f"{op}: param must be a 2-D float32/float64 array, got "
            f"{getattr(param, 'dtype', type(param).__name__)} {getattr(param, 'shape', '')}"
        )
    if not param.flags.c_contiguous or not param.flags.writeable:
        raise ValueError(
            f"{op}: param (shape {param.shape}) is updated in place and must be C-contiguous and writeable"
        )
    if not isinstance(rows, np.ndarray) or rows.ndim != 1 or rows.dtype != np.int64:
        raise TypeError(
            f"{op}: rows must be a 1-D int64 array, got "
            f"{getattr(rows, 'dtype', type(rows).__name__)} {getattr(rows, 'shape', '')}"
        )
    if not isinstance(values, np.ndarray) or values.shape != (rows.shape[0], param.shape[1]):
        raise ValueError(
            f"{op}: values must have shape [{rows.shape[0]}, {param.shape[1]}], got "
            f"{getattr(values, 'shape', type(values).__name__)}"
        )
    if values.dtype != param.dtype:
        raise TypeError(f"{op}: values have dtype {values.dtype} but param has {param.dtype}")
    rows = np.ascontiguousarray(rows)
    if rows.size:
        if rows[0] < 0 or rows[-1] >= param.shape[0]:
            raise IndexError(
                f"{op}: row indices must lie in [0, {param.shape[0]}) (the table's rows), "
                f"got [{int(rows[0])}, {int(rows[-1])}]"
            )
        if rows.size > 1 and not np.all(rows[1:] > rows[:-1]):
            raise ValueError(f"{op}: row indices must be strictly increasing (a coalesced RowSparse)")
    return rows, np.ascontiguousarray(values)


def _state(op: str, name: str, array, param) -> np.ndarray:
    if not isinstance(array, np.ndarray) or array.shape != param.shape or array.dtype != param.dtype:
        raise ValueError(
            f"{op}: `{name}` must be a {param.dtype} array of shape {param.shape}, got "
            f"{getattr(array, 'dtype', type(array).__name__)} {getattr(array, 'shape', '')}"
        )
    if not array.flags.c_contiguous or not array.flags.writeable:
        raise ValueError(f"{op}: `{name}` is updated in place and must be C-contiguous and writeable")
    return array


def sparse_sgd_update(param, rows, values, state: SgdState, args: SgdArgs) -> None:
    """SGD on the listed rows, in place; rule: :class:`ember.optim.Sgd` (row-sparse gradients).

    Args:
        param: the table ``[n, D]``, updated in place.
        rows: int64 ``[K]``, strictly increasing.
        values: the gradient rows ``[K, D]``.
        state: the velocity ``[n, D]`` (updated in place on the rows), or None.
        args: a scalar ``lr`` and ``first_step`` (the table's first step: velocity = gradient).
    """
    op = "sparse_sgd_update"
    rows, values = check_rows(op, rows, values, param)
    has_momentum = state.momentum_bufs is not None
    buf = _state(op, "momentum_bufs", state.momentum_bufs, param) if has_momentum else param
    args.check_state(has_momentum, op)
    if not rows.size:
        return
    hp = np.array(
        [finite_scalar(op, "lr", args.lr), args.weight_decay, args.momentum, 1.0 - args.dampening],
        dtype=param.dtype,
    )
    _sparse_sgd_kernel(param, rows, values, buf, hp, bool(args.first_step), has_momentum, args.nesterov)


def sparse_adam_update(param, rows, values, state: AdamState, args: AdamArgs) -> None:
    """Lazy Adam / AdamW / AMSGrad on the listed rows, in place; rule: :class:`ember.optim.Adam`
    (row-sparse gradients) with :class:`ember.optim.AdamW`'s decay when ``decoupled``.

    Args:
        param: the table ``[n, D]``, updated in place.
        rows: int64 ``[K]``, strictly increasing.
        values: the gradient rows ``[K, D]``.
        state: m, v (and AMSGrad's vmax, or None) ``[n, D]``, updated in place on the rows.
        args: a scalar ``lr`` and step.
    """
    op = "sparse_adam_update"
    rows, values = check_rows(op, rows, values, param)
    m, v = _state(op, "m", state.m, param), _state(op, "v", state.v, param)
    amsgrad = state.vmax is not None
    xm = _state(op, "vmax", state.vmax, param) if amsgrad else v
    step_size = args.sparse_step_size(op)
    if not rows.size:
        return
    decay = args.lr * args.weight_decay if args.decoupled else 0.0
    hp = np.array(
        [
            *args.betas,
            args.lr,
            step_size,
            args.eps,
            0.0 if args.decoupled else args.weight_decay,
            1.0 - decay,
            decay,
            0.0,
        ],
        dtype=param.dtype,
    )
    _sparse_adam_kernel(param, rows, values, m, v, xm, hp, amsgrad, args.mode)
