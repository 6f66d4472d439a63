"""Indexing ops: advanced indexing, gather/scatter, index_select, one_hot, sort/topk, index_put.

Every op that reads or writes memory at positions given by an index tensor checks the range
first, so an out-of-range index raises ``IndexError`` before any unchecked kernel runs.
"""

from __future__ import annotations

import builtins

import numpy as np

from ember.core import dtypes as dt
from ember.tensor import creation
from ember.tensor.ops._core import (
    Tensor,
    check_devices,
    detached,
    needs_grad,
    normalize_dim,
    record,
    shape_str,
    wrap,
)
from ember.tensor.ops.movement import _normalize_basic_key, basic_component, basic_index


def check_index_range(op: str, idx: Tensor, size: int, what: str = "index") -> None:
    """Raise IndexError unless every value of the int tensor ``idx`` is in [0, size)."""
    if not idx._dtype.is_int:
        raise TypeError(f"{op}: {what} tensor must be int32 or int64, got {idx._dtype}")
    if idx.numel == 0:
        return
    b = idx._device.backend
    lo = int(b.to_host(b.reduce("min", idx._data, tuple(range(idx.ndim)), False)))
    hi = int(b.to_host(b.reduce("max", idx._data, tuple(range(idx.ndim)), False)))
    if lo < 0 or hi >= size:
        bad = lo if lo < 0 else hi
        raise IndexError(
            f"{op}: {what} {bad} is out of range for size {size} (expected 0 <= {what} < {size})"
        )


def _advanced_key(x: Tensor, key):
    """Turn a key with tensors/lists into backend arrays, validating every index tensor."""
    if not isinstance(key, tuple):
        key = (key,)
    out, dim = [], 0
    n_real = builtins.sum(1 if not (k is None or k is Ellipsis) else 0 for k in key)
    for k in key:
        if isinstance(k, (list, np.ndarray)):
            k = creation.tensor(k, device=x._device)
        if isinstance(k, Tensor):
            check_devices("index", x, k)
            if k._dtype.is_bool:
                span = x.shape[dim : dim + k.ndim]
                if tuple(span) != k.shape:
                    raise IndexError(
                        f"index: bool mask of shape {shape_str(k.shape)} does not match the indexed "
                        f"dims {shape_str(span)} of a tensor of shape {shape_str(x.shape)}"
                    )
                out.append(k._data)
                dim += k.ndim
            else:
                size = x.shape[dim] if dim < x.ndim else 0
                if not k._dtype.is_int:
                    raise IndexError(f"index: index tensors must be int or bool, got {k._dtype}")
                if k.numel:
                    b = k._device.backend
                    lo = int(b.to_host(b.reduce("min", k._data, tuple(range(k.ndim)), False)))
                    hi = int(b.to_host(b.reduce("max", k._data, tuple(range(k.ndim)), False)))
                    if lo < -size or hi >= size:
                        raise IndexError(
                            f"index: index {lo if lo < -size else hi} is out of bounds for dim {dim} "
                            f"with size {size}"
                        )
                    if lo < 0:  # wrap negatives so that index_add in backward sees the same positions
                        kt = k._dtype
                        neg = b.binary("lt", k._data, b.full((), 0, kt))
                        k = wrap(
                            b.where(neg, b.binary("add", k._data, b.full((), size, kt)), k._data),
                            k._device,
                            kt,
                        )
                out.append(k._data)
                dim += 1
        elif k is Ellipsis:
            take = (
                x.ndim
                - n_real
                - builtins.sum((kk.ndim - 1) for kk in key if isinstance(kk, Tensor) and kk._dtype.is_bool)
            )
            out.extend([slice(None)] * take)
            dim += take
        else:
            item, used = basic_component(k, x.shape, dim)
            out.append(item)
            dim += used
    if dim > x.ndim:
        raise IndexError(f"index: too many indices for a tensor of {x.ndim} dims")
    return tuple(out)


