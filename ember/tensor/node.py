"""Autodiff graph nodes.

A node is created only when an op has an input that requires grad and grad mode is on. It
keeps the parents' nodes (never their data), their shapes and dtypes (to undo broadcasting
and casts in one place, in the engine), and the context its VJP rule needs; the engine drops
that context as soon as the rule has run, so saved activations are freed during backward.
"""

from __future__ import annotations

import itertools
import traceback

from ember.tensor.grad_mode import is_anomaly_enabled

_ids = itertools.count()


class Node:
    __slots__ = ("__weakref__", "ctx", "freed", "id", "inputs", "op", "origin")

    def __init__(self, op: str | None, inputs: tuple = (), ctx=None):
        self.id = next(_ids)
        self.op = op  # None for a leaf (a tensor marked with require_grad)
        self.inputs = inputs  # tuple of (parent Node | None, shape, dtype)
        self.ctx = ctx
        self.freed = False
        # Where the op was called, kept only under detect_anomaly() (it costs a stack walk).
        self.origin = traceback.extract_stack(limit=12)[:-3] if (op and is_anomaly_enabled()) else None

    @property
    def is_leaf(self) -> bool:
        return self.op is None

    def __repr__(self) -> str:
        return f"Node({self.op or 'leaf'}#{self.id})"


class Ctx:
    """Attribute bag holding what a VJP rule needs (saved tensors and op arguments)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)
