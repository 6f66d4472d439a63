"""Small register-blocked matrix products for kernels that work on cache-resident tiles.

The attention kernel multiplies tiles of a few dozen query rows by per-head matrices
with a short inner dimension (the head size). BLAS cannot be called from inside a
parallel Numba region, and alternating NumPy's BLAS thread pool with Numba's costs more
than the products themselves on a small machine, so the products are written here.

LLVM vectorises the innermost loop only, so every product is arranged with a long,
contiguous innermost loop and blocked by hand over four output rows and four reduction
steps: each vector loaded then feeds four FMAs, which brings the helpers close to
single-threaded OpenBLAS at the attention kernels' tile sizes. Where the CPU has 16 vector
registers (no AVX-512), ``rows_dot_rows`` blocks two rows at a time instead (``_NARROW``).

All helpers are serial (call them from inside a ``prange`` body), accept any sizes, and
require ``out``/``acc`` not to alias their inputs.
"""

from __future__ import annotations

from llvmlite import binding as llvm

from . import vecmath as vm
from .jit import serial

__all__ = ["accumulate_at_b", "dot_row_pairs", "rows_by_matrix", "rows_dot_rows"]

#: 16 vector registers (AVX2 and older) rather than 32 (AVX-512): the dot-product form then
#: blocks two rows by four columns, whose eight accumulators fit; four by four spilled
#: (attention's P·V was 14% slower on a Zen 2). A constant, so Numba compiles one form; the
#: kernel cache is keyed by the host CPU.
_NARROW = not llvm.get_host_cpu_features().get("avx512f", False)


@serial
def rows_by_matrix(a, bt, out):
    """``out[i, :] = sum_d a[i, d] * bt[d, :]`` (``a [M, K]``, ``bt [K, N]``, ``out [M, N]``).

    Args:
        a: left factor, rows contiguous.
        bt: right factor ``[K, N]`` (e.g. a transposed key matrix), rows contiguous.
        out: result, overwritten.
    """
    m, k = a.shape
    n = bt.shape[1]
    zero = vm.typed(0.0, out)
    i = 0
    while i + 4 <= m:
        o0, o1, o2, o3 = out[i], out[i + 1], out[i + 2], out[i + 3]
        p0, p1, p2, p3 = a[i], a[i + 1], a[i + 2], a[i + 3]
        for j in range(n):
            o0[j] = zero
            o1[j] = zero
            o2[j] = zero
            o3[j] = zero
        d = 0
        while d + 4 <= k:
            b0, b1, b2, b3 = bt[d], bt[d + 1], bt[d + 2], bt[d + 3]
            a0, a1, a2, a3 = p0[d], p0[d + 1], p0[d + 2], p0[d + 3]
            e0, e1, e2, e3 = p1[d], p1[d + 1], p1[d + 2], p1[d + 3]
            f0, f1, f2, f3 = p2[d], p2[d + 1], p2[d + 2], p2[d + 3]
            g0, g1, g2, g3 = p3[d], p3[d + 1], p3[d + 2], p3[d + 3]
            for j in range(n):
                x0 = b0[j]
                x1 = b1[j]
                x2 = b2[j]
                x3 = b3[j]
                o0[j] += a0 * x0 + a1 * x1 + a2 * x2 + a3 * x3
                o1[j] += e0 * x0 + e1 * x1 + e2 * x2 + e3 * x3
                o2[j] += f0 * x0 + f1 * x1 + f2 * x2 + f3 * x3
                o3[j] += g0 * x0 + g1 * x1 + g2 * x2 + g3 * x3
            d += 4
        while d < k:
            b0 = bt[d]
            a0, e0, f0, g0 = p0[d], p1[d], p2[d], p3[d]
            for j in range(n):
                x0 = b0[j]
                o0[j] += a0 * x0
                o1[j] += e0 * x0
                o2[j] += f0 * x0
                o3[j] += g0 * x0
            d += 1
        i += 4
    while i < m:
        o0 = out[i]
        p0 = a[i]
        for j in range(n):
            o0[j] = zero
        d = 0
        while d + 4 <= k:
            b0, b1, b2, b3 = bt[d], bt[d + 1], bt[d + 2], bt[d + 3]
            a0, a1, a2, a3 = p0[d], p0[d + 1], p0[d + 2], p0[d + 3]
            for j in range(n):
                o0[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j]
            d += 4
        while d < k:
            b0 = bt[d]
            a0 = p0[d]
            for j in range(n):
                o0[j] += a0 * b0[j]
            d += 1
        i += 1


