"""ember implementations of ONNX's shape, movement, indexing and creation ops.

Inputs that a table entry marks static (shapes, axes, slice bounds, repeats) arrive as int64
NumPy arrays; functions that compute a shape (``Shape``, ``ConstantOfShape``, ``Range``)
return NumPy arrays, which the graph keeps on the host (see ``ember.onnx.graph_module``).
"""

from __future__ import annotations

import numpy as np

import ember
from ember.onnx.dtypes import ember_dtype, onnx_type_name
from ember.onnx.errors import OnnxImportError
from ember.onnx.node import OnnxNode
from ember.tensor import Tensor


def _ints(values) -> list:
    return [int(v) for v in np.asarray(values).reshape(-1)]


def _axis(node: OnnxNode, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise node.fail(f"axis {axis} is out of range for rank {rank}")
    return axis % max(rank, 1)


def _broadcast(node: OnnxNode, a: tuple, b: tuple) -> tuple:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise node.fail(f"shapes {list(a)} and {list(b)} do not broadcast") from None


def _fix_negative(index: Tensor, size: int) -> Tensor:
    """ONNX indices may count from the end."""
    return ember.where(index < 0, index + size, index)


# ---- shapes ---------------------------------------------------------------------------------------
def shape(node, x):
    dims = np.asarray(x.shape, dtype=np.int64)
    rank = len(dims)
    start = int(node.attr("start", 0))
    end = node.attr("end")
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = rank if end is None else min(max(int(end) + rank if int(end) < 0 else int(end), 0), rank)
    return dims[start:end].copy()


def size(node, x):
    return np.asarray(int(np.prod(x.shape)), dtype=np.int64)


def reshape(node, x, target):
    dims = _ints(target)
    if not node.attr("allowzero", 0):  # 0 copies the input's dim
        dims = [x.shape[i] if d == 0 and i < x.ndim else d for i, d in enumerate(dims)]
    if dims.count(-1) > 1:
        raise node.fail(f"at most one -1 in the shape, got {dims}")
    if -1 in dims:
        known = int(np.prod([d for d in dims if d != -1]))
        if known == 0 or x.numel % known:
            raise node.fail(f"cannot reshape {list(x.shape)} into {dims}")
        dims[dims.index(-1)] = x.numel // known
    if int(np.prod(dims)) != x.numel:
        raise node.fail(f"cannot reshape {list(x.shape)} ({x.numel} elements) into {dims}")
    return x.reshape(*dims)


def flatten(node, x):
    axis = _axis(node, int(node.attr("axis", 1)), x.ndim + 1) if x.ndim else 0
    return x.reshape(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))


def transpose(node, x):
    perm = node.attr("perm")
    perm = list(range(x.ndim))[::-1] if perm is None else _ints(perm)
    return x.permute(*perm)


def unsqueeze(node, x, axes=None):
    axes = node.attr("axes") if axes is None else axes  # an attribute before opset 13
    rank = x.ndim + len(_ints(axes))
    out = sorted(_axis(node, a, rank) for a in _ints(axes))
    dims = list(x.shape)
    for a in out:
        dims.insert(a, 1)
    return x.reshape(*dims)


def squeeze(node, x, axes=None):
    axes = node.attr("axes") if axes is None else axes  # an attribute before opset 13
    if axes is None:
        return x.reshape(*[d for d in x.shape if d != 1])
    drop = {_axis(node, a, x.ndim) for a in _ints(axes)}
    for a in drop:
        if x.shape[a] != 1:
            raise node.fail(f"cannot squeeze axis {a} of size {x.shape[a]} in {list(x.shape)}")
    return x.reshape(*[d for i, d in enumerate(x.shape) if i not in drop])


def expand(node, x, target):
    out = _broadcast(node, x.shape, tuple(_ints(target)))
    return x if out == x.shape else x.expand(*out)


def tile(node, x, repeats):
    return x.repeat(*_ints(repeats))


def concat(node, *xs):
    axis = _axis(node, int(node.attr("axis")), xs[0].ndim)
    return ember.cat(list(xs), axis)


