"""Fused multi-tensor optimizer kernels for the ``cpu`` backend (Numba).

Every kernel updates a whole parameter group **in place** in **one** call: the tensors of
the group are cut into (tensor, chunk) work items and a parallel loop runs over all items, so
each element of every parameter, gradient and state buffer is read and written once per step,
whatever the number of tensors, with no per-parameter Python op chain and no temporary arrays.

The kernels take the data addresses of validated tables (:mod:`.optim_tables`) and the
coefficients :class:`~ember.kernels.families.optimizer.OptimizerOps`'s args objects derive
(:mod:`ember.kernels.families.optimizer_args`), rounded to the arrays' dtype once per tensor;
the element-wise math runs in the arrays' dtype. The host side, which packs the tables and
derives the coefficients, is :class:`~ember.kernels.cpu.optimizer_ops.CpuOptimizerOps`.
Arrays must not alias each other (a parameter passed as its own state buffer gives
meaningless results).

Each update rule is stated once, in its optimizer's docstring in ``ember/optim/``, and written
once in code, in the composed default of ``ember.kernels.families.optimizer``, which the tests
compare every kernel with; every kernel here names the rule it computes. The kernels compile
with ember's shared options (:mod:`ember.kernels.cpu.jit`): fast-math re-association/contraction
but not ``nnan``/``ninf``, so NaN and infinity propagate as in IEEE arithmetic.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange, types
from numba.extending import intrinsic

# jit.py sets the shared cache directory, thread count and fast-math flags; import first.
from ember.kernels.cpu.jit import kernel, serial

__all__ = [
    "adagrad_kernel",
    "adam_kernel",
    "lion_kernel",
    "rmsprop_kernel",
    "segment",
    "sgd_kernel",
    "work_items",
]

_CHUNK = 1 << 14  # elements per work item: 64 KiB of float32, small enough to balance cores


# --- Numba building blocks ----------------------------------------------------------------


@intrinsic
def _as_pointer(typingctx, address, witness):
    """Reinterpret an int64 address as a pointer to ``witness``'s element type."""
    signature = types.CPointer(witness.dtype)(address, witness)

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

    return signature, codegen


@serial
def work_items(sizes):
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
def segment(addresses, i, start, sizes, witness):
    """Elements ``[start, start + _CHUNK)`` (clipped to ``n``) of tensor ``i``. Looping
    ``range(len(segment))`` over a slice, rather than ``range(start, stop)`` over the
    whole tensor, is what lets LLVM vectorise the loop."""
    n = sizes[i]
    whole = numba.carray(_as_pointer(addresses[i], witness), (n,))
    return whole[start : min(start + _CHUNK, n)]


# --- kernels (one parallel loop over all work items of all tensors) -----------------------


# Update rule: the docstring in ember/optim/sgd.py (Sgd).
@kernel
def sgd_kernel(p_a, g_a, b_a, sizes, hp, lr, first, has_momentum, nesterov):
    wd, mu, keep = hp[0], hp[1], hp[2]
    tensor, start = work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        p, g = segment(p_a, i, s0, sizes, hp), segment(g_a, i, s0, sizes, hp)
        b = segment(b_a, i, s0, sizes, hp)
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
def adam_kernel(p_a, g_a, m_a, v_a, vmax_a, sizes, hp, per, amsgrad, mode):
    b1, c1, b2, c2, zero = hp[0], hp[1], hp[2], hp[3], hp[4]
    tensor, start = work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        p, g = segment(p_a, i, s0, sizes, hp), segment(g_a, i, s0, sizes, hp)
        m, v = segment(m_a, i, s0, sizes, hp), segment(v_a, i, s0, sizes, hp)
        vmax = segment(vmax_a, i, s0, sizes, hp)
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
def rmsprop_kernel(p_a, g_a, s_a, ga_a, b_a, sizes, hp, lr, centered, has_momentum):
    alpha, c_alpha, eps, mu, wd = hp[0], hp[1], hp[2], hp[3], hp[4]
    tensor, start = work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        p, g = segment(p_a, i, s0, sizes, hp), segment(g_a, i, s0, sizes, hp)
        s = segment(s_a, i, s0, sizes, hp)
        ga, b = segment(ga_a, i, s0, sizes, hp), segment(b_a, i, s0, sizes, hp)
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
def adagrad_kernel(p_a, g_a, s_a, sizes, hp, clr):
    eps, wd = hp[0], hp[1]
    tensor, start = work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        p, g = segment(p_a, i, s0, sizes, hp), segment(g_a, i, s0, sizes, hp)
        s = segment(s_a, i, s0, sizes, hp)
        rate = clr[i]
        for j in range(p.shape[0]):
            grad = g[j] + wd * p[j]
            total = s[j] + grad * grad
            s[j] = total
            p[j] -= rate * grad / (np.sqrt(total) + eps)


# Update rule: the docstring in ember/optim/lion.py (Lion).
@kernel
def lion_kernel(p_a, g_a, m_a, sizes, hp, per):
    b1, c1, b2, c2 = hp[0], hp[1], hp[2], hp[3]
    tensor, start = work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        p, g = segment(p_a, i, s0, sizes, hp), segment(g_a, i, s0, sizes, hp)
        m = segment(m_a, i, s0, sizes, hp)
        lr, keep = per[i, 0], per[i, 1]
        for j in range(p.shape[0]):
            grad = g[j]
            mj = m[j]
            p[j] = p[j] * keep - lr * np.sign(b1 * mj + c1 * grad)
            m[j] = b2 * mj + c2 * grad
