"""Fused multi-tensor optimizer updates and gradient clipping for the ``cpu`` backend.

Every function updates a whole parameter group **in place** with **one** Numba call: the
tensors of the group are cut into (tensor, chunk) work items and a parallel loop runs over
all items, so each element of every parameter, gradient and state buffer is read and
written once per step, whatever the number of tensors, with no per-parameter Python op
chain and no temporary arrays.

Conventions shared by all updates:

* ``params`` and state buffers are lists of C-contiguous, writeable NumPy arrays of one
  float dtype (float32 or float64); ``grads[i]`` has the shape and dtype of ``params[i]``
  (read only; a non-contiguous gradient is copied first). Any list may instead be an
  :class:`ArrayTable` built once with :func:`pack_arrays`, which skips re-validation and
  pointer look-up each step (state buffers and parameters never move, so an optimizer can
  pack them once).
* State buffers start as zeros (``np.zeros_like(param)``): with zero buffers the first
  step of every update below equals Burn's explicit first-step branch, except SGD momentum
  whose first step is flagged with ``first_step_flags``.
* ``lr`` (and ``steps``, ``first_step_flags``) are a scalar for the group or one value per
  tensor. Scalars are computed in float64 and rounded to the arrays' dtype once per tensor;
  the element-wise math runs in the arrays' dtype.
* Arrays must not alias each other (a parameter passed as its own state buffer gives
  meaningless results).

Each update rule is stated once, in its optimizer's docstring in ``ember/optim/`` (and the
clipping rules in ``ember/optim/clipping.py``); every function here names the one it
computes. The kernels compile with ember's shared options
(:mod:`ember.kernels.cpu.jit`): fast-math re-association/contraction but not
``nnan``/``ninf``, so NaN and infinity propagate as in IEEE arithmetic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Union

import numba
import numpy as np
from numba import prange, types
from numba.extending import intrinsic

from ember.kernels.arg_checks import finite_scalar, per_tensor, step_numbers

# jit.py sets the shared cache directory, thread count and fast-math flags; import first.
from ember.kernels.cpu.jit import kernel, serial
from ember.kernels.optim_kernel_args import adam_arguments

__all__ = [
    "ArrayTable",
    "adagrad_update",
    "adam_update",
    "clip_by_global_norm",
    "clip_by_norm_per_tensor",
    "clip_by_value",
    "global_norm",
    "lion_update",
    "pack_arrays",
    "rmsprop_update",
    "sgd_update",
]

_CHUNK = 1 << 14  # elements per work item: 64 KiB of float32, small enough to balance cores
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# --- tables of arrays ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True, repr=False)
class ArrayTable:
    """A validated list of same-dtype, C-contiguous arrays with their data addresses.

    Build it with :func:`pack_arrays`. It keeps the arrays alive, so the addresses it holds
    stay valid for its lifetime.
    """

    arrays: list
    addresses: np.ndarray  # int64 data pointers
    sizes: np.ndarray  # int64 element counts
    shapes: list
    dtype: np.dtype
    writeable: bool

    def __len__(self) -> int:
        return len(self.arrays)

    def __repr__(self) -> str:
        return (
            f"ArrayTable({len(self.arrays)} arrays, dtype={self.dtype}, "
            f"elements={int(self.sizes.sum())}, writeable={self.writeable})"
        )


Arrays = Union[Sequence[np.ndarray], ArrayTable]


def pack_arrays(
    arrays: Arrays, *, writeable: bool = True, op: str = "pack_arrays", what: str = "arrays"
) -> ArrayTable:
    """Validate a list of arrays once and record their addresses for the kernels.

    Args:
        arrays: NumPy float32/float64 arrays, all of one dtype (or an ``ArrayTable``).
        writeable: If true the arrays will be updated in place: they must be C-contiguous
            and writeable. If false, non-contiguous arrays are copied to contiguous ones.
        op: Name of the calling operation, for error messages.
        what: Name of the argument, for error messages.

    Returns:
        The table.

    Raises:
        TypeError: An entry is not a NumPy array, or its dtype is not float32/float64 or
            differs from the first entry's.
        ValueError: ``writeable`` is requested for a read-only or non-contiguous array.
    """
    if isinstance(arrays, ArrayTable):
        if writeable and not arrays.writeable:
            raise ValueError(f"{op}: `{what}` is a read-only ArrayTable but is updated in place")
        return arrays
    if isinstance(arrays, np.ndarray) or not isinstance(arrays, (list, tuple)):
        raise TypeError(
            f"{op}: `{what}` must be a list of NumPy arrays or an ArrayTable, got {type(arrays).__name__}"
        )
    kept, addresses, sizes, shapes = [], [], [], []
    dtype = None
    for index, array in enumerate(arrays):
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{op}: `{what}[{index}]` must be a NumPy array, got {type(array).__name__}")
        if dtype is None:
            dtype = array.dtype
            if dtype not in _FLOATS:
                raise TypeError(f"{op}: `{what}` must be float32 or float64 arrays, got {dtype}")
        elif array.dtype != dtype:
            raise TypeError(
                f"{op}: `{what}[{index}]` has dtype {array.dtype} but `{what}[0]` has {dtype}; "
                "one call updates one dtype"
            )
        if not array.flags.c_contiguous:
            if writeable:
                raise ValueError(
                    f"{op}: `{what}[{index}]` (shape {array.shape}) is updated in place and "
                    "must be C-contiguous"
                )
            array = np.ascontiguousarray(array)
        if writeable and not array.flags.writeable:
            raise ValueError(f"{op}: `{what}[{index}]` (shape {array.shape}) is read-only")
        kept.append(array)
        addresses.append(array.ctypes.data)
        sizes.append(array.size)
        shapes.append(array.shape)
    return ArrayTable(
        kept,
        np.array(addresses, dtype=np.int64),
        np.array(sizes, dtype=np.int64),
        shapes,
        np.dtype(np.float32) if dtype is None else dtype,
        writeable,
    )


def _matching(
    op: str,
    what: str,
    arrays: Arrays | None,
    like: ArrayTable,
    *,
    writeable: bool = True,
    like_name: str = "params",
) -> ArrayTable:
    """Pack ``arrays`` and check they pair one-to-one with ``like`` (shape and dtype)."""
    if arrays is None:
        raise ValueError(f"{op}: `{what}` is required with these settings, got None")
    table = pack_arrays(arrays, writeable=writeable, op=op, what=what)
    if len(table) != len(like):
        raise ValueError(f"{op}: `{what}` has {len(table)} arrays but `{like_name}` has {len(like)}")
    if table.shapes != like.shapes:
        index = next(i for i, (a, b) in enumerate(zip(table.shapes, like.shapes)) if a != b)
        raise ValueError(
            f"{op}: `{what}[{index}]` has shape {table.shapes[index]} but "
            f"`{like_name}[{index}]` has shape {like.shapes[index]}"
        )
    if len(table) and table.dtype != like.dtype:
        raise TypeError(f"{op}: `{what}` has dtype {table.dtype} but `{like_name}` has {like.dtype}")
    return table


# --- Numba building blocks ----------------------------------------------------------------


@intrinsic
def _as_pointer(typingctx, address, witness):
    """Reinterpret an int64 address as a pointer to ``witness``'s element type."""
    signature = types.CPointer(witness.dtype)(address, witness)

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

    return signature, codegen


