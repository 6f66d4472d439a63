"""The primitives of the backend contract as PyTorch operations, with NumPy's semantics.

The ``reference`` backend (NumPy) is the specification: where PyTorch's op of the same name
differs (a reduction over no axes, integer division by zero, the sign of NaN, the remainder's
sign of zero, a cumulative sum of bools), the method below says how it gives NumPy's answer.
Random draws come from a NumPy generator, so a seed gives the numbers it gives on ``reference``
and ``cpu``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ember.kernels.families.dropout import GOLDEN, MIX1, MIX2
from ember.kernels.torch.runtime import EMBER_DTYPES, TORCH_DTYPES, as_host_array

_UNARY = {
    "neg": torch.neg,
    "exp": torch.exp,
    "log": torch.log,
    "log1p": torch.log1p,
    "expm1": torch.expm1,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "abs": torch.abs,
    "sin": torch.sin,
    "cos": torch.cos,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "erf": torch.erf,
    "relu": torch.relu,
    "reciprocal": torch.reciprocal,
    "square": torch.square,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,  # half to even, as NumPy
    "logical_not": torch.logical_not,
    "isnan": torch.isnan,
    "isinf": torch.isinf,
    "isfinite": torch.isfinite,
}

_BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor,
}


def _signed(value: int) -> int:
    """A 64-bit unsigned constant as the int64 with the same bits."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _shift_right(z: torch.Tensor, bits: int) -> torch.Tensor:
    """The logical right shift of int64 ``z`` (PyTorch's ``>>`` is arithmetic on int64)."""
    return (z >> bits) & ((1 << (64 - bits)) - 1)