def split(node, x, sections=None):
    axis = _axis(node, int(node.attr("axis", 0)), x.ndim)
    n = len(node.outputs)
    if sections is None:
        sections = node.attr("split")  # an attribute before opset 13
    if sections is None:
        parts = int(node.attr("num_outputs", n))
        step = -(-x.shape[axis] // parts)  # the last part may be smaller (opset 18)
        sections = [min(step, x.shape[axis] - i * step) for i in range(parts)]
    sections = _ints(sections)
    if sum(sections) != x.shape[axis] or len(sections) != n:
        raise node.fail(f"split {sections} does not cut axis {axis} of {list(x.shape)} into {n} parts")
    return x.split(sections, axis)


def slice_(node, x, starts, ends, axes=None, steps=None):
    starts, ends = _ints(starts), _ints(ends)
    axes = list(range(len(starts))) if axes is None else [_axis(node, a, x.ndim) for a in _ints(axes)]
    steps = [1] * len(starts) if steps is None else _ints(steps)
    key = [slice(None)] * x.ndim
    reversed_axes = []
    for a, start, end, step in zip(axes, starts, ends, steps):
        if step == 0:
            raise node.fail("a step of 0")
        key[a] = slice(start, end, step)
        if step < 0:
            reversed_axes.append(a)
    for a in reversed_axes:  # ember slices with positive steps: pick the indices of a negative one
        index = np.arange(*key[a].indices(x.shape[a]), dtype=np.int64)
        x = x.index_select(a, ember.from_numpy(index, x.device))
        key[a] = slice(None)
    return x[tuple(slice(*k.indices(x.shape[i])) for i, k in enumerate(key))]


def pad_unsupported(node):
    mode = node.attr("mode", "constant")
    return None if mode == "constant" else f"mode={mode!r} (only 'constant')"


def pad(node, x, pads, value=None, axes=None):
    pads = _ints(pads)
    axes = list(range(x.ndim)) if axes is None else [_axis(node, a, x.ndim) for a in _ints(axes)]
    n = len(axes)
    if len(pads) != 2 * n:
        raise node.fail(f"expected {2 * n} pads for axes {axes}, got {pads}")
    width = [(0, 0)] * x.ndim
    for i, a in enumerate(axes):
        width[a] = (pads[i], pads[i + n])
    flat = [p for pair in reversed(width) for p in pair]  # ember.pad: last dim first
    fill = 0.0 if value is None else np.asarray(value).item()
    return x.pad(flat, fill)


# ---- indexing -------------------------------------------------------------------------------------
def gather(node, x, index):
    axis = _axis(node, int(node.attr("axis", 0)), x.ndim)
    index = _fix_negative(index, x.shape[axis])
    picked = x.index_select(axis, index.reshape(-1))
    return picked.reshape(*x.shape[:axis], *index.shape, *x.shape[axis + 1 :])


def gather_elements(node, x, index):
    axis = _axis(node, int(node.attr("axis", 0)), x.ndim)
    return x.gather(axis, _fix_negative(index, x.shape[axis]))


def scatter_unsupported(node):
    reduction = node.attr("reduction", "none")
    return None if reduction in ("none", "add") else f"reduction={reduction!r} (only 'none' and 'add')"


def scatter_elements(node, x, index, updates):
    axis = _axis(node, int(node.attr("axis", 0)), x.ndim)
    index = _fix_negative(index, x.shape[axis])
    if node.attr("reduction", "none") == "add":
        return x.scatter_add(axis, index, updates)
    # replace: zero the targets, then add (ONNX leaves repeated indices undefined here)
    hit = ember.zeros_like(x).scatter_add(axis, index, ember.ones_like(updates)) > 0
    return ember.where(hit, ember.zeros_like(x), x).scatter_add(axis, index, updates)


def trilu(node, x, k=None):
    shift = 0 if k is None else int(np.asarray(k).reshape(()))
    rows, cols = x.shape[-2:]
    make = np.triu if node.attr("upper", 1) else np.tril
    keep = make(np.ones((rows, cols), dtype=bool), shift)
    return ember.where(ember.from_numpy(keep, x.device), x, ember.zeros_like(x))


# ---- values ---------------------------------------------------------------------------------------
def identity(node, x):
    return x


def dropout(node, x, ratio=None, training=None):
    if training is not None and bool(np.asarray(training).reshape(())):
        raise node.fail("training_mode=True is not supported: an imported graph runs dropout as inference")
    if len([o for o in node.outputs if o]) > 1:
        return [x, np.ones(x.shape, dtype=bool)]
    return x


def cast_unsupported(node):
    try:
        ember_dtype(int(node.attr("to")), "")
    except OnnxImportError:
        return f"to={onnx_type_name(int(node.attr('to')))} (no ember dtype)"
    return None


def cast(node, x):
    return x.to(ember_dtype(int(node.attr("to")), f"{node.op_type} node {node.name!r}"))


def cast_like(node, x, like):
    return x.to(like.dtype)


_CONSTANT_VALUES = ("value", "value_float", "value_floats", "value_int", "value_ints")


def constant_unsupported(node):
    if any(node.attr(name) is not None for name in _CONSTANT_VALUES):
        return None
    return f"a value given as {sorted(node.attrs)} (only tensor, float and int values)"


def constant(node):
    name = next(name for name in _CONSTANT_VALUES if node.attr(name) is not None)
    value = node.attr(name)
    if name == "value":
        return value
    return np.asarray(value, dtype=np.float32 if name.startswith("value_float") else np.int64)


def constant_of_shape(node, dims):
    value = node.attr("value")
    fill = np.zeros(1, dtype=np.float32) if value is None else value
    return np.full(_ints(dims), fill.reshape(-1)[0], dtype=fill.dtype)


def range_(node, start, limit, delta):
    start, limit, delta = (np.asarray(v).reshape(()) for v in (start, limit, delta))
    count = max(int(np.ceil((limit - start) / delta)), 0)
    return (start + np.arange(count, dtype=start.dtype) * delta).astype(start.dtype)
