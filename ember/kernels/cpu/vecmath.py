"""Vectorisable scalar math for the Numba kernels.

LLVM only vectorises a loop when every operation in it has a vector form. Calls into
libm (``math.exp``, ``math.erf``…) have none here (no SVML), so a loop containing one
runs one element at a time, and Numba emits float max-reductions in a form LLVM will
not vectorise either. This module provides drop-in replacements usable inside
``@njit`` code; each dispatches on the float type of its arguments (float scalars unless
said otherwise):

* :func:`typed` — a constant in the dtype of an array/scalar, so float32 kernels stay
  in float32 (a bare Python float literal would promote the expression to float64).
* :func:`vmax` — ``max`` through ``llvm.maxnum``, which LLVM vectorises in reductions.
* :func:`exp` — range reduction ``x = n ln2 + r`` plus a polynomial for ``e^r`` and
  ``2^n`` assembled from its exponent bits. float32: relative error < 1e-7;
  float64: < 1e-15. Results below about 2.5e-38 (float32) / 3e-308 (float64) flush
  to 0, results above the largest finite value give ``inf``, NaN propagates.
* :func:`erfc` — float32: ``exp(-z^2) P(z) / Q(z)`` with a fitted ratio of polynomials of
  degrees 4 and 5 and ``z^2`` carried exactly into the exponential; relative error < 4e-7
  (a few ulps) over the whole line. float64: ``math.erfc`` (libm), because no cheap fit
  reaches 1e-12.
* :func:`normal_tail` — ``P(Z > |x|) = erfc(|x| / sqrt2) / 2`` for a standard normal
  ``Z``, the same ratio in ``|x|`` times ``exp(-x^2 / 2)``, ``x^2 / 2`` carried exactly
  (relative error < 4e-7 in float32);
  :func:`normal_tail_density` returns the density ``exp(-x^2 / 2) / sqrt(2 pi)`` with it,
  from the same exponential.
* :func:`erf` — float32: its Maclaurin series for ``|x| < 0.5`` (relative accuracy
  near 0) and ``1 - erfc(|x|)`` beyond; float64: ``math.erf``.

Each function also works as plain Python (used when ``NUMBA_DISABLE_JIT=1``).
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload, register_jitable
from numba.np.numpy_support import as_dtype

from .jit import FASTMATH

__all__ = [
    "NORMAL_TAIL_ARG_MAX",
    "erf",
    "erfc",
    "exp",
    "normal_tail",
    "normal_tail_density",
    "sigmoid",
    "typed",
    "vmax",
]

_JIT_OPTIONS = {"fastmath": set(FASTMATH), "error_model": "numpy"}


def _float_type(ty):
    """The Numba float type of an array or scalar type, or None."""
    if isinstance(ty, types.Array):
        ty = ty.dtype
    return ty if isinstance(ty, types.Float) else None


def _overload_by_float(func, f32, f64, **options):
    """Compile ``func`` in Numba as ``f32`` for a float32 argument and as ``f64`` for a float64
    one (any other type does not match)."""

    @overload(func, jit_options=_JIT_OPTIONS, **options)
    def _by_float(x):
        if x == types.float32:
            return f32
        if x == types.float64:
            return f64
        return None


# --------------------------------------------------------------------------- typed
def typed(value, like):
    """Return ``value`` converted to the float dtype of ``like`` (array or scalar).

    Args:
        value: a Python number.
        like: a float array or float scalar whose dtype the result takes.
    """
    dtype = like.dtype if hasattr(like, "dtype") else np.float64
    return dtype.type(value) if hasattr(dtype, "type") else np.float64(value)


@overload(typed, inline="always")
def _typed_overload(value, like):
    ftype = _float_type(like)
    if ftype is None:
        return None
    scalar = as_dtype(ftype).type

    def impl(value, like):
        return scalar(value)

    return impl


# --------------------------------------------------------------------------- vmax
def vmax(a, b):
    """Maximum of two floats of the same type, via ``llvm.maxnum``.

    Args:
        a: first value.
        b: second value (same float type as ``a``).
    """
    return a if a >= b else b


@intrinsic
def _maxnum(typingctx, a, b):
    if not (isinstance(a, types.Float) and a == b):
        return None

    def codegen(context, builder, signature, args):
        lltype = context.get_value_type(signature.return_type)
        fn = builder.module.declare_intrinsic(
            "llvm.maxnum", [lltype], ir.FunctionType(lltype, [lltype, lltype])
        )
        return builder.call(fn, args, fastmath=("nsz", "nnan"))

    return a(a, b), codegen


@overload(vmax, inline="always")
def _vmax_overload(a, b):
    if isinstance(a, types.Float) and a == b:
        return lambda a, b: _maxnum(a, b)
    return None


# --------------------------------------------------------------------------- fma
@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` with one rounding; carries no fast-math flags, so LLVM may not
    reassociate it (that would undo the Cody–Waite reduction in :func:`exp`)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        lltype = context.get_value_type(signature.return_type)
        fn = builder.module.declare_intrinsic(
            "llvm.fma", [lltype], ir.FunctionType(lltype, [lltype, lltype, lltype])
        )
        return builder.call(fn, args)

    return a(a, b, c), codegen


# --------------------------------------------------------------------------- exp
_LOG2E = 1.4426950408889634
# ln 2 split so that n * _LN2_HI is exact (Cody–Waite reduction).
_LN2_HI_F32 = 0.693145751953125
_LN2_LO_F32 = 1.4286068203094173e-06
_LN2_HI_F64 = 0.6931471803691238
_LN2_LO_F64 = 1.9082149292705877e-10
#: ``2 e^r`` on ``|r| <= ln2 / 2``, highest degree first (shared with :mod:`.vector_rows`):
#: float32, a degree-6 fit of the relative error (< 2e-9); float64, twice the degree-12
#: Taylor polynomial (error < 2e-16).
EXP_POLY_F32 = (
    0.002767366822808981,
    0.016749631613492966,
    0.08333645015954971,
    0.33332839608192444,
    0.9999998211860657,
    2.0,
    2.0,
)
EXP_POLY_F64 = tuple(2.0 / math.factorial(k) for k in range(12, 2, -1)) + (1.0, 2.0, 2.0)
#: Clamps and exponent bias of each dtype's exponential (see _exp_f32).
EXP_LIMITS = {"float32": (-87.0, 89.0, 126, 23), "float64": (-708.5, 710.0, 1022, 52)}
_LOW_F32, _HIGH_F32, _BIAS_F32, _SHIFT_F32 = EXP_LIMITS["float32"]
_LOW_F64, _HIGH_F64, _BIAS_F64, _SHIFT_F64 = EXP_LIMITS["float64"]
LOG2E = _LOG2E
LN2 = {"float32": (_LN2_HI_F32, _LN2_LO_F32), "float64": (_LN2_HI_F64, _LN2_LO_F64)}


def exp(x):
    """Vectorisable ``e**x`` for float32/float64 (see the module docstring)."""
    try:
        return type(x)(math.exp(x))
    except OverflowError:
        return type(x)(math.inf)


@register_jitable(inline="always")
def _horner_f32(x, coefficients):
    """The float32 polynomial with ``coefficients`` (highest degree first) at ``x``, one FMA a
    step."""
    p = np.float32(coefficients[0])
    for c in coefficients[1:]:
        p = _fma(p, x, np.float32(c))
    return p


def _exp_f32(x):
    # Clamps written so that NaN passes through them (and then through the result).
    # Below -87 the exponent field built further down is 0, so the result flushes to 0
    # without a separate test; above 88.72 the product overflows to inf by itself.
    v = np.float32(_LOW_F32) if x < np.float32(_LOW_F32) else x
    v = np.float32(_HIGH_F32) if v > np.float32(_HIGH_F32) else v
    n = np.rint(v * np.float32(_LOG2E))
    r = _fma(-n, np.float32(_LN2_HI_F32), v)
    r = _fma(-n, np.float32(_LN2_LO_F32), r)
    # EXP_POLY_F32 is 2 e^r; the factor 2 pairs with the 2^(n-1) below, which keeps
    # n = 128 representable.
    scale = np.int32((np.int32(n) + np.int32(_BIAS_F32)) << np.int32(_SHIFT_F32)).view(np.float32)
    return _horner_f32(r, EXP_POLY_F32) * scale


def _exp_f64(x):
    # Same scheme as _exp_f32 with float64 limits.
    v = _LOW_F64 if x < _LOW_F64 else x
    v = _HIGH_F64 if v > _HIGH_F64 else v
    n = np.rint(v * _LOG2E)
    r = _fma(-n, _LN2_HI_F64, v)
    r = _fma(-n, _LN2_LO_F64, r)
    # 2 e^r on |r| <= ln2/2: twice the degree-12 Taylor polynomial (error < 2e-16).
    p = EXP_POLY_F64[0]
    for c in EXP_POLY_F64[1:]:
        p = p * r + c
    scale = np.int64((np.int64(n) + np.int64(_BIAS_F64)) << np.int64(_SHIFT_F64)).view(np.float64)
    return p * scale


_overload_by_float(exp, _exp_f32, _exp_f64)


# --------------------------------------------------------------------------- sigmoid
@register_jitable(inline="always")
def sigmoid(v):
    """``1 / (1 + e**-v)`` of a float scalar, split by sign so that exp never overflows (as the
    reference's sigmoid); NaN propagates."""
    one = typed(1.0, v)
    e = exp(-abs(v))
    return one / (one + e) if v >= typed(0.0, v) else e / (one + e)


# --------------------------------------------------------------------------- erfc
def erfc(x):
    """Vectorisable complementary error function (see the module docstring)."""
    return type(x)(math.erfc(x))


# erfc and the normal tail are each a Gaussian factor times a ratio of polynomials:
# T(a) = P(a) / Q(a) exp(-a^2 / 2) for the normal tail T(a) = erfc(a / sqrt2) / 2, and so
# erfc(z) = 2 T(sqrt2 z), whose ratio is the same one in z (coefficients times powers of
# sqrt2). P/Q (degrees 4 and 5, all coefficients positive, so Horner's steps add no
# cancellation on a >= 0) is the minimax fit of the relative error of erfcx(a / sqrt2) / 2 on
# [0, 14] (5.5e-9; `python -m tools.fit_normal_tail` refits it); evaluated in float32 it stays
# within 3e-7, and the whole tail within 4e-7. Highest degree first.
_NORMAL_TAIL_P = (
    0.004077810228050851,
    0.04037394111422011,
    0.18246598937960606,
    0.4372565738734912,
    0.5000000027696987,
)
_NORMAL_TAIL_Q = (
    0.01022142570195485,
    0.10120927054210074,
    0.4674400595147924,
    1.1993080863083208,
    1.6723981030812007,
    1.0,
)
_ERFC_P = tuple(
    2.0 * c * math.sqrt(2.0) ** (len(_NORMAL_TAIL_P) - 1 - k) for k, c in enumerate(_NORMAL_TAIL_P)
)
_ERFC_Q = tuple(c * math.sqrt(2.0) ** (len(_NORMAL_TAIL_Q) - 1 - k) for k, c in enumerate(_NORMAL_TAIL_Q))
# Adding 1.5 * 2^23 to |v| < 2^22 rounds v to an integer and leaves it in the low
# mantissa bits of the sum: one FMA instead of a multiply, a round and a conversion.
_ROUNDER_F32 = 12582912.0
_ROUNDER_BITS_F32 = 0x4B400000
#: Largest argument the erfc / normal-tail helpers take as it is: beyond, the result is
#: 0 (or its complement) anyway, and the clamp keeps z^2 finite and small enough for
#: the rounding trick in _exp_neg_square_core_f32.
_ERFC_Z_MAX = 1024.0
#: ``|x|`` beyond which :func:`normal_tail` is 0 in either dtype; the float32 one clamps ``|x|``
#: here, so a caller that clamps to it too shares the operation.
NORMAL_TAIL_ARG_MAX = _ERFC_Z_MAX * 1.4142135623730951
#: EXP_POLY_F32 in u = 2 r (coefficient of r^k times 2^-k, exact): exp(-a^2 / 2)'s reduction
#: then needs no halving of a.
_EXP_POLY_HALF_F32 = tuple(c * 0.5 ** (len(EXP_POLY_F32) - 1 - k) for k, c in enumerate(EXP_POLY_F32))


@register_jitable(inline="always")
def _ratio_f32(x, numerator, denominator):
    """``P(x) / Q(x)`` in float32 by Horner's rule (coefficients highest degree first)."""
    return _horner_f32(x, numerator) / _horner_f32(x, denominator)


@register_jitable(inline="always")
def _exp_neg_square_core_f32(a, k_log2e, ln2_hi_over_k, ln2_lo_over_k, poly):
    """``exp(-k a^2)`` for float32 ``a >= 0``, ``k`` a power of two and ``k a^2 <= 2^21``, the
    square never rounded: it enters the reduced argument ``u = r / k`` with
    ``r = -k a^2 - n ln2`` through one FMA (rounding ``a^2`` first would cost
    ``a^2 * 6e-8`` relative, 5e-6 at a = 9), and ``poly`` is EXP_POLY_F32 rescaled to ``u``.
    Flushes to 0 below about 2^-126, as :func:`exp`; NaN propagates."""
    s = _fma(a, a * np.float32(-k_log2e), np.float32(_ROUNDER_F32))
    n = s - np.float32(_ROUNDER_F32)
    u = _fma(-a, a, n * np.float32(-ln2_hi_over_k))  # n * ln2_hi is exact wherever it matters
    u = _fma(n, np.float32(-ln2_lo_over_k), u)
    p = _horner_f32(u, poly)
    # The biased exponent n + 126 of 2^(n - 1) (paired with the 2 in p), read from the
    # sum's bits; below the normal range it is clamped to 0, so the scale is 0.0.
    biased = np.float32(s).view(np.int32) - np.int32(_ROUNDER_BITS_F32 - _BIAS_F32)
    biased = biased if biased > np.int32(0) else np.int32(0)
    return p * np.int32(biased << np.int32(_SHIFT_F32)).view(np.float32)


@register_jitable(inline="always")
def _exp_neg_square_f32(z):
    """``exp(-z^2)`` for float32 ``0 <= z <= _ERFC_Z_MAX`` (see _exp_neg_square_core_f32)."""
    return _exp_neg_square_core_f32(z, _LOG2E, _LN2_HI_F32, _LN2_LO_F32, EXP_POLY_F32)


@register_jitable(inline="always")
def _exp_neg_half_square_f32(a):
    """``exp(-a^2 / 2)`` for float32 ``0 <= a <= NORMAL_TAIL_ARG_MAX``."""
    return _exp_neg_square_core_f32(a, 0.5 * _LOG2E, 2.0 * _LN2_HI_F32, 2.0 * _LN2_LO_F32, _EXP_POLY_HALF_F32)


@register_jitable(inline="always")
def _erfc_core_f32(z):
    """erfc(z) for float32 ``0 <= z <= _ERFC_Z_MAX``."""
    return _ratio_f32(z, _ERFC_P, _ERFC_Q) * _exp_neg_square_f32(z)


@register_jitable(inline="always")
def _clamped_abs_f32(x, bound):
    """``min(|x|, bound)``, with NaN passing through (the comparison fails for it)."""
    a = abs(x)
    return np.float32(bound) if a > np.float32(bound) else a


def _erfc_f32(x):
    z = _clamped_abs_f32(x, _ERFC_Z_MAX)
    result = _erfc_core_f32(z)
    if x < np.float32(0.0):
        result = np.float32(2.0) - result
    return result


def _erfc_f64(x):
    return math.erfc(x)


_overload_by_float(erfc, _erfc_f32, _erfc_f64, inline="always")


# --------------------------------------------------------------------------- erf
def erf(x):
    """Vectorisable error function (see the module docstring)."""
    return type(x)(math.erf(x))


def _erf_f32(x):
    z = _clamped_abs_f32(x, _ERFC_Z_MAX)
    # 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)), n <= 6: error < 2e-8 on |x| < 0.5
    t = x * x
    p = np.float32(1.0 / 9360.0)
    p = p * t - np.float32(1.0 / 1320.0)
    p = p * t + np.float32(1.0 / 216.0)
    p = p * t - np.float32(1.0 / 42.0)
    p = p * t + np.float32(1.0 / 10.0)
    p = p * t - np.float32(1.0 / 3.0)
    p = p * t + np.float32(1.0)
    small = np.float32(1.1283791670955126) * x * p
    large = np.float32(1.0) - _erfc_core_f32(z)
    if x < np.float32(0.0):
        large = -large
    return small if z < np.float32(0.5) else large


def _erf_f64(x):
    return math.erf(x)


_overload_by_float(erf, _erf_f32, _erf_f64, inline="always")


# --------------------------------------------------------------------------- normal_tail
def normal_tail(x):
    """Upper tail of the standard normal beyond ``|x|`` (see the module docstring)."""
    return type(x)(0.5 * math.erfc(abs(float(x)) / math.sqrt(2.0)))


@register_jitable(inline="always")
def _normal_tail_parts_f32(x):
    """``(P(a) / Q(a), exp(-a^2 / 2))`` with ``a = |x|`` (clamped) for float32 ``x``: the
    normal tail is their product."""
    a = _clamped_abs_f32(x, NORMAL_TAIL_ARG_MAX)
    return _ratio_f32(a, _NORMAL_TAIL_P, _NORMAL_TAIL_Q), _exp_neg_half_square_f32(a)


def _normal_tail_f32(x):
    rational, gauss = _normal_tail_parts_f32(x)
    return rational * gauss


def _normal_tail_f64(x):
    return 0.5 * math.erfc(abs(x) * 0.7071067811865476)


_overload_by_float(normal_tail, _normal_tail_f32, _normal_tail_f64, inline="always")


_INV_SQRT_2PI = 0.3989422804014327


def normal_tail_density(x):
    """``(normal_tail(x), phi(x))``: the tail and the standard normal density
    ``exp(-x^2 / 2) / sqrt(2 pi)``, which float32 gets from the tail's own exponential
    (GELU's backward needs both: one exponential instead of two)."""
    return normal_tail(x), type(x)(_INV_SQRT_2PI * math.exp(-0.5 * float(x) * float(x)))


def _normal_tail_density_f32(x):
    rational, gauss = _normal_tail_parts_f32(x)
    return rational * gauss, np.float32(_INV_SQRT_2PI) * gauss


def _normal_tail_density_f64(x):
    return 0.5 * math.erfc(abs(x) * 0.7071067811865476), _INV_SQRT_2PI * exp(-0.5 * x * x)


_overload_by_float(normal_tail_density, _normal_tail_density_f32, _normal_tail_density_f64, inline="always")