@serial
def _work_items(sizes):
    """Split tensors into chunks: (tensor index, start offset) for each work item."""
    total = 0
    for i in range(sizes.shape[0]):
        total += (sizes[i] + _CHUNK - 1) // _CHUNK
    tensor = np.empty(total, np.int64)
    start = np.empty(total, np.int64)
    w = 0
    for i in range(sizes.shape[0]):
        for s in range(0, sizes[i], _CHUNK):
            tensor[w] = i
            start[w] = s
            w += 1
    return tensor, start


@serial(inline="always")
def _segment(addresses, i, start, sizes, witness):
    """Elements ``[start, start + _CHUNK)`` (clipped to ``n``) of tensor ``i``. Looping
    ``range(len(segment))`` over a slice, rather than ``range(start, stop)`` over the
    whole tensor, is what lets LLVM vectorise the loop."""
    n = sizes[i]
    whole = numba.carray(_as_pointer(addresses[i], witness), (n,))
    return whole[start : min(start + _CHUNK, n)]


# --- kernels (one parallel loop over all work items of all tensors) -----------------------


# Update rule: the docstring in ember/optim/sgd.py (Sgd).
@kernel
def _sgd_kernel(p_a, g_a, b_a, sizes, hp, lr, first, has_momentum, nesterov):
    wd, mu, keep = hp[0], hp[1], hp[2]
    tensor, start = _work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        p, g = _segment(p_a, i, s0, sizes, hp), _segment(g_a, i, s0, sizes, hp)
        b = _segment(b_a, i, s0, sizes, hp)
        rate, is_first = lr[i], first[i]
        for j in range(p.shape[0]):
            d = g[j] + wd * p[j]
            if has_momentum:
                v = d if is_first else mu * b[j] + keep * d
                b[j] = v
                d = d + mu * v if nesterov else v
            p[j] -= rate * d