@serial
def rows_dot_rows(w, bt, out):
    """``out[i, d] = sum_j w[i, j] * bt[d, j]`` (``w [M, N]``, ``bt [D, N]``, ``out [M, D]``).

    Args:
        w: left factor, rows contiguous (e.g. a tile of attention weights).
        bt: right factor transposed, ``[D, N]``, rows contiguous.
        out: result ``[M, D]``, overwritten.
    """
    m, n = w.shape
    dd = bt.shape[0]
    zero = vm.typed(0.0, out)
    i = 0
    while i + 4 <= m and not _NARROW:
        w0, w1, w2, w3 = w[i], w[i + 1], w[i + 2], w[i + 3]
        d = 0
        while d + 4 <= dd:
            b0, b1, b2, b3 = bt[d], bt[d + 1], bt[d + 2], bt[d + 3]
            s00 = s01 = s02 = s03 = zero
            s10 = s11 = s12 = s13 = zero
            s20 = s21 = s22 = s23 = zero
            s30 = s31 = s32 = s33 = zero
            for j in range(n):
                y0 = b0[j]
                y1 = b1[j]
                y2 = b2[j]
                y3 = b3[j]
                x = w0[j]
                s00 += x * y0
                s01 += x * y1
                s02 += x * y2
                s03 += x * y3
                x = w1[j]
                s10 += x * y0
                s11 += x * y1
                s12 += x * y2
                s13 += x * y3
                x = w2[j]
                s20 += x * y0
                s21 += x * y1
                s22 += x * y2
                s23 += x * y3
                x = w3[j]
                s30 += x * y0
                s31 += x * y1
                s32 += x * y2
                s33 += x * y3
            out[i, d], out[i, d + 1] = s00, s01
            out[i, d + 2], out[i, d + 3] = s02, s03
            out[i + 1, d], out[i + 1, d + 1] = s10, s11
            out[i + 1, d + 2], out[i + 1, d + 3] = s12, s13
            out[i + 2, d], out[i + 2, d + 1] = s20, s21
            out[i + 2, d + 2], out[i + 2, d + 3] = s22, s23
            out[i + 3, d], out[i + 3, d + 1] = s30, s31
            out[i + 3, d + 2], out[i + 3, d + 3] = s32, s33
            d += 4
        while d < dd:
            b0 = bt[d]
            s0 = s1 = s2 = s3 = zero
            for j in range(n):
                y0 = b0[j]
                s0 += w0[j] * y0
                s1 += w1[j] * y0
                s2 += w2[j] * y0
                s3 += w3[j] * y0
            out[i, d], out[i + 1, d], out[i + 2, d], out[i + 3, d] = s0, s1, s2, s3
            d += 1
        i += 4
    if _NARROW:
        i = dot_row_pairs(w, bt, out, i)
    while i < m:
        w0 = w[i]
        d = 0
        while d + 4 <= dd:
            b0, b1, b2, b3 = bt[d], bt[d + 1], bt[d + 2], bt[d + 3]
            s0 = s1 = s2 = s3 = zero
            for j in range(n):
                x = w0[j]
                s0 += x * b0[j]
                s1 += x * b1[j]
                s2 += x * b2[j]
                s3 += x * b3[j]
            out[i, d], out[i, d + 1], out[i, d + 2], out[i, d + 3] = s0, s1, s2, s3
            d += 4
        while d < dd:
            b0 = bt[d]
            s0 = zero
            for j in range(n):
                s0 += w0[j] * b0[j]
            out[i, d] = s0
            d += 1
        i += 1


