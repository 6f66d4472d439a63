"""Row programs: a chain that reads reductions over the last axis of chains of its own shape — a
composed softmax, LayerNorm or RMSNorm, forward or backward — runs as one ``cpu`` kernel.

For each row the kernel runs each reduction's loop (its chain recomputed element by element from
the inputs), then the values of the row (``1 / sqrt(mean + eps)``...), then the output loop;
a row's inputs stay in the L1 cache across these passes, so memory is read about once, as by a
hand-written norm. Without this the reductions would each be a kernel and the chain another,
every one streaming the whole array.

Several roots can run as one program (:func:`run_group`: the gradients one backward pass
leaves pending, a norm's input gradient and its weight's): each is written where its rows are
made, and a root that sums a chain over the leading axes (a weight's gradient) accumulates in
the output loop, one slot per column and thread.

Applies when every pending reduction the roots read (directly or through another reduction's
chain) is a ``sum``/``max``/``min`` over the last axis with ``keepdim`` of a chain of one common
shape, and each root and every value something else holds have that shape, the shape of its
rows, or (a root) its columns; otherwise the caller falls back to one kernel per reduction.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ember.kernels.fusion import plan
from ember.kernels.fusion.lazy import Lazy

from . import fused_codegen as codegen
from . import staggered, threadpool

__all__ = ["KERNELS", "run", "run_columns", "run_group"]

KERNELS = plan.KernelCache("cpu")
"""The compiled row programs of this process."""


def _row_reduction(node: Lazy) -> bool:
    return node.op.startswith("reduce:") and node.op.endswith(":rows")


def _program(roots: list):
    """``(nodes, steps, inputs, full)`` of the row program of ``roots``, or None when they have
    none. A row reduction's step is ``("rowreduce:<op>", (ref of its chain,), dtype)``; a root
    reducing its chain over the leading axes is ``("colreduce:<op>", (ref of its chain,), dtype)``."""
    reads_rows = any(_row_reduction(s) for r in roots for s in plan.pending_sources(r))
    if not reads_rows and len(roots) == 1:
        return None  # one chain without row reductions: the plain chain kernel
    # the reductions and products that cannot join are computed first, like any array read
    nodes, steps, inputs = plan.layout(roots, inline=_row_reduction)
    full = None
    for k, node in enumerate(nodes):
        if node.op.startswith("reduce:"):
            kind, j = steps[k][1][0]  # its chain, or the array it became if computed meanwhile
            shape = tuple(nodes[j].shape if kind == "step" else inputs[j].shape)
            full = shape if full is None else full
            _, op, reduced = node.op.split(":", 2)
            if shape != full:
                return None
            if reduced == "rows" and node.shape == full[:-1] + (1,):
                steps[k] = ("rowreduce:" + op,) + steps[k][1:]
            elif reduced == f"columns:{len(full) - 1}" and node.shape in _column_shapes(full):
                if not any(node is r for r in roots):
                    return None  # read by another chain: it is computed first (by layout)
                steps[k] = ("colreduce:" + op,) + steps[k][1:]
            else:
                return None
        elif not plan.is_elementwise(node):
            return None  # a product inside a reduction's chain
    if full is None:  # roots without reductions: their common shape
        full = roots[0].shape
    if len(full) < 2 or full[-1] < 2 or 0 in full or any(r.value is not None for r in roots):
        return None
    return nodes, steps, inputs, full


def _column_shapes(full: tuple) -> tuple:
    """The shapes of a reduction of ``full`` over its leading axes (with keepdim, without)."""
    return (full[-1:], (1,) * (len(full) - 1) + full[-1:])


def _levels(steps: list, masks: tuple) -> list:
    """For each step, whether it varies along the row (element level) or is one value per row."""
    element = []
    for op, refs, _ in steps:
        if op.startswith(("rowreduce:", "colreduce:")):
            element.append(False)  # a row's value; a column reduction is read by nothing
            continue
        element.append(
            any((masks[j] is not None and 1 in masks[j]) if kind == "in" else element[j] for kind, j in refs)
        )
    return element


def _needed(targets: list, steps: list, element: list) -> list:
    """The element-level steps ``targets`` depend on (themselves included), in order; a
    reduction's value is a row value, so its chain is not included."""
    need, stack = set(), [t for t in targets if element[t]]
    while stack:
        j = stack.pop()
        if j in need:
            continue
        need.add(j)
        stack.extend(r for kind, r in steps[j][1] if kind == "step" and element[r])
    return sorted(need)


