"""Small matrix products for kernels that work on cache-resident tiles.

The attention kernel multiplies tiles of a few dozen query rows by per-head matrices
with a short inner dimension (the head size). BLAS cannot be called from inside a
parallel Numba region, and alternating NumPy's BLAS thread pool with Numba's costs more
than the products themselves on a small machine, so the products are computed here, by
the register-resident blocks of :mod:`.microkernel`: strips of ``ROWS`` output rows (then
4, 2, 1 for the last rows), two vectors of columns at a time, the last columns masked. The
partial sums stay in registers, as in a BLAS micro-kernel, where Numba loops would store and
reload them every few FMAs.

Both helpers are serial (call them from inside a ``prange`` body or a pool thread), accept
any sizes, need the rows of ``b`` and ``out`` contiguous, and require ``out`` not to alias
the inputs.
"""

from __future__ import annotations

from .jit import serial
from .microkernel import ROWS, block
from .vector_ir import VECTOR_BYTES

__all__ = ["accumulate_at_b", "rows_by_matrix"]

_FULL8, _FULL4, _FULL2, _FULL1 = (block(r, False) for r in (8, 4, 2, 1))
_MASKED8, _MASKED4, _MASKED2, _MASKED1 = (block(r, True) for r in (8, 4, 2, 1))


@serial
def _block(rows, masked, a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate):
    if masked:
        if rows == 8:
            _MASKED8(a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate)
        elif rows == 4:
            _MASKED4(a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate)
        elif rows == 2:
            _MASKED2(a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate)
        else:
            _MASKED1(a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate)
    elif rows == 8:
        _FULL8(a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate)
    elif rows == 4:
        _FULL4(a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate)
    elif rows == 2:
        _FULL2(a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate)
    else:
        _FULL1(a, a_off, a_rs, a_cs, b, b_off, ldb, out, o_off, ldo, k, ncols, accumulate)


@serial
def _tiled(a, a_rs, a_cs, m, k, b, out, accumulate):
    """``out[:m] (+)= A @ b`` with ``A[r, d] = a.flat[r a_rs + d a_cs]`` (strides in elements)."""
    size = out.itemsize
    n = out.shape[1]
    ldb = b.strides[0] // size
    ldo = out.strides[0] // size
    span = 2 * (VECTOR_BYTES // size)
    i = 0
    while i < m:
        left = m - i
        rows = ROWS if left >= ROWS else 4 if left >= 4 else 2 if left >= 2 else 1
        j = 0
        while j < n:
            ncols = min(span, n - j)
            _block(
                rows,
                ncols < span,
                a,
                i * a_rs,
                a_rs,
                a_cs,
                b,
                j,
                ldb,
                out,
                i * ldo + j,
                ldo,
                k,
                ncols,
                accumulate,
            )
            j += span
        i += rows


@serial
def rows_by_matrix(a, bt, out):
    """``out = a @ bt`` (``a [M, K]``, ``bt [K, N]``, ``out [M, N]``).

    Args:
        a: left factor (any strides).
        bt: right factor ``[K, N]`` (e.g. a transposed key matrix), rows contiguous.
        out: result, overwritten, rows contiguous.
    """
    size = a.itemsize
    _tiled(a, a.strides[0] // size, a.strides[1] // size, a.shape[0], a.shape[1], bt, out, False)


@serial
def accumulate_at_b(acc, a, w):
    """``acc += a^T @ w`` (``a [M, D]``, ``w [M, N]``, ``acc [D, N]``).

    Args:
        acc: accumulator ``[D, N]`` (e.g. a transposed key gradient), updated in place, rows
            contiguous.
        a: ``[M, D]`` (any strides).
        w: ``[M, N]``, rows contiguous.
    """
    size = a.itemsize
    _tiled(a, a.strides[1] // size, a.strides[0] // size, a.shape[1], a.shape[0], w, acc, True)