# Update rule: the docstring in ember/optim/adam.py (Adam) and adamw.py (AdamW).
@kernel
def _adam_kernel(p_a, g_a, m_a, v_a, vmax_a, sizes, hp, per, amsgrad, mode):
    b1, c1, b2, c2, zero = hp[0], hp[1], hp[2], hp[3], hp[4]
    tensor, start = _work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        p, g = _segment(p_a, i, s0, sizes, hp), _segment(g_a, i, s0, sizes, hp)
        m, v = _segment(m_a, i, s0, sizes, hp), _segment(v_a, i, s0, sizes, hp)
        vmax = _segment(vmax_a, i, s0, sizes, hp)
        lr, corr, eps = per[i, 0], per[i, 1], per[i, 2]
        l2, keep, decay = per[i, 3], per[i, 4], per[i, 5]
        for j in range(p.shape[0]):
            theta = p[j]
            grad = g[j] + l2 * theta
            mj = b1 * m[j] + c1 * grad
            vj = b2 * v[j] + c2 * grad * grad
            m[j] = mj
            v[j] = vj
            if amsgrad:
                vj = max(vmax[j], vj)
                vmax[j] = vj
            update = mj * corr / (np.sqrt(vj) + eps)
            if mode == 1:  # decoupled (AdamW)
                theta = theta * keep
            elif mode == 2:  # cautious: decay only where sign(theta) agrees with sign(m)
                if (theta >= zero) == (mj >= zero):
                    theta = theta - decay * theta
            p[j] = theta - lr * update


# Update rule: the docstring in ember/optim/rmsprop.py (RmsProp).
@kernel
def _rmsprop_kernel(p_a, g_a, s_a, ga_a, b_a, sizes, hp, lr, centered, has_momentum):
    alpha, c_alpha, eps, mu, wd = hp[0], hp[1], hp[2], hp[3], hp[4]
    tensor, start = _work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        p, g = _segment(p_a, i, s0, sizes, hp), _segment(g_a, i, s0, sizes, hp)
        s = _segment(s_a, i, s0, sizes, hp)
        ga, b = _segment(ga_a, i, s0, sizes, hp), _segment(b_a, i, s0, sizes, hp)
        rate = lr[i]
        for j in range(p.shape[0]):
            grad = g[j] + wd * p[j]
            sq = alpha * s[j] + c_alpha * grad * grad
            s[j] = sq
            if centered:
                mean = alpha * ga[j] + c_alpha * grad
                ga[j] = mean
                sq = sq - mean * mean
            d = grad / (np.sqrt(sq) + eps)
            if has_momentum:
                d = mu * b[j] + d
                b[j] = d
            p[j] -= rate * d


