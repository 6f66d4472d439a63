"""What each backend call of a traced forward becomes in ONNX: one emitter per backend method.

An emitter takes the graph builder and the call's (merged) arguments, whose arrays are
:class:`~ember.onnx.export_trace.Ref` s, adds nodes, and returns the ONNX names of the call's
results (None for a result ONNX does not give, such as a norm's saved statistics; a graph
that reads one fails naming it). A backend method without an emitter cannot be exported:
:data:`NOT_EXPORTABLE` says why for those with a reason.
"""

from __future__ import annotations

import math

import numpy as np

from ember.kernels.backend import ATTN_MASK_VALUE
from ember.onnx.export_dims import SymInt
from ember.onnx.export_trace import Ref

_INT_MAX = np.iinfo(np.int64).max

_UNARY = {
    "neg": "Neg",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "abs": "Abs",
    "sign": "Sign",
    "sin": "Sin",
    "cos": "Cos",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
    "erf": "Erf",
    "relu": "Relu",
    "reciprocal": "Reciprocal",
    "floor": "Floor",
    "ceil": "Ceil",
    "round": "Round",
    "logical_not": "Not",
    "isnan": "IsNaN",
    "isinf": "IsInf",
}

_BINARY = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "pow": "Pow",
    "maximum": "Max",
    "minimum": "Min",
    "eq": "Equal",
    "lt": "Less",
    "le": "LessOrEqual",
    "gt": "Greater",
    "ge": "GreaterOrEqual",
    "logical_and": "And",
    "logical_or": "Or",
    "logical_xor": "Xor",
}


def _one(g, dtype) -> str:
    return g.const(np.array(1, dtype=dtype))


def unary(g, op, x):
    name = g.value(x)
    dtype = g.dtype(x)
    if op in _UNARY:
        return [g.node(_UNARY[op], [name])]
    if op == "rsqrt":
        return [g.node("Reciprocal", [g.node("Sqrt", [name])])]
    if op == "square":
        return [g.node("Mul", [name, name])]
    if op == "log1p":
        return [g.node("Log", [g.node("Add", [name, _one(g, dtype)])])]
    if op == "expm1":
        return [g.node("Sub", [g.node("Exp", [name]), _one(g, dtype)])]
    if op == "isfinite":
        return [g.node("Not", [g.node("Or", [g.node("IsNaN", [name]), g.node("IsInf", [name])])])]
    raise g.unsupported(f"unary op {op!r}")


def binary(g, op, a, b):
    na, nb = g.value(a), g.value(b)
    if op in _BINARY:
        return [g.node(_BINARY[op], [na, nb])]
    if op == "ne":
        return [g.node("Not", [g.node("Equal", [na, nb])])]
    is_float = g.dtype(a).kind == "f"
    if op == "mod":  # Python's sign (the divisor's): ONNX Mod fmod=0 for ints, floor for floats
        if not is_float:
            return [g.node("Mod", [na, nb], fmod=0)]
        return [g.node("Sub", [na, g.node("Mul", [g.node("Floor", [g.node("Div", [na, nb])]), nb])])]
    if op == "floordiv":
        if is_float:
            return [g.node("Floor", [g.node("Div", [na, nb])])]
        # (a - a mod b) / b divides exactly, so ONNX's truncating Div floors
        return [g.node("Div", [g.node("Sub", [na, g.node("Mod", [na, nb], fmod=0)]), nb])]
    raise g.unsupported(f"binary op {op!r}")


def where(g, cond, a, b):
    return [g.node("Where", [g.value(cond), g.value(a), g.value(b)])]


def cast(g, x, dtype):
    return [g.node("Cast", [g.value(x)], to=g.onnx_type(dtype.numpy))]


def full(g, shape, value, dtype):
    np_dtype = dtype.numpy
    if not g.is_dynamic(shape) and not isinstance(value, SymInt):
        return [g.const(np.full(tuple(shape), value, dtype=np_dtype))]
    scalar = g.scalar_value(value, np_dtype)
    return [g.node("Expand", [scalar, g.ints(shape)])]


