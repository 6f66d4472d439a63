"""A register-resident matrix-product micro-kernel, written in LLVM vector IR.

LLVM vectorises a Numba loop over its innermost index only, so a product written as loops
keeps its partial sums in memory: every few FMAs cost a load and a store of the output
(the tile products of attention ran at 40-60% of the FMA peak that way). Here one Numba
intrinsic emits the block a BLAS micro-kernel computes: ``MR`` output rows by two vectors
of columns, held in ``2 MR`` vector registers for the whole reduction, each step loading
two vectors of ``b`` and broadcasting one element of ``a`` per row. The vector width is the
machine's (16 float32 lanes with AVX-512, 8 with AVX2, 4 otherwise) and ``MR`` fills its
register file (8 rows with 32 registers, 4 with 16). The last, partial block of columns
uses masked loads and stores, so no column is left to a scalar loop.

:func:`block` returns the intrinsic for one ``(rows, masked)`` shape; :mod:`.tilegemm`
tiles whole products with them. Being IR, the kernels compile with the rest of a Numba
function and are cached with it.
"""

from __future__ import annotations

import functools
import os

from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["ROWS", "VECTOR_BYTES", "block", "lanes"]


def _target_features() -> set[str]:
    # The features Numba compiles for: jit.py may have set NUMBA_CPU_FEATURES.
    flat = os.environ.get("NUMBA_CPU_FEATURES") or llvm.get_host_cpu_features().flatten()
    return {f[1:] for f in flat.split(",") if f.startswith("+")}


_FEATURES = _target_features()
#: Bytes of one vector register.
VECTOR_BYTES = 64 if "avx512f" in _FEATURES else 32 if "avx" in _FEATURES else 16
#: Output rows per block: 2 ROWS accumulators, two vectors of ``b`` and a broadcast fit in
#: the register file (32 registers with AVX-512, 16 otherwise).
ROWS = 8 if VECTOR_BYTES == 64 else 4


def lanes(itemsize: int) -> int:
    """Elements of ``itemsize`` bytes per vector register."""
    return VECTOR_BYTES // itemsize


def _splat(builder, value, vector_type):
    i32 = ir.IntType(32)
    one = builder.insert_element(ir.Constant(vector_type, ir.Undefined), value, ir.Constant(i32, 0))
    return builder.shuffle_vector(
        one, one, ir.Constant(ir.VectorType(i32, vector_type.count), [0] * vector_type.count)
    )


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
        if not (isinstance(a, types.Array) and a.dtype in (types.float32, types.float64)):
            return None
        if not (
            isinstance(b, types.Array) and isinstance(out, types.Array) and a.dtype == b.dtype == out.dtype
        ):
            return None
        sig = types.void(a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate)

        def codegen(context, builder, signature, args):
            a_, a_off_, a_rs_, a_cs_, b_, b_off_, ldb_, out_, o_off_, ldo_, k_, ncols_, acc_ = args
            intp = context.get_value_type(types.intp)
            a_off_, a_rs_, a_cs_, b_off_, ldb_, o_off_, ldo_, k_, ncols_ = (
                context.cast(builder, v, t, types.intp)
                for v, t in zip(
                    (a_off_, a_rs_, a_cs_, b_off_, ldb_, o_off_, ldo_, k_, ncols_),
                    (signature.args[i] for i in (1, 2, 3, 5, 6, 8, 9, 10, 11)),
                )
            )
            acc_ = context.cast(builder, acc_, signature.args[12], types.boolean)
            dtype = signature.args[0].dtype
            scalar = context.get_value_type(dtype)
            width = lanes(context.get_abi_sizeof(scalar))
            vec = ir.VectorType(scalar, width)
            vec_ptr = vec.as_pointer()
            i32 = ir.IntType(32)
            align = context.get_abi_sizeof(scalar)
            a_ptr = context.make_array(signature.args[0])(context, builder, a_).data
            b_ptr = context.make_array(signature.args[4])(context, builder, b_).data
            o_ptr = context.make_array(signature.args[7])(context, builder, out_).data
            module = builder.module
            name = f"v{width}{'f32' if dtype == types.float32 else 'f64'}"
            fma = cgutils.get_or_insert_function(module, ir.FunctionType(vec, [vec] * 3), f"llvm.fma.{name}")
            zero = ir.Constant(vec, [0.0] * width)

            def const(x):
                return ir.Constant(intp, x)

            if masked:
                mask_type = ir.VectorType(ir.IntType(1), width)
                load_masked = cgutils.get_or_insert_function(
                    module,
                    ir.FunctionType(vec, [vec_ptr, i32, mask_type, vec]),
                    f"llvm.masked.load.{name}.p0",
                )
                store_masked = cgutils.get_or_insert_function(
                    module,
                    ir.FunctionType(ir.VoidType(), [vec, vec_ptr, i32, mask_type]),
                    f"llvm.masked.store.{name}.p0",
                )
                index_type = ir.VectorType(intp, width)
                limit = _splat(builder, ncols_, index_type)
                masks = [
                    builder.icmp_signed(
                        "<", ir.Constant(index_type, [c * width + i for i in range(width)]), limit
                    )
                    for c in range(2)
                ]

            def load(pointer, c):
                pointer = builder.bitcast(pointer, vec_ptr)
                if masked:
                    return builder.call(load_masked, [pointer, ir.Constant(i32, align), masks[c], zero])
                return builder.load(pointer, align=align)

            def store(value, pointer, c):
                pointer = builder.bitcast(pointer, vec_ptr)
                if masked:
                    builder.call(store_masked, [value, pointer, ir.Constant(i32, align), masks[c]])
                else:
                    builder.store(value, pointer, align=align)

            def out_vector(r, c):
                return builder.gep(
                    o_ptr, [builder.add(o_off_, builder.add(builder.mul(const(r), ldo_), const(c * width)))]
                )

            # Accumulators as stack slots: LLVM promotes them to registers (mem2reg).
            slots = []
            for r in range(rows):
                for c in range(2):
                    start = builder.select(acc_, load(out_vector(r, c), c), zero)
                    slots.append(cgutils.alloca_once_value(builder, start))
            with cgutils.for_range(builder, k_) as loop:
                d = loop.index
                b_row = builder.add(b_off_, builder.mul(d, ldb_))
                b_vec = [
                    load(builder.gep(b_ptr, [builder.add(b_row, const(c * width))]), c) for c in range(2)
                ]
                a_col = builder.add(a_off_, builder.mul(d, a_cs_))
                for r in range(rows):
                    a_val = builder.load(
                        builder.gep(a_ptr, [builder.add(a_col, builder.mul(const(r), a_rs_))])
                    )
                    a_vec = _splat(builder, a_val, vec)
                    for c in range(2):
                        slot = slots[2 * r + c]
                        builder.store(builder.call(fma, [a_vec, b_vec[c], builder.load(slot)]), slot)
            for r in range(rows):
                for c in range(2):
                    store(builder.load(slots[2 * r + c]), out_vector(r, c), c)
            return context.get_dummy_value()

        return sig, codegen

    return kernel
