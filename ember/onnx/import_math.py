"""ember implementations of ONNX's element-wise, matrix, reduction and normalisation ops.

Each function takes the node (attributes, error messages) and its inputs as ember tensors
(``None`` for an omitted optional input; NumPy arrays for the inputs its table entry marks
static) and returns a tensor or a list of them. The table in ``ember.onnx.import_ops`` maps
op versions to these functions.
"""

from __future__ import annotations

import numpy as np

import ember
from ember.nn import functional as F
from ember.onnx.node import OnnxNode
from ember.tensor import Tensor


def _float(node: OnnxNode, x: Tensor) -> None:
    if not x.dtype.is_float:
        raise node.fail(f"expected a float input, got {x.dtype} {list(x.shape)}")


def _trunc_div(a: Tensor, b: Tensor) -> Tensor:
    """Integer division rounding toward zero (ONNX's and C's), from floor division."""
    q = a // b
    inexact = (a - q * b).ne(0)
    signs_differ = (a < 0).logical_xor(b < 0)
    return ember.where(inexact.logical_and(signs_differ), q + 1, q)


# ---- element-wise ---------------------------------------------------------------------------------
def add(node, a, b):
    return a + b


def sub(node, a, b):
    return a - b


def mul(node, a, b):
    return a * b


def div(node, a, b):
    if a.dtype.is_int and b.dtype.is_int:
        return _trunc_div(a, b)
    return a / b


def mod(node, a, b):
    if not node.attr("fmod", 0):
        if a.dtype.is_float:
            raise node.fail(f"fmod=0 needs integer inputs, got {a.dtype}")
        return a % b  # the divisor's sign, as Python's %
    if a.dtype.is_int:
        return a - _trunc_div(a, b) * b
    q = a / b
    return a - ember.where(q < 0, q.ceil(), q.floor()) * b  # the dividend's sign, as C's fmod


def pow_(node, x, y):
    if y.dtype != x.dtype:
        y = y.to(x.dtype)
    return x.pow(y)


def _unary(method: str):
    def run(node, x):
        return getattr(x, method)()

    run.__name__ = method
    return run


sqrt, exp, log, erf, tanh, sigmoid, relu = (
    _unary(m) for m in ("sqrt", "exp", "log", "erf", "tanh", "sigmoid", "relu")
)
neg, abs_, reciprocal, floor, ceil, sign = (
    _unary(m) for m in ("neg", "abs", "reciprocal", "floor", "ceil", "sign")
)
sin, cos, round_ = (_unary(m) for m in ("sin", "cos", "round"))


def gelu(node, x):
    return ember.gelu(x, node.attr("approximate", "none"))


def gelu_unsupported(node):
    approximate = node.attr("approximate", "none")
    return None if approximate in ("none", "tanh") else f"approximate={approximate!r}"


def leaky_relu(node, x):
    return ember.leaky_relu(x, float(node.attr("alpha", 0.01)))


def elu(node, x):
    return F.elu(x, float(node.attr("alpha", 1.0)))


def softplus(node, x):
    # ONNX's Softplus is log(1 + exp(x)) for every x; ember's returns x above 20, which differs
    # from it by less than exp(-20) ~ 2e-9
    return ember.softplus(x)


def hard_sigmoid(node, x):
    return F.hard_sigmoid(x, float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5)))


def hard_swish(node, x):
    return F.hard_swish(x)


def mish(node, x):
    return F.mish(x)


def clip(node, x, low=None, high=None):
    lo = None if low is None else np.asarray(low).item()
    hi = None if high is None else np.asarray(high).item()
    return x if lo is None and hi is None else x.clamp(min=lo, max=hi)


def where(node, cond, a, b):
    return ember.where(cond, a, b)


def _compare(method: str):
    def run(node, a, b):
        return getattr(a, method)(b)

    run.__name__ = method
    return run


equal, less, less_equal, greater, greater_equal = (_compare(m) for m in ("eq", "lt", "le", "gt", "ge"))
and_, or_, xor = (_compare(m) for m in ("logical_and", "logical_or", "logical_xor"))


def not_(node, x):
    return x.logical_not()


def is_nan(node, x):
    return x.isnan()


def is_inf(node, x):
    found = x.isinf()
    if not node.attr("detect_negative", 1):
        found = found.logical_and(x > 0)
    if not node.attr("detect_positive", 1):
        found = found.logical_and(x < 0)
    return found