class TorchPrimitives:
    """Every primitive of the contract on PyTorch tensors of one device (``self.device``)."""

    device: torch.device

    # ---- random -------------------------------------------------------------------------
    def seed(self, seed):
        self.generator = np.random.Generator(np.random.PCG64(seed))

    def next_seed(self):
        return int(self.generator.integers(0, 2**63 - 1))

    def uniform(self, shape, dtype, low=0.0, high=1.0):
        return self.from_host(self.generator.uniform(low, high, size=shape).astype(dtype.numpy))

    def normal(self, shape, dtype, mean=0.0, std=1.0):
        return self.from_host(self.generator.normal(mean, std, size=shape).astype(dtype.numpy))

    def bernoulli(self, shape, p):
        return self.from_host(np.asarray(self.generator.random(size=shape) < p))

    def randint(self, shape, low, high, dtype):
        return self.from_host(self.generator.integers(low, high, size=shape).astype(dtype.numpy))

    # ---- creation / transfer ------------------------------------------------------------
    def empty(self, shape, dtype):
        return torch.empty(shape, dtype=TORCH_DTYPES[dtype], device=self.device)

    def full(self, shape, value, dtype):
        if shape == ():
            return torch.tensor(value, dtype=TORCH_DTYPES[dtype], device=self.device)
        return torch.full(shape, value, dtype=TORCH_DTYPES[dtype], device=self.device)

    def arange(self, start, stop, step, dtype):
        # NumPy's length, ceil((stop - start) / step), computed the same way for float steps
        return self.from_host(np.arange(start, stop, step, dtype=dtype.numpy))

    def linspace(self, start, stop, num, dtype):
        return self.from_host(np.linspace(start, stop, num, dtype=dtype.numpy))

    def eye(self, n, m, dtype):
        return torch.eye(n, m, dtype=TORCH_DTYPES[dtype], device=self.device)

    def from_host(self, array):
        tensor = torch.from_numpy(as_host_array(np.asarray(array)))
        return tensor if self.device.type == "cpu" else tensor.to(self.device)

    def to_host(self, x):
        return x.numpy() if x.device.type == "cpu" else x.cpu().numpy()

    def dtype_of(self, x):
        return EMBER_DTYPES[x.dtype]

    # ---- element-wise -------------------------------------------------------------------
    def cast(self, x, dtype):
        return x.to(TORCH_DTYPES[dtype], copy=True)  # a new array, as NumPy's astype

    def unary(self, op, x):
        if op == "sign":  # NumPy keeps NaN where PyTorch gives 0
            return (
                torch.where(torch.isnan(x), x, torch.sign(x)) if x.dtype.is_floating_point else torch.sign(x)
            )
        if op in ("floor", "ceil", "round") and not x.dtype.is_floating_point:
            return x.clone()
        return _UNARY[op](x)

    def binary(self, op, a, b):
        if op == "div":
            if not a.dtype.is_floating_point and not b.dtype.is_floating_point:
                a, b = a.to(torch.float64), b.to(torch.float64)  # NumPy's true division of ints
            return torch.div(a, b)
        if op in ("floordiv", "mod"):
            return self._divmod(op, a, b)
        return _BINARY[op](a, b)

    def _divmod(self, op, a, b):
        if not a.dtype.is_floating_point:
            # NumPy gives 0 where the divisor is 0 (PyTorch raises)
            zero = b == 0
            safe = torch.where(zero, torch.ones((), dtype=b.dtype, device=b.device), b)
            out = torch.floor_divide(a, safe) if op == "floordiv" else torch.remainder(a, safe)
            return torch.where(zero, torch.zeros((), dtype=out.dtype, device=out.device), out)
        if op == "floordiv":
            return torch.floor_divide(a, b)
        # NumPy's remainder: fmod moved to the divisor's sign, and a zero result signed as the divisor
        mod = torch.fmod(a, b)
        moved = torch.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)
        return torch.where(mod == 0, torch.copysign(torch.zeros_like(mod), b), moved)

    def where(self, cond, a, b):
        return torch.where(cond, a, b)

    # ---- reductions ---------------------------------------------------------------------
    def reduce(self, op, x, axes, keepdim):
        axes = tuple(axes)
        if not axes:  # NumPy reduces over nothing; PyTorch would reduce over every axis
            return x.to(torch.bool, copy=True) if op in ("all", "any") else x.clone()
        if op in ("max", "min") and x.dtype == torch.bool:
            op = "any" if op == "max" else "all"
        if op == "sum":
            return torch.sum(x, dim=axes, keepdim=keepdim).to(x.dtype)
        if op == "prod":
            out = x
            for axis in sorted(axes, reverse=True):  # torch.prod takes one axis at a time
                out = torch.prod(out, dim=axis, keepdim=keepdim)
            return out.to(x.dtype)
        if op == "max":
            return torch.amax(x, dim=axes, keepdim=keepdim)
        if op == "min":
            return torch.amin(x, dim=axes, keepdim=keepdim)
        if op == "all":
            return torch.all(x, dim=axes, keepdim=keepdim)
        return torch.any(x, dim=axes, keepdim=keepdim)

    def arg_reduce(self, op, x, axis, keepdim):
        if x.dtype == torch.bool:
            x = x.to(torch.uint8)
        fn = torch.argmax if op == "argmax" else torch.argmin
        return fn(x, dim=axis, keepdim=keepdim)

    def cumsum(self, x, axis):
        if x.dtype == torch.bool:  # NumPy's boolean running sum is a running "or"
            return torch.cumsum(x, dim=axis) > 0
        return torch.cumsum(x, dim=axis, dtype=x.dtype)

    def sort(self, x, axis, descending):
        values, indices = torch.sort(x, dim=axis, descending=descending, stable=True)
        return values, indices

    # ---- movement -----------------------------------------------------------------------
    def reshape(self, x, shape):
        return torch.reshape(x, tuple(shape))

    def permute(self, x, axes):
        return x.permute(tuple(axes))

    def expand(self, x, shape):
        return torch.broadcast_to(x, tuple(shape))

    def getitem(self, x, key):
        return x[self._key(key)]

    def _key(self, key):
        """A NumPy-style key with PyTorch index tensors (NumPy arrays, lists and NumPy ints
        converted; the tensor layer already gives this backend's arrays)."""
        if isinstance(key, tuple):
            return tuple(self._key_part(k) for k in key)
        return self._key_part(key)

    def _key_part(self, k):
        if isinstance(k, np.ndarray):
            return self.from_host(k)
        if isinstance(k, np.integer):
            return int(k)
        if isinstance(k, list):
            return torch.as_tensor(np.asarray(k), device=self.device)
        if isinstance(k, torch.Tensor) and k.dtype == torch.int32:
            return k.long()
        return k

    def pad(self, x, pad_width, value):
        shape = tuple(n + before + after for n, (before, after) in zip(x.shape, pad_width))
        out = torch.full(shape, value, dtype=x.dtype, device=x.device)
        out[tuple(slice(before, before + n) for n, (before, _) in zip(x.shape, pad_width))] = x
        return out

    def cat(self, xs, axis):
        return torch.cat(list(xs), dim=axis)

    def flip(self, x, axes):
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        return torch.flip(x, axes)

    def tile(self, x, reps):
        return torch.tile(x, tuple(reps))

    # ---- indexing -----------------------------------------------------------------------
    def gather(self, x, axis, idx):
        return torch.take_along_dim(x, idx.long(), dim=axis)

    def scatter_add(self, x, axis, idx, src):
        src = torch.broadcast_to(src, idx.shape)
        return x.clone().scatter_add_(axis, idx.long(), src.contiguous())

    def index_select(self, x, axis, idx):
        return torch.index_select(x, axis, idx)

    def index_add(self, x, key, values):
        out = x.clone(memory_format=torch.contiguous_format)  # a dense copy, viewed flat below
        key = self._key(key)
        if _basic(key):  # each element named once: a plain add
            out[key] += values
            return out
        # the flat position of every element the key names, then one accumulating add, which
        # sums repeated positions (what np.add.at does)
        positions = torch.arange(out.numel(), device=out.device).reshape(out.shape)[key]
        values = torch.broadcast_to(values, positions.shape).to(out.dtype)
        out.view(-1).index_add_(0, positions.reshape(-1), values.reshape(-1))
        return out

    def index_put(self, x, key, values, accumulate):
        if accumulate:
            return self.index_add(x, key, values)
        out = x.clone()
        out[self._key(key)] = values
        return out

    # ---- linear algebra -----------------------------------------------------------------
    def matmul(self, a, b):
        return torch.matmul(a, b)

    # ---- dropout hash -------------------------------------------------------------------
    def dropout_keep_mask(self, shape, p, seed):
        # SplitMix64 in int64: products wrap as uint64 would, the right shifts made logical
        n = math.prod(shape)
        z = torch.arange(1, n + 1, dtype=torch.int64, device=self.device) * _signed(GOLDEN) + _signed(
            seed % 2**64
        )
        z = (z ^ _shift_right(z, 30)) * _signed(MIX1)
        z = (z ^ _shift_right(z, 27)) * _signed(MIX2)
        z = z ^ _shift_right(z, 31)
        u = _shift_right(z, 40).to(torch.float64) * (1.0 / (1 << 24))
        return torch.reshape(u >= p, tuple(shape))


def _basic(key) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(
        p is None or p is Ellipsis or (isinstance(p, (slice, int)) and not isinstance(p, bool)) for p in parts
    )