def _source(steps: list, masks: tuple, element: list, writes: list) -> str:
    """The kernel ``chain(out0.., x0.., n0, n1)``; ``writes`` are ``(step, level)`` of the
    arrays written: ``"element"`` (the full shape), ``"row"`` (one value per row), or the
    reduction (``"sum"``...) of a ``colreduce`` step, accumulated into one slot per column."""
    params = [f"out{k}" for k in range(len(writes))] + [f"x{i}" for i in range(len(masks))]
    lines = codegen.kernel_header(params + ["n0", "n1"])  # (a sum reassociates in ops.accumulate)
    lines += [f"    v{i} = x{i}" for i, m in enumerate(masks) if m is None]
    lines += [f"    v{i} = x{i}[()]" for i, m in enumerate(masks) if m == ()]  # a broadcast single value
    lines.append("    for i0 in range(n0):")
    lines += [f"        v{i} = x{i}[i0]" for i, m in enumerate(masks) if m == (0,)]

    def operands(refs):
        return [f"v{r}" if kind == "in" else f"t{r}" for kind, r in refs]

    def element_loop(targets: list, pad: str, read=()) -> list:
        body = [f"{pad}for i1 in range(n1):"]
        used = {r for j in targets for kind, r in steps[j][1] if kind == "in"} | set(read)
        for i in sorted(used):
            if masks[i] == (1,):
                body.append(f"{pad}    v{i} = x{i}[i1]")
            elif masks[i] == (0, 1):
                body.append(f"{pad}    v{i} = x{i}[i0, i1]")
        body += [
            f"{pad}    t{j} = {codegen.expression(steps[j][0], operands(steps[j][1]), steps[j][2])}"
            for j in targets
        ]
        return body

    row_writes = {j: k for k, (j, level) in enumerate(writes) if level == "row"}
    for j, (op, refs, dtype) in enumerate(steps):
        if element[j] or op.startswith("colreduce:"):
            continue  # computed inside the loops that need it
        if op.startswith("rowreduce:"):
            reduce_op = op.split(":")[1]
            t = codegen.TYPES[dtype.name]
            ((kind, src),) = refs
            lines.append(f"        acc = {t}({codegen.REDUCE_START[reduce_op]})")
            if kind == "step" and element[src]:
                loop = element_loop(_needed([src], steps, element), "        ")
            elif kind == "in" and masks[src] is not None and 1 in masks[src]:
                loop = element_loop([], "        ", read=(src,))  # a computed array
            else:  # a value the row shares: the loop takes it n1 times
                loop = ["        for i1 in range(n1):"]
            value = operands(refs)[0]
            lines += loop + [
                f"            acc = {codegen.REDUCE_UPDATE[reduce_op].format(acc='acc', t=value)}"
            ]
            lines.append(f"        t{j} = acc")
        else:
            lines.append(f"        t{j} = {codegen.expression(op, operands(refs), dtype)}")
        if j in row_writes:
            lines.append(f"        out{row_writes[j]}[i0] = t{j}")
    loop_writes = [(k, j, level) for k, (j, level) in enumerate(writes) if level != "row"]
    if loop_writes:
        targets, read = [], []
        for _, j, level in loop_writes:
            if level == "element":
                targets.append(j)
                continue
            ((kind, src),) = steps[j][1]  # a column reduction's chain (or an array it reads)
            if kind == "step":
                targets.append(src)
            elif masks[src] is not None and 1 in masks[src]:
                read.append(src)
        lines += element_loop(_needed(targets, steps, element), "        ", read=read)
        for k, j, level in loop_writes:
            if level == "element":
                lines.append(f"            out{k}[i0, i1] = t{j}")
            else:
                value = operands(steps[j][1])[0]
                cell = f"out{k}[i1]"
                lines.append(f"            {cell} = {codegen.REDUCE_UPDATE[level].format(acc=cell, t=value)}")
    return "\n".join(lines) + "\n"


