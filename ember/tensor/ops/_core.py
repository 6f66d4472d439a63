"""Shared plumbing of tensor ops: wrapping backend arrays and recording graph nodes."""

from __future__ import annotations

import numbers

import numpy as np

from ember.core import dtypes as dt
from ember.tensor.grad_mode import _state
from ember.tensor.node import Ctx, Node
from ember.tensor.tensor import Tensor


def wrap(data, device, dtype: dt.DType | None = None):
    """Wrap a backend array into a Tensor (no autodiff)."""
    t = object.__new__(Tensor)
    t._arr = data
    t._device = device
    t._dtype = dtype if dtype is not None else dt.dtype_from_numpy(data.dtype)
    t._node = None
    return t


def needs_grad(*tensors) -> bool:
    if not _state.grad_enabled:
        return False
    for t in tensors:
        if t is not None and t._node is not None:
            return True
    return False


def record(result, op: str, inputs: tuple, **saved):
    """Attach a graph node to ``out`` when an input requires grad and grad mode is on.

    ``inputs`` are the differentiable inputs, in the order the VJP rule returns their grads.
    """
    if not _state.grad_enabled or not result._dtype.is_float:
        return result
    for t in inputs:
        if t is not None and t._node is not None:
            break
    else:
        return result
    meta = tuple((None, None, None) if t is None else (t._node, t._arr.shape, t._dtype) for t in inputs)
    result._node = Node(op, meta, Ctx(**saved) if saved else None)
    return result


def detached(t):
    """A view of ``t`` without graph (what VJP rules save); a pending value stays pending."""
    return wrap(t._arr, t._device, t._dtype)


def check_devices(op: str, *tensors) -> None:
    dev = None
    for t in tensors:
        if t is None:
            continue
        if dev is None:
            dev = t._device
        elif t._device is not dev and t._device != dev:
            raise RuntimeError(
                f"{op}: tensors are on different devices ({dev} and {t._device}); "
                f"move them to one device with .to(device) first"
            )


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {dim!r}")
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(
            f"{op}: dim {dim} is out of range for a tensor with {ndim} dims "
            f"(expected -{max(ndim, 1)} <= dim < {max(ndim, 1)})"
        )
    return dim % max(ndim, 1)


def normalize_dims(op: str, dims, ndim: int) -> tuple:
    if dims is None:
        return tuple(range(ndim))
    if not isinstance(dims, (tuple, list)):
        dims = (dims,)  # a single dim (normalize_dim rejects non-ints with a clear message)
    out = tuple(sorted({normalize_dim(op, d, ndim) for d in dims}))
    if len(out) != len(tuple(dims)):
        raise ValueError(f"{op}: repeated dims in {tuple(dims)}")
    # a 0-d tensor accepts dim 0 / -1 (as PyTorch) but has no axis to work on
    return out if ndim else ()


def is_scalar(x) -> bool:
    if type(x) in _PLAIN_SCALARS:  # most calls; an ABC isinstance costs more than the op
        return True
    return isinstance(x, (numbers.Number, np.number, np.bool_)) and not isinstance(x, np.ndarray)


_PLAIN_SCALARS = frozenset({float, int, bool})


def shape_str(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


MAX_NDIM = 64
"""The most dims a tensor may have (NumPy's and CuPy's limit)."""
MAX_NBYTES = 2**63 - 1
"""The most bytes an array may span, views included (a signed 64-bit size)."""


def check_shape(op: str, shape, dtype) -> None:
    """Raise a ``ValueError`` naming ``op`` when no array of ``shape`` and ``dtype`` can
    exist (more than :data:`MAX_NDIM` dims, or more than :data:`MAX_NBYTES` bytes), before
    a backend is asked for one and answers with its own error."""
    if len(shape) > MAX_NDIM:
        raise ValueError(f"{op}: a shape of {len(shape)} dims is not supported (at most {MAX_NDIM})")
    n = 1
    for s in shape:
        n *= int(s)
    if n * dtype.itemsize > MAX_NBYTES:
        raise ValueError(
            f"{op}: shape {shape_str(shape)} of {dtype} holds {n} elements ({n * dtype.itemsize} "
            f"bytes), more than any array can address (2**63 - 1 bytes)"
        )
