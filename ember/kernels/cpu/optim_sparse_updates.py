"""Lazy (row-sparse) optimizer updates for the ``cpu`` backend, in place, one Numba call each.

A row-sparse gradient of a table ``param [n, D]`` is ``rows [K]`` (int64, strictly
increasing, in ``[0, n)``) and ``values [K, D]``. These kernels run one parallel loop over
the K rows and update those rows of the parameter and of its state buffers in place; the
other ``n − K`` rows are never read or written, so a step costs O(K·D) whatever n is (no
``[n, D]`` temporary). The rows are validated before the unchecked loop runs.

The update rules are the lazy ones stated in the docstrings of :class:`ember.optim.Sgd` and
:class:`ember.optim.Adam` (``torch.optim.SparseAdam``'s step), applied to the listed rows.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from ember.kernels.arg_checks import finite_scalar
from ember.kernels.cpu.jit import kernel

__all__ = ["check_rows", "sparse_adam_update", "sparse_sgd_update"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


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
    if not isinstance(param, np.ndarray) or param.ndim != 2 or param.dtype not in _FLOATS:
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


def sparse_sgd_update(
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
) -> None:
    """SGD on the listed rows, in place; rule: :class:`ember.optim.Sgd` (row-sparse gradients).

    Args:
        param: the table ``[n, D]``, updated in place.
        rows: int64 ``[K]``, strictly increasing.
        values: the gradient rows ``[K, D]``.
        momentum_buf: velocity ``[n, D]`` (updated in place on the rows), or None.
        lr, weight_decay, momentum, dampening, nesterov: as ``sgd_update``.
        first_step: whether this is the table's first step (velocity = gradient).
    """
    op = "sparse_sgd_update"
    rows, values = check_rows(op, rows, values, param)
    has_momentum = momentum_buf is not None
    buf = _state(op, "momentum_buf", momentum_buf, param) if has_momentum else param
    if not has_momentum and (float(momentum) != 0.0 or nesterov):
        raise ValueError(f"{op}: momentum={momentum!r}, nesterov={nesterov!r} need `momentum_buf`")
    if not rows.size:
        return
    hp = np.array(
        [
            finite_scalar(op, "lr", lr),
            finite_scalar(op, "weight_decay", weight_decay),
            finite_scalar(op, "momentum", momentum),
            1.0 - finite_scalar(op, "dampening", dampening),
        ],
        dtype=param.dtype,
    )
    _sparse_sgd_kernel(param, rows, values, buf, hp, bool(first_step), has_momentum, bool(nesterov))


def sparse_adam_update(
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
) -> None:
    """Lazy Adam / AdamW / AMSGrad on the listed rows, in place; rule: :class:`ember.optim.Adam`
    (row-sparse gradients) with :class:`ember.optim.AdamW`'s decay when ``decoupled``.

    Args:
        param: the table ``[n, D]``, updated in place.
        rows: int64 ``[K]``, strictly increasing.
        values: the gradient rows ``[K, D]``.
        m, v: moment buffers ``[n, D]``, updated in place on the rows.
        vmax: AMSGrad maxima ``[n, D]`` or None.
        lr, beta1, beta2, eps, weight_decay, decoupled, cautious: as ``adam_update``.
        step: t ≥ 1.
    """
    op = "sparse_adam_update"
    rows, values = check_rows(op, rows, values, param)
    m, v = _state(op, "m", m, param), _state(op, "v", v, param)
    amsgrad = vmax is not None
    xm = _state(op, "vmax", vmax, param) if amsgrad else v
    if cautious and not decoupled:
        raise ValueError(f"{op}: cautious weight decay applies to decoupled decay; set decoupled=True")
    beta1 = finite_scalar(op, "beta1", beta1, unit_interval=True)
    beta2 = finite_scalar(op, "beta2", beta2, unit_interval=True)
    if isinstance(step, bool) or int(step) != step or step < 1:  # one scalar: no array round trip
        raise ValueError(f"{op}: `step` must be an integer >= 1, got {step!r}")
    lr, wd = finite_scalar(op, "lr", lr), finite_scalar(op, "weight_decay", weight_decay)
    if not rows.size:
        return
    step_size = lr * math.sqrt(1.0 - beta2**step) / (1.0 - beta1**step)
    decay = lr * wd if decoupled else 0.0
    hp = np.array(
        [
            beta1,
            1.0 - beta1,
            beta2,
            1.0 - beta2,
            lr,
            step_size,
            finite_scalar(op, "eps", eps),
            0.0 if decoupled else wd,
            1.0 - decay,
            decay,
            0.0,
        ],
        dtype=param.dtype,
    )
    mode = (2 if cautious else 1) if decoupled and wd != 0.0 else 0
    _sparse_adam_kernel(param, rows, values, m, v, xm, hp, amsgrad, mode)
