"""The ``reference`` backend: pure NumPy, the specification every other backend must match.

Written against an array module ``xp`` so that the CuPy backend reuses the same primitives.
"""

from __future__ import annotations

import math

import numpy as np

from ember.kernels.backend import Backend
from ember.kernels.families.dropout import GOLDEN, MIX1, MIX2

_U64 = np.uint64


def _erf_host(x: np.ndarray) -> np.ndarray:
    # NumPy has no erf; math.erf is exact to double precision, and the reference favours
    # exactness over speed.
    # frompyfunc gives a Python float, not an array, for a 0-d input
    out = np.asarray(np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)))
    return out.astype(x.dtype)


class ArrayBackend(Backend):
    """Primitives implemented with a NumPy-compatible array module."""

    name = "reference"
    xp = np

    def __init__(self, seed: int | None = None):
        self.seed(seed)

    # ---- random -------------------------------------------------------------------------
    def seed(self, seed: int | None) -> None:
        self.generator = np.random.Generator(np.random.PCG64(seed))

    def next_seed(self) -> int:
        """A fresh 63-bit seed from this backend's generator (dropout masks use it)."""
        return int(self.generator.integers(0, 2**63 - 1))

    def uniform(self, shape, dtype, low=0.0, high=1.0):
        return self.generator.uniform(low, high, size=shape).astype(dtype.numpy)

    def normal(self, shape, dtype, mean=0.0, std=1.0):
        return self.generator.normal(mean, std, size=shape).astype(dtype.numpy)

    def bernoulli(self, shape, p):
        return self.generator.random(size=shape) < p

    def randint(self, shape, low, high, dtype):
        return self.generator.integers(low, high, size=shape).astype(dtype.numpy)

    # ---- creation / transfer ------------------------------------------------------------
    def empty(self, shape, dtype):
        return self.xp.empty(shape, dtype=dtype.numpy)

    def full(self, shape, value, dtype):
        if shape == ():  # a scalar operand (x * 0.5): np.array costs a fifth of np.full
            return self.xp.array(value, dtype=dtype.numpy)
        return self.xp.full(shape, value, dtype=dtype.numpy)

    def arange(self, start, stop, step, dtype):
        return self.xp.arange(start, stop, step, dtype=dtype.numpy)

    def linspace(self, start, stop, num, dtype):
        return self.xp.linspace(start, stop, num, dtype=dtype.numpy)

    def eye(self, n, m, dtype):
        return self.xp.eye(n, m, dtype=dtype.numpy)

    def from_host(self, array):
        return array

    def to_host(self, x):
        return x

    def _array(self, out):
        """``out`` as an array: NumPy ufuncs and indexing give scalars for 0-d results,
        which lack the array interface (flags, writeable views) the kernels rely on."""
        return out if isinstance(out, self.xp.ndarray) else self.xp.asarray(out)

    # ---- element-wise -------------------------------------------------------------------
    def cast(self, x, dtype):
        return x.astype(dtype.numpy)

    def unary(self, op, x):
        return self._array(self._unary(op, x))

    def _unary(self, op, x):
        xp = self.xp
        if op == "neg":
            return xp.negative(x)
        if op == "rsqrt":
            return 1 / xp.sqrt(x)
        if op == "sigmoid":
            # split by sign so that exp never overflows
            e = xp.exp(-xp.abs(x))
            return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)
        if op == "relu":
            return xp.maximum(x, xp.zeros((), x.dtype))
        if op == "erf":
            return self._erf(x)
        if op == "logical_not":
            return xp.logical_not(x)
        if op == "round":
            return xp.round(x)
        if op == "sign":
            return xp.sign(x)
        return getattr(xp, op)(x)

    def _erf(self, x):
        return _erf_host(x)

    _BINARY = {
        "add": "add",
        "sub": "subtract",
        "mul": "multiply",
        "div": "true_divide",
        "floordiv": "floor_divide",
        "mod": "remainder",
        "pow": "power",
        "maximum": "maximum",
        "minimum": "minimum",
        "eq": "equal",
        "ne": "not_equal",
        "lt": "less",
        "le": "less_equal",
        "gt": "greater",
        "ge": "greater_equal",
        "logical_and": "logical_and",
        "logical_or": "logical_or",
        "logical_xor": "logical_xor",
    }

    def binary(self, op, a, b):
        return self._array(getattr(self.xp, self._BINARY[op])(a, b))

    def where(self, cond, a, b):
        return self.xp.where(cond, a, b)

    # ---- reductions ---------------------------------------------------------------------
    def reduce(self, op, x, axes, keepdim):
        xp = self.xp
        fn = {"sum": xp.sum, "prod": xp.prod, "max": xp.max, "min": xp.min, "all": xp.all, "any": xp.any}[op]
        out = fn(x, axis=tuple(axes), keepdims=keepdim)
        return xp.asarray(out, dtype=x.dtype) if op in ("sum", "prod") else xp.asarray(out)

    def arg_reduce(self, op, x, axis, keepdim):
        fn = self.xp.argmax if op == "argmax" else self.xp.argmin
        out = fn(x, axis=axis, keepdims=keepdim)
        return self.xp.asarray(out, dtype=np.int64)

    def cumsum(self, x, axis):
        return self.xp.cumsum(x, axis=axis, dtype=x.dtype)

    def sort(self, x, axis, descending):
        xp = self.xp
        if not descending:
            idx = xp.argsort(x, axis=axis, kind="stable")
        else:
            # Descending, stable, NaN first (as PyTorch): the ascending sort of the reversed
            # row, reversed. Negating the keys instead would put NaN last and the minimum of
            # an int type (whose negation overflows to itself) first.
            n = x.shape[axis]
            idx = (n - 1) - xp.flip(xp.argsort(xp.flip(x, axis), axis=axis, kind="stable"), axis)
        return xp.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)

    # ---- movement -----------------------------------------------------------------------
    def reshape(self, x, shape):
        return self.xp.reshape(x, shape)

    def permute(self, x, axes):
        return self.xp.transpose(x, axes)

    def expand(self, x, shape):
        return self.xp.broadcast_to(x, shape)

    def getitem(self, x, key):
        return self._array(x[key])

    def pad(self, x, pad_width, value):
        return self.xp.pad(x, pad_width, mode="constant", constant_values=value)

    def cat(self, xs, axis):
        return self.xp.concatenate(xs, axis=axis)

    def flip(self, x, axes):
        return self.xp.flip(x, axis=axes)

    def tile(self, x, reps):
        return self.xp.tile(x, reps)

    # ---- indexing -----------------------------------------------------------------------
    def gather(self, x, axis, idx):
        return self.xp.take_along_axis(x, idx, axis=axis)

    def scatter_add(self, x, axis, idx, src):
        out = x.copy()
        # build full index grids so repeated indices accumulate (np.add.at is unbuffered)
        grids = list(self.xp.indices(idx.shape, sparse=True))
        grids[axis] = idx
        self._add_at(out, tuple(grids), src)
        return out

    def index_select(self, x, axis, idx):
        return self.xp.take(x, idx, axis=axis)

    def index_add(self, x, key, values):
        out = x.copy()
        self._add_at(out, key, values)
        return out

    def _add_at(self, out, key, values):
        rows = key[0] if isinstance(key, tuple) and len(key) == 1 else key
        if basic_key(key) or unique_rows(rows, out.shape[0] if out.ndim else 0):
            out[rows] += values  # unique rows: buffered fancy indexing adds each once, much faster
            return
        np.add.at(out, key, values)

    def index_put(self, x, key, values, accumulate):
        if accumulate:
            return self.index_add(x, key, values)
        out = x.copy()
        out[key] = values
        return out

    # ---- linear algebra -----------------------------------------------------------------
    def matmul(self, a, b):
        if b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous:
            # [..., n, k] @ [k, m] as one GEMM: NumPy would loop over the batch in small GEMMs
            # (rows counted, not -1: NumPy cannot infer -1 for an empty array with k = 0)
            out = self._gemm(a.reshape(math.prod(a.shape[:-1]), a.shape[-1]), b)
            return out.reshape(a.shape[:-1] + (b.shape[-1],))
        return self._gemm(a, b)

    def _gemm(self, a, b):
        """The array library's ``matmul`` (a backend may run it on its own threads)."""
        return self.xp.matmul(a, b)

    # ---- dropout hash -------------------------------------------------------------------
    def dropout_keep_mask(self, shape, p, seed):
        xp = self.xp
        n = int(np.prod(shape)) if shape else 1
        # In place, with one scratch array: this runs on every dropout while the cpu kernels
        # compile, and each temporary of n uint64 costs as much as the arithmetic.
        z = xp.arange(1, n + 1, dtype=_U64)
        with np.errstate(over="ignore"):
            xp.multiply(z, _U64(GOLDEN), out=z)
            xp.add(z, _U64(seed % 2**64), out=z)
            scratch = xp.right_shift(z, _U64(30))
            for shift, mix in ((27, MIX1), (31, MIX2)):
                xp.bitwise_xor(z, scratch, out=z)
                xp.multiply(z, _U64(mix), out=z)
                xp.right_shift(z, _U64(shift), out=scratch)
            xp.bitwise_xor(z, scratch, out=z)
        xp.right_shift(z, _U64(40), out=z)
        # u = top 24 bits / 2**24 >= p  <=>  top 24 bits >= ceil(p * 2**24) (p * 2**24 is exact)
        return xp.reshape(z >= _U64(math.ceil(p * (1 << 24))), shape)


class ReferenceBackend(ArrayBackend):
    """The specification: the primitives in NumPy and every composite its family's default."""

    name = "reference"


def basic_key(key) -> bool:
    """Whether ``key`` is basic indexing only (ints, slices, None, Ellipsis): it names each element
    at most once, so ``out[key] += values`` adds each value once (the gradient of ``x[:, :k]``
    through the unbuffered ``np.add.at`` was many times slower)."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(
        p is None
        or p is Ellipsis
        or isinstance(p, slice)
        or (isinstance(p, (int, np.integer)) and not isinstance(p, bool))
        for p in parts
    )


def unique_rows(rows, n: int) -> bool:
    """Whether ``rows`` is a 1-D array of distinct in-range row numbers (non-negative)."""
    if not isinstance(rows, np.ndarray) or rows.ndim != 1 or rows.dtype.kind not in "iu" or rows.size < 2:
        return False
    if rows.min() < 0 or rows.max() >= n:
        return False
    return bool(np.bincount(rows, minlength=n).max() <= 1)
