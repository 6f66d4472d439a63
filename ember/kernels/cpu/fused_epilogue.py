"""A matrix product fused into the chain that reads it (fuse-on-write): the ``cpu`` runner
computes the product block of rows by block of rows (:func:`.gemm.matmul_rows`) and runs the
chain's kernel on each block while it is in cache, so ``gelu(x @ w + b)`` written from
primitives reads and writes memory once instead of storing the product and reading it back.

It applies when the chain's root has the product's shape (up to a reshape of the leading
dimensions) and nothing but this chain reads the product; otherwise the product is computed
first and the chain reads it as any other array.
"""

from __future__ import annotations

import sys

import numpy as np

from ember.kernels.fusion import plan
from ember.kernels.fusion.engine import GEMM_OPS
from ember.kernels.fusion.lazy import Lazy

from . import fused_codegen as codegen
from . import gemm, staggered

__all__ = ["candidate", "run"]


def candidate(root: Lazy) -> Lazy | None:
    """The pending product the chain of ``root`` can take as its epilogue source, or None."""
    found = None
    for source in plan.pending_sources(root):
        if source.op not in GEMM_OPS:
            continue
        if found is not None:  # two products: the first one's rows are not the second's
            return None
        found = source
    if found is None or found.shape != root.shape or len(root.shape) < 2:
        return None
    n = found.args[1].shape[1]
    return found if root.shape[-1] == n else None


def _product_arrays(product: Lazy) -> tuple:
    """``(a, b, bias)`` of a pending ``matmul`` or ``linear`` node."""
    if product.op == "matmul":
        a, b = product.args
        return a, b, None
    return product.args


def run(root: Lazy, backend, kernels: plan.KernelCache):
    """Compute ``root`` with the product it reads (see :func:`candidate`) made as the chain
    runs, or return None when there is none or it cannot be (the caller then computes the
    product first). A product something else holds (the autodiff tape) is written too, by the
    matrix product itself, and the chain reads each block of it while in cache."""
    product = candidate(root)
    if product is None:
        return None
    nodes, steps, inputs = plan.layout(root, keep=product)
    if product.value is not None:  # computed meanwhile (read by a reduction the chain reads)
        return None
    readers = sum(ref == ("in", 0) for _, refs, _ in steps for ref in refs)
    # references: the readers' operand tuples, `inputs`, the variable `product`, getrefcount's
    stored = sys.getrefcount(product) - readers - 3 > 0
    shape = root.shape
    rest = inputs[1:]
    arrays = [np.broadcast_to(a, shape) for a in rest if a.size != 1]
    lead, trail, views = codegen.split_views(shape, arrays, len(shape) - 1)
    if len(lead) != 1:
        return None  # an operand's leading dimensions do not merge into rows
    masks, operands = codegen.packed_operands(rest, iter(views))
    masks = ((0, 1),) + masks
    held = plan.held_elsewhere(nodes, steps)
    outputs = tuple(held) + (len(steps) - 1,)
    signature = (tuple((op, refs, dtype.name) for op, refs, dtype in steps), outputs, masks, 2)
    fn = kernels.lookup(
        signature, lambda: codegen.load_kernel(codegen.chain_source(steps, outputs, masks, 2))
    )
    if fn is None:  # not compiled yet: the product, then the chain op by op
        inputs[0] = product.realize()
        return plan.one_by_one(nodes, steps, inputs, backend)
    outs = staggered.empty(shape, [steps[j][2] for j in outputs], arrays)
    out_rows = [o.reshape(lead + trail) for o in outs]
    n_cols = trail[0]
    a, b, bias = _product_arrays(product)
    into = staggered.empty((a.shape[0], b.shape[1]), [product.dtype], [a, b])[0] if stored else None

    def epilogue(r0: int, r1: int, block: np.ndarray) -> None:
        slices = codegen.thread_slices(operands, masks[1:], r0, r1)
        fn(*(o[r0:r1] for o in out_rows), block, *slices, r1 - r0, n_cols)

    gemm.matmul_rows(a, b, bias, epilogue, into)
    if into is not None:
        product.settle(into.reshape(product.shape))
    for j, value in zip(held, outs):
        nodes[j].settle(value)
    return outs[-1]