def arange(g, start, stop, step, dtype):
    np_dtype = dtype.numpy
    if not g.is_dynamic((start, stop, step)):
        return [g.const(np.arange(start, stop, step, dtype=np_dtype))]
    parts = [g.scalar_value(v, np_dtype) for v in (start, stop, step)]
    return [g.node("Range", parts)]


def _reduce_node(g, op_type, x, axes, keepdim):
    """``op_type`` over ``axes``: as an input from opset 18 (ReduceSum from 13), else an attribute."""
    if op_type == "ReduceSum" or g.opset >= 18:
        return g.node(op_type, [x, g.const(np.array(axes, dtype=np.int64))], keepdims=int(keepdim))
    return g.node(op_type, [x], axes=list(axes), keepdims=int(keepdim))


def reduce(g, op, x, axes, keepdim):
    name = g.value(x)
    axes = tuple(axes)
    if not axes:
        return [g.node("Identity", [name])]
    if op in ("all", "any"):  # bools as 0/1: all is the min, any the max
        ints = g.node("Cast", [name], to=g.onnx_type(np.int32))
        out = _reduce_node(g, "ReduceMin" if op == "all" else "ReduceMax", ints, axes, keepdim)
        return [g.node("Cast", [out], to=g.onnx_type(np.bool_))]
    types = {"sum": "ReduceSum", "prod": "ReduceProd", "max": "ReduceMax", "min": "ReduceMin"}
    return [_reduce_node(g, types[op], name, axes, keepdim)]


def arg_reduce(g, op, x, axis, keepdim):
    return [g.node("ArgMax" if op == "argmax" else "ArgMin", [g.value(x)], axis=axis, keepdims=int(keepdim))]


def cumsum(g, x, axis):
    return [g.node("CumSum", [g.value(x), g.const(np.int64(axis))])]


def reshape(g, x, shape):
    return [g.node("Reshape", [g.value(x), g.ints(shape, unsolved=-1)])]


def permute(g, x, axes):
    return [g.node("Transpose", [g.value(x)], perm=list(axes))]


def expand(g, x, shape):
    return [g.node("Expand", [g.value(x), g.ints(shape)])]


def _slice(g, name, starts, ends, axes, steps):
    return g.node("Slice", [name, g.ints(starts), g.ints(ends), g.ints(axes), g.ints(steps)])


def getitem(g, x, key):
    """Basic indexing (ints, slices, None, Ellipsis) and one integer index array."""
    name = g.value(x)
    rank = len(g.shape(x))
    key = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in key):
        i = key.index(Ellipsis)
        used = sum(1 for k in key if k is not None and k is not Ellipsis)
        key = key[:i] + (slice(None),) * (rank - used) + key[i + 1 :]
    arrays = [k for k in key if isinstance(k, Ref)]
    if arrays:
        if len(arrays) != 1 or len(key) != 1:
            raise g.unsupported("advanced indexing with more than one index array")
        return [g.node("Gather", [name, g.value(key[0])], axis=0)]
    starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    axis = 0
    out_axis = 0
    for k in key:
        if k is None:
            unsqueeze.append(out_axis)
            out_axis += 1
            continue
        if isinstance(k, slice):
            step = 1 if k.step is None else k.step
            if isinstance(step, SymInt):
                raise g.unsupported("a slice step that changes with the dynamic axes")
            if k.start is not None or k.stop is not None or step != 1:
                default_start, default_stop = (0, _INT_MAX) if step > 0 else (-1, -_INT_MAX)
                starts.append(default_start if k.start is None else k.start)
                ends.append(default_stop if k.stop is None else k.stop)
                axes.append(axis)
                steps.append(step)
            out_axis += 1
        else:  # an int: a slice of one, squeezed
            starts.append(k)
            ends.append(_INT_MAX if (not isinstance(k, SymInt) and k == -1) else _plus_one(k))
            axes.append(axis)
            steps.append(1)
            squeeze.append(axis)
        axis += 1
    out = name
    if axes:
        out = _slice(g, out, starts, ends, axes, steps)
    if squeeze:
        out = g.node("Squeeze", [out, g.const(np.array(squeeze, dtype=np.int64))])
    if unsqueeze:
        out = g.node("Unsqueeze", [out, g.const(np.array(unsqueeze, dtype=np.int64))])
    if out is name:
        out = g.node("Identity", [name])
    return [out]


