# Generated from ember/core/op_table.py by ember/tensor/op_codegen.py: do not edit.
# Regenerate with: python ember/tensor/op_codegen.py
"""The Tensor methods and operators of the op table's ops: :class:`OpMethods`, a base of
:class:`ember.Tensor`.

Each method calls its op's function directly. The op modules import ``Tensor``, which
inherits this class, so they load after it: ``ember/tensor/binding.py`` then calls
:func:`bind_ops`, which binds the names the methods call (imported here for type checkers only).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ember.tensor.ops.elementwise import binary as _binary
    from ember.tensor.ops.elementwise import clamp as _clamp
    from ember.tensor.ops.elementwise import leaky_relu as _leaky_relu
    from ember.tensor.ops.elementwise import mask_fill as _mask_fill
    from ember.tensor.ops.elementwise import silu as _silu
    from ember.tensor.ops.elementwise import softplus as _softplus
    from ember.tensor.ops.elementwise import unary as _unary
    from ember.tensor.ops.indexing import argsort as _argsort
    from ember.tensor.ops.indexing import gather as _gather
    from ember.tensor.ops.indexing import getitem as _getitem
    from ember.tensor.ops.indexing import index_put as _index_put
    from ember.tensor.ops.indexing import index_select as _index_select
    from ember.tensor.ops.indexing import one_hot as _one_hot
    from ember.tensor.ops.indexing import scatter_add as _scatter_add
    from ember.tensor.ops.indexing import sort as _sort
    from ember.tensor.ops.indexing import take_along_dim as _take_along_dim
    from ember.tensor.ops.indexing import topk as _topk
    from ember.tensor.ops.linalg import matmul as _matmul
    from ember.tensor.ops.movement import chunk as _chunk
    from ember.tensor.ops.movement import expand as _expand
    from ember.tensor.ops.movement import flatten as _flatten
    from ember.tensor.ops.movement import flip as _flip
    from ember.tensor.ops.movement import narrow as _narrow
    from ember.tensor.ops.movement import pad as _pad
    from ember.tensor.ops.movement import permute as _permute
    from ember.tensor.ops.movement import repeat as _repeat
    from ember.tensor.ops.movement import reshape as _reshape
    from ember.tensor.ops.movement import split as _split
    from ember.tensor.ops.movement import squeeze as _squeeze
    from ember.tensor.ops.movement import swap_dims as _swap_dims
    from ember.tensor.ops.movement import transpose as _transpose
    from ember.tensor.ops.movement import unsqueeze as _unsqueeze
    from ember.tensor.ops.nn import gelu as _gelu
    from ember.tensor.ops.nn import log_softmax as _log_softmax
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


class OpMethods:
    """The methods of :class:`ember.Tensor` generated from :mod:`ember.core.op_table`."""

    __slots__ = ()

    def neg(self) -> Tensor:
        """``-x``, element-wise.

        Result dtype: the input's dtype.
        """
        return _unary("neg", self)

    __neg__ = neg

    def exp(self) -> Tensor:
        """``e ** x``, element-wise.

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("exp", self)

    def log(self) -> Tensor:
        """The natural logarithm, element-wise.

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("log", self)

    def log1p(self) -> Tensor:
        """``log(1 + x)``, element-wise (accurate for small x).

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("log1p", self)

    def expm1(self) -> Tensor:
        """``exp(x) - 1``, element-wise (accurate for small x).

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("expm1", self)

    def sqrt(self) -> Tensor:
        """The square root, element-wise.

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("sqrt", self)

    def rsqrt(self) -> Tensor:
        """``1 / sqrt(x)``, element-wise.

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("rsqrt", self)

    def abs(self) -> Tensor:
        """The absolute value, element-wise (its gradient at 0 and NaN is 0).

        Result dtype: the input's dtype.
        """
        return _unary("abs", self)

    __abs__ = abs

    def sign(self) -> Tensor:
        """-1, 0 or 1 by the sign of each element.

        Result dtype: the input's dtype. No gradient.
        """
        return _unary("sign", self)

    def sin(self) -> Tensor:
        """The sine (of radians), element-wise.

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("sin", self)

    def cos(self) -> Tensor:
        """The cosine (of radians), element-wise.

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("cos", self)

    def tanh(self) -> Tensor:
        """The hyperbolic tangent, element-wise.

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("tanh", self)

    def sigmoid(self) -> Tensor:
        """``1 / (1 + exp(-x))``, element-wise (computed without overflow).

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("sigmoid", self)

    def erf(self) -> Tensor:
        """The Gauss error function, element-wise.

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("erf", self)

    def relu(self) -> Tensor:
        """``max(x, 0)``, element-wise (its gradient at 0 is 0, at NaN 1).

        Result dtype: the input's dtype.
        """
        return _unary("relu", self)

    def reciprocal(self) -> Tensor:
        """``1 / x``, element-wise.

        Result dtype: the input's dtype when float; int inputs compute in the default float dtype.
        """
        return _unary("reciprocal", self)

    def square(self) -> Tensor:
        """``x * x``, element-wise.

        Result dtype: the input's dtype.
        """
        return _unary("square", self)

    def floor(self) -> Tensor:
        """Each element rounded down to an integer value.

        Result dtype: the input's dtype. No gradient.
        """
        return _unary("floor", self)

    def ceil(self) -> Tensor:
        """Each element rounded up to an integer value.

        Result dtype: the input's dtype. No gradient.
        """
        return _unary("ceil", self)

    def round(self) -> Tensor:
        """Each element rounded to the nearest integer value (halves to even).

        Result dtype: the input's dtype. No gradient.
        """
        return _unary("round", self)

    def logical_not(self) -> Tensor:
        """``not x``, element-wise (a bool result: True where x is 0 or False).

        Result dtype: bool, from bool operands (logical_not takes numbers too). No gradient.
        """
        return _unary("logical_not", self)

    def isnan(self) -> Tensor:
        """True where an element is NaN.

        Result dtype: bool. No gradient.
        """
        return _unary("isnan", self)

    def isinf(self) -> Tensor:
        """True where an element is +inf or -inf.

        Result dtype: bool. No gradient.
        """
        return _unary("isinf", self)

    def isfinite(self) -> Tensor:
        """True where an element is neither NaN nor infinite.

        Result dtype: bool. No gradient.
        """
        return _unary("isfinite", self)

    def add(self, other) -> Tensor:
        """``a + b``.

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("add", self, other)

    def sub(self, other) -> Tensor:
        """``a - b``.

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("sub", self, other)

    __sub__ = sub

    def mul(self, other) -> Tensor:
        """``a * b``.

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("mul", self, other)

    __mul__ = mul

    def div(self, other) -> Tensor:
        """``a / b`` (true division).

        Result dtype: the operands' promoted dtype, the default float dtype for ints.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("div", self, other)

    __truediv__ = div

    def floor_divide(self, other) -> Tensor:
        """``a // b``: the quotient rounded toward -inf.

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's). No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("floordiv", self, other)

    __floordiv__ = floor_divide

    def remainder(self, other) -> Tensor:
        """``a % b``, with the sign of b (as Python's %).

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("mod", self, other)

    __mod__ = remainder

    def pow(self, other) -> Tensor:
        """``a ** b`` (the gradient of b is 0 where a <= 0).

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("pow", self, other)

    __pow__ = pow

    def maximum(self, other) -> Tensor:
        """The larger of a and b, element-wise (a tie gives each half the gradient, a NaN both all of it).

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("maximum", self, other)

    def minimum(self, other) -> Tensor:
        """The smaller of a and b, element-wise (a tie gives each half the gradient, a NaN both all of it).

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("minimum", self, other)

    def eq(self, other) -> Tensor:
        """``a == b``, element-wise.

        Result dtype: bool. No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("eq", self, other)

    equal = eq
    __eq__ = eq

    def ne(self, other) -> Tensor:
        """``a != b``, element-wise.

        Result dtype: bool. No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("ne", self, other)

    __ne__ = ne

    def lt(self, other) -> Tensor:
        """``a < b``, element-wise.

        Result dtype: bool. No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("lt", self, other)

    lower = lt
    __lt__ = lt

    def le(self, other) -> Tensor:
        """``a <= b``, element-wise.

        Result dtype: bool. No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("le", self, other)

    lower_equal = le
    __le__ = le

    def gt(self, other) -> Tensor:
        """``a > b``, element-wise.

        Result dtype: bool. No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("gt", self, other)

    greater = gt
    __gt__ = gt

    def ge(self, other) -> Tensor:
        """``a >= b``, element-wise.

        Result dtype: bool. No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("ge", self, other)

    greater_equal = ge
    __ge__ = ge

    def logical_and(self, other) -> Tensor:
        """``a and b`` of bool tensors, element-wise.

        Result dtype: bool, from bool operands (logical_not takes numbers too). No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("logical_and", self, other)

    __and__ = logical_and

    def logical_or(self, other) -> Tensor:
        """``a or b`` of bool tensors, element-wise.

        Result dtype: bool, from bool operands (logical_not takes numbers too). No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("logical_or", self, other)

    __or__ = logical_or

    def logical_xor(self, other) -> Tensor:
        """``a != b`` of bool tensors, element-wise.

        Result dtype: bool, from bool operands (logical_not takes numbers too). No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("logical_xor", self, other)

    __xor__ = logical_xor

    def clamp(self, min=None, max=None) -> Tensor:
        """Clamp to ``[min, max]`` (either may be None; tensor bounds broadcast).

        The gradient of ``x`` is 1 where ``min <= x <= max``, bounds included (as PyTorch and
        Burn), and 0 elsewhere; a tensor ``min`` (``max``) gets it where ``x < min`` (``x > max``).
        """
        if type(min) not in _PLAIN_TYPES and _holds_tensor_like(min):
            min = _converted(min)
        if type(max) not in _PLAIN_TYPES and _holds_tensor_like(max):
            max = _converted(max)
        return _clamp(self, min, max)

    def mask_fill(self, mask: Tensor, value) -> Tensor:
        """``x`` with ``value`` wherever ``mask`` (bool, broadcastable) is True."""
        if type(mask) not in _PLAIN_TYPES and _holds_tensor_like(mask):
            mask = _converted(mask)
        if type(value) not in _PLAIN_TYPES and _holds_tensor_like(value):
            value = _converted(value)
        return _mask_fill(self, mask, value)

    masked_fill = mask_fill

    def sum(self, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
        """Sum over ``dim`` (an int, a tuple, or None for all); bool sums count as int64."""
        return _sum(self, dim, keepdim)

    def prod(self, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
        """Product over ``dim``. Its gradient is ``g * prod / x`` (undefined where x == 0)."""
        return _prod(self, dim, keepdim)

    def max(self, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
        """Maximum over ``dim``; ties share the gradient equally, a NaN maximum among the NaNs."""
        return _max(self, dim, keepdim)

    def min(self, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
        """Minimum over ``dim``; ties share the gradient equally, a NaN minimum among the NaNs."""
        return _min(self, dim, keepdim)

    def all(self, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
        """Whether every element over ``dim`` is true (non-zero), as a bool tensor."""
        return _all(self, dim, keepdim)

    def any(self, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
        """Whether some element over ``dim`` is true (non-zero), as a bool tensor."""
        return _any(self, dim, keepdim)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Index of the maximum along ``dim`` (first one on ties; of the flattened tensor when
        ``dim`` is None), int64.
        """
        return _argmax(self, dim, keepdim)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Index of the minimum along ``dim`` (first one on ties; of the flattened tensor when
        ``dim`` is None), int64.
        """
        return _argmin(self, dim, keepdim)

    def mean(self, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
        """Mean over ``dim`` (an int, a tuple, or None for all); int inputs give the default float."""
        return _mean(self, dim, keepdim)

    def var(self, dim: int | tuple | list | None = None, keepdim: bool = False, correction: int = 1) -> Tensor:
        """Variance with Bessel's ``correction`` (1 = unbiased, as Burn and PyTorch default)."""
        return _var(self, dim, keepdim, correction)

    def std(self, dim: int | tuple | list | None = None, keepdim: bool = False, correction: int = 1) -> Tensor:
        """Standard deviation: the square root of :func:`var` (same ``correction``).

        float16 and float32 inputs take their variance in the next wider float (as PyTorch
        accumulates), so a standard deviation within the dtype's range stays finite when its
        variance is not (1.5e38 from a float32 variance of 2.25e76).
        """
        return _std(self, dim, keepdim, correction)

    def logsumexp(self, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
        """log(sum(exp(x))) over ``dim``, computed stably (shifted by the detached max)."""
        return _logsumexp(self, dim, keepdim)

    def cumsum(self, dim: int) -> Tensor:
        """Cumulative sum along ``dim``."""
        return _cumsum(self, dim)

    def reshape(self, *shape) -> Tensor:
        """Reshape to ``shape`` (one dim may be -1)."""
        return _reshape(self, *shape)

    view = reshape

    def permute(self, *dims) -> Tensor:
        """The dims of ``x`` reordered: dim i of the result is dim ``dims[i]`` of ``x``."""
        return _permute(self, *dims)

    def swap_dims(self, dim0: int, dim1: int) -> Tensor:
        """``x`` with dims ``dim0`` and ``dim1`` exchanged."""
        return _swap_dims(self, dim0, dim1)

    def transpose(self, dim0: int = -2, dim1: int = -1) -> Tensor:
        """Swap two dims (the last two by default, as Burn's ``transpose``)."""
        return _transpose(self, dim0, dim1)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Dims ``start_dim`` to ``end_dim`` (both included) merged into one."""
        return _flatten(self, start_dim, end_dim)

    def squeeze(self, dim: int | tuple | list | None = None) -> Tensor:
        """Remove size-1 dims (all of them, or those in ``dim``; others are an error)."""
        return _squeeze(self, dim)

    def unsqueeze(self, dim: int) -> Tensor:
        """``x`` with a new dim of size 1 at position ``dim``."""
        return _unsqueeze(self, dim)

    def expand(self, *shape) -> Tensor:
        """Broadcast to ``shape`` (-1 keeps a dim); the gradient sums back."""
        return _expand(self, *shape)

    def repeat(self, *reps) -> Tensor:
        """Tile ``x``: ``reps[i]`` copies along dim i (like ``torch.Tensor.repeat``)."""
        return _repeat(self, *reps)

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """The ``length`` elements of dim ``dim`` from ``start`` (negative counts from the end)."""
        return _narrow(self, dim, start, length)

    def flip(self, dims: int | tuple | list) -> Tensor:
        """``x`` with the order of the elements along ``dims`` reversed."""
        return _flip(self, dims)

    def split(self, split_size_or_sections: int | list | tuple, dim: int = 0) -> list:
        """Split into chunks of ``split_size`` (last may be smaller) or of the given sizes."""
        return _split(self, split_size_or_sections, dim)

    def chunk(self, chunks: int, dim: int = 0) -> list:
        """Split into ``chunks`` nearly equal pieces (as ``torch.chunk``)."""
        return _chunk(self, chunks, dim)

    def pad(self, pads: tuple | list, value: float = 0.0) -> Tensor:
        """Constant padding. ``pads`` lists (before, after) pairs starting from the LAST dim,
        as ``torch.nn.functional.pad``: ``(left, right, top, bottom, ...)``.
        """
        return _pad(self, pads, value)

    def __getitem__(self, key) -> Tensor:
        """Python indexing: ints, slices (positive steps), None, Ellipsis, and int/bool tensors."""
        if type(key) not in _PLAIN_TYPES and _holds_tensor_like(key):
            key = _converted(key)
        return _getitem(self, key)

    def index_put(self, key, values, accumulate: bool = False) -> Tensor:
        """A copy of ``x`` with ``x[key] = values`` (or ``+=`` when ``accumulate``), as an op."""
        if type(key) not in _PLAIN_TYPES and _holds_tensor_like(key):
            key = _converted(key)
        if type(values) not in _PLAIN_TYPES and _holds_tensor_like(values):
            values = _converted(values)
        return _index_put(self, key, values, accumulate)

    def gather(self, dim: int, index: Tensor) -> Tensor:
        """``out[i][j] = x[i][index[i][j]]`` along ``dim`` (index has x's rank)."""
        if type(index) not in _PLAIN_TYPES and _holds_tensor_like(index):
            index = _converted(index)
        return _gather(self, dim, index)

    def scatter_add(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """A copy of ``x`` with ``src`` added at ``index`` along ``dim`` (repeats accumulate)."""
        if type(index) not in _PLAIN_TYPES and _holds_tensor_like(index):
            index = _converted(index)
        if type(src) not in _PLAIN_TYPES and _holds_tensor_like(src):
            src = _converted(src)
        return _scatter_add(self, dim, index, src)

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        """Select whole slices of ``x`` along ``dim`` at the positions of the 1-D ``index``."""
        if type(index) not in _PLAIN_TYPES and _holds_tensor_like(index):
            index = _converted(index)
        return _index_select(self, dim, index)

    select = index_select

    def take_along_dim(self, index: Tensor, dim: int) -> Tensor:
        """Like ``torch.take_along_dim``: gather with ``index`` broadcast against ``x``."""
        if type(index) not in _PLAIN_TYPES and _holds_tensor_like(index):
            index = _converted(index)
        return _take_along_dim(self, index, dim)

    def one_hot(self, num_classes: int, dtype=None) -> Tensor:
        """One-hot encoding along a new last dim (int64 by default, or ``dtype``)."""
        if type(dtype) not in _PLAIN_TYPES and _holds_tensor_like(dtype):
            dtype = _converted(dtype)
        return _one_hot(self, num_classes, dtype)

    def sort(self, dim: int = -1, descending: bool = False) -> tuple:
        """Stable sort along ``dim``: returns ``(values, indices)``."""
        return _sort(self, dim, descending)

    def argsort(self, dim: int = -1, descending: bool = False) -> Tensor:
        """The indices that sort ``x`` along ``dim`` (stable), int64."""
        return _argsort(self, dim, descending)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:
        """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
        return _topk(self, k, dim, largest, sorted)

    def matmul(self, b: Tensor) -> Tensor:
        """``a @ b``: 1-D operands are promoted as in NumPy, leading (batch) dims broadcast."""
        if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
            b = _converted(b)
        return _matmul(self, b)

    __matmul__ = matmul

    def silu(self) -> Tensor:
        """``x * sigmoid(x)`` (SiLU, also called swish).

        Its gradient is ``sigmoid(x)·(1 + x·(1 − sigmoid(x)))``, as PyTorch's: the composition's
        own would multiply the output gradient by x first, which overflows at large |x| (NaN then).
        """
        return _silu(self)

    def softplus(self, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
        """log(1 + exp(beta x)) / beta, linear where ``beta x > threshold`` for stability.

        Its gradient is ``sigmoid(beta x)`` (1/2 at 0), 1 where linear, as PyTorch's (README, "A tour
        of the API": gradients at kinks).
        """
        return _softplus(self, beta, threshold)

    def leaky_relu(self, negative_slope: float = 0.01) -> Tensor:
        """``x`` where ``x > 0``, ``negative_slope * x`` elsewhere (so the gradient at 0 and at NaN is
        ``negative_slope``, as PyTorch's).
        """
        return _leaky_relu(self, negative_slope)

    def softmax(self, dim: int = -1) -> Tensor:
        """exp(x) / sum(exp(x)) along ``dim`` (computed stably)."""
        return _softmax(self, dim)

    def log_softmax(self, dim: int = -1) -> Tensor:
        """x - logsumexp(x) along ``dim``."""
        return _log_softmax(self, dim)

    def gelu(self, approximate: str | bool = 'none') -> Tensor:
        """GELU: x * Phi(x) (``approximate="none"``) or its tanh approximation (``"tanh"``)."""
        return _gelu(self, approximate)

    def swiglu(self, b) -> Tensor:
        """``silu(a) * b = a * sigmoid(a) * b``, element-wise: the SwiGLU gate, fused.

        Result dtype: the input's dtype, which must be float.
        """
        if type(b) not in _PLAIN_TYPES and _holds_tensor_like(b):
            b = _converted(b)
        return _pointwise("swiglu", self, b)

    def __radd__(self, other) -> Tensor:
        """``a + b``.

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("add", other, self)

    def __rsub__(self, other) -> Tensor:
        """``a - b``.

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("sub", other, self)

    def __rmul__(self, other) -> Tensor:
        """``a * b``.

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("mul", other, self)

    def __rtruediv__(self, other) -> Tensor:
        """``a / b`` (true division).

        Result dtype: the operands' promoted dtype, the default float dtype for ints.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("div", other, self)

    def __rfloordiv__(self, other) -> Tensor:
        """``a // b``: the quotient rounded toward -inf.

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's). No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("floordiv", other, self)

    def __rmod__(self, other) -> Tensor:
        """``a % b``, with the sign of b (as Python's %).

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("mod", other, self)

    def __rpow__(self, other) -> Tensor:
        """``a ** b`` (the gradient of b is 0 where a <= 0).

        Result dtype: the operands' promoted dtype (a Python scalar takes the tensor's).
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("pow", other, self)

    def __rand__(self, other) -> Tensor:
        """``a and b`` of bool tensors, element-wise.

        Result dtype: bool, from bool operands (logical_not takes numbers too). No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("logical_and", other, self)

    def __ror__(self, other) -> Tensor:
        """``a or b`` of bool tensors, element-wise.

        Result dtype: bool, from bool operands (logical_not takes numbers too). No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("logical_or", other, self)

    def __rxor__(self, other) -> Tensor:
        """``a != b`` of bool tensors, element-wise.

        Result dtype: bool, from bool operands (logical_not takes numbers too). No gradient.
        """
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _binary("logical_xor", other, self)

    def __rmatmul__(self, other) -> Tensor:
        """``a @ b``: 1-D operands are promoted as in NumPy, leading (batch) dims broadcast."""
        if type(other) not in _PLAIN_TYPES and _holds_tensor_like(other):
            other = _converted(other)
        return _matmul(other, self)


def bind_ops(*, elementwise, indexing, linalg, movement, nn, pointwise, reduction, tensor) -> None:
    """Bind the functions the methods call (``ember/tensor/binding.py`` passes their modules)."""
    globals().update(
        _all=reduction.all,
        _any=reduction.any,
        _argmax=reduction.argmax,
        _argmin=reduction.argmin,
        _argsort=indexing.argsort,
        _binary=elementwise.binary,
        _chunk=movement.chunk,
        _clamp=elementwise.clamp,
        _converted=tensor._converted,
        _cumsum=reduction.cumsum,
        _expand=movement.expand,
        _flatten=movement.flatten,
        _flip=movement.flip,
        _gather=indexing.gather,
        _gelu=nn.gelu,
        _getitem=indexing.getitem,
        _holds_tensor_like=tensor._holds_tensor_like,
        _index_put=indexing.index_put,
        _index_select=indexing.index_select,
        _leaky_relu=elementwise.leaky_relu,
        _log_softmax=nn.log_softmax,
        _logsumexp=reduction.logsumexp,
        _mask_fill=elementwise.mask_fill,
        _matmul=linalg.matmul,
        _max=reduction.max,
        _mean=reduction.mean,
        _min=reduction.min,
        _narrow=movement.narrow,
        _one_hot=indexing.one_hot,
        _pad=movement.pad,
        _permute=movement.permute,
        _PLAIN_TYPES=tensor._PLAIN_TYPES,
        _pointwise=pointwise.pointwise,
        _prod=reduction.prod,
        _repeat=movement.repeat,
        _reshape=movement.reshape,
        _scatter_add=indexing.scatter_add,
        _silu=elementwise.silu,
        _softmax=nn.softmax,
        _softplus=elementwise.softplus,
        _sort=indexing.sort,
        _split=movement.split,
        _squeeze=movement.squeeze,
        _std=reduction.std,
        _sum=reduction.sum,
        _swap_dims=movement.swap_dims,
        _take_along_dim=indexing.take_along_dim,
        _topk=indexing.topk,
        _transpose=movement.transpose,
        _unary=elementwise.unary,
        _unsqueeze=movement.unsqueeze,
        _var=reduction.var,
    )