# Update rule: the docstring in ember/optim/adagrad.py (AdaGrad).
@kernel
def _adagrad_kernel(p_a, g_a, s_a, sizes, hp, clr):
    eps, wd = hp[0], hp[1]
    tensor, start = _work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        p, g = _segment(p_a, i, s0, sizes, hp), _segment(g_a, i, s0, sizes, hp)
        s = _segment(s_a, i, s0, sizes, hp)
        rate = clr[i]
        for j in range(p.shape[0]):
            grad = g[j] + wd * p[j]
            total = s[j] + grad * grad
            s[j] = total
            p[j] -= rate * grad / (np.sqrt(total) + eps)


# Update rule: the docstring in ember/optim/lion.py (Lion).
@kernel
def _lion_kernel(p_a, g_a, m_a, sizes, hp, per):
    b1, c1, b2, c2 = hp[0], hp[1], hp[2], hp[3]
    tensor, start = _work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        p, g = _segment(p_a, i, s0, sizes, hp), _segment(g_a, i, s0, sizes, hp)
        m = _segment(m_a, i, s0, sizes, hp)
        lr, keep = per[i, 0], per[i, 1]
        for j in range(p.shape[0]):
            grad = g[j]
            mj = m[j]
            p[j] = p[j] * keep - lr * np.sign(b1 * mj + c1 * grad)
            m[j] = b2 * mj + c2 * grad


@kernel
def _clip_value_kernel(g_a, sizes, hp):
    high, low = hp[0], hp[1]
    tensor, start = _work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        g = _segment(g_a, i, s0, sizes, hp)
        for j in range(g.shape[0]):
            x = g[j]
            # compare-and-replace keeps NaN as NaN, like Burn's mask_fill
            if x > high:
                g[j] = high
            elif x < low:
                g[j] = low


@kernel
def _sum_squares_kernel(g_a, sizes, witness):
    tensor, start = _work_items(sizes)
    partial = np.zeros(tensor.shape[0], np.float64)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        g = _segment(g_a, i, s0, sizes, witness)
        acc = 0.0
        for j in range(g.shape[0]):
            x = np.float64(g[j])
            acc += x * x
        partial[w] = acc
    # per-tensor totals summed in item order: the result does not depend on thread count
    out = np.zeros(sizes.shape[0], np.float64)
    for w in range(tensor.shape[0]):
        out[tensor[w]] += partial[w]
    return out


@kernel
def _scale_kernel(g_a, sizes, coef):
    tensor, start = _work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        c = coef[i]
        if c == 1:
            continue  # unclipped tensors are not rewritten
        g = _segment(g_a, i, s0, sizes, coef)
        for j in range(g.shape[0]):
            g[j] = g[j] * c


# --- public updates -----------------------------------------------------------------------


def sgd_update(
    params: Arrays,
    grads: Arrays,
    momentum_bufs: Arrays | None,
    lr: float | Sequence[float],
    weight_decay: float = 0.0,
    momentum: float = 0.0,
    dampening: float = 0.0,
    nesterov: bool = False,
    first_step_flags: bool | Sequence[bool] = False,
) -> None:
    """SGD with optional L2 weight decay and (Nesterov) momentum, in place.

    Update rule: :class:`ember.optim.Sgd` (its docstring); no momentum buffers means plain SGD.

    Args:
        params: Parameters, updated in place.
        grads: Gradients, same shapes.
        momentum_bufs: Velocity buffers (zeros initially), updated in place; or None.
        lr: Learning rate, for the group or per tensor.
        weight_decay: L2 penalty λ added to the gradient.
        momentum: μ; must be 0 when ``momentum_bufs`` is None.
        dampening: d.
        nesterov: Use the Nesterov look-ahead gradient.
        first_step_flags: Whether this is each tensor's first step (velocity = gradient).
    """
    op = "sgd_update"
    p = pack_arrays(params, op=op, what="params")
    n = len(p)
    g = _matching(op, "grads", grads, p, writeable=False)
    momentum = finite_scalar(op, "momentum", momentum)
    has_momentum = momentum_bufs is not None
    if not has_momentum and (momentum != 0.0 or nesterov):
        raise ValueError(f"{op}: momentum={momentum!r}, nesterov={nesterov!r} need `momentum_bufs`")
    b = _matching(op, "momentum_bufs", momentum_bufs, p) if has_momentum else p
    rates = per_tensor(op, "lr", lr, n)
    first = np.broadcast_to(np.asarray(first_step_flags, dtype=np.bool_), (n,))
    if n == 0:
        return
    hp = np.array(
        [
            finite_scalar(op, "weight_decay", weight_decay),
            momentum,
            1.0 - finite_scalar(op, "dampening", dampening),
        ],
        dtype=p.dtype,
    )
    _sgd_kernel(
        p.addresses,
        g.addresses,
        b.addresses,
        p.sizes,
        hp,
        rates.astype(p.dtype),
        np.ascontiguousarray(first),
        has_momentum,
        bool(nesterov),
    )


