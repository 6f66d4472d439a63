"""Small register-blocked matrix products for kernels that work on cache-resident tiles.

The attention kernel multiplies tiles of a few hundred rows by per-head matrices with a
short inner dimension (the head size). Calling BLAS for each tile from inside a
parallel Numba region is not possible, and alternating NumPy's BLAS thread pool with
Numba's pool costs more than the products themselves on a small machine, so the
products are written here. LLVM vectorises the innermost loop only, so every product is
arranged with a long, contiguous innermost loop and blocked by hand over two output rows
and four reduction steps: each loaded vector then feeds several FMAs (about 80% of
OpenBLAS single-thread speed at 256 x 32 x 256, float32, measured here).

All three helpers are serial (call them from inside a ``prange`` body) and accept any
row counts; ``out``/``acc`` must not alias the inputs.
"""

from __future__ import annotations

from . import vecmath as vm
from .jit import serial

__all__ = ["accumulate_at_b", "rows_by_matrix", "rows_dot_rows"]


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
    while i < m:
        pair = i + 1 < m
        o0 = out[i]
        o1 = out[i + 1] if pair else out[i]
        p0 = a[i]
        p1 = a[i + 1] if pair else a[i]
        for j in range(n):
            o0[j] = zero
        if pair:
            for j in range(n):
                o1[j] = zero
        d = 0
        while d + 4 <= k:
            b0 = bt[d]
            b1 = bt[d + 1]
            b2 = bt[d + 2]
            b3 = bt[d + 3]
            a0, a1, a2, a3 = p0[d], p0[d + 1], p0[d + 2], p0[d + 3]
            if pair:
                e0, e1, e2, e3 = p1[d], p1[d + 1], p1[d + 2], p1[d + 3]
                for j in range(n):
                    x0 = b0[j]
                    x1 = b1[j]
                    x2 = b2[j]
                    x3 = b3[j]
                    o0[j] += a0 * x0 + a1 * x1 + a2 * x2 + a3 * x3
                    o1[j] += e0 * x0 + e1 * x1 + e2 * x2 + e3 * x3
            else:
                for j in range(n):
                    o0[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j]
            d += 4
        while d < k:
            b0 = bt[d]
            a0 = p0[d]
            e0 = p1[d]
            for j in range(n):
                o0[j] += a0 * b0[j]
            if pair:
                for j in range(n):
                    o1[j] += e0 * b0[j]
            d += 1
        i += 2


@serial
def rows_dot_rows(w, bt, out):
    """``out[i, d] = sum_j w[i, j] * bt[d, j]`` (``w [M, N]``, ``bt [D, N]``, ``out [M, D]``).

    Args:
        w: left factor, rows contiguous (e.g. a tile of attention weights).
        bt: right factor transposed, ``[D, N]``, rows contiguous.
        out: result ``[M, D]`` (rows may be strided), overwritten.
    """
    m, n = w.shape
    dd = bt.shape[0]
    zero = vm.typed(0.0, out)
    i = 0
    while i < m:
        pair = i + 1 < m
        w0 = w[i]
        w1 = w[i + 1] if pair else w[i]
        d = 0
        while d + 4 <= dd:
            b0 = bt[d]
            b1 = bt[d + 1]
            b2 = bt[d + 2]
            b3 = bt[d + 3]
            s00 = s01 = s02 = s03 = zero
            s10 = s11 = s12 = s13 = zero
            for j in range(n):
                x0 = w0[j]
                x1 = w1[j]
                s00 += x0 * b0[j]
                s01 += x0 * b1[j]
                s02 += x0 * b2[j]
                s03 += x0 * b3[j]
                s10 += x1 * b0[j]
                s11 += x1 * b1[j]
                s12 += x1 * b2[j]
                s13 += x1 * b3[j]
            out[i, d] = s00
            out[i, d + 1] = s01
            out[i, d + 2] = s02
            out[i, d + 3] = s03
            if pair:
                out[i + 1, d] = s10
                out[i + 1, d + 1] = s11
                out[i + 1, d + 2] = s12
                out[i + 1, d + 3] = s13
            d += 4
        while d < dd:
            b0 = bt[d]
            s0 = s1 = zero
            for j in range(n):
                s0 += w0[j] * b0[j]
                s1 += w1[j] * b0[j]
            out[i, d] = s0
            if pair:
                out[i + 1, d] = s1
            d += 1
        i += 2


@serial
def accumulate_at_b(acc, a, w):
    """``acc[d, :] += sum_i a[i, d] * w[i, :]`` (``a [M, D]``, ``w [M, N]``, ``acc [D, N]``).

    Args:
        acc: accumulator ``[D, N]`` (e.g. a transposed key gradient), updated in place.
        a: ``[M, D]`` (rows may be strided).
        w: ``[M, N]``, rows contiguous.
    """
    m, dd = a.shape
    n = w.shape[1]
    d = 0
    while d < dd:
        pair = d + 1 < dd
        c0 = acc[d]
        c1 = acc[d + 1] if pair else acc[d]
        d1 = d + 1 if pair else d
        i = 0
        while i + 4 <= m:
            w0 = w[i]
            w1 = w[i + 1]
            w2 = w[i + 2]
            w3 = w[i + 3]
            f0, f1, f2, f3 = a[i, d], a[i + 1, d], a[i + 2, d], a[i + 3, d]
            if pair:
                g0, g1, g2, g3 = a[i, d1], a[i + 1, d1], a[i + 2, d1], a[i + 3, d1]
                for j in range(n):
                    x0 = w0[j]
                    x1 = w1[j]
                    x2 = w2[j]
                    x3 = w3[j]
                    c0[j] += f0 * x0 + f1 * x1 + f2 * x2 + f3 * x3
                    c1[j] += g0 * x0 + g1 * x1 + g2 * x2 + g3 * x3
            else:
                for j in range(n):
                    c0[j] += f0 * w0[j] + f1 * w1[j] + f2 * w2[j] + f3 * w3[j]
            i += 4
        while i < m:
            w0 = w[i]
            f0 = a[i, d]
            g0 = a[i, d1]
            for j in range(n):
                c0[j] += f0 * w0[j]
            if pair:
                for j in range(n):
                    c1[j] += g0 * w0[j]
            i += 1
        d += 2