def _variadic(method: str):
    def run(node, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = getattr(out, method)(x)
        return out

    run.__name__ = method
    return run


max_, min_, sum_ = (_variadic(m) for m in ("maximum", "minimum", "add"))


def mean(node, *xs):
    return sum_(node, *xs) / len(xs)


# ---- matrices -------------------------------------------------------------------------------------
def matmul(node, a, b):
    return ember.matmul(a, b)


def gemm(node, a, b, c=None):
    if node.attr("transA", 0):
        a = a.transpose(0, 1)
    if node.attr("transB", 0):
        b = b.transpose(0, 1)
    out = a @ b
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if alpha != 1.0:
        out = out * alpha
    if c is not None and beta != 0.0:
        out = out + (c if beta == 1.0 else c * beta)
    return out


# ---- reductions -----------------------------------------------------------------------------------
def _axes(node, x, axes) -> tuple | None:
    """The reduced axes (input since opset 18, an attribute before); None for all of them."""
    if axes is None:
        axes = node.attr("axes")
    if axes is None or len(axes) == 0:
        return () if node.attr("noop_with_empty_axes", 0) else None
    rank = max(x.ndim, 1)
    dims = [int(a) for a in np.asarray(axes).reshape(-1)]
    if any(not -rank <= a < rank for a in dims):
        raise node.fail(f"axes {dims} are out of range for an input of rank {x.ndim}")
    return tuple(a % rank for a in dims)


def _reduce(method: str):
    def run(node, x, axes=None):
        dims = _axes(node, x, axes)
        if dims == ():
            return x
        keep = bool(node.attr("keepdims", 1))
        if dims is None:
            dims = tuple(range(x.ndim))
        return getattr(x, method)(dims, keepdim=keep)

    run.__name__ = f"reduce_{method}"
    return run


reduce_mean, reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_log_sum_exp = (
    _reduce(m) for m in ("mean", "sum", "max", "min", "prod", "logsumexp")
)


def _arg(method: str):
    def run(node, x):
        axis = int(node.attr("axis", 0)) % x.ndim
        keep = bool(node.attr("keepdims", 1))
        if node.attr("select_last_index", 0):  # the last extreme: the first of the flipped axis
            return (x.shape[axis] - 1) - getattr(x.flip(axis), method)(axis, keepdim=keep)
        return getattr(x, method)(axis, keepdim=keep)

    run.__name__ = method
    return run


arg_max, arg_min = _arg("argmax"), _arg("argmin")


def cum_sum(node, x, axis):
    dim = int(np.asarray(axis).reshape(())) % x.ndim
    if node.attr("reverse", 0):
        x = x.flip(dim)
    out = x.cumsum(dim)
    if node.attr("exclusive", 0):
        out = out - x
    return out.flip(dim) if node.attr("reverse", 0) else out


# ---- softmax and normalisation --------------------------------------------------------------------
def softmax(node, x):
    return ember.softmax(x, int(node.attr("axis", -1)))


def log_softmax(node, x):
    return ember.log_softmax(x, int(node.attr("axis", -1)))


def _coerced_2d(fn):
    # before opset 13 the op works on the input seen as 2-D, [prod(dims < axis), prod(dims >= axis)]
    def run(node, x):
        axis = int(node.attr("axis", 1)) % max(x.ndim, 1)
        lead = int(np.prod(x.shape[:axis]))
        return fn(x.reshape(lead, int(np.prod(x.shape[axis:]))), 1).reshape(*x.shape)

    return run


softmax_2d, log_softmax_2d = _coerced_2d(ember.softmax), _coerced_2d(ember.log_softmax)


def layer_normalization(node, x, scale, bias=None):
    _float(node, x)
    axis = int(node.attr("axis", -1)) % x.ndim
    eps = float(node.attr("epsilon", 1e-5))
    lead, tail = x.shape[:axis], x.shape[axis:]
    size = int(np.prod(tail))
    flat = x.reshape(*lead, size)  # ember normalises the last dim: fold the normalised ones into it
    gamma = scale.expand(tail).reshape(size)
    beta = None if bias is None else bias.expand(tail).reshape(size)
    y = ember.layer_norm(flat, gamma, beta, eps).reshape(x.shape)
    if len([o for o in node.outputs if o]) == 1:
        return y
    mu = flat.mean(-1, keepdim=True)
    inv_std = ((flat - mu).square().mean(-1, keepdim=True) + eps).rsqrt()
    stats = (1,) * len(tail)
    return [y, mu.reshape(*lead, *stats), inv_std.reshape(*lead, *stats)]


def batch_normalization(node, x, scale, bias, mean_, var):
    _float(node, x)
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    eps = float(node.attr("epsilon", 1e-5))
    inv = (var.reshape(shape) + eps).rsqrt()
    return (x - mean_.reshape(shape)) * (inv * scale.reshape(shape)) + bias.reshape(shape)


def batch_norm_unsupported(node):
    if node.attr("training_mode", 0) or len([o for o in node.outputs if o]) > 1:
        return "training_mode=1 (export the model in eval mode)"
    return None