def adam_update(
    params: Arrays,
    grads: Arrays,
    m: Arrays,
    v: Arrays,
    vmax: Arrays | None,
    lr: float | Sequence[float],
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-5,
    weight_decay: float = 0.0,
    decoupled: bool = False,
    cautious: bool = False,
    steps: int | Sequence[int] = 1,
) -> None:
    """Adam / AdamW / AMSGrad, in place.

    Update rule: :class:`ember.optim.Adam`, and :class:`ember.optim.AdamW` when ``decoupled``
    (both computed in Adam's form, ε added after the bias correction).

    Args:
        params: Parameters, updated in place.
        grads: Gradients.
        m: First-moment buffers (zeros initially), updated in place.
        v: Second-moment buffers (zeros initially), updated in place.
        vmax: AMSGrad running maxima of v (zeros initially), or None for plain Adam.
        lr: Learning rate, for the group or per tensor.
        beta1: β1 in [0, 1).
        beta2: β2 in [0, 1).
        eps: ε added to the (bias-corrected) root of v.
        weight_decay: λ; L2 when not ``decoupled``, decoupled decay otherwise.
        decoupled: AdamW-style decay.
        cautious: Cautious decoupled decay (requires ``decoupled``).
        steps: t ≥ 1 for each tensor (1 on its first update).
    """
    op = "adam_update"
    p = pack_arrays(params, op=op, what="params")
    n = len(p)
    g = _matching(op, "grads", grads, p, writeable=False)
    mt = _matching(op, "m", m, p)
    vt = _matching(op, "v", v, p)
    amsgrad = vmax is not None
    vmt = _matching(op, "vmax", vmax, p) if amsgrad else vt
    per, betas, mode = adam_arguments(op, n, lr, beta1, beta2, eps, weight_decay, decoupled, cautious, steps)
    if n == 0:
        return
    hp = np.array([*betas, 0.0], dtype=p.dtype)  # the trailing 0 is the kernel's typed zero
    per = per.astype(p.dtype)
    _adam_kernel(
        p.addresses, g.addresses, mt.addresses, vt.addresses, vmt.addresses, p.sizes, hp, per, amsgrad, mode
    )


