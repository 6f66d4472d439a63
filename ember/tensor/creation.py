"""Tensor creation: from data, constant fills, ranges, seeded random numbers, DLPack."""

from __future__ import annotations

import math
import numbers

import numpy as np

from ember.core import dtypes as dt
from ember.kernels import registry
from ember.tensor.device import as_device
from ember.tensor.ops._core import Tensor, check_shape, wrap


def _shape(shape, op: str, dtype: dt.DType) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"{op}: negative dimension in shape {list(shape)}")
    check_shape(op, shape, dtype)
    return shape


def _infer_dtype(arr: np.ndarray, data) -> dt.DType:
    if arr.dtype.kind == "f":
        # Python floats / float64 nested lists become the default float, as in PyTorch
        if isinstance(data, (np.ndarray, np.generic)):
            return dt.dtype_from_numpy(arr.dtype)
        return dt.default_float
    if arr.dtype.kind in "iu":
        if isinstance(data, (np.ndarray, np.generic)):
            return dt.dtype_from_numpy(arr.dtype)
        return dt.default_int
    if arr.dtype.kind == "b":
        return dt.bool_
    raise TypeError(f"tensor: cannot make a tensor from data of NumPy dtype {arr.dtype}")


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Create a tensor from nested lists, a scalar, a NumPy array or another Tensor (copied).

    Args:
        data: the values.
        dtype: an ember dtype or name; inferred when None (Python floats -> float32,
            Python ints -> int64, NumPy arrays keep their type).
        device: ``"cpu"`` (default), ``"reference"``, ``"cuda:N"`` or a Device.
        requires_grad: mark the result as a leaf that requires grad.
    """
    dev = as_device(device)
    if isinstance(data, Tensor):
        out = data.detach().to(dev)
        out = out.to(dt.dtype(dtype)) if dtype is not None else out
        out = wrap(dev.backend.reshape(dev.backend.cast(out._data, out._dtype), out.shape), dev, out._dtype)
    else:
        try:
            arr = np.asarray(data)
        except ValueError as exc:  # NumPy 2 refuses ragged nested lists
            raise ValueError(f"tensor: cannot convert data of type {type(data).__name__}: {exc}") from None
        if arr.dtype == object:
            raise TypeError(
                f"tensor: cannot convert data of type {type(data).__name__} (ragged or non-numeric?)"
            )
        target = dt.dtype(dtype) if dtype is not None else _infer_dtype(arr, data)
        arr = np.array(arr, dtype=target.numpy, copy=True, order="C")
        out = wrap(dev.backend.from_host(arr), dev, target)
    return out.require_grad() if requires_grad else out


def from_numpy(array: np.ndarray, device=None) -> Tensor:
    """Wrap a NumPy array (no copy on ``cpu``/``reference``; its dtype must map to ember)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    target = dt.dtype_from_numpy(array.dtype)
    if array.dtype != target.numpy:
        array = array.astype(target.numpy)
    dev = as_device(device)
    return wrap(dev.backend.from_host(array), dev, target)


def _fill(shape, value, dtype, device, op: str = "full") -> Tensor:
    dev = as_device(device)
    if dtype is None:
        dtype = (
            dt.bool_
            if isinstance(value, bool)
            else (dt.default_int if isinstance(value, numbers.Integral) else dt.default_float)
        )
    dtype = dt.dtype(dtype)
    return wrap(dev.backend.full(_shape(shape, op, dtype), value, dtype), dev, dtype)


def zeros(*shape, dtype=None, device=None) -> Tensor:
    return _fill(shape, 0.0 if dtype is None else 0, dtype or dt.default_float, device, "zeros")


def ones(*shape, dtype=None, device=None) -> Tensor:
    return _fill(shape, 1, dtype or dt.default_float, device, "ones")


def full(shape, value, dtype=None, device=None) -> Tensor:
    return _fill((shape,) if isinstance(shape, int) else tuple(shape), value, dtype, device)


def empty(*shape, dtype=None, device=None) -> Tensor:
    dev = as_device(device)
    dtype = dt.dtype(dtype or dt.default_float)
    return wrap(dev.backend.empty(_shape(shape, "empty", dtype), dtype), dev, dtype)


def zeros_like(t: Tensor, dtype=None, device=None) -> Tensor:
    return zeros(t.shape, dtype=dtype or t.dtype, device=device or t.device)


def ones_like(t: Tensor, dtype=None, device=None) -> Tensor:
    return ones(t.shape, dtype=dtype or t.dtype, device=device or t.device)


def full_like(t: Tensor, value, dtype=None, device=None) -> Tensor:
    return full(t.shape, value, dtype=dtype or t.dtype, device=device or t.device)


