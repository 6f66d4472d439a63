"""Movement ops: reshape, permute, expand, slicing, concatenation, padding and friends."""

from __future__ import annotations

import builtins
import math

from ember.core import dtypes as dt
from ember.kernels.fusion import engine as fusion
from ember.tensor.ops._core import (
    Tensor,
    check_devices,
    check_shape,
    needs_grad,
    normalize_dim,
    normalize_dims,
    record,
    shape_str,
    wrap,
)


def _shape_arg(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def _to_shape(op: str, x: Tensor, shape: tuple) -> Tensor:
    """``x`` given the checked ``shape`` by the backend's ``op`` (reshape, expand); ``x``
    itself when its shape is already that."""
    if shape == x.shape:
        return x
    check_shape(op, shape, x._dtype)
    # a pending product stays pending through a reshape, a pending chain through an expand
    # (see fusion.engine.reshape and fusion.engine.expand)
    out = wrap(getattr(fusion, op)(x._device.backend, x._arr, shape), x._device, x._dtype)
    return record(out, op, (x,))


def reshape(x: Tensor, *shape) -> Tensor:
    """Reshape to ``shape`` (one dim may be -1)."""
    shape = _shape_arg(shape)
    n = x.numel
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: only one dim may be -1, got {list(shape)}")
    known = math.prod(s for s in shape if s != -1)  # Python ints: np.prod would wrap around
    if -1 in shape:
        if known == 0 or n % known:
            raise ValueError(
                f"reshape: cannot reshape a tensor of shape {shape_str(x.shape)} into {list(shape)}"
            )
        shape = tuple(n // known if s == -1 else s for s in shape)
    elif known != n:
        raise ValueError(
            f"reshape: cannot reshape a tensor of shape {shape_str(x.shape)} ({n} elements) "
            f"into {list(shape)} ({known} elements)"
        )
    return _to_shape("reshape", x, shape)


def permute(x: Tensor, *dims) -> Tensor:
    """The dims of ``x`` reordered: dim i of the result is dim ``dims[i]`` of ``x``."""
    dims = _shape_arg(dims)
    if len(dims) != x.ndim:
        raise ValueError(f"permute: expected {x.ndim} dims for shape {shape_str(x.shape)}, got {list(dims)}")
    axes = tuple(normalize_dim("permute", d, x.ndim) for d in dims)
    if len(set(axes)) != len(axes):
        raise ValueError(f"permute: repeated dims in {list(dims)}")
    if axes == tuple(range(x.ndim)):
        return x
    out = wrap(x._device.backend.permute(x._data, axes), x._device, x._dtype)
    return record(out, "permute", (x,), axes=axes)


def swap_dims(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """``x`` with dims ``dim0`` and ``dim1`` exchanged."""
    axes = list(range(x.ndim))
    a, b = normalize_dim("swap_dims", dim0, x.ndim), normalize_dim("swap_dims", dim1, x.ndim)
    axes[a], axes[b] = axes[b], axes[a]
    return permute(x, axes)


def transpose(x: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    """Swap two dims (the last two by default, as Burn's ``transpose``)."""
    if x.ndim < 2:
        raise ValueError(f"transpose: needs at least 2 dims, got shape {shape_str(x.shape)}")
    return swap_dims(x, dim0, dim1)


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Dims ``start_dim`` to ``end_dim`` (both included) merged into one."""
    if x.ndim == 0:
        return reshape(x, 1)
    s = normalize_dim("flatten", start_dim, x.ndim)
    e = normalize_dim("flatten", end_dim, x.ndim)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return reshape(x, x.shape[:s] + (-1,) + x.shape[e + 1 :])


def squeeze(x: Tensor, dim: int | tuple | list | None = None) -> Tensor:
    """Remove size-1 dims (all of them, or those in ``dim``; others are an error)."""
    if dim is None:
        return reshape(x, tuple(s for s in x.shape if s != 1))
    dims = normalize_dims("squeeze", dim, x.ndim)
    for d in dims:
        if x.shape[d] != 1:
            raise ValueError(
                f"squeeze: dim {d} of shape {shape_str(x.shape)} has size {x.shape[d]}, expected 1"
            )
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in dims))


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """``x`` with a new dim of size 1 at position ``dim``."""
    d = normalize_dim("unsqueeze", dim, x.ndim + 1)
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def expand(x: Tensor, *shape) -> Tensor:
    """Broadcast to ``shape`` (-1 keeps a dim); the gradient sums back."""
    shape = _shape_arg(shape)
    if len(shape) < x.ndim:
        raise ValueError(f"expand: target {list(shape)} has fewer dims than {shape_str(x.shape)}")
    lead = len(shape) - x.ndim
    full = []
    for i, s in enumerate(shape):
        cur = x.shape[i - lead] if i >= lead else 1
        if s == -1:
            if i < lead:
                raise ValueError(f"expand: -1 is not allowed for new leading dims in {list(shape)}")
            s = cur
        if cur != s and cur != 1:
            raise ValueError(
                f"expand: cannot expand shape {shape_str(x.shape)} to {list(shape)} "
                f"(dim {i}: {cur} -> {s}; only size-1 dims expand)"
            )
        full.append(s)
    return _to_shape("expand", x, tuple(full))


def repeat(x: Tensor, *reps) -> Tensor:
    """Tile ``x``: ``reps[i]`` copies along dim i (like ``torch.Tensor.repeat``)."""
    reps = _shape_arg(reps)
    if len(reps) < x.ndim:
        raise ValueError(f"repeat: need at least {x.ndim} repetition counts, got {list(reps)}")
    if builtins.any(r < 0 for r in reps):
        raise ValueError(f"repeat: counts must be >= 0, got {list(reps)}")
    check_shape("repeat", tuple(r * s for r, s in zip(reps, (1,) * (len(reps) - x.ndim) + x.shape)), x._dtype)
    src = reshape(x, (1,) * (len(reps) - x.ndim) + x.shape)
    out = wrap(x._device.backend.tile(src._data, reps), x._device, x._dtype)
    return record(out, "repeat", (src,), reps=reps, shape=src.shape)


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The ``length`` elements of dim ``dim`` from ``start`` (negative counts from the end)."""
    d = normalize_dim("narrow", dim, x.ndim)
    size = x.shape[d]
    if start < 0:
        start += size
    if not (0 <= start <= size and length >= 0 and start + length <= size):
        raise IndexError(
            f"narrow: range [{start}, {start + length}) is out of bounds for dim {dim} of size {size}"
        )
    key = (slice(None),) * d + (slice(start, start + length),)
    return basic_index(x, key)


def flip(x: Tensor, dims: int | tuple | list) -> Tensor:
    """``x`` with the order of the elements along ``dims`` reversed."""
    axes = normalize_dims("flip", dims, x.ndim)
    out = wrap(x._device.backend.flip(x._data, axes), x._device, x._dtype)
    return record(out, "flip", (x,), axes=axes)


def cat(tensors, dim: int = 0) -> Tensor:
    """Concatenate along an existing ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty list of tensors")
    check_devices("cat", *tensors)
    first = tensors[0]
    if first.ndim == 0:
        raise ValueError("cat: zero-dimensional tensors cannot be concatenated; use stack")
    d = normalize_dim("cat", dim, first.ndim)
    rdt = first._dtype
    for t in tensors[1:]:
        rdt = dt.promote_types(rdt, t._dtype)
        if t.ndim != first.ndim or builtins.any(
            a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != d
        ):
            raise ValueError(f"cat: shapes {[list(t.shape) for t in tensors]} differ outside dim {d}")
    check_shape(
        "cat", first.shape[:d] + (builtins.sum(t.shape[d] for t in tensors),) + first.shape[d + 1 :], rdt
    )
    tensors = [t.to(rdt) for t in tensors]
    out = wrap(first._device.backend.cat([t._data for t in tensors], d), first._device, rdt)
    return record(out, "cat", tuple(tensors), dim=d, sizes=tuple(t.shape[d] for t in tensors))


def stack(tensors, dim: int = 0) -> Tensor:
    """Stack along a new ``dim``; every tensor must have the same shape."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty list of tensors")
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"stack: all tensors must have the same shape, got {[list(s) for s in shapes]}")
    d = normalize_dim("stack", dim, tensors[0].ndim + 1)
    return cat([unsqueeze(t, d) for t in tensors], d)


def split(x: Tensor, split_size_or_sections: int | list | tuple, dim: int = 0) -> list:
    """Split into chunks of ``split_size`` (last may be smaller) or of the given sizes."""
    d = normalize_dim("split", dim, x.ndim)
    size = x.shape[d]
    if isinstance(split_size_or_sections, int):
        if split_size_or_sections <= 0:
            raise ValueError(f"split: split size must be positive, got {split_size_or_sections}")
        sizes = [split_size_or_sections] * (size // split_size_or_sections)
        if size % split_size_or_sections:
            sizes.append(size % split_size_or_sections)
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != size:
            raise ValueError(f"split: sizes {sizes} do not add up to dim {d} of size {size}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(x, d, start, s))
        start += s
    return out


def chunk(x: Tensor, chunks: int, dim: int = 0) -> list:
    """Split into ``chunks`` nearly equal pieces (as ``torch.chunk``)."""
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    d = normalize_dim("chunk", dim, x.ndim)
    size = -(-x.shape[d] // chunks) if x.shape[d] else 1
    return split(x, size, d)


def pad(x: Tensor, pads: tuple | list, value: float = 0.0) -> Tensor:
    """Constant padding. ``pads`` lists (before, after) pairs starting from the LAST dim,
    as ``torch.nn.functional.pad``: ``(left, right, top, bottom, ...)``."""
    pads = list(pads)
    if len(pads) % 2 or len(pads) // 2 > x.ndim:
        raise ValueError(f"pad: expected an even number of pads, at most 2*{x.ndim}, got {pads}")
    if builtins.any(p < 0 for p in pads):
        raise ValueError(f"pad: negative padding {pads} is not supported; use narrow")
    width = [(0, 0)] * x.ndim
    for i in range(len(pads) // 2):
        width[x.ndim - 1 - i] = (pads[2 * i], pads[2 * i + 1])
    if not builtins.any(pads):  # nothing to pad (a 0-d tensor has no dim to pad: NumPy's pad rejects it)
        return x
    check_shape("pad", tuple(s + b + a for s, (b, a) in zip(x.shape, width)), x._dtype)
    out = wrap(x._device.backend.pad(x._data, width, value), x._device, x._dtype)
    return record(out, "pad", (x,), width=tuple(width))


# ---- basic indexing (ints, slices, None, Ellipsis) -------------------------------------------
def _normalize_basic_key(key, shape):
    """Validate a basic index key; returns it as a tuple of int/slice/None with Ellipsis expanded."""
    if not isinstance(key, tuple):
        key = (key,)
    n_real = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_real > len(shape):
        raise IndexError(f"index: too many indices ({n_real}) for a tensor of {len(shape)} dims")
    out, dim = [], 0
    seen_ellipsis = False
    for k in key:
        if k is Ellipsis:
            if seen_ellipsis:
                raise IndexError("index: an index can only have a single Ellipsis")
            seen_ellipsis = True
            take = len(shape) - n_real
            out.extend([slice(None)] * take)
            dim += take
        else:
            item, used = basic_component(k, shape, dim)
            out.append(item)
            dim += used
    return tuple(out)


def basic_component(k, shape, dim: int):
    """One None / slice / int of an index key at ``dim``: ``(normalized item, dims consumed)``."""
    if k is None:
        return None, 0
    if isinstance(k, slice):
        if k.step is not None and k.step <= 0:
            raise ValueError(f"index: slice step must be positive, got {k.step} (use flip for reversal)")
        return k, 1
    i = int(k)
    size = shape[dim]
    if not -size <= i < size:
        raise IndexError(f"index: index {i} is out of bounds for dim {dim} with size {size}")
    return i % size, 1


def basic_index(x: Tensor, key) -> Tensor:
    key = _normalize_basic_key(key, x.shape)
    out = wrap(x._device.backend.getitem(x._data, key), x._device, x._dtype)
    if needs_grad(x):
        return record(out, "index", (x,), key=key, shape=x.shape)
    return out