def rmsprop_update(
    params: Arrays,
    grads: Arrays,
    square_avg: Arrays,
    grad_avg: Arrays | None,
    momentum_bufs: Arrays | None,
    lr: float | Sequence[float],
    alpha: float = 0.99,
    eps: float = 1e-5,
    weight_decay: float = 0.0,
    momentum: float = 0.9,
    centered: bool = False,
) -> None:
    """RMSprop, optionally centered and with momentum, in place.

    Update rule: :class:`ember.optim.RmsProp` (its docstring).

    Args:
        params: Parameters, updated in place.
        grads: Gradients.
        square_avg: s buffers (zeros initially), updated in place.
        grad_avg: ḡ buffers when ``centered`` (zeros initially), else None.
        momentum_bufs: b buffers when ``momentum`` > 0 (zeros initially), else None.
        lr: Learning rate, for the group or per tensor.
        alpha: Smoothing constant α in [0, 1).
        eps: ε added to the root.
        weight_decay: L2 penalty λ.
        momentum: μ ≥ 0; 0 disables the momentum buffer.
        centered: Subtract the squared mean gradient.
    """
    op = "rmsprop_update"
    p = pack_arrays(params, op=op, what="params")
    n = len(p)
    g = _matching(op, "grads", grads, p, writeable=False)
    s = _matching(op, "square_avg", square_avg, p)
    ga = _matching(op, "grad_avg", grad_avg, p) if centered else s
    momentum = finite_scalar(op, "momentum", momentum)
    has_momentum = momentum > 0.0
    b = _matching(op, "momentum_bufs", momentum_bufs, p) if has_momentum else s
    alpha = finite_scalar(op, "alpha", alpha, unit_interval=True)
    rates = per_tensor(op, "lr", lr, n)
    if n == 0:
        return
    hp = np.array(
        [
            alpha,
            1.0 - alpha,
            finite_scalar(op, "eps", eps),
            momentum,
            finite_scalar(op, "weight_decay", weight_decay),
        ],
        dtype=p.dtype,
    )
    _rmsprop_kernel(
        p.addresses,
        g.addresses,
        s.addresses,
        ga.addresses,
        b.addresses,
        p.sizes,
        hp,
        rates.astype(p.dtype),
        bool(centered),
        has_momentum,
    )


def adagrad_update(
    params: Arrays,
    grads: Arrays,
    sums: Arrays,
    lr: float | Sequence[float],
    lr_decay: float = 0.0,
    eps: float = 1e-5,
    weight_decay: float = 0.0,
    steps: int | Sequence[int] = 1,
) -> None:
    """AdaGrad with learning-rate decay, in place.

    Update rule: :class:`ember.optim.AdaGrad` (its docstring).

    Args:
        params: Parameters, updated in place.
        grads: Gradients.
        sums: Σ buffers (zeros initially), updated in place.
        lr: Learning rate, for the group or per tensor.
        lr_decay: Decay of the rate per step.
        eps: ε added to the root.
        weight_decay: L2 penalty λ.
        steps: t ≥ 1 for each tensor.
    """
    op = "adagrad_update"
    p = pack_arrays(params, op=op, what="params")
    n = len(p)
    g = _matching(op, "grads", grads, p, writeable=False)
    s = _matching(op, "sums", sums, p)
    rates = per_tensor(op, "lr", lr, n)
    t = step_numbers(op, "steps", steps, n)
    lr_decay = finite_scalar(op, "lr_decay", lr_decay)
    if n == 0:
        return
    clr = rates / (1.0 + (t - 1.0) * lr_decay)
    hp = np.array(
        [finite_scalar(op, "eps", eps), finite_scalar(op, "weight_decay", weight_decay)], dtype=p.dtype
    )
    _adagrad_kernel(p.addresses, g.addresses, s.addresses, p.sizes, hp, clr.astype(p.dtype))


def lion_update(
    params: Arrays,
    grads: Arrays,
    exp_avg: Arrays,
    lr: float | Sequence[float],
    beta1: float = 0.9,
    beta2: float = 0.99,
    weight_decay: float = 0.0,
) -> None:
    """Lion, in place.

    Update rule: :class:`ember.optim.Lion` (its docstring).

    Args:
        params: Parameters, updated in place.
        grads: Gradients.
        exp_avg: Momentum buffers m (zeros initially), updated in place.
        lr: Learning rate, for the group or per tensor.
        beta1: Interpolation factor of the update direction, in [0, 1).
        beta2: Decay of the momentum, in [0, 1).
        weight_decay: Decoupled decay λ.
    """
    op = "lion_update"
    p = pack_arrays(params, op=op, what="params")
    n = len(p)
    g = _matching(op, "grads", grads, p, writeable=False)
    mt = _matching(op, "exp_avg", exp_avg, p)
    beta1 = finite_scalar(op, "beta1", beta1, unit_interval=True)
    beta2 = finite_scalar(op, "beta2", beta2, unit_interval=True)
    rates = per_tensor(op, "lr", lr, n)
    wd = finite_scalar(op, "weight_decay", weight_decay)
    if n == 0:
        return
    per = np.stack([rates, 1.0 - rates * wd], axis=1).astype(p.dtype)
    hp = np.array([beta1, 1.0 - beta1, beta2, 1.0 - beta2], dtype=p.dtype)
    _lion_kernel(p.addresses, g.addresses, mt.addresses, p.sizes, hp, per)