def arange(start, end=None, step=1, dtype=None, device=None) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 unless a float is given."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    if dtype is None:
        dtype = dt.default_float if any(isinstance(v, float) for v in (start, end, step)) else dt.default_int
    dtype = dt.dtype(dtype)
    span = (end - start) / step
    if not math.isfinite(span):
        raise ValueError(f"arange: cannot make a finite range from {start} to {end} by {step}")
    check_shape("arange", (max(math.ceil(span), 0),), dtype)
    dev = as_device(device)
    return wrap(dev.backend.arange(start, end, step, dtype), dev, dtype)


def linspace(start: float, end: float, steps: int, dtype=None, device=None) -> Tensor:
    if steps < 0:
        raise ValueError(f"linspace: steps must be >= 0, got {steps}")
    dtype = dt.dtype(dtype or dt.default_float)
    check_shape("linspace", (int(steps),), dtype)
    dev = as_device(device)
    return wrap(dev.backend.linspace(start, end, steps, dtype), dev, dtype)


def eye(n: int, m: int | None = None, dtype=None, device=None) -> Tensor:
    dtype = dt.dtype(dtype or dt.default_float)
    m = n if m is None else m
    if n < 0 or m < 0:
        raise ValueError(f"eye: sizes must be >= 0, got n={n}, m={m}")
    check_shape("eye", (int(n), int(m)), dtype)
    dev = as_device(device)
    return wrap(dev.backend.eye(n, m, dtype), dev, dtype)


# ---- seeded random numbers -------------------------------------------------------------------
def seed(n: int) -> None:
    """Seed every backend's generator: the same seed gives the same numbers on a backend."""
    registry.seed_all(int(n))


def _float_dtype(dtype):
    dtype = dt.dtype(dtype or dt.default_float)
    if not dtype.is_float:
        raise TypeError(f"random floats need a float dtype, got {dtype}")
    return dtype


def rand(*shape, dtype=None, device=None, low: float = 0.0, high: float = 1.0) -> Tensor:
    """Uniform samples in [low, high)."""
    dev, dtype = as_device(device), _float_dtype(dtype)
    return wrap(dev.backend.uniform(_shape(shape, "rand", dtype), dtype, low, high), dev, dtype)


def randn(*shape, dtype=None, device=None, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Normal samples with ``mean`` and ``std``."""
    dev, dtype = as_device(device), _float_dtype(dtype)
    return wrap(dev.backend.normal(_shape(shape, "randn", dtype), dtype, mean, std), dev, dtype)


def randint(low: int, high: int, shape, dtype=None, device=None) -> Tensor:
    """Integers uniformly in [low, high)."""
    if high <= low:
        raise ValueError(f"randint: need low < high, got [{low}, {high})")
    dev = as_device(device)
    dtype = dt.dtype(dtype or dt.default_int)
    shape = _shape((shape,) if isinstance(shape, int) else shape, "randint", dtype)
    return wrap(dev.backend.randint(shape, low, high, dtype), dev, dtype)


def bernoulli(p, shape=None, device=None) -> Tensor:
    """Bool samples that are True with probability ``p`` (a float, or a tensor of probabilities)."""
    if isinstance(p, Tensor):
        u = rand(p.shape, dtype=p.dtype if p.dtype.is_float else None, device=p.device)
        return u < p
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"bernoulli: p must be in [0, 1], got {p}")
    dev = as_device(device)
    shape = _shape((shape,) if isinstance(shape, int) else shape, "bernoulli", dt.bool_)
    return wrap(dev.backend.bernoulli(shape, p), dev, dt.bool_)


# ---- DLPack -------------------------------------------------------------------------------------
def from_dlpack(obj, device=None) -> Tensor:
    """Wrap an object that speaks DLPack (NumPy, PyTorch, CuPy, JAX arrays) without copying."""
    kind = _dlpack_device_kind(obj)
    if kind == "cuda":
        import cupy

        arr = cupy.from_dlpack(obj)
        dev = as_device(device or f"cuda:{arr.device.id}")
        return wrap(arr, dev)
    arr = np.from_dlpack(obj)
    dev = as_device(device)
    if dev.kind == "cuda":
        raise ValueError(
            f"from_dlpack: the object lives on the host, not on {dev}; use .to('{dev}') afterwards"
        )
    return from_numpy(arr, dev)


def _dlpack_device_kind(obj) -> str:
    if hasattr(obj, "__dlpack_device__"):
        dev_type, _ = obj.__dlpack_device__()
        return "cuda" if int(dev_type) in (2, 3, 13) else "cpu"  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged
    return "cpu"
