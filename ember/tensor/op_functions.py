# Generated from ember/core/op_table.py by ember/tensor/op_codegen.py: do not edit.
# Regenerate with: python ember/tensor/op_codegen.py
"""The top-level functions of the op table's ops (``ember.sum``, ``ember.exp``,
``ember.where``, ...), which :mod:`ember` re-exports. Each calls its op's function directly,
after converting tensor-like operands (an ``nn.Param``) to the tensors they stand for.
"""
from __future__ import annotations

from ember.tensor.ops.elementwise import binary as _binary
from ember.tensor.ops.elementwise import clamp as _clamp
from ember.tensor.ops.elementwise import leaky_relu as _leaky_relu
from ember.tensor.ops.elementwise import mask_fill as _mask_fill
from ember.tensor.ops.elementwise import silu as _silu
from ember.tensor.ops.elementwise import softplus as _softplus
from ember.tensor.ops.elementwise import unary as _unary
from ember.tensor.ops.elementwise import where as _where
from ember.tensor.ops.indexing import argsort as _argsort
from ember.tensor.ops.indexing import gather as _gather
from ember.tensor.ops.indexing import index_put as _index_put
from ember.tensor.ops.indexing import index_select as _index_select
from ember.tensor.ops.indexing import one_hot as _one_hot
from ember.tensor.ops.indexing import scatter_add as _scatter_add
from ember.tensor.ops.indexing import sort as _sort
from ember.tensor.ops.indexing import take_along_dim as _take_along_dim
from ember.tensor.ops.indexing import topk as _topk
from ember.tensor.ops.linalg import matmul as _matmul
from ember.tensor.ops.movement import cat as _cat
from ember.tensor.ops.movement import chunk as _chunk
from ember.tensor.ops.movement import flatten as _flatten
from ember.tensor.ops.movement import flip as _flip
from ember.tensor.ops.movement import narrow as _narrow
from ember.tensor.ops.movement import pad as _pad
from ember.tensor.ops.movement import permute as _permute
from ember.tensor.ops.movement import reshape as _reshape
from ember.tensor.ops.movement import split as _split
from ember.tensor.ops.movement import squeeze as _squeeze
from ember.tensor.ops.movement import stack as _stack
from ember.tensor.ops.movement import swap_dims as _swap_dims
from ember.tensor.ops.movement import transpose as _transpose
from ember.tensor.ops.movement import unsqueeze as _unsqueeze
from ember.tensor.ops.nn import attention as _attention
from ember.tensor.ops.nn import cross_entropy_per_sample as _cross_entropy_per_sample
from ember.tensor.ops.nn import dropout as _dropout
from ember.tensor.ops.nn import embedding as _embedding
from ember.tensor.ops.nn import embedding_bag as _embedding_bag
from ember.tensor.ops.nn import gelu as _gelu
from ember.tensor.ops.nn import layer_norm as _layer_norm
from ember.tensor.ops.nn import linear as _linear
from ember.tensor.ops.nn import log_softmax as _log_softmax
from ember.tensor.ops.nn import quiet_softmax as _quiet_softmax
from ember.tensor.ops.nn import rms_norm as _rms_norm
from ember.tensor.ops.nn import softmax as _softmax
from ember.tensor.ops.pointwise import pointwise as _pointwise
from ember.tensor.ops.reduction import all as _all
from ember.tensor.ops.reduction import any as _any
from ember.tensor.ops.reduction import argmax as _argmax
from ember.tensor.ops.reduction import argmin as _argmin
from ember.tensor.ops.reduction import cumsum as _cumsum
from ember.tensor.ops.reduction import logsumexp as _logsumexp
from ember.tensor.ops.reduction import max as _max
from ember.tensor.ops.reduction import mean as _mean
from ember.tensor.ops.reduction import min as _min
from ember.tensor.ops.reduction import prod as _prod
from ember.tensor.ops.reduction import std as _std
from ember.tensor.ops.reduction import sum as _sum
from ember.tensor.ops.reduction import var as _var
from ember.tensor.tensor import _PLAIN_TYPES, Tensor, _converted, _holds_tensor_like

