"""The ``cpu`` backend's chain runner: a fusion graph compiled into one Numba loop nest.

:func:`run` takes the root :class:`~ember.kernels.fusion.lazy.Lazy` of a graph, lays out its
pending ops in order (each computed once, however many ops read it) with the computed arrays
they read as the kernel's inputs, and runs a kernel that computes the root element by element
in one pass over memory. Inputs are broadcast to the root's shape as strided views and
adjacent dimensions that every array steps through alike are merged, so most chains run as
one flat loop. The kernel is keyed by the graph's *relative* signature — the ops, their wiring
and the rank — not by sizes or strides (Numba specialises it per dtype and layout), so a
training step's chains compile once; its source is written under the kernel cache directory
so a second process loads the machine code from Numba's disk cache. The outer loop is split
over ember's threads (:mod:`.threadpool`).
"""

from __future__ import annotations

import math

import numpy as np

from ember.kernels.fusion import plan
from ember.kernels.fusion.engine import GEMM_OPS
from ember.kernels.fusion.lazy import Lazy, realize

from . import fused_epilogue, fused_reduction, fused_rows, staggered, threadpool
from .fused_codegen import (
    PARALLEL_MIN_ELEMENTS,
    chain_source,
    coalesced,
    load_kernel,
    packed_operands,
    thread_slices,
)

__all__ = ["KERNELS", "Runner", "compiled_count", "run"]

KERNELS = plan.KernelCache("cpu")
"""The compiled chain kernels of this process (see :class:`~ember.kernels.fusion.plan.KernelCache`)."""


class Runner:
    """The chain runner of one backend (what ``CpuBackend.chain_runner`` gives)."""

    def __init__(self, backend):
        self.backend = backend

    fuses_gemm = True
    """The engine records 2-D matrix products for chains to take as their source (see
    :mod:`.fused_epilogue`)."""

    def run_group(self, roots: list) -> int:
        """Compute ``roots`` (pending, none reading another) as row programs, each of the roots
        over rows of one shape (a chain of that shape, or its sum over the leading axes) that
        form one (see :func:`.fused_rows.run_group`); returns how many it computed (the caller
        computes the others)."""
        by_rows: dict = {}
        for root in roots:
            rows = root.args[0].shape if ":columns:" in root.op else root.shape
            by_rows.setdefault(rows, []).append(root)
        done = 0
        for group in by_rows.values():
            values = fused_rows.run_group(group, self.backend) if len(group) > 1 else None
            for root, value in zip(group, values or ()):
                root.settle(value)
                done += 1
        return done

    def __call__(self, root: Lazy) -> np.ndarray:
        if root.op.startswith("reduce:"):
            return fused_reduction.run(root, self.backend)
        if root.op == "expand":  # computed on its own: the broadcast view eager gives
            return self.backend.expand(realize(root.args[0]), root.shape)
        if root.op in GEMM_OPS:  # a product no chain took: computed, then viewed in its shape
            if root.op == "matmul":
                return self.backend.matmul(*root.args).reshape(root.shape)
            return self.backend.linear(*root.args).reshape(root.shape)
        return run(root, self.backend)


def run(root: Lazy, backend) -> np.ndarray:
    """Compute ``root`` and every pending op it depends on in one kernel; the intermediate
    values something else still holds are kept as well (set on their nodes). A chain not
    compiled yet runs op by op through ``backend`` (see :class:`~ember.kernels.fusion.plan.KernelCache`)."""
    if math.prod(root.shape) == 0:
        return np.empty(root.shape, root.dtype)
    if plan.single_op(root):
        return plan.eager_op(root.op, [realize(a) for a in root.args], root.dtype, backend)
    value = fused_rows.run(root, backend)
    if value is None:
        value = fused_epilogue.run(root, backend, KERNELS)
    if value is not None:
        return value
    nodes, steps, inputs = plan.layout(root)
    held = plan.held_elsewhere(nodes, steps)
    outputs = tuple(held) + (len(steps) - 1,)
    arrays = [np.broadcast_to(a, root.shape) for a in inputs if a.size != 1]
    # the outputs are C-contiguous, so they merge wherever the inputs do
    shape, views = coalesced(root.shape, arrays)
    masks, operands = packed_operands(inputs, iter(views))
    signature = (tuple((op, refs, dtype.name) for op, refs, dtype in steps), outputs, masks, len(shape))
    fn = KERNELS.lookup(signature, lambda: load_kernel(chain_source(steps, outputs, masks, len(shape))))
    if fn is None:
        return plan.one_by_one(nodes, steps, inputs, backend)
    outs = staggered.empty(root.shape, [steps[j][2] for j in outputs], arrays)
    out_views = [o.reshape(shape) for o in outs]
    n = shape[0]
    tasks = min(threadpool.pool().threads, n) if outs[0].size >= PARALLEL_MIN_ELEMENTS else 1
    bounds = [n * t // tasks for t in range(tasks + 1)]

    def task(lo: int, hi: int):
        fn(*(o[lo:hi] for o in out_views), *thread_slices(operands, masks, lo, hi), hi - lo, *shape[1:])

    if tasks <= 1:
        task(0, n)
    else:
        threadpool.pool().run([lambda lo=lo, hi=hi: task(lo, hi) for lo, hi in zip(bounds, bounds[1:])])
    for j, value in zip(held, outs):
        nodes[j].settle(value)
    return outs[-1]


def compiled_count() -> int:
    """How many chain kernels this process has loaded."""
    return len(KERNELS)
