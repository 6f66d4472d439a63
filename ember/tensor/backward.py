"""The reverse-mode engine: walks the graph from a tensor and returns ``Gradients``."""

from __future__ import annotations

import traceback

from ember.kernels.fusion.lazy import realize_together
from ember.tensor.creation import ones_like
from ember.tensor.grad_mode import is_anomaly_enabled, no_grad
from ember.tensor.gradients import Gradients
from ember.tensor.ops._core import shape_str
from ember.tensor.sparse import RowSparse, add_grads
from ember.tensor.vjp import VJP

# Rules that pass a row-sparse gradient through unchanged in kind (they only call g.to()).
# Any other rule receiving one gets it densified first; leaves keep it sparse.
_SPARSE_THROUGH = frozenset({"cast", "to_device"})


def _topological(root):
    """Nodes reachable from ``root``, each after every node that consumes it."""
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if node.id in seen:
            continue
        seen.add(node.id)
        stack.append((node, True))
        for parent, _, _ in node.inputs:
            if parent is not None and parent.id not in seen:
                stack.append((parent, False))
    order.reverse()
    return order


def sum_to_shape(grads: list, i: int, shape):
    """Undo broadcasting: ``grads[i]`` summed down to ``shape`` (the one place this happens).

    It is taken out of ``grads`` first, so that while the sum runs nothing but the sum holds the
    unreduced gradient: when that is a pending fusion chain, the sum reads it as it goes and it
    is never stored."""
    g, grads[i] = grads[i], None
    if g.shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + d for d, s in enumerate(shape) if s == 1 and g.shape[lead + d] != 1
    )
    if axes:
        g = g.sum(axes, keepdim=True)  # (rebinding `g` lets go of the unreduced gradient)
    return g.reshape(shape)


def backward(root, grad=None) -> Gradients:
    node = root._node
    if node is None:
        raise RuntimeError(
            "backward: this tensor does not require grad (no input was marked with "
            "require_grad(), or it was computed under no_grad())"
        )
    if grad is None:
        if root.numel != 1:
            raise RuntimeError(
                f"backward: tensor of shape {shape_str(root.shape)} is not a scalar; "
                f"pass a seed gradient of the same shape: t.backward(grad)"
            )
        grad = ones_like(root)
    elif tuple(grad.shape) != root.shape:
        raise ValueError(
            f"backward: seed gradient has shape {shape_str(grad.shape)}, expected {shape_str(root.shape)}"
        )
    result = _propagate(node, grad.detach().to(root.dtype))
    # the gradients still pending fusion chains run together (a norm's input and weight
    # gradients read the same rows, in one kernel); _propagate's locals are gone by now, so
    # nothing but the gradients holds the chains' intermediates
    realize_together([t._arr for t in result._by_node.values() if type(t) is not RowSparse])
    return result


def _propagate(node, seed) -> Gradients:
    """The gradients of the leaves below ``node``, from ``seed`` (its gradient)."""
    result = Gradients()
    anomaly = is_anomaly_enabled()
    pending = {node.id: seed}
    with no_grad():
        for n in _topological(node):
            g = pending.pop(n.id, None)
            if g is None:
                continue
            if n.op is None:
                result._put(n.id, g)
                continue
            if n.freed:
                raise RuntimeError(
                    f"backward: the graph through op '{n.op}' was already freed by an earlier "
                    f"backward(); run the forward pass again to backpropagate a second time"
                )
            if type(g) is RowSparse and n.op not in _SPARSE_THROUGH:
                g = g.to_dense()
            grads = list(VJP[n.op](n, g))
            n.ctx = None  # free saved activations as soon as they are consumed
            n.freed = True
            for i, (parent, shape, dtype) in enumerate(n.inputs):
                if parent is None or grads[i] is None:
                    continue
                if type(grads[i]) is RowSparse:
                    ig, grads[i] = grads[i], None
                else:
                    ig = sum_to_shape(grads, i, shape)
                if ig.dtype is not dtype:
                    ig = ig.to(dtype)
                if anomaly and not bool(ig.isfinite().all()):
                    where = (
                        "".join(traceback.format_list(n.origin)) if n.origin else "  (origin not recorded)\n"
                    )
                    raise FloatingPointError(
                        f"backward: op '{n.op}' produced a non-finite (NaN/Inf) gradient "
                        f"for an input of shape {shape_str(shape)}; the op was created at:\n{where}"
                    )
                prev = pending.get(parent.id)
                pending[parent.id] = ig if prev is None else add_grads(prev, ig)
    return result
