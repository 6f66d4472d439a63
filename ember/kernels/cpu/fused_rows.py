"""Row programs: a chain that reads reductions over the last axis of chains of its own shape — a
composed softmax, LayerNorm or RMSNorm, forward or backward — runs as one ``cpu`` kernel.

For each row the kernel runs each reduction's loop (its chain recomputed element by element from
the inputs), then the values of the row (``1 / sqrt(mean + eps)``...), then the output loop;
a row's inputs stay in the L1 cache across these passes, so memory is read about once, as by a
hand-written norm. Without this the reductions would each be a kernel and the chain another,
every one streaming the whole array.

Applies when every pending reduction the chain reads (directly or through another reduction's
chain) is a ``sum``/``max``/``min`` over the last axis with ``keepdim`` of a chain of one common
shape, and the chain's result and every value something else holds have that shape or the
shape of its rows; otherwise the caller falls back to one kernel per reduction.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ember.kernels.fusion import plan
from ember.kernels.fusion.lazy import Lazy

from . import fused_codegen as codegen
from . import staggered, threadpool

__all__ = ["KERNELS", "run", "run_columns"]

KERNELS = plan.KernelCache("cpu")
"""The compiled row programs of this process."""


def _row_reduction(node: Lazy) -> bool:
    return node.op.startswith("reduce:") and node.op.endswith(":rows")


def _program(root: Lazy):
    """``(nodes, steps, inputs, full)`` of the row program of ``root``, or None when it has none.
    A reduction's step is ``("rowreduce:<op>", (ref of its chain,), dtype)``."""
    if not any(_row_reduction(source) for source in plan.pending_sources(root)):
        return None
    # the reductions and products that cannot join are computed first, like any array read
    nodes, steps, inputs = plan.layout(root, inline=_row_reduction)
    full = None
    for k, node in enumerate(nodes):
        if _row_reduction(node):
            kind, j = steps[k][1][0]  # its chain, or the array it became if computed meanwhile
            shape = tuple(nodes[j].shape if kind == "step" else inputs[j].shape)
            full = shape if full is None else full
            if shape != full or node.shape != full[:-1] + (1,):
                return None
            steps[k] = ("rowreduce:" + node.op.split(":")[1],) + steps[k][1:]
        elif not plan.is_elementwise(node):
            return None  # a product or another reduction inside a reduction's chain
    if full is None or len(full) < 2 or full[-1] < 2:
        return None
    return nodes, steps, inputs, full


def _held(nodes: list, steps: list) -> list:
    """Every value besides the root that something outside the program holds."""
    readers = [0] * len(nodes)
    for _, refs, _ in steps:
        for kind, j in refs:
            if kind == "step":
                readers[j] += 1
    # references: the readers' operand tuples, the list `nodes`, and getrefcount's argument
    return [j for j in range(len(nodes) - 1) if sys.getrefcount(nodes[j]) - readers[j] - 2 > 0]


def _levels(steps: list, masks: tuple) -> list:
    """For each step, whether it varies along the row (element level) or is one value per row."""
    element = []
    for op, refs, _ in steps:
        if op.startswith("rowreduce:"):
            element.append(False)
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


def _source(steps: list, masks: tuple, element: list, writes: list, column: str | None = None) -> str:
    """The kernel ``chain(out0.., x0.., n0, n1)``; ``writes`` are ``(step, element level?)`` of
    the arrays written, the root last. With ``column`` (a reduction op), the root's values are
    not written but reduced over the rows into the last output, one slot per column."""
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

    row_writes = {j: k for k, (j, at_element) in enumerate(writes) if not at_element}
    for j, (op, refs, dtype) in enumerate(steps):
        if element[j]:
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
    element_writes = [(k, j) for k, (j, at_element) in enumerate(writes) if at_element]
    if element_writes:
        lines += element_loop(_needed([j for _, j in element_writes], steps, element), "        ")
        for k, j in element_writes:
            if column is not None and k == len(writes) - 1:
                cell = f"out{k}[i1]"
                lines.append(
                    f"            {cell} = {codegen.REDUCE_UPDATE[column].format(acc=cell, t=f't{j}')}"
                )
            else:
                lines.append(f"            out{k}[i0, i1] = t{j}")
    return "\n".join(lines) + "\n"


