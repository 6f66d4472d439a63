"""A register-resident matrix-product micro-kernel, written in LLVM vector IR.

LLVM vectorises a Numba loop over its innermost index only, so a product written as loops
keeps its partial sums in memory: every few FMAs cost a load and a store of the output
(the tile products of attention ran far below the FMA peak that way). Here one Numba
intrinsic emits the block a BLAS micro-kernel computes: ``rows`` output rows by two vectors
of columns, held in ``2 rows`` vector registers for the whole reduction, each step loading
two vectors of ``b`` and broadcasting one element of ``a`` per row. The vector width is the
machine's (16 float32 lanes with AVX-512, 8 with AVX2, 4 otherwise) and :data:`ROWS` fills
its register file (8 rows with 32 registers, 4 with 16). The last, partial block of columns
uses masked loads and stores, so no column is left to a scalar loop.

:func:`block` returns the intrinsic for one ``(rows, masked)`` shape; :mod:`.tilegemm`
tiles whole products with them. Being IR, the kernels compile with the rest of a Numba
function and are cached with it.
"""

from __future__ import annotations

import functools

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .vector_ir import VECTOR_BYTES, Vectors

__all__ = ["ROWS", "block"]

#: Output rows per block: 2 ROWS accumulators, two vectors of ``b`` and a broadcast fit in
#: the register file (32 registers with AVX-512, 16 otherwise).
ROWS = 8 if VECTOR_BYTES == 64 else 4

_INDEX_ARGS = (1, 2, 3, 5, 6, 8, 9, 10, 11)  # a_off, a_rs, a_cs, b_off, ldb, o_off, ldo, k, ncols


@functools.cache
def block(rows: int, masked: bool):
    """The intrinsic ``f(a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols,
    accumulate)`` computing, for ``r < rows`` and ``c < ncols``,

    ``O[r, c] = (O[r, c] if accumulate else 0) + sum_{d < k} A[r, d] * B[d, c]``

    over the flat buffers of the arrays ``a``, ``b``, ``out`` (one dtype), with offsets and
    strides in elements: ``A[r, d] = a[a_off + r a_rs + d a_cs]``,
    ``B[d, c] = b[b_off + d ldb + c]``, ``O[r, c] = out[o_off + r ldo + c]``. ``ncols`` is
    two vectors of lanes exactly unless ``masked`` (then 1 to that many).
    """

    @intrinsic
    def kernel(typingctx, a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate):
        arrays = (a, b, out)
        if not all(isinstance(x, types.Array) for x in arrays):
            return None
        if a.dtype not in (types.float32, types.float64) or not a.dtype == b.dtype == out.dtype:
            return None
        sig = types.void(a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate)

        def codegen(context, builder, signature, args):
            vec = Vectors(context, builder, signature.args[0].dtype)
            index = {i: context.cast(builder, args[i], signature.args[i], types.intp) for i in _INDEX_ARGS}
            a_off_, a_rs_, a_cs_, b_off_, ldb_, o_off_, ldo_, k_, ncols_ = (index[i] for i in _INDEX_ARGS)
            accumulate_ = context.cast(builder, args[12], signature.args[12], types.boolean)
            a_ptr, b_ptr, o_ptr = (
                context.make_array(signature.args[i])(context, builder, args[i]).data for i in (0, 4, 7)
            )
            width = vec.width
            masks = [vec.first_lanes(ncols_, c * width) for c in range(2)] if masked else [None, None]

            def const(x):
                return ir.Constant(vec.intp, x)

            def out_vector(r, c):
                offset = builder.add(o_off_, builder.add(builder.mul(const(r), ldo_), const(c * width)))
                return builder.gep(o_ptr, [offset])

            # Accumulators as stack slots: LLVM promotes them to registers (mem2reg).
            slots = []
            for r in range(rows):
                for c in range(2):
                    start = builder.select(accumulate_, vec.load(out_vector(r, c), masks[c]), vec.const(0.0))
                    slots.append(cgutils.alloca_once_value(builder, start))
            with cgutils.for_range(builder, k_) as loop:
                d = loop.index
                b_row = builder.add(b_off_, builder.mul(d, ldb_))
                b_vec = [
                    vec.load(builder.gep(b_ptr, [builder.add(b_row, const(c * width))]), masks[c])
                    for c in range(2)
                ]
                a_col = builder.add(a_off_, builder.mul(d, a_cs_))
                for r in range(rows):
                    a_val = builder.load(
                        builder.gep(a_ptr, [builder.add(a_col, builder.mul(const(r), a_rs_))])
                    )
                    a_vec = vec.splat(a_val)
                    for c in range(2):
                        slot = slots[2 * r + c]
                        builder.store(vec.fma(a_vec, b_vec[c], builder.load(slot)), slot)
            for r in range(rows):
                for c in range(2):
                    vec.store(builder.load(slots[2 * r + c]), out_vector(r, c), masks[c])
            return context.get_dummy_value()

        return sig, codegen

    return kernel