def _is_advanced(key) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return builtins.any(isinstance(k, (Tensor, list, np.ndarray)) for k in keys)


def getitem(x: Tensor, key) -> Tensor:
    """Python indexing: ints, slices (positive steps), None, Ellipsis, and int/bool tensors."""
    if not _is_advanced(key):
        return basic_index(x, key)
    akey = _advanced_key(x, key)
    out = wrap(x._device.backend.getitem(x._data, akey), x._device, x._dtype)
    if needs_grad(x):
        return record(out, "index", (x,), key=akey, shape=x.shape)
    return out


def _indexed_shape(x: Tensor, akey) -> tuple:
    """The shape of ``x[akey]``: read off a single integer index array (rows, as token packing
    scatters them) instead of gathering the rows only to measure them."""
    if isinstance(akey, tuple) and len(akey) == 1:
        if hasattr(akey[0], "dtype") and x._device.backend.dtype_of(akey[0]).is_int:
            return tuple(akey[0].shape) + tuple(x.shape[1:])
    return tuple(x._device.backend.getitem(x._data, akey).shape)


def index_put(x: Tensor, key, values, accumulate: bool = False) -> Tensor:
    """A copy of ``x`` with ``x[key] = values`` (or ``+=`` when ``accumulate``), as an op."""
    akey = _advanced_key(x, key) if _is_advanced(key) else _normalize_basic_key(key, x.shape)
    if not isinstance(values, Tensor):
        values = wrap(x._device.backend.full((), values, x._dtype), x._device, x._dtype)
    check_devices("index_put", x, values)
    values = values.to(x._dtype)
    target_shape = _indexed_shape(x, akey)
    try:
        np.broadcast_shapes(values.shape, target_shape)
    except ValueError:
        raise ValueError(
            f"index_put: values of shape {shape_str(values.shape)} cannot be broadcast to the "
            f"indexed shape {shape_str(target_shape)}"
        ) from None
    vals = values._data
    if values.shape != target_shape:
        vals = x._device.backend.expand(vals, target_shape)
    out = wrap(x._device.backend.index_put(x._data, akey, vals, accumulate), x._device, x._dtype)
    return record(out, "index_put", (x, values), key=akey, accumulate=accumulate)


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = x[i][index[i][j]]`` along ``dim`` (index has x's rank)."""
    d = normalize_dim("gather", dim, x.ndim)
    check_devices("gather", x, index)
    if index.ndim != x.ndim:
        raise ValueError(
            f"gather: index must have the same rank as x ({x.ndim}), got shape {shape_str(index.shape)}"
        )
    for i, (a, b) in enumerate(zip(index.shape, x.shape)):
        if i != d and a > b:
            raise ValueError(
                f"gather: index shape {shape_str(index.shape)} exceeds x shape {shape_str(x.shape)} at dim {i}"
            )
    check_index_range("gather", index, x.shape[d])
    if builtins.any(a != b for i, (a, b) in enumerate(zip(index.shape, x.shape)) if i != d):
        # the backend's gather wants equal dims besides ``dim``: take the leading block of x
        x = basic_index(x, tuple(slice(None) if i == d else slice(0, n) for i, n in enumerate(index.shape)))
    out = wrap(x._device.backend.gather(x._data, d, index._data), x._device, x._dtype)
    return record(out, "gather", (x,), dim=d, index=detached(index), shape=x.shape)


def take_along_dim(x: Tensor, index: Tensor, dim: int) -> Tensor:
    """Like ``torch.take_along_dim``: gather with ``index`` broadcast against ``x``."""
    d = normalize_dim("take_along_dim", dim, x.ndim)
    shape = list(
        np.broadcast_shapes(
            tuple(s if i != d else 1 for i, s in enumerate(x.shape)),
            tuple(s if i != d else 1 for i, s in enumerate(index.shape)),
        )
    )
    xs = list(shape)
    xs[d] = x.shape[d]
    ix = list(shape)
    ix[d] = index.shape[d]
    return gather(x.expand(xs), d, index.expand(ix))


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``x`` with ``src`` added at ``index`` along ``dim`` (repeats accumulate)."""
    d = normalize_dim("scatter_add", dim, x.ndim)
    check_devices("scatter_add", x, index, src)
    if index.shape != src.shape:
        raise ValueError(
            f"scatter_add: index shape {shape_str(index.shape)} must equal src shape {shape_str(src.shape)}"
        )
    if index.ndim != x.ndim:
        raise ValueError(f"scatter_add: index must have the rank of x ({x.ndim}), got {index.ndim}")
    check_index_range("scatter_add", index, x.shape[d])
    src = src.to(x._dtype)
    out = wrap(x._device.backend.scatter_add(x._data, d, index._data, src._data), x._device, x._dtype)
    return record(out, "scatter_add", (x, src), dim=d, index=detached(index))


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """Select whole slices of ``x`` along ``dim`` at the positions of the 1-D ``index``."""
    d = normalize_dim("index_select", dim, x.ndim)
    check_devices("index_select", x, index)
    if index.ndim != 1:
        raise ValueError(f"index_select: index must be 1-D, got shape {shape_str(index.shape)}")
    check_index_range("index_select", index, x.shape[d])
    out = wrap(x._device.backend.index_select(x._data, d, index._data), x._device, x._dtype)
    return record(out, "index_select", (x,), dim=d, index=detached(index), shape=x.shape)


def one_hot(index: Tensor, num_classes: int, dtype=None) -> Tensor:
    """One-hot encoding along a new last dim (int64 by default, or ``dtype``)."""
    check_index_range("one_hot", index, num_classes, "class index")
    b = index._device.backend
    out_dtype = dt.dtype(dtype) if dtype is not None else dt.int64
    zeros = b.full(tuple(index.shape) + (num_classes,), 0, out_dtype)
    idx = b.reshape(index._data, tuple(index.shape) + (1,))
    ones = b.full(tuple(index.shape) + (1,), 1, out_dtype)
    return wrap(b.scatter_add(zeros, index.ndim, idx, ones), index._device, out_dtype)


def sort(x: Tensor, dim: int = -1, descending: bool = False) -> tuple:
    """Stable sort along ``dim``: returns ``(values, indices)``."""
    d = normalize_dim("sort", dim, x.ndim)
    if x.ndim == 0:
        vals, idx = sort(x.reshape(1), 0, descending)
        return vals.reshape(()), idx.reshape(())
    vals, idx = x._device.backend.sort(x._data, d, descending)
    idx_t = wrap(idx, x._device, dt.int64)
    out = wrap(vals, x._device, x._dtype)
    out = record(out, "gather", (x,), dim=d, index=idx_t, shape=x.shape)
    return out, idx_t


def argsort(x: Tensor, dim: int = -1, descending: bool = False) -> Tensor:
    """The indices that sort ``x`` along ``dim`` (stable), int64."""
    return sort(x.detach(), dim, descending)[1]


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:
    """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
    d = normalize_dim("topk", dim, x.ndim)
    if x.ndim == 0:  # a 0-d tensor is a one-element row
        vals, idx = topk(x.reshape(1), k, 0, largest, sorted)
        return (vals.reshape(()), idx.reshape(())) if k == 1 else (vals, idx)
    if not 0 <= k <= x.shape[d]:
        raise ValueError(f"topk: k={k} is out of range for dim {dim} of size {x.shape[d]}")
    _, idx = sort(x.detach(), d, descending=largest)
    idx = narrow_index(idx, d, k)
    return gather(x, d, idx), idx


def narrow_index(idx: Tensor, d: int, k: int) -> Tensor:
    key = (slice(None),) * d + (slice(0, k),)
    return basic_index(idx, key)
