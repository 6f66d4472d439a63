"""The ``cpu`` backend's reductions fused on read: a sum, max or min whose input is a pending
element-wise chain computes the chain element by element inside its own loop, so the chain's
values are never stored (unless something else holds them: those are written in the same pass).

Two patterns, the ones composed norms and broadcasting gradients make:

* **rows** — over the last axis (``(x * x).mean(-1)`` of an RMSNorm, the max and sum of a
  softmax): one accumulator per row.
* **columns** — over the leading axes (the gradient of a bias or a norm's scale, summed back
  over the batch): the inner loop runs along the kept axes, so it vectorises, and each thread
  accumulates its share of the rows into its own buffer; the buffers are combined at the end.

The kernel is generated from the chain's steps like :mod:`.fused_chain`'s and cached by the same
relative signature plus the pattern.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ember.kernels.fusion import plan
from ember.kernels.fusion.lazy import Lazy

from . import fused_codegen as codegen
from . import fused_rows, staggered, threadpool

__all__ = ["run"]

KERNELS = plan.KernelCache("cpu")
"""The compiled reduction kernels of this process."""


def _axes(kind: str, ndim: int) -> tuple:
    if kind == "rows":
        return (ndim - 1,)
    return tuple(range(int(kind.split(":")[1])))


def _source(op: str, rows: bool, steps: list, outputs: tuple, masks: tuple, lead: int, trail: int) -> str:
    """The kernel ``chain(red, out0.., x0.., n0..)``: ``red`` holds one accumulator per leading
    index (rows) or per trailing index (columns: a thread's partial results); ``outN`` are the
    chain values something else holds."""
    t = codegen.TYPES[steps[-1][2].name]
    last = f"t{len(steps) - 1}"
    params = ["red"] + [f"out{k}" for k in range(len(outputs))] + [f"x{i}" for i in range(len(masks))]
    writes = [(f"out{k}", j) for k, j in enumerate(outputs)]
    rank = lead + trail
    if rows:
        cell = f"red[{', '.join(f'i{d}' for d in range(lead))}]"
        at = {
            f"before_{lead}": [f"acc = {t}({codegen.REDUCE_START[op]})"],
            "inner": [f"acc = {codegen.REDUCE_UPDATE[op].format(acc='acc', t=last)}"],
            f"after_{lead}": [f"{cell} = acc"],
        }
    else:
        cell = f"red[{', '.join(f'i{d}' for d in range(lead, rank))}]"
        at = {"inner": [f"{cell} = {codegen.REDUCE_UPDATE[op].format(acc=cell, t=last)}"]}
    # the sum's additions alone may be reassociated (ops.accumulate), not the chain's ops
    return codegen.kernel_source(params, steps, masks, rank, writes, **at)


def _held(nodes: list, steps: list) -> list:
    """The chain values to write: those :func:`plan.held_elsewhere` finds, and the chain's last
    value when something besides the reduction holds it (the tape, for a max)."""
    held = plan.held_elsewhere(nodes, steps)
    # references to the last node: the reduction's operands, the list `nodes`, getrefcount's argument
    if sys.getrefcount(nodes[-1]) - 3 > 0:
        held.append(len(nodes) - 1)
    return held


def run(root: Lazy, backend) -> np.ndarray:
    """Compute the reduction ``root`` (``"reduce:<op>:<rows|columns:k>"``) of its pending
    chain in one pass."""
    _, op, kind = root.op.split(":", 2)
    source = root.args[0]
    axes = _axes(kind, len(source.shape))
    keepdim = len(root.shape) == len(source.shape)
    if source.value is not None:  # computed meanwhile (read by another chain)
        return backend.reduce(op, source.value, axes, keepdim).reshape(root.shape)
    if kind != "rows":
        del source
        value = fused_rows.run_columns(root, backend)  # the chain reads row reductions: one kernel
        if value is not None:
            return value
        source = root.args[0]
    nodes, steps, inputs = plan.layout(source)
    del source  # before counting who else holds the chain's last value
    held = _held(nodes, steps)
    shape = nodes[-1].shape
    arrays = [np.broadcast_to(a, shape) for a in inputs if a.size != 1]
    rows = kind == "rows"
    k = len(shape) - 1 if rows else len(axes)
    lead, trail, views = codegen.split_views(shape, arrays, k)
    masks, operands = codegen.packed_operands(inputs, iter(views))
    signature = (
        "reduce",
        op,
        rows,
        tuple((o, refs, dtype.name) for o, refs, dtype in steps),
        tuple(held),
        masks,
        len(lead),
        len(trail),
    )
    fn = KERNELS.lookup(
        signature,
        lambda: codegen.load_kernel(_source(op, rows, steps, tuple(held), masks, len(lead), len(trail))),
    )
    if fn is None:  # not compiled yet: the chain, then the backend's reduction
        value = plan.one_by_one(nodes, steps, inputs, backend)
        nodes[-1].settle(value)
        return backend.reduce(op, value, axes, keepdim).reshape(root.shape)  # (a reshape kept it pending)
    dtype = steps[-1][2]
    outs = staggered.empty(shape, [steps[j][2] for j in held], arrays)
    out_views = [o.reshape(lead + trail) for o in outs]
    n = lead[0]
    tasks = min(threadpool.pool().threads, n) if math.prod(shape) >= codegen.PARALLEL_MIN_ELEMENTS else 1
    bounds = [n * t // tasks for t in range(tasks + 1)]
    start = codegen.REDUCE_IDENTITY[op]
    if rows:
        red = np.empty(lead, dtype)
        parts = [red[lo:hi] for lo, hi in zip(bounds, bounds[1:])]
    else:
        parts = [np.full(trail, start, dtype) for _ in range(tasks)]

    def task(t: int):
        lo, hi = bounds[t], bounds[t + 1]
        slices = codegen.thread_slices(operands, masks, lo, hi)
        fn(parts[t], *(o[lo:hi] for o in out_views), *slices, hi - lo, *lead[1:], *trail)

    if tasks <= 1:
        task(0)
    else:
        threadpool.pool().run([lambda t=t: task(t) for t in range(tasks)])
    if not rows:
        red = parts[0]
        for part in parts[1:]:
            codegen.REDUCE_COMBINE[op](red, part, out=red)
    for j, value in zip(held, outs):
        nodes[j].settle(value)
    return red.reshape(root.shape)
