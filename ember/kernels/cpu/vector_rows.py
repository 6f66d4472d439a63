"""The attention kernel's passes over one row of scores, written in LLVM vector IR.

A row holds the scores of one query against the keys kept, so its length is whatever the
batch's text lengths make it. LLVM's loop vectoriser runs such a loop 64 float32 elements at
a time (four AVX-512 vectors) and leaves the rest, up to 63, to a scalar loop, so a row just
short of a multiple of 64 costs much more per element than one on it. These intrinsics run one vector at a time and
finish with one masked vector. :func:`exp_sum` serves every row; :func:`scale_max` and
:func:`exp_grad` are the forms without masked keys or dropout (inference, and training
without attention dropout), the others stay Numba loops in :mod:`.attention`.

* :func:`scale_max` — ``row *= scale``; returns the row's maximum (NaN ignored, as
  ``vecmath.vmax``).
* :func:`exp_sum` — ``row = exp(row - m)``; returns the sum, in the row's dtype.
* :func:`exp_grad` — the backward's ``w = exp((row * scale - lse) - lse_lo)`` into ``row``
  and ``ds = w (grow - delta) scale`` into ``grow``, the product rounded before the
  subtraction (see ``attention._grad_row``).

The exponential is :func:`.vecmath.exp`'s, lane by lane. Rows must be contiguous.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .vector_ir import Vectors

__all__ = ["exp_grad", "exp_sum", "scale_max"]


def _is_row(x) -> bool:
    return (
        isinstance(x, types.Array)
        and x.ndim == 1
        and x.layout == "C"
        and x.dtype in (types.float32, types.float64)
    )


def _row(context, builder, array_type, value):
    array = context.make_array(array_type)(context, builder, value)
    return array.data, cgutils.unpack_tuple(builder, array.shape, 1)[0]


def _each_vector(vec, n, body):
    """``body(offset, mask)`` for every full vector of the ``n`` elements (mask None), then
    once for the last partial one, if any (mask of its lanes)."""
    builder = vec.builder
    width = ir.Constant(vec.intp, vec.width)
    full = builder.udiv(n, width)
    with cgutils.for_range(builder, full) as loop:
        body(builder.mul(loop.index, width), None)
    done = builder.mul(full, width)
    left = builder.sub(n, done)
    with builder.if_then(builder.icmp_signed(">", left, ir.Constant(vec.intp, 0)), likely=False):
        body(done, vec.first_lanes(left))


def _scalar_args(context, builder, signature, args, first):
    dtype = signature.args[0].dtype
    return [context.cast(builder, v, t, dtype) for v, t in zip(args[first:], signature.args[first:])]


def _map_reduce(row, scalar, transform, identity, combine, finish):
    """The intrinsic of a pass ``row[j] = transform(row[j], scalar)`` that also folds the new
    values with ``combine`` (lanes past the row count as ``identity``) and returns
    ``finish`` of the folded vector."""
    if not _is_row(row):
        return None

    def codegen(context, builder, signature, args):
        vec = Vectors(context, builder, signature.args[0].dtype)
        data, n = _row(context, builder, signature.args[0], args[0])
        value = vec.splat(_scalar_args(context, builder, signature, args, 1)[0])
        neutral = vec.const(identity)
        folded = cgutils.alloca_once_value(builder, neutral)

        def body(offset, mask):
            at = builder.gep(data, [offset])
            y = transform(vec, vec.load(at, mask), value)
            vec.store(y, at, mask)
            if mask is not None:
                y = builder.select(mask, y, neutral)
            builder.store(combine(vec, builder.load(folded), y), folded)

        _each_vector(vec, n, body)
        return finish(vec, builder.load(folded))

    return row.dtype(row, scalar), codegen


@intrinsic
def scale_max(typingctx, row, scale):
    """``row *= scale`` in place; returns the largest scaled value (``-inf`` for no element)."""
    return _map_reduce(
        row,
        scale,
        lambda vec, x, factor: vec.builder.fmul(x, factor),
        float("-inf"),
        lambda vec, a, b: vec.maxnum(a, b),
        lambda vec, v: vec.reduce_max(v),
    )


@intrinsic
def exp_sum(typingctx, row, m):
    """``row = exp(row - m)`` in place; returns the sum of the new values."""
    return _map_reduce(
        row,
        m,
        lambda vec, x, shift: vec.exp(vec.builder.fsub(x, shift)),
        0.0,
        lambda vec, a, b: vec.builder.fadd(a, b),
        lambda vec, v: vec.reduce_sum(v),
    )


@intrinsic
def exp_grad(typingctx, row, grow, scale, lse, lse_lo, delta):
    """``row = w = exp((row * scale - lse) - lse_lo)`` and
    ``grow = w * (grow - delta) * scale``, in place."""
    if not (_is_row(row) and _is_row(grow) and row.dtype == grow.dtype):
        return None

    def codegen(context, builder, signature, args):
        vec = Vectors(context, builder, signature.args[0].dtype)
        data, n = _row(context, builder, signature.args[0], args[0])
        grad = context.make_array(signature.args[1])(context, builder, args[1]).data
        factor, hi, lo, delta_ = (vec.splat(v) for v in _scalar_args(context, builder, signature, args, 2))

        def scaled(offset, mask):
            at = builder.gep(data, [offset])
            vec.store(builder.fmul(vec.load(at, mask), factor), at, mask)

        def weights(offset, mask):
            at = builder.gep(data, [offset])
            g_at = builder.gep(grad, [offset])
            w = vec.exp(builder.fsub(builder.fsub(vec.load(at, mask), hi), lo))
            vec.store(w, at, mask)
            d = builder.fmul(builder.fmul(w, builder.fsub(vec.load(g_at, mask), delta_)), factor)
            vec.store(d, g_at, mask)

        # Two passes: Numba adds its fast-math flags (contract among them) to every float
        # instruction of the function, and in one pass LLVM would fuse the product into
        # the subtraction of lse.
        _each_vector(vec, n, scaled)
        _each_vector(vec, n, weights)
        return context.get_dummy_value()

    return types.void(row, grow, scale, lse, lse_lo, delta), codegen