def _plus_one(k):
    if isinstance(k, SymInt):
        return SymInt(tuple(v + 1 for v in k.values))
    return k + 1


def pad(g, x, pad_width, value):
    before = [p[0] for p in pad_width]
    after = [p[1] for p in pad_width]
    fill = g.const(np.array(value, dtype=g.dtype(x)))
    return [g.node("Pad", [g.value(x), g.ints(before + after), fill], mode="constant")]


def cat(g, xs, axis):
    return [g.node("Concat", [g.value(x) for x in xs], axis=axis)]


def flip(g, x, axes):
    axes = list(axes) if isinstance(axes, (tuple, list)) else [axes]
    n = len(axes)
    return [_slice(g, g.value(x), [-1] * n, [-_INT_MAX] * n, axes, [-1] * n)]


def tile(g, x, reps):
    return [g.node("Tile", [g.value(x), g.ints(reps)])]


def gather(g, x, axis, idx):
    return [g.node("GatherElements", [g.value(x), g.value(idx)], axis=axis)]


def index_select(g, x, axis, idx):
    return [g.node("Gather", [g.value(x), g.value(idx)], axis=axis)]


def scatter_add(g, x, axis, idx, src):
    return [g.node("ScatterElements", [g.value(x), g.value(idx), g.value(src)], axis=axis, reduction="add")]


def matmul(g, a, b):
    return [g.node("MatMul", [g.value(a), g.value(b)])]


def linear(g, x, w, b):
    y = g.node("MatMul", [g.value(x), g.value(w)])
    return [y if b is None else g.node("Add", [y, g.value(b)])]


def softmax(g, x):
    return [g.node("Softmax", [g.value(x)], axis=-1)]


def log_softmax(g, x):
    return [g.node("LogSoftmax", [g.value(x)], axis=-1)]


def layer_norm(g, x, gamma, beta, eps):
    d = g.shape(x)[-1]
    dtype = g.dtype(x)
    scale = g.value(gamma) if gamma is not None else g.const(np.ones(d, dtype=dtype))
    inputs = [g.value(x), scale] + ([g.value(beta)] if beta is not None else [])
    return [g.node("LayerNormalization", inputs, axis=-1, epsilon=float(eps)), None, None]


def rms_norm(g, x, gamma, eps):
    name = g.value(x)
    dtype = g.dtype(x)
    ms = _reduce_node(g, "ReduceMean", g.node("Mul", [name, name]), (len(g.shape(x)) - 1,), True)
    rstd = g.node("Reciprocal", [g.node("Sqrt", [g.node("Add", [ms, g.const(np.array(eps, dtype=dtype))])])])
    y = g.node("Mul", [name, rstd])
    return [y if gamma is None else g.node("Mul", [y, g.value(gamma)]), None]


def gelu(g, x, approximate):
    name = g.value(x)
    dtype = g.dtype(x)

    def c(v):
        return g.const(np.array(v, dtype=dtype))

    if approximate:  # x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), the tanh form as a sigmoid
        cube = g.node("Mul", [g.node("Mul", [name, name]), name])
        inner = g.node("Add", [name, g.node("Mul", [cube, c(0.044715)])])
        z = g.node("Mul", [inner, c(2.0 * math.sqrt(2.0 / math.pi))])
        return [g.node("Mul", [name, g.node("Sigmoid", [z])])]
    erf = g.node("Erf", [g.node("Mul", [name, c(1.0 / math.sqrt(2.0))])])
    return [g.node("Mul", [g.node("Mul", [name, c(0.5)]), g.node("Add", [erf, c(1.0)])])]