__all__ = [
    "abs", "add", "all", "any", "argmax", "argmin", "argsort", "attention", "cat", "ceil", "chunk", "clamp", "cos",
    "cross_entropy_per_sample", "cumsum", "div", "dropout", "embedding", "embedding_bag", "eq", "erf", "exp", "expm1",
    "flatten", "flip", "floor", "floor_divide", "gather", "ge", "gelu", "gt", "index_put", "index_select", "isfinite",
    "isinf", "isnan", "layer_norm", "le", "leaky_relu", "linear", "log", "log1p", "log_softmax", "logical_and",
    "logical_not", "logical_or", "logical_xor", "logsumexp", "lt", "mask_fill", "matmul", "max", "maximum", "mean",
    "min", "minimum", "mul", "narrow", "ne", "neg", "one_hot", "pad", "permute", "pow", "prod", "quiet_softmax",
    "reciprocal", "relu", "remainder", "reshape", "rms_norm", "round", "rsqrt", "scatter_add", "sigmoid", "sign",
    "silu", "sin", "softmax", "softplus", "sort", "split", "sqrt", "square", "squeeze", "stack", "std", "sub", "sum",
    "swap_dims", "swiglu", "take_along_dim", "tanh", "topk", "transpose", "unsqueeze", "var", "where",
]


def neg(x: Tensor) -> Tensor:
    """``-x``, element-wise.

    Result dtype: the input's dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("neg", x)


def exp(x: Tensor) -> Tensor:
    """``e ** x``, element-wise.

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("exp", x)


def log(x: Tensor) -> Tensor:
    """The natural logarithm, element-wise.

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("log", x)


def log1p(x: Tensor) -> Tensor:
    """``log(1 + x)``, element-wise (accurate for small x).

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("log1p", x)


def expm1(x: Tensor) -> Tensor:
    """``exp(x) - 1``, element-wise (accurate for small x).

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("expm1", x)


def sqrt(x: Tensor) -> Tensor:
    """The square root, element-wise.

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("sqrt", x)


def rsqrt(x: Tensor) -> Tensor:
    """``1 / sqrt(x)``, element-wise.

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("rsqrt", x)


def abs(x: Tensor) -> Tensor:
    """The absolute value, element-wise (its gradient at 0 and NaN is 0).

    Result dtype: the input's dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("abs", x)


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element.

    Result dtype: the input's dtype. No gradient.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("sign", x)


def sin(x: Tensor) -> Tensor:
    """The sine (of radians), element-wise.

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("sin", x)


def cos(x: Tensor) -> Tensor:
    """The cosine (of radians), element-wise.

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("cos", x)


def tanh(x: Tensor) -> Tensor:
    """The hyperbolic tangent, element-wise.

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("tanh", x)


def sigmoid(x: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))``, element-wise (computed without overflow).

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("sigmoid", x)


def erf(x: Tensor) -> Tensor:
    """The Gauss error function, element-wise.

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("erf", x)


def relu(x: Tensor) -> Tensor:
    """``max(x, 0)``, element-wise (its gradient at 0 is 0, at NaN 1).

    Result dtype: the input's dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("relu", x)


def reciprocal(x: Tensor) -> Tensor:
    """``1 / x``, element-wise.

    Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("reciprocal", x)


def square(x: Tensor) -> Tensor:
    """``x * x``, element-wise.

    Result dtype: the input's dtype.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("square", x)


def floor(x: Tensor) -> Tensor:
    """Each element rounded down to an integer value.

    Result dtype: the input's dtype. No gradient.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("floor", x)


def ceil(x: Tensor) -> Tensor:
    """Each element rounded up to an integer value.

    Result dtype: the input's dtype. No gradient.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("ceil", x)


def round(x: Tensor) -> Tensor:
    """Each element rounded to the nearest integer value (halves to even).

    Result dtype: the input's dtype. No gradient.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("round", x)