def run_columns(root: Lazy, backend):
    """Compute the reduction ``root`` over the leading axes (a gradient summed back over the
    batch) of a chain that reads row reductions as one row program: the columns accumulate in
    the program's output loop. None when it is not one."""
    source = root.args[0]
    if type(source) is not Lazy or source.value is not None:
        return None
    # references: root's operands, the variable `source`, getrefcount's argument
    if sys.getrefcount(source) - 3 > 0:
        return None  # something else reads the chain's values: they are stored by the plain path
    del source
    values = run_group([root], backend)
    return None if values is None else values[0]


def run(root: Lazy, backend):
    """Compute ``root`` as one row program, or return None when it is not one (or its kernel
    is not compiled yet: the caller then computes it reduction by reduction)."""
    values = run_group([root], backend)
    return None if values is None else values[0]


def run_group(roots: list, backend):
    """The values of ``roots`` (pending, none reading another) computed as one row program, or
    None when they are not one (or its kernel is not compiled yet)."""
    program = _program(roots)
    if program is None:
        return None
    nodes, steps, inputs, full = program
    del program
    row_shape = full[:-1] + (1,)
    position = {id(node): j for j, node in enumerate(nodes)}
    at_roots = [position[id(r)] for r in roots]
    writes = []
    for j in [j for j in plan.held_elsewhere(nodes, steps, shape=()) if j not in at_roots] + at_roots:
        op = steps[j][0]
        if op.startswith("colreduce:"):
            writes.append((j, op.split(":")[1]))
        elif nodes[j].shape == full:
            writes.append((j, "element"))
        elif nodes[j].shape == row_shape:
            writes.append((j, "row"))
        else:
            return None  # a value of another shape must be stored: not a row program
    arrays = [np.broadcast_to(a, full) for a in inputs if a.size != 1]
    lead, trail, views = codegen.split_views(full, arrays, len(full) - 1)
    if len(lead) != 1 or len(trail) != 1:
        return None
    masks, operands = codegen.packed_operands(inputs, iter(views))
    element = _levels(steps, masks)
    if any(level == "element" and not element[j] for j, level in writes):
        return None  # a full-shaped value that is one per row (a broadcast): stored by the plain path
    signature = ("rows", tuple((op, refs, dtype.name) for op, refs, dtype in steps), masks, tuple(writes))
    fn = KERNELS.lookup(signature, lambda: codegen.load_kernel(_source(steps, masks, element, writes)))
    if fn is None:
        return None
    n = lead[0]
    tasks = min(threadpool.pool().threads, n) if math.prod(full) >= codegen.PARALLEL_MIN_ELEMENTS else 1
    bounds = [n * t // tasks for t in range(tasks + 1)]
    outs = []  # per write: the array, or (a column reduction) each thread's partial results
    for j, level in writes:
        dtype = steps[j][2]
        if level == "element":
            outs.append(staggered.empty(full, [dtype], arrays)[0].reshape(n, trail[0]))
        elif level == "row":
            outs.append(np.empty(n, dtype))
        else:
            outs.append([np.full(trail[0], codegen.REDUCE_IDENTITY[level], dtype) for _ in range(tasks)])

    def task(t: int):
        lo, hi = bounds[t], bounds[t + 1]
        rows = [o[t] if type(o) is list else o[lo:hi] for o in outs]
        fn(*rows, *codegen.thread_slices(operands, masks, lo, hi), hi - lo, trail[0])

    if tasks <= 1:
        task(0)
    else:
        threadpool.pool().run([lambda t=t: task(t) for t in range(tasks)])
    values = {}
    for (j, level), out in zip(writes, outs):
        if type(out) is list:  # the threads' partial results combined
            for part in out[1:]:
                codegen.REDUCE_COMBINE[level](out[0], part, out=out[0])
            out = out[0]
        values[j] = out.reshape(nodes[j].shape)
    for j, _ in writes[: len(writes) - len(roots)]:
        nodes[j].settle(values[j])
    return [values[j] for j in at_roots]