def swiglu(g, a, b):
    name = g.value(a)
    return [g.node("Mul", [g.node("Mul", [name, g.node("Sigmoid", [name])]), g.value(b)])]


def embedding(g, weight, ids):
    return [g.node("Gather", [g.value(weight), g.value(ids)], axis=0)]


def attention(g, q, k, v, mask_pad, scale, quiet, dropout_p, seed):
    """softmax(q k^T * scale, masked) v, as the backend's composed attention (masked scores -1e4)."""
    if dropout_p:
        raise g.unsupported(f"attention with dropout {dropout_p} (export runs in inference mode)")
    dtype = g.dtype(q)

    def c(val):
        return g.const(np.array(val, dtype=dtype))

    kt = g.node("Transpose", [g.value(k)], perm=[0, 1, 3, 2])
    s = g.node("Mul", [g.node("MatMul", [g.value(q), kt]), c(scale)])
    if mask_pad is not None:
        m = g.node("Unsqueeze", [g.value(mask_pad), g.const(np.array([1, 2], dtype=np.int64))])
        s = g.node("Where", [m, c(ATTN_MASK_VALUE), s])
    if quiet:  # exp(s - m) / (exp(-m) + sum exp(s - m)), m = max(max s, 0): a 0 logit added
        m = g.node("Max", [_reduce_node(g, "ReduceMax", s, (3,), True), c(0.0)])
        e = g.node("Exp", [g.node("Sub", [s, m])])
        total = g.node(
            "Add", [_reduce_node(g, "ReduceSum", e, (3,), True), g.node("Exp", [g.node("Neg", [m])])]
        )
        w = g.node("Div", [e, total])
    else:
        w = g.node("Softmax", [s], axis=-1)
    return [g.node("MatMul", [w, g.value(v)]), None]


def index_put(g, x, key, values, accumulate):
    """``x[..., idx, ...] = values`` (``+=`` when ``accumulate``) for a key of full slices and
    one 1-D index array: ScatterElements along that axis, the index broadcast over the others."""
    key = key if isinstance(key, tuple) else (key,)
    arrays = [i for i, k in enumerate(key) if isinstance(k, Ref)]
    full = all(k == slice(None) for i, k in enumerate(key) if i not in arrays)
    if len(arrays) != 1 or not full or len(g.shape(key[arrays[0]])) != 1:
        raise g.unsupported("index_put with a key other than full slices and one 1-D index array")
    axis = arrays[0]
    rank = len(g.shape(x))
    shape = [1] * axis + [-1] + [1] * (rank - axis - 1)
    idx = g.node("Reshape", [g.value(key[axis]), g.const(np.array(shape, dtype=np.int64))])
    vals = g.value(values)
    idx = g.node("Expand", [idx, g.node("Shape", [vals])])
    reduction = "add" if accumulate else "none"
    return [g.node("ScatterElements", [g.value(x), idx, vals], axis=axis, reduction=reduction)]