def logical_not(x: Tensor) -> Tensor:
    """``not x``, element-wise (a bool result: True where x is 0 or False).

    Result dtype: bool, from bool operands (logical_not takes numbers too). No gradient.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("logical_not", x)


def isnan(x: Tensor) -> Tensor:
    """True where an element is NaN.

    Result dtype: bool. No gradient.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("isnan", x)


def isinf(x: Tensor) -> Tensor:
    """True where an element is +inf or -inf.

    Result dtype: bool. No gradient.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("isinf", x)


def isfinite(x: Tensor) -> Tensor:
    """True where an element is neither NaN nor infinite.

    Result dtype: bool. No gradient.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unary("isfinite", x)


def add(a, b) -> Tensor:
    """``a + b``.

    Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("add", a, b)


def sub(a, b) -> Tensor:
    """``a - b``.

    Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("sub", a, b)


def mul(a, b) -> Tensor:
    """``a * b``.

    Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("mul", a, b)


def div(a, b) -> Tensor:
    """``a / b`` (true division).

    Result dtype: the operands' promoted dtype, the default float dtype for ints.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("div", a, b)


def floor_divide(a, b) -> Tensor:
    """``a // b``: the quotient rounded toward -inf.

    Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's). No gradient.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("floordiv", a, b)


def remainder(a, b) -> Tensor:
    """``a % b``, with the sign of b (as Python's %).

    Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("mod", a, b)


def pow(a, b) -> Tensor:
    """``a ** b`` (the gradient of b is 0 where a <= 0).

    Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("pow", a, b)


def maximum(a, b) -> Tensor:
    """The larger of a and b, element-wise (a tie gives each half the gradient, a NaN both all of it).

    Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("maximum", a, b)


def minimum(a, b) -> Tensor:
    """The smaller of a and b, element-wise (a tie gives each half the gradient, a NaN both all of it).

    Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("minimum", a, b)


def eq(a, b) -> Tensor:
    """``a == b``, element-wise.

    Result dtype: bool. No gradient.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("eq", a, b)


def ne(a, b) -> Tensor:
    """``a != b``, element-wise.

    Result dtype: bool. No gradient.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("ne", a, b)


def lt(a, b) -> Tensor:
    """``a < b``, element-wise.

    Result dtype: bool. No gradient.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("lt", a, b)


def le(a, b) -> Tensor:
    """``a <= b``, element-wise.

    Result dtype: bool. No gradient.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("le", a, b)


def gt(a, b) -> Tensor:
    """``a > b``, element-wise.

    Result dtype: bool. No gradient.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("gt", a, b)


def ge(a, b) -> Tensor:
    """``a >= b``, element-wise.

    Result dtype: bool. No gradient.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("ge", a, b)


def logical_and(a, b) -> Tensor:
    """``a and b`` of bool tensors, element-wise.

    Result dtype: bool, from bool operands (logical_not takes numbers too). No gradient.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("logical_and", a, b)


def logical_or(a, b) -> Tensor:
    """``a or b`` of bool tensors, element-wise.

    Result dtype: bool, from bool operands (logical_not takes numbers too). No gradient.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("logical_or", a, b)


def logical_xor(a, b) -> Tensor:
    """``a != b`` of bool tensors, element-wise.

    Result dtype: bool, from bool operands (logical_not takes numbers too). No gradient.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _binary("logical_xor", a, b)


def where(cond: Tensor, a, b) -> Tensor:
    """Element-wise ``a if cond else b`` with broadcasting."""
    if type(cond) not in _PLAIN_TYPES and _holds_tensor_like(cond):
        cond = _converted(cond)
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _where(cond, a, b)


def clamp(x: Tensor, min=None, max=None) -> Tensor:
    """Clamp to ``[min, max]`` (either may be None; tensor bounds broadcast).

    The gradient of ``x`` is 1 where ``min <= x <= max``, bounds included (as PyTorch and
    Burn), and 0 elsewhere; a tensor ``min`` (``max``) gets it where ``x < min`` (``x > max``).
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    if type(min) not in _PLAIN_TYPES and _holds_tensor_like(min):
        min = _converted(min)
    if type(max) not in _PLAIN_TYPES and _holds_tensor_like(max):
        max = _converted(max)
    return _clamp(x, min, max)


def mask_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """``x`` with ``value`` wherever ``mask`` (bool, broadcastable) is True."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    if type(mask) not in _PLAIN_TYPES and _holds_tensor_like(mask):
        mask = _converted(mask)
    if type(value) not in _PLAIN_TYPES and _holds_tensor_like(value):
        value = _converted(value)
    return _mask_fill(x, mask, value)


def sum(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Sum over ``dim`` (an int, a tuple, or None for all); bool sums count as int64."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _sum(x, dim, keepdim)


def prod(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Product over ``dim``. Its gradient is ``g * prod / x`` (undefined where x == 0)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _prod(x, dim, keepdim)


def max(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Maximum over ``dim``; ties share the gradient equally, a NaN maximum among the NaNs."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _max(x, dim, keepdim)


def min(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Minimum over ``dim``; ties share the gradient equally, a NaN minimum among the NaNs."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _min(x, dim, keepdim)


def all(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Whether every element over ``dim`` is true (non-zero), as a bool tensor."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _all(x, dim, keepdim)


def any(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Whether some element over ``dim`` is true (non-zero), as a bool tensor."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _any(x, dim, keepdim)


def argmax(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the maximum along ``dim`` (first one on ties; of the flattened tensor when
    ``dim`` is None), int64.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _argmax(x, dim, keepdim)


def argmin(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the minimum along ``dim`` (first one on ties; of the flattened tensor when
    ``dim`` is None), int64.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _argmin(x, dim, keepdim)


def mean(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Mean over ``dim`` (an int, a tuple, or None for all); int inputs give the default float."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _mean(x, dim, keepdim)


def var(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False, correction: int = 1) -> Tensor:
    """Variance with Bessel's ``correction`` (1 = unbiased, as Burn and PyTorch default)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _var(x, dim, keepdim, correction)


def std(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False, correction: int = 1) -> Tensor:
    """Standard deviation: the square root of :func:`var` (same ``correction``).

    float16 and float32 inputs take their variance in the next wider float (as PyTorch
    accumulates), so a standard deviation within the dtype's range stays finite when its
    variance is not (1.5e38 from a float32 variance of 2.25e76).
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _std(x, dim, keepdim, correction)


def logsumexp(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``dim``, computed stably (shifted by the detached max)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _logsumexp(x, dim, keepdim)


def cumsum(x: Tensor, dim: int) -> Tensor:
    """Cumulative sum along ``dim``."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _cumsum(x, dim)


def reshape(x: Tensor, *shape) -> Tensor:
    """Reshape to ``shape`` (one dim may be -1)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _reshape(x, *shape)


def permute(x: Tensor, *dims) -> Tensor:
    """The dims of ``x`` reordered: dim i of the result is dim ``dims[i]`` of ``x``."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _permute(x, *dims)


def swap_dims(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """``x`` with dims ``dim0`` and ``dim1`` exchanged."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _swap_dims(x, dim0, dim1)


def transpose(x: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    """Swap two dims (the last two by default, as Burn's ``transpose``)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _transpose(x, dim0, dim1)


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Dims ``start_dim`` to ``end_dim`` (both included) merged into one."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _flatten(x, start_dim, end_dim)


def squeeze(x: Tensor, dim: int | tuple | list | None = None) -> Tensor:
    """Remove size-1 dims (all of them, or those in ``dim``; others are an error)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _squeeze(x, dim)


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """``x`` with a new dim of size 1 at position ``dim``."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _unsqueeze(x, dim)


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The ``length`` elements of dim ``dim`` from ``start`` (negative counts from the end)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _narrow(x, dim, start, length)


def flip(x: Tensor, dims: int | tuple | list) -> Tensor:
    """``x`` with the order of the elements along ``dims`` reversed."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _flip(x, dims)


def cat(tensors, dim: int = 0) -> Tensor:
    """Concatenate along an existing ``dim``."""
    if type(tensors) not in _PLAIN_TYPES and _holds_tensor_like(tensors):
        tensors = _converted(tensors)
    return _cat(tensors, dim)


def stack(tensors, dim: int = 0) -> Tensor:
    """Stack along a new ``dim``; every tensor must have the same shape."""
    if type(tensors) not in _PLAIN_TYPES and _holds_tensor_like(tensors):
        tensors = _converted(tensors)
    return _stack(tensors, dim)


def split(x: Tensor, split_size_or_sections: int | list | tuple, dim: int = 0) -> list:
    """Split into chunks of ``split_size`` (last may be smaller) or of the given sizes."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _split(x, split_size_or_sections, dim)


def chunk(x: Tensor, chunks: int, dim: int = 0) -> list:
    """Split into ``chunks`` nearly equal pieces (as ``torch.chunk``)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _chunk(x, chunks, dim)


def pad(x: Tensor, pads: tuple | list, value: float = 0.0) -> Tensor:
    """Constant padding. ``pads`` lists (before, after) pairs starting from the LAST dim,
    as ``torch.nn.functional.pad``: ``(left, right, top, bottom, ...)``.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _pad(x, pads, value)


def index_put(x: Tensor, key, values, accumulate: bool = False) -> Tensor:
    """A copy of ``x`` with ``x[key] = values`` (or ``+=`` when ``accumulate``), as an op."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    if type(key) not in _PLAIN_TYPES and _holds_tensor_like(key):
        key = _converted(key)
    if type(values) not in _PLAIN_TYPES and _holds_tensor_like(values):
        values = _converted(values)
    return _index_put(x, key, values, accumulate)


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = x[i][index[i][j]]`` along ``dim`` (index has x's rank)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    if type(index) not in _PLAIN_TYPES and _holds_tensor_like(index):
        index = _converted(index)
    return _gather(x, dim, index)


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``x`` with ``src`` added at ``index`` along ``dim`` (repeats accumulate)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    if type(index) not in _PLAIN_TYPES and _holds_tensor_like(index):
        index = _converted(index)
    if type(src) not in _PLAIN_TYPES and _holds_tensor_like(src):
        src = _converted(src)
    return _scatter_add(x, dim, index, src)


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """Select whole slices of ``x`` along ``dim`` at the positions of the 1-D ``index``."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    if type(index) not in _PLAIN_TYPES and _holds_tensor_like(index):
        index = _converted(index)
    return _index_select(x, dim, index)


def take_along_dim(x: Tensor, index: Tensor, dim: int) -> Tensor:
    """Like ``torch.take_along_dim``: gather with ``index`` broadcast against ``x``."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    if type(index) not in _PLAIN_TYPES and _holds_tensor_like(index):
        index = _converted(index)
    return _take_along_dim(x, index, dim)


def one_hot(index: Tensor, num_classes: int, dtype=None) -> Tensor:
    """One-hot encoding along a new last dim (int64 by default, or ``dtype``)."""
    if type(index) not in _PLAIN_TYPES and _holds_tensor_like(index):
        index = _converted(index)
    if type(dtype) not in _PLAIN_TYPES and _holds_tensor_like(dtype):
        dtype = _converted(dtype)
    return _one_hot(index, num_classes, dtype)


def sort(x: Tensor, dim: int = -1, descending: bool = False) -> tuple:
    """Stable sort along ``dim``: returns ``(values, indices)``."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _sort(x, dim, descending)


def argsort(x: Tensor, dim: int = -1, descending: bool = False) -> Tensor:
    """The indices that sort ``x`` along ``dim`` (stable), int64."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _argsort(x, dim, descending)


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:
    """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _topk(x, k, dim, largest, sorted)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b``: 1-D operands are promoted as in NumPy, leading (batch) dims broadcast."""
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _matmul(a, b)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight + bias`` over the last dim of ``x`` (Burn's ``linear``): ``x [..., d_in]``,
    ``weight [d_in, d_out]``, ``bias [d_out]`` or None -> ``[..., d_out]``, in the operands'
    promoted dtype, which must be float.

    One backend call: the ``cpu`` backend adds the bias to each block of the product's rows
    while they are in cache, instead of in a second pass over the whole result.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    if type(weight) not in _PLAIN_TYPES and _holds_tensor_like(weight):
        weight = _converted(weight)
    if type(bias) not in _PLAIN_TYPES and _holds_tensor_like(bias):
        bias = _converted(bias)
    return _linear(x, weight, bias)


def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)`` (SiLU, also called swish).

    Its gradient is ``sigmoid(x)·(1 + x·(1 − sigmoid(x)))``, as PyTorch's: the composition's
    own would multiply the output gradient by x first, which overflows at large |x| (NaN then).
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _silu(x)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, linear where ``beta x > threshold`` for stability.

    Its gradient is ``sigmoid(beta x)`` (1/2 at 0), 1 where linear, as PyTorch's (README, "A tour
    of the API": gradients at kinks).
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _softplus(x, beta, threshold)


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``x`` where ``x > 0``, ``negative_slope * x`` elsewhere (so the gradient at 0 and at NaN is
    ``negative_slope``, as PyTorch's).
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _leaky_relu(x, negative_slope)


def quiet_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / (1 + sum(exp(x))): Burn's softmax that lets a row attend to nothing."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _quiet_softmax(x, dim)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (computed stably)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _softmax(x, dim)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """x - logsumexp(x) along ``dim``."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _log_softmax(x, dim)


def gelu(x: Tensor, approximate: str | bool = 'none') -> Tensor:
    """GELU: x * Phi(x) (``approximate="none"``) or its tanh approximation (``"tanh"``)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _gelu(x, approximate)


def layer_norm(x: Tensor, gamma: Tensor | None = None, beta: Tensor | None = None, eps: float = 1e-05) -> Tensor:
    """Normalise over the last dim: (x - mean) / sqrt(var + eps) * gamma + beta (biased var)."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    if type(gamma) not in _PLAIN_TYPES and _holds_tensor_like(gamma):
        gamma = _converted(gamma)
    if type(beta) not in _PLAIN_TYPES and _holds_tensor_like(beta):
        beta = _converted(beta)
    return _layer_norm(x, gamma, beta, eps)


def rms_norm(x: Tensor, gamma: Tensor | None = None, eps: float = 1e-05) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * gamma over the last dim."""
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    if type(gamma) not in _PLAIN_TYPES and _holds_tensor_like(gamma):
        gamma = _converted(gamma)
    return _rms_norm(x, gamma, eps)


def cross_entropy_per_sample(logits: Tensor, targets: Tensor, smoothing: float = 0.0) -> Tensor:
    """Per-sample cross-entropy from logits ``[N, C]`` and int targets ``[N]`` (fused).

    With label ``smoothing`` s the target distribution is (1-s)·onehot + s/C.
    """
    if type(logits) not in _PLAIN_TYPES and _holds_tensor_like(logits):
        logits = _converted(logits)
    if type(targets) not in _PLAIN_TYPES and _holds_tensor_like(targets):
        targets = _converted(targets)
    return _cross_entropy_per_sample(logits, targets, smoothing)


def embedding(weight: Tensor, ids: Tensor) -> Tensor:
    """Rows of ``weight`` [V, D] at int ``ids`` (any shape) -> [*ids.shape, D]."""
    if type(weight) not in _PLAIN_TYPES and _holds_tensor_like(weight):
        weight = _converted(weight)
    if type(ids) not in _PLAIN_TYPES and _holds_tensor_like(ids):
        ids = _converted(ids)
    return _embedding(weight, ids)


def embedding_bag(
    weight: Tensor,
    indices: Tensor,
    offsets: Tensor | None = None,
    per_sample_weights: Tensor | None = None,
    mask: Tensor | None = None,
    mode: str = 'mean',
    sparse: bool = False,
) -> Tensor:
    """Sum, mean or max of rows of ``weight [n, d]`` over bags of indices -> ``[B, d]``.

    Bags are given either as flat ``indices [N]`` with ``offsets [B]`` (PyTorch's form: bag b
    is ``indices[offsets[b]:offsets[b+1]]``, the last bag runs to N, offsets[0] = 0), or as
    padded ``indices [B, L]`` with an optional bool ``mask [B, L]`` (True = padding, ember's
    convention; the values at padded positions are ignored). An empty bag gives zeros.

    Args:
        weight: the table ``[n, d]`` (float).
        indices: int tensor, values in [0, n) (padded positions excepted).
        offsets: int ``[B]`` with 1-D indices, else None.
        per_sample_weights: float weights of the rows, shaped like ``indices`` (mode "sum"
            only); differentiable.
        mask: bool ``[B, L]`` with padded indices, or None.
        mode: "sum", "mean" (PyTorch's default) or "max" (per feature; the gradient goes to
            the first maximum).
        sparse: give ``weight`` a row-sparse gradient (:class:`ember.RowSparse`) holding only
            the rows the batch touched, instead of a dense ``[n, d]`` tensor.

    Raises:
        IndexError: an index outside the table, naming its size.
        ValueError: bad offsets, shapes, mode, or per-sample weights with mode "mean"/"max".
    """
    if type(weight) not in _PLAIN_TYPES and _holds_tensor_like(weight):
        weight = _converted(weight)
    if type(indices) not in _PLAIN_TYPES and _holds_tensor_like(indices):
        indices = _converted(indices)
    if type(offsets) not in _PLAIN_TYPES and _holds_tensor_like(offsets):
        offsets = _converted(offsets)
    if type(per_sample_weights) not in _PLAIN_TYPES and _holds_tensor_like(per_sample_weights):
        per_sample_weights = _converted(per_sample_weights)
    if type(mask) not in _PLAIN_TYPES and _holds_tensor_like(mask):
        mask = _converted(mask)
    return _embedding_bag(weight, indices, offsets, per_sample_weights, mask, mode, sparse)


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability ``p``, scale the rest by 1/(1-p).

    Active only when ``training`` and grad recording is on (as Burn's autodiff device). The
    mask comes from a counter-based hash of a seed drawn from the device's generator, so it is
    regenerated in backward instead of stored.
    """
    if type(x) not in _PLAIN_TYPES and _holds_tensor_like(x):
        x = _converted(x)
    return _dropout(x, p, training)


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask_pad: Tensor | None = None,
    scale: float | None = None,
    quiet: bool = False,
    dropout_p: float = 0.0,
) -> Tensor:
    """Fused scaled-dot-product attention as in Burn's MultiHeadAttention.

    scores = q @ kᵀ · scale (default 1/√d) → dropout on the scores → masked fill -1e4 where
    ``mask_pad`` [B, Sk] is True → softmax (or quiet softmax) → @ v. Shapes: q [B,H,Sq,D],
    k and v [B,H,Sk,D]. Dropout is applied only while grad recording is on.
    """
    if type(q) not in _PLAIN_TYPES and _holds_tensor_like(q):
        q = _converted(q)
    if type(k) not in _PLAIN_TYPES and _holds_tensor_like(k):
        k = _converted(k)
    if type(v) not in _PLAIN_TYPES and _holds_tensor_like(v):
        v = _converted(v)
    if type(mask_pad) not in _PLAIN_TYPES and _holds_tensor_like(mask_pad):
        mask_pad = _converted(mask_pad)
    return _attention(q, k, v, mask_pad, scale, quiet, dropout_p)


def swiglu(a: Tensor, b: Tensor) -> Tensor:
    """``silu(a) * b = a * sigmoid(a) * b``, element-wise: the SwiGLU gate, fused.

    Result dtype: the input's dtype, which must be float.
    """
    if type(a) not in _PLAIN_TYPES and _holds_tensor_like(a):
        a = _converted(a)
    if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
        b = _converted(b)
    return _pointwise("swiglu", a, b)
