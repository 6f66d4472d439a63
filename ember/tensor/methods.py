"""Attaches the tensor ops to :class:`Tensor` as methods and Python operators."""
from __future__ import annotations

from ember.tensor.ops import elementwise as E
from ember.tensor.ops import indexing as I
from ember.tensor.ops import linalg as L
from ember.tensor.ops import movement as M
from ember.tensor.ops import nn as N
from ember.tensor.ops import reduction as R
from ember.tensor.sparse import RowSparse as _RowSparse
from ember.tensor.tensor import Tensor, accepts_tensor_like

_CORE_NAMES = frozenset(vars(Tensor))  # what the class body defines; the rest is attached below


def _bin(op, reverse=False):
    if reverse:
        def method(self, other):
            return E.binary(op, other, self)
    else:
        def method(self, other):
            return E.binary(op, self, other)
    method.__name__ = op
    return method


def _bool_or_int(op_bool):
    def method(self, other):
        return E.binary(op_bool, self, other)
    return method


def _rbool(op_bool):
    def method(self, other):
        return E.binary(op_bool, other, self)
    return method


def _add(self, other):
    if type(other) is _RowSparse:  # dense + row-sparse: the sparse side knows how
        return other.__radd__(self)
    return E.binary("add", self, other)


for _name, _op in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "div"), ("floordiv", "floordiv"),
                   ("mod", "mod"), ("pow", "pow")):
    setattr(Tensor, f"__{_name}__", _bin(_op))
    setattr(Tensor, f"__r{_name}__", _bin(_op, reverse=True))
Tensor.__add__ = _add
Tensor.__truediv__ = _bin("div")
Tensor.__rtruediv__ = _bin("div", reverse=True)
for _name, _op in (("eq", "eq"), ("ne", "ne"), ("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge")):
    setattr(Tensor, f"__{_name}__", _bin(_op))
Tensor.__and__ = _bool_or_int("logical_and")
Tensor.__or__ = _bool_or_int("logical_or")
Tensor.__xor__ = _bool_or_int("logical_xor")
Tensor.__rand__ = _rbool("logical_and")
Tensor.__ror__ = _rbool("logical_or")
Tensor.__rxor__ = _rbool("logical_xor")
Tensor.__invert__ = lambda self: E.unary("logical_not", self) if self._dtype.is_bool else _not_bool(self)
Tensor.__neg__ = lambda self: E.unary("neg", self)
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: E.unary("abs", self)
Tensor.__matmul__ = lambda self, other: L.matmul(self, other)
Tensor.__rmatmul__ = lambda self, other: L.matmul(other, self)
Tensor.__getitem__ = lambda self, key: I.getitem(self, key)


def _not_bool(self):
    raise TypeError(f"~ is defined for bool tensors only, got {self._dtype}")


def _setitem(self, key, value):
    """``t[key] = value`` as the functional op ``index_put``; ``t`` then holds the result.

    Not allowed on a leaf that requires grad (its gradient would no longer be defined).
    """
    if self._node is not None and self._node.is_leaf:
        raise RuntimeError("setitem: cannot assign into a leaf tensor that requires grad; "
                           "use index_put to build a new tensor instead")
    out = I.index_put(self, key, value)
    self._data, self._node, self._dtype = out._data, out._node, out._dtype


Tensor.__setitem__ = _setitem

# named arithmetic (Burn names included)
for _op in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
            "logical_and", "logical_or", "logical_xor"):
    setattr(Tensor, _op, _bin(_op))
Tensor.remainder = _bin("mod")
Tensor.floor_divide = _bin("floordiv")
Tensor.equal = _bin("eq")
Tensor.greater = _bin("gt")
Tensor.greater_equal = _bin("ge")
Tensor.lower = _bin("lt")
Tensor.lower_equal = _bin("le")
Tensor.matmul = lambda self, other: L.matmul(self, other)

for _op in ("exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "abs", "sign", "sin", "cos", "tanh", "sigmoid",
            "erf", "relu", "reciprocal", "square", "floor", "ceil", "round", "isnan", "isinf", "isfinite"):
    setattr(Tensor, _op, (lambda op: lambda self: E.unary(op, self))(_op))
Tensor.neg = lambda self: E.unary("neg", self)
Tensor.logical_not = lambda self: E.unary("logical_not", self)
Tensor.silu = E.silu
Tensor.softplus = E.softplus
Tensor.leaky_relu = E.leaky_relu
Tensor.gelu = N.gelu
Tensor.clamp = E.clamp
Tensor.clamp_min = lambda self, v: E.clamp(self, min=v)
Tensor.clamp_max = lambda self, v: E.clamp(self, max=v)
Tensor.mask_fill = E.mask_fill
Tensor.masked_fill = E.mask_fill
Tensor.where = lambda self, cond, other: E.where(cond, self, other)
Tensor.mask_where = lambda self, mask, value: E.where(mask, value, self)

for _op in ("sum", "prod", "max", "min", "all", "any", "mean", "var", "std", "logsumexp", "argmax", "argmin",
            "cumsum"):
    setattr(Tensor, _op, getattr(R, _op))

for _op in ("reshape", "permute", "swap_dims", "transpose", "flatten", "squeeze", "unsqueeze", "expand",
            "repeat", "narrow", "flip", "split", "chunk", "pad"):
    setattr(Tensor, _op, getattr(M, _op))
Tensor.view = M.reshape
Tensor.T = property(lambda self: M.permute(self, tuple(reversed(range(self.ndim)))))

Tensor.gather = I.gather
Tensor.scatter_add = I.scatter_add
Tensor.index_select = I.index_select
Tensor.select = I.index_select
Tensor.take_along_dim = I.take_along_dim
Tensor.index_put = I.index_put
Tensor.sort = I.sort
Tensor.argsort = I.argsort
Tensor.topk = I.topk
Tensor.one_hot = I.one_hot

Tensor.softmax = N.softmax
Tensor.log_softmax = N.log_softmax

# Every method attached here takes tensor-like operands (an nn.Param) wherever it takes a Tensor.
for _name in sorted(set(vars(Tensor)) - _CORE_NAMES):
    _attr = vars(Tensor)[_name]
    if callable(_attr):  # functions; the T property needs no operand conversion
        setattr(Tensor, _name, accepts_tensor_like(_attr))