# --- gradient clipping --------------------------------------------------------------------


def clip_by_value(grads: Arrays, threshold: float) -> None:
    """Clip by value, in place; rule: ``Value`` in :mod:`ember.optim.clipping`.

    Args:
        grads: Gradients, updated in place.
        threshold: Non-negative bound.
    """
    op = "clip_by_value"
    g = pack_arrays(grads, op=op, what="grads")
    threshold = finite_scalar(op, "threshold", threshold, minimum=0.0)
    if len(g):
        _clip_value_kernel(g.addresses, g.sizes, np.array([threshold, -threshold], g.dtype))


def _squares(g: ArrayTable) -> np.ndarray:
    """Per-tensor sums of squares, float64."""
    if not len(g):
        return np.zeros(0)
    return _sum_squares_kernel(g.addresses, g.sizes, np.zeros(1, g.dtype))


def global_norm(grads: Arrays) -> float:
    """The L2 norm of all gradients together, ``sqrt(Σ_i ‖g_i‖²)``, accumulated in float64.

    The sum runs in a fixed order, so the result does not depend on the thread count.

    Args:
        grads: Gradients (read only).
    """
    g = pack_arrays(grads, writeable=False, op="global_norm", what="grads")
    return float(np.sqrt(np.sum(_squares(g))))


def clip_by_norm_per_tensor(grads: Arrays, max_norm: float) -> np.ndarray:
    """Clip each tensor by its own norm, in place; rule: ``Norm`` in :mod:`ember.optim.clipping`.

    Args:
        grads: Gradients, updated in place.
        max_norm: Largest allowed norm per tensor, >= 0.

    Returns:
        The per-tensor norms before clipping (float64).
    """
    op = "clip_by_norm_per_tensor"
    g = pack_arrays(grads, op=op, what="grads")
    max_norm = finite_scalar(op, "max_norm", max_norm, minimum=0.0)
    norms = np.sqrt(_squares(g))
    if len(g):
        tiny = float(np.finfo(g.dtype).tiny)
        coef = np.minimum(1.0, max_norm / (norms + tiny)).astype(g.dtype)
        _scale_kernel(g.addresses, g.sizes, coef)
    return norms


def clip_by_global_norm(grads: Arrays, max_norm: float, eps: float | None = None) -> float:
    """Clip all tensors by their global norm, in place; rule: ``GlobalNorm`` in
    :mod:`ember.optim.clipping`, with ``eps`` in the place of its ``tiny`` (PyTorch's
    ``clip_grad_norm_`` uses 1e-6). A NaN norm makes every gradient NaN, as in PyTorch.

    Args:
        grads: Gradients, updated in place.
        max_norm: Largest allowed global norm, >= 0.
        eps: Added to the norm before dividing; default ``finfo(dtype).tiny``.

    Returns:
        The global norm before clipping.
    """
    op = "clip_by_global_norm"
    g = pack_arrays(grads, op=op, what="grads")
    max_norm = finite_scalar(op, "max_norm", max_norm, minimum=0.0)
    total = float(np.sqrt(np.sum(_squares(g))))
    if len(g):
        eps = float(np.finfo(g.dtype).tiny) if eps is None else finite_scalar(op, "eps", eps)
        coef = np.minimum(1.0, max_norm / (total + eps))  # np.minimum keeps a NaN norm NaN
        _scale_kernel(g.addresses, g.sizes, np.full(len(g), coef, dtype=g.dtype))
    return total