@serial
def dot_row_pairs(w, bt, out, first):
    """``rows_dot_rows`` for the rows from ``first`` on, two at a time (four columns each: eight
    accumulators, which fit in 16 vector registers); returns the first row not done (the last
    one when their count is odd).

    Args:
        w: ``[M, N]``, rows contiguous.
        bt: ``[D, N]``, rows contiguous.
        out: ``[M, D]``; rows ``first`` up to the returned one are overwritten.
        first: the first row to compute.
    """
    m, n = w.shape
    dd = bt.shape[0]
    zero = vm.typed(0.0, out)
    i = first
    while i + 2 <= m:
        w0, w1 = w[i], w[i + 1]
        d = 0
        while d + 4 <= dd:
            b0, b1, b2, b3 = bt[d], bt[d + 1], bt[d + 2], bt[d + 3]
            s00 = s01 = s02 = s03 = zero
            s10 = s11 = s12 = s13 = zero
            for j in range(n):
                y0 = b0[j]
                y1 = b1[j]
                y2 = b2[j]
                y3 = b3[j]
                x = w0[j]
                s00 += x * y0
                s01 += x * y1
                s02 += x * y2
                s03 += x * y3
                x = w1[j]
                s10 += x * y0
                s11 += x * y1
                s12 += x * y2
                s13 += x * y3
            out[i, d], out[i, d + 1], out[i, d + 2], out[i, d + 3] = s00, s01, s02, s03
            out[i + 1, d], out[i + 1, d + 1], out[i + 1, d + 2], out[i + 1, d + 3] = s10, s11, s12, s13
            d += 4
        while d < dd:
            b0 = bt[d]
            s0 = s1 = zero
            for j in range(n):
                y0 = b0[j]
                s0 += w0[j] * y0
                s1 += w1[j] * y0
            out[i, d], out[i + 1, d] = s0, s1
            d += 1
        i += 2
    return i


@serial
def accumulate_at_b(acc, a, w):
    """``acc[d, :] += sum_i a[i, d] * w[i, :]`` (``a [M, D]``, ``w [M, N]``, ``acc [D, N]``).

    Args:
        acc: accumulator ``[D, N]`` (e.g. a transposed key gradient), updated in place.
        a: ``[M, D]``.
        w: ``[M, N]``, rows contiguous.
    """
    m, dd = a.shape
    n = w.shape[1]
    d = 0
    while d + 4 <= dd:
        c0, c1, c2, c3 = acc[d], acc[d + 1], acc[d + 2], acc[d + 3]
        i = 0
        while i + 4 <= m:
            w0, w1, w2, w3 = w[i], w[i + 1], w[i + 2], w[i + 3]
            f0, f1, f2, f3 = a[i, d], a[i + 1, d], a[i + 2, d], a[i + 3, d]
            g0, g1, g2, g3 = a[i, d + 1], a[i + 1, d + 1], a[i + 2, d + 1], a[i + 3, d + 1]
            h0, h1, h2, h3 = a[i, d + 2], a[i + 1, d + 2], a[i + 2, d + 2], a[i + 3, d + 2]
            k0, k1, k2, k3 = a[i, d + 3], a[i + 1, d + 3], a[i + 2, d + 3], a[i + 3, d + 3]
            for j in range(n):
                x0 = w0[j]
                x1 = w1[j]
                x2 = w2[j]
                x3 = w3[j]
                c0[j] += f0 * x0 + f1 * x1 + f2 * x2 + f3 * x3
                c1[j] += g0 * x0 + g1 * x1 + g2 * x2 + g3 * x3
                c2[j] += h0 * x0 + h1 * x1 + h2 * x2 + h3 * x3
                c3[j] += k0 * x0 + k1 * x1 + k2 * x2 + k3 * x3
            i += 4
        while i < m:
            w0 = w[i]
            f0, g0, h0, k0 = a[i, d], a[i, d + 1], a[i, d + 2], a[i, d + 3]
            for j in range(n):
                x0 = w0[j]
                c0[j] += f0 * x0
                c1[j] += g0 * x0
                c2[j] += h0 * x0
                c3[j] += k0 * x0
            i += 1
        d += 4
    while d < dd:
        c0 = acc[d]
        i = 0
        while i + 4 <= m:
            w0, w1, w2, w3 = w[i], w[i + 1], w[i + 2], w[i + 3]
            f0, f1, f2, f3 = a[i, d], a[i + 1, d], a[i + 2, d], a[i + 3, d]
            for j in range(n):
                c0[j] += f0 * w0[j] + f1 * w1[j] + f2 * w2[j] + f3 * w3[j]
            i += 4
        while i < m:
            w0 = w[i]
            f0 = a[i, d]
            for j in range(n):
                c0[j] += f0 * w0[j]
            i += 1
        d += 1