def run_columns(root: Lazy, backend):
    """Compute the reduction ``root`` over the leading axes (a gradient summed back over the
    batch) of a chain that reads row reductions as one row program: the columns accumulate in
    the program's output loop. None when it is not one."""
    _, op, kind = root.op.split(":", 2)
    source = root.args[0]
    full = source.shape
    if kind != f"columns:{len(full) - 1}" or type(source) is not Lazy or source.value is not None:
        return None
    # references: root's operands, the variable `source`, getrefcount's argument
    if sys.getrefcount(source) - 3 > 0:
        return None  # something else reads the chain's values: they are stored by the plain path
    del source
    return run(root, backend, column=op)


def run(root: Lazy, backend, column: str | None = None):
    """Compute ``root`` as one row program, or return None when it is not one (or its kernel
    is not compiled yet: the caller then computes it reduction by reduction). With ``column``,
    ``root`` is that reduction over the leading axes of the program's chain."""
    program = _program(root.args[0] if column else root)
    if program is None:
        return None
    nodes, steps, inputs, full = program
    del program
    if column and root.shape not in (full[-1:], (1,) * (len(full) - 1) + full[-1:]):
        return None
    row_shape = full[:-1] + (1,)
    held = _held(nodes, steps)
    writes = []
    for j in held + [len(nodes) - 1]:
        if nodes[j].shape == full:
            writes.append((j, True))
        elif nodes[j].shape == row_shape:
            writes.append((j, False))
        else:
            return None  # a value of another shape must be stored: not a row program
    arrays = [np.broadcast_to(a, full) for a in inputs if a.size != 1]
    lead, trail, views = codegen.split_views(full, arrays, len(full) - 1)
    if len(lead) != 1 or len(trail) != 1:
        return None
    masks, operands = codegen.packed_operands(inputs, iter(views))
    element = _levels(steps, masks)
    if any(at_element != element[j] and nodes[j].shape == full for j, at_element in writes):
        return None  # a full-shaped value that is one per row (a broadcast): stored by the plain path
    signature = (
        "rows",
        tuple((op, refs, dtype.name) for op, refs, dtype in steps),
        masks,
        tuple(writes),
        column,
    )
    fn = KERNELS.lookup(
        signature, lambda: codegen.load_kernel(_source(steps, masks, element, writes, column))
    )
    if fn is None:
        return None
    outs = []
    for j, at_element in writes[:-1] if column else writes:
        shape = full if at_element else row_shape
        outs.append(staggered.empty(shape, [steps[j][2]], arrays)[0])
    out_views = [
        o.reshape((lead[0], trail[0]) if at_element else (lead[0],))
        for o, (_, at_element) in zip(outs, writes)
    ]
    n = lead[0]
    tasks = min(threadpool.pool().threads, n) if math.prod(full) >= codegen.PARALLEL_MIN_ELEMENTS else 1
    bounds = [n * t // tasks for t in range(tasks + 1)]
    if column:  # each thread's partial results over its rows, combined below
        dtype = steps[-1][2]
        parts = [np.full(trail[0], codegen.REDUCE_IDENTITY[column], dtype) for _ in range(tasks)]

    def task(lo: int, hi: int, t: int = 0):
        rows = [o[lo:hi] for o in out_views] + ([parts[t]] if column else [])
        fn(*rows, *codegen.thread_slices(operands, masks, lo, hi), hi - lo, trail[0])

    if tasks <= 1:
        task(0, n)
    else:
        threadpool.pool().run([lambda t=t: task(bounds[t], bounds[t + 1], t) for t in range(tasks)])
    for (j, _), value in zip(writes[:-1], outs):
        nodes[j].settle(value)
    if column:
        red = parts[0]
        for part in parts[1:]:
            codegen.REDUCE_COMBINE[column](red, part, out=red)
        return red.reshape(root.shape)
    return outs[-1]
