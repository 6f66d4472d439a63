"""Gradient clipping for the ``cpu`` backend: multi-tensor Numba kernels, in place.

One parallel loop over the (tensor, chunk) work items of all the gradients
(:func:`.optim_updates.work_items`), as the optimizer updates; norms are accumulated in
float64 in a fixed order, so they do not depend on the thread count. The rules are stated in
:mod:`ember.optim.clipping`; each function names its own.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ember.kernels.arg_checks import finite_scalar
from ember.kernels.cpu.jit import kernel
from ember.kernels.cpu.optim_tables import Arrays, ArrayTable, pack_arrays
from ember.kernels.cpu.optim_updates import segment, work_items

__all__ = ["clip_by_global_norm", "clip_by_norm_per_tensor", "clip_by_value", "global_norm"]


@kernel
def _clip_value_kernel(g_a, sizes, hp):
    high, low = hp[0], hp[1]
    tensor, start = work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        g = segment(g_a, i, s0, sizes, hp)
        for j in range(g.shape[0]):
            x = g[j]
            # compare-and-replace keeps NaN as NaN, like Burn's mask_fill
            if x > high:
                g[j] = high
            elif x < low:
                g[j] = low


@kernel
def _sum_squares_kernel(g_a, sizes, witness):
    tensor, start = work_items(sizes)
    partial = np.zeros(tensor.shape[0], np.float64)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        g = segment(g_a, i, s0, sizes, witness)
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
    tensor, start = work_items(sizes)
    for w in prange(tensor.shape[0]):
        i, s0 = tensor[w], start[w]
        c = coef[i]
        if c == 1:
            continue  # unclipped tensors are not rewritten
        g = segment(g_a, i, s0, sizes, coef)
        for j in range(g.shape[0]):
            g[j] = g[j] * c


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
