"""A value not computed yet: one element-wise op of a fusion graph.

A :class:`Lazy` knows its shape and dtype (the tensor layer checks shapes and dtypes when the op
is recorded, so errors still come from the op that caused them) and holds its operands: other
``Lazy`` values or backend arrays. :meth:`Lazy.realize` computes it with every unrealized op it
depends on in one kernel, keeps the result and lets go of its operands.
"""

from __future__ import annotations

import math
import sys
import threading
import weakref

from ember.kernels.fusion.log import LOG

__all__ = ["Lazy", "flush_all", "pending_count", "pending_readers", "realize", "realize_together"]

_LIVE: weakref.WeakSet = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


class Lazy:
    """The element-wise op ``op`` (``"unary:exp"``, ``"binary:add"``, ``"where"``,
    ``"cast:float32"``) of ``args``, of ``shape`` and NumPy ``dtype``, computed by ``runner``."""

    __slots__ = ("__weakref__", "args", "depth", "dtype", "op", "runner", "shape", "value")

    def __init__(self, op: str, args: tuple, shape: tuple, dtype, runner):
        self.op = op
        self.args = args
        self.shape = shape
        self.dtype = dtype
        self.runner = runner
        self.value = None
        self.depth = 1 + max((a.depth for a in args if type(a) is Lazy and a.value is None), default=0)
        with _LIVE_LOCK:
            _LIVE.add(self)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def realize(self):
        """The computed array (computed now, with the ops it depends on, if not yet)."""
        value = self.value
        if value is None:
            if LOG.medium:
                LOG.flush(self)
            value = self.runner(self)
            self.settle(value)
        return value

    def settle(self, value) -> None:
        """Keep ``value`` as this op's result and let go of the operands."""
        self.value = value
        self.args = ()
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def __array__(self, dtype=None, copy=None):
        value = self.realize()
        return value if dtype is None else value.astype(dtype)

    def __repr__(self) -> str:
        state = "computed" if self.value is not None else f"pending, depth {self.depth}"
        return f"Lazy({self.op}, shape={self.shape}, dtype={self.dtype}, {state})"


def realize(x):
    """``x`` itself, or the computed array of a :class:`Lazy`."""
    return x.realize() if type(x) is Lazy else x


def realize_together(values) -> None:
    """Compute the pending values among ``values`` (the gradients one backward pass leaves)
    together where their runner can (its ``run_group``: a norm's input gradient and its weight's
    read the same rows, one kernel), the others one by one."""
    pending = [v for v in values if type(v) is Lazy and v.value is None]
    if len(pending) > 1:
        runner = pending[0].runner
        group = getattr(runner, "run_group", None)
        if group is not None and all(v.runner is runner for v in pending):
            entry = LOG.flush_entry(pending[-1], sys._getframe(1)) if LOG.medium else None
            done = group(pending)  # how many it computed (and settled)
            if done and entry is not None:
                entry["roots"] = done
                LOG.write(entry)
    for v in pending:
        v.realize()


def flush_all(cause: str | None = None) -> int:
    """Compute every pending value (before arrays are written in place: an optimizer step);
    returns how many were pending. ``cause`` names the reason in the fusion log (else its
    caller is named)."""
    with _LIVE_LOCK:
        pending = [node for node in _LIVE if node.value is None]
    for node in pending:
        node.realize()
    return len(pending)


def pending_count() -> int:
    """How many values are recorded and not computed yet."""
    with _LIVE_LOCK:
        return sum(1 for node in _LIVE if node.value is None)


def pending_readers(inside) -> dict:
    """``{id(value): n}``: how many references the pending values not in ``inside`` (ids)
    hold to each value in their operands."""
    with _LIVE_LOCK:
        live = [node for node in _LIVE if node.value is None and id(node) not in inside]
    counts: dict = {}
    for node in live:
        for arg in node.args:
            if type(arg) is Lazy:
                counts[id(arg)] = counts.get(id(arg), 0) + 1
    return counts