def embedding_bag(g, weight, indices, bounds, per_sample_weights, mode):
    """Bags as a membership matrix ``M [B, N]`` (position p in bag b when bounds[b] <= p <
    bounds[b+1]): a sum is ``M @ rows``, a mean divides by the bag's size, a max takes rows
    outside the bag as -inf; an empty bag gives 0."""
    dtype = g.dtype(weight)
    rows = g.node("Gather", [g.value(weight), g.value(indices)], axis=0)  # [N, D]
    b = g.value(bounds)
    n = g.node("Gather", [g.node("Shape", [g.value(indices)]), g.const(np.int64(0))], axis=0)
    pos = g.node(
        "Unsqueeze",
        [g.node("Range", [g.const(np.int64(0)), n, g.const(np.int64(1))]), g.const(np.array([0]))],
    )
    starts = g.node("Unsqueeze", [_slice(g, b, [0], [-1], [0], [1]), g.const(np.array([1]))])  # [B, 1]
    ends = g.node("Unsqueeze", [_slice(g, b, [1], [_INT_MAX], [0], [1]), g.const(np.array([1]))])
    member = g.node("And", [g.node("GreaterOrEqual", [pos, starts]), g.node("Less", [pos, ends])])  # [B, N]
    counts = g.node("Sub", [ends, starts])  # [B, 1]
    if mode == "max":
        masked = g.node(
            "Where",
            [
                g.node("Unsqueeze", [member, g.const(np.array([2]))]),
                rows,
                g.const(np.array(-np.inf, dtype=dtype)),
            ],
        )
        out = _reduce_node(g, "ReduceMax", masked, (1,), False)
        empty = g.node("Equal", [counts, g.const(np.int64(0))])
        return [g.node("Where", [empty, g.const(np.array(0, dtype=dtype)), out]), None]
    if per_sample_weights is not None:
        rows = g.node(
            "Mul", [rows, g.node("Unsqueeze", [g.value(per_sample_weights), g.const(np.array([1]))])]
        )
    out = g.node("MatMul", [g.node("Cast", [member], to=g.onnx_type(dtype)), rows])
    if mode == "mean":
        size = g.node("Cast", [g.node("Max", [counts, g.const(np.int64(1))])], to=g.onnx_type(dtype))
        out = g.node("Div", [out, size])
    return [out, None]


def dropout(g, x, p, seed):
    if p > 0:
        raise g.unsupported(f"dropout with p={p} (export runs in inference mode: use module.valid())")
    return [g.node("Identity", [g.value(x)])]


def identity(g, x, *args, **kwargs):
    return [g.node("Identity", [g.value(x)])]


EMITTERS = {
    "unary": unary,
    "binary": binary,
    "where": where,
    "cast": cast,
    "full": full,
    "arange": arange,
    "reduce": reduce,
    "arg_reduce": arg_reduce,
    "cumsum": cumsum,
    "reshape": reshape,
    "permute": permute,
    "expand": expand,
    "getitem": getitem,
    "pad": pad,
    "cat": cat,
    "flip": flip,
    "tile": tile,
    "gather": gather,
    "index_select": index_select,
    "scatter_add": scatter_add,
    "matmul": matmul,
    "linear": linear,
    "softmax": softmax,
    "log_softmax": log_softmax,
    "layer_norm": layer_norm,
    "rms_norm": rms_norm,
    "gelu": gelu,
    "swiglu": swiglu,
    "embedding": embedding,
    "attention": attention,
    "dropout": dropout,
    "index_put": index_put,
    "embedding_bag": embedding_bag,
    "to_host": identity,
    "from_host": identity,
}
"""Backend method -> emitter."""

NOT_EXPORTABLE = {
    "uniform": "random numbers drawn in the forward (ONNX's are not ember's)",
    "normal": "random numbers drawn in the forward (ONNX's are not ember's)",
    "bernoulli": "random numbers drawn in the forward (ONNX's are not ember's)",
    "randint": "random numbers drawn in the forward (ONNX's are not ember's)",
    "dropout_keep_mask": "a dropout mask drawn in the forward (export runs in inference mode)",
    "sort": "sorting (ONNX TopK does not keep ember's NaN-first, stable order)",
    "cross_entropy": "a loss (export the logits; losses are not inference)",
    "index_add": "in-place indexed accumulation",
}
"""Backend methods that have no emitter on purpose, and why."""


def emit(g, call):
    """Emit one recorded call; returns the ONNX names of its results."""
    fn = EMITTERS.get(call.method)
    if fn is None:
        why = NOT_EXPORTABLE.get(call.method, "no ONNX emitter for it")
        what = call.method
        if call.method in ("unary", "binary", "reduce") and call.args and isinstance(call.args[0], str):
            what = f"{call.method} {call.args[0]!r}"
        raise g.unsupported(f"{what}: {why}")
    return fn(g, *call.args, **call.kwargs)
