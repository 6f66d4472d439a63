"""Building blocks for kernels written directly in LLVM vector IR (Numba intrinsics).

Numba leaves vectorisation to LLVM's loop vectoriser, which keeps a product's partial sums
in memory and, with AVX-512, runs 64 elements per iteration and the rest (up to 63) one at a
time. The intrinsics of :mod:`.microkernel` and :mod:`.vector_rows` instead emit vector code
themselves, with masked loads and stores for the last partial vector. This module holds
what they share: the machine's vector width, lane masks, masked memory access, FMA, and the
exponential of :mod:`.vecmath` (same reduction, same polynomial) on whole vectors.
"""

from __future__ import annotations

import os

from llvmlite import ir
from numba import types
from numba.core import cgutils

from . import vecmath as vm
from .jit import host_cpu_features

__all__ = ["VECTOR_BYTES", "Vectors", "lanes"]


def _target_features() -> set[str]:
    # The features Numba compiles for: jit.py may have set NUMBA_CPU_FEATURES.
    flat = os.environ.get("NUMBA_CPU_FEATURES") or host_cpu_features()
    return {f[1:] for f in flat.split(",") if f.startswith("+")}


_FEATURES = _target_features()
#: Bytes of one vector register.
VECTOR_BYTES = 64 if "avx512f" in _FEATURES else 32 if "avx" in _FEATURES else 16


def lanes(itemsize: int) -> int:
    """Elements of ``itemsize`` bytes per vector register."""
    return VECTOR_BYTES // itemsize


class Vectors:
    """IR emitters for one float dtype's full-width vectors, bound to a builder."""

    def __init__(self, context, builder, dtype):
        if dtype not in (types.float32, types.float64):
            raise TypeError(f"vector IR kernels take float32 or float64, got {dtype}")
        self.builder = builder
        self.module = builder.module
        self.name = "float32" if dtype == types.float32 else "float64"
        self.scalar = context.get_value_type(dtype)
        self.itemsize = context.get_abi_sizeof(self.scalar)
        self.width = lanes(self.itemsize)
        self.type = ir.VectorType(self.scalar, self.width)
        self.pointer = self.type.as_pointer()
        self.intp = context.get_value_type(types.intp)
        self.mask_type = ir.VectorType(ir.IntType(1), self.width)
        self._suffix = f"v{self.width}{'f32' if self.name == 'float32' else 'f64'}"

    # ---- constants and lanes
    def const(self, value):
        return ir.Constant(self.type, [float(value)] * self.width)

    def splat(self, value):
        """``value`` (a scalar IR value of this dtype or an index) in every lane."""
        i32 = ir.IntType(32)
        vector_type = ir.VectorType(value.type, self.width)
        one = self.builder.insert_element(ir.Constant(vector_type, ir.Undefined), value, ir.Constant(i32, 0))
        return self.builder.shuffle_vector(
            one, one, ir.Constant(ir.VectorType(i32, self.width), [0] * self.width)
        )

    def first_lanes(self, count, offset=0):
        """The mask of lanes ``offset + i < count`` (``count`` an intp IR value)."""
        index_type = ir.VectorType(self.intp, self.width)
        lane = ir.Constant(index_type, [offset + i for i in range(self.width)])
        return self.builder.icmp_signed("<", lane, self.splat(count))

    # ---- intrinsics
    def _intrinsic(self, name, ret, args):
        return cgutils.get_or_insert_function(self.module, ir.FunctionType(ret, args), name)

    def fma(self, a, b, c):
        fn = self._intrinsic(f"llvm.fma.{self._suffix}", self.type, [self.type] * 3)
        return self.builder.call(fn, [a, b, c])

    def reduce_max(self, vector):
        """The largest lane (NaN lanes ignored, as ``llvm.maxnum``; no ``nnan`` flag, which
        would make a NaN lane undefined)."""
        fn = self._intrinsic(f"llvm.vector.reduce.fmax.{self._suffix}", self.scalar, [self.type])
        return self.builder.call(fn, [vector])

    def reduce_sum(self, vector):
        """The sum of the lanes, as a tree (reassociated)."""
        fn = self._intrinsic(f"llvm.vector.reduce.fadd.{self._suffix}", self.scalar, [self.scalar, self.type])
        return self.builder.call(fn, [ir.Constant(self.scalar, 0.0), vector], fastmath=("reassoc",))

    def maxnum(self, a, b):
        fn = self._intrinsic(f"llvm.maxnum.{self._suffix}", self.type, [self.type] * 2)
        return self.builder.call(fn, [a, b])

    # ---- memory: ``at`` is an element pointer, ``mask`` None for a full vector
    def load(self, at, mask=None):
        pointer = self.builder.bitcast(at, self.pointer)
        if mask is None:
            return self.builder.load(pointer, align=self.itemsize)
        fn = self._intrinsic(
            f"llvm.masked.load.{self._suffix}.p0",
            self.type,
            [self.pointer, ir.IntType(32), self.mask_type, self.type],
        )
        # masked-off lanes read as 0
        return self.builder.call(
            fn, [pointer, ir.Constant(ir.IntType(32), self.itemsize), mask, self.const(0.0)]
        )

    def store(self, value, at, mask=None):
        pointer = self.builder.bitcast(at, self.pointer)
        if mask is None:
            self.builder.store(value, pointer, align=self.itemsize)
            return
        fn = self._intrinsic(
            f"llvm.masked.store.{self._suffix}.p0",
            ir.VoidType(),
            [self.type, self.pointer, ir.IntType(32), self.mask_type],
        )
        self.builder.call(fn, [value, pointer, ir.Constant(ir.IntType(32), self.itemsize), mask])

    # ---- math
    def exp(self, x):
        """:func:`.vecmath.exp` lane by lane: the same clamps (NaN passes), Cody-Waite
        reduction, polynomial and exponent assembly, so the same results."""
        b = self.builder
        low, high, bias, shift = vm.EXP_LIMITS[self.name]
        ln2_hi, ln2_lo = vm.LN2[self.name]
        poly = vm.EXP_POLY_F32 if self.name == "float32" else vm.EXP_POLY_F64
        v = b.select(b.fcmp_ordered("<", x, self.const(low)), self.const(low), x)
        v = b.select(b.fcmp_ordered(">", v, self.const(high)), self.const(high), v)
        rint = self._intrinsic(f"llvm.rint.{self._suffix}", self.type, [self.type])
        n = b.call(rint, [b.fmul(v, self.const(vm.LOG2E))])
        minus_n = b.fneg(n)
        r = self.fma(minus_n, self.const(ln2_hi), v)
        r = self.fma(minus_n, self.const(ln2_lo), r)
        p = self.const(poly[0])
        for c in poly[1:]:
            p = self.fma(p, r, self.const(c))
        int_type = ir.IntType(self.itemsize * 8)
        int_vector = ir.VectorType(int_type, self.width)
        exponent = b.add(b.fptosi(n, int_vector), ir.Constant(int_vector, [bias] * self.width))
        scale = b.bitcast(b.shl(exponent, ir.Constant(int_vector, [shift] * self.width)), self.type)
        return b.fmul(p, scale)
