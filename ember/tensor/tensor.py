"""The ``Tensor``: one backend array, its device and dtype, and (when tracked) a graph node."""

from __future__ import annotations

import functools
import math

import numpy as np

from ember._deprecation import renamed_property
from ember.core import dtypes as dt
from ember.kernels.fusion.lazy import Lazy
from ember.tensor.device import Device, as_device
from ember.tensor.node import Node
from ember.tensor.op_methods import OpMethods


class Tensor(OpMethods):
    """An n-dimensional array on a device, with reverse-mode autodiff.

    Create tensors with :func:`ember.tensor`, :func:`ember.zeros`, :func:`ember.randn`, ...
    Gradients are never stored on tensors: ``loss.backward()`` returns them in a
    :class:`ember.Gradients` container. Ops and methods also take *tensor-like* operands,
    objects with ``__ember_tensor__()`` such as ``nn.Param`` (see :func:`as_tensor`).

    The methods and operators of the ops (``exp``, ``sum``, ``reshape``, ``-``, ``*``, ...)
    come from :class:`ember.tensor.op_methods.OpMethods`, generated from the op table
    (:mod:`ember.core.op_table`); this class holds the rest and those written by hand.
    """

    __slots__ = ("__weakref__", "_arr", "_device", "_dtype", "_node")
    __array_priority__ = 1000  # so that ndarray <op> Tensor defers to Tensor

    # ---- the array ----------------------------------------------------------------------
    @property
    def _data(self):
        """The backend array, computed first when it is a pending fusion value: every reader of
        ``_data`` is a sync point; only the element-wise ops read ``_arr`` as it is."""
        arr = self._arr
        if type(arr) is Lazy:
            arr = self._arr = arr.realize()
        return arr

    @_data.setter
    def _data(self, value):
        self._arr = value

    # ---- properties ---------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return tuple(self._arr.shape)

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    def dims(self) -> tuple:
        """The shape (Burn's name)."""
        return self.shape

    @property
    def ndim(self) -> int:
        return self._arr.ndim

    @property
    def numel(self) -> int:
        return math.prod(self._arr.shape)  # not .size: a PyTorch tensor's is a method

    @property
    def dtype(self) -> dt.DType:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # ---- conversion ---------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The values as a NumPy array (shares memory on cpu/reference; copies from a GPU)."""
        return np.asarray(self._device.backend.to_host(self._data))

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr.astype(dtype) if dtype is not None else arr

    def item(self):
        if self.numel != 1:
            raise ValueError(
                f"item: only a one-element tensor converts to a Python scalar, got shape {list(self.shape)}"
            )
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.numel != 1:
            raise ValueError(
                f"the truth value of a tensor of shape {list(self.shape)} is ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __index__(self):
        if not self._dtype.is_int or self.numel != 1:
            raise TypeError("only one-element integer tensors can be used as an index")
        return int(self.item())

    def __dlpack__(self, *args, **kwargs):
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def to(self, target, dtype=None) -> "Tensor":
        """Move to a device and/or cast: ``t.to("cuda")``, ``t.to(ember.float64)``."""
        out = self
        if isinstance(target, (Device, str)) and not _is_dtype_name(target):
            out = _to_device(out, as_device(target))
        elif target is not None:
            dtype = target
        if dtype is not None:
            out = _cast(out, dtype)
        return out

    def float(self) -> "Tensor":
        return self.to(dt.float32)

    def double(self) -> "Tensor":
        return self.to(dt.float64)

    def half(self) -> "Tensor":
        return self.to(dt.float16)

    def int(self) -> "Tensor":
        return self.to(dt.int64)

    def long(self) -> "Tensor":
        return self.to(dt.int64)

    def bool(self) -> "Tensor":
        return self.to(dt.bool_)

    def clone(self) -> "Tensor":
        return self * 1 if not self._dtype.is_bool else self.__and__(True)

    # ---- autodiff -----------------------------------------------------------------------
    def require_grad(self) -> "Tensor":
        """Mark this tensor as a leaf whose gradient backward() computes; returns it."""
        return self.set_require_grad(True)

    def set_require_grad(self, flag: bool = True) -> "Tensor":
        if flag:
            if not self._dtype.is_float:
                raise TypeError(f"require_grad: only float tensors can require grad, got {self._dtype}")
            if self._node is None:
                self._node = Node(None)
        else:
            self._node = None
        return self

    def is_require_grad(self) -> bool:
        """Whether backward() computes this tensor's gradient (Burn's name)."""
        return self._node is not None

    # PyTorch's spelling of is_require_grad(): one release, then gone.
    requires_grad = renamed_property("requires_grad", "is_require_grad", call=True)

    def detach(self) -> "Tensor":
        """The same values, cut from the graph."""
        return _wrap(self._data, self._device, self._dtype)

    def backward(self, grad: "Tensor | None" = None):
        """Gradients of this tensor with respect to every leaf that requires grad.

        Args:
            grad: the seed gradient; required unless this tensor has a single element.

        Returns:
            :class:`ember.Gradients`.
        """
        # late: the autodiff engine (and its VJP table) loads on the first backward(), which
        # keeps it out of `import ember`
        from ember.tensor.backward import backward

        return backward(self, grad)

    # ---- op methods written by hand (the op table lists them under ``written``) -----------
    # Operands that stand for a tensor (an nn.Param) are converted first, as in the generated
    # methods (see accepts_tensor_like).
    def __add__(self, other) -> Tensor:
        """``self + other``."""
        if type(other) not in _PLAIN_TYPES:
            if type(other) is _RowSparse:  # dense + row-sparse: the sparse side knows how
                return other.__radd__(self)
            if _holds_tensor_like(other):
                other = _converted(other)
        return _binary("add", self, other)

    def __pos__(self) -> Tensor:
        """``+self``: the tensor itself."""
        return self

    def __invert__(self) -> Tensor:
        """``~self``: logical not, of a bool tensor."""
        if not self._dtype.is_bool:
            raise TypeError(f"~ is defined for bool tensors only, got {self._dtype}")
        return _unary("logical_not", self)

    def __setitem__(self, key, value) -> None:
        """``t[key] = value`` as the functional op ``index_put``; ``t`` then holds the result.

        Not allowed on a leaf that requires grad (its gradient would no longer be defined).
        """
        if self._node is not None and self._node.is_leaf:
            raise RuntimeError(
                "setitem: cannot assign into a leaf tensor that requires grad; "
                "use index_put to build a new tensor instead"
            )
        out = _index_put(self, _operand(key), _operand(value))
        self._data, self._node, self._dtype = out._data, out._node, out._dtype

    @property
    def T(self) -> Tensor:
        """The tensor with its dims reversed (the transpose of a matrix)."""
        return _permute(self, tuple(reversed(range(self.ndim))))

    def where(self, cond: Tensor, other) -> Tensor:
        """``self`` where ``cond`` is True, ``other`` elsewhere (broadcasting)."""
        return _where(_operand(cond), self, _operand(other))

    def mask_where(self, mask: Tensor, value) -> Tensor:
        """``value`` where ``mask`` is True, ``self`` elsewhere (Burn's ``mask_where``)."""
        return _where(_operand(mask), _operand(value), self)

    def clamp_min(self, min) -> Tensor:
        """``clamp(self, min=min)``."""
        return _clamp(self, min=_operand(min))

    def clamp_max(self, max) -> Tensor:
        """``clamp(self, max=max)``."""
        return _clamp(self, max=_operand(max))

    # ---- repr ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        body = np.array2string(
            self.numpy(), separator=", ", threshold=200, edgeitems=3, precision=4, prefix="tensor("
        )
        extra = ", requires_grad" if self._node is not None else ""
        return f"tensor({body}, shape={list(self.shape)}, dtype={self._dtype}, device={self._device}{extra})"

    def __hash__(self):
        return id(self)

    def __reduce__(self):
        # data loader workers send tensors between processes as plain NumPy data
        return (_rebuild, (self.numpy(), str(self._dtype), str(self._device)))


def _rebuild(array, dtype_name, device):
    t = _from_numpy(array, device if not device.startswith("cuda") else "cpu")
    return t.to(device) if device.startswith("cuda") else t


def _is_dtype_name(value) -> bool:
    return isinstance(value, str) and value in (
        "float16",
        "float32",
        "float64",
        "int32",
        "int64",
        "bool",
        "f16",
        "f32",
        "f64",
        "half",
        "float",
        "double",
        "int",
        "long",
    )


def _to_device(t: Tensor, device: Device) -> Tensor:
    if t._device == device:
        return t
    src, dst = t._device.backend, device.backend
    host = src.to_host(t._data)
    out = _wrap(dst.from_host(np.ascontiguousarray(host)), device, t._dtype)
    return _record(out, "to_device", (t,), device=t._device)


# ---- tensor-like objects ----------------------------------------------------------------------
# An object that stands for a tensor (an ``nn.Param``: its effective value) defines
# ``__ember_tensor__()``. Operands are converted by the helpers here: the generated Tensor
# methods and top-level op functions (op_methods.py, op_functions.py), the methods above and
# functions wrapped with ``accepts_tensor_like`` call them, so ``x + param``, ``x @ param``
# and ``ember.gelu(param)`` compute on that tensor, autodiff included.
_TENSOR_LIKE_TYPES: dict = {}  # type -> whether it defines __ember_tensor__, cached
_PLAIN_TYPES = frozenset({Tensor, int, float, bool, str, slice, type(None), type(Ellipsis)})


def _is_tensor_like(value) -> bool:
    kind = type(value)
    known = _TENSOR_LIKE_TYPES.get(kind)
    if known is None:
        known = _TENSOR_LIKE_TYPES[kind] = kind is not Tensor and hasattr(kind, "__ember_tensor__")
    return known


def _holds_tensor_like(value) -> bool:
    """A tensor-like, or a list/tuple with one (the operands of cat/stack, an index key)."""
    if type(value) is list or type(value) is tuple:
        for item in value:
            if type(item) not in _PLAIN_TYPES and _is_tensor_like(item):
                return True
        return False
    return _is_tensor_like(value)


def as_tensor(value):
    """The Tensor that ``value`` stands for when it is tensor-like (defines
    ``__ember_tensor__()``, as ``nn.Param`` does); any other value is returned unchanged.

    Raises:
        TypeError: ``__ember_tensor__()`` returned something other than a Tensor.
    """
    if not _is_tensor_like(value):
        return value
    out = type(value).__ember_tensor__(value)
    if not isinstance(out, Tensor):
        raise TypeError(
            f"{type(value).__name__}.__ember_tensor__() must return an ember Tensor, got {type(out).__name__}"
        )
    return out


def _converted(value):
    if type(value) is list or type(value) is tuple:
        return type(value)(as_tensor(item) for item in value)
    return as_tensor(value)


def _operand(value):
    """``value``, or what it stands for when it is (or a list/tuple holding) a tensor-like."""
    if type(value) not in _PLAIN_TYPES and _holds_tensor_like(value):
        return _converted(value)
    return value


def accepts_tensor_like(fn):
    """Wrap an op so that tensor-like arguments, and tensor-likes inside a list/tuple argument,
    reach it as Tensors (:func:`as_tensor`). Other arguments pass through untouched."""

    @functools.wraps(fn)
    def op(*args, **kwargs):
        for value in args:  # fast path: Tensors and scalars need no look-up
            if type(value) not in _PLAIN_TYPES and _holds_tensor_like(value):
                break
        else:
            if not kwargs or not any(_holds_tensor_like(v) for v in kwargs.values()):
                return fn(*args, **kwargs)
        return fn(*[_converted(a) for a in args], **{k: _converted(v) for k, v in kwargs.items()})

    return op


# The functions the methods above call live in modules that import this one (the ops, the
# creation functions), so this module cannot import them:
# ember/tensor/binding.py hands them over once they are loaded, before any tensor exists.
_binary = _cast = _clamp = _from_numpy = _index_put = None
_permute = _record = _RowSparse = _unary = _where = _wrap = None


def bind_ops(**functions) -> None:
    """Bind the functions the hand-written methods call (``ember/tensor/binding.py`` runs this)."""
    expected = {
        "_binary",
        "_cast",
        "_clamp",
        "_from_numpy",
        "_index_put",
        "_permute",
        "_record",
        "_RowSparse",
        "_unary",
        "_where",
        "_wrap",
    }
    if set(functions) != expected:
        raise TypeError(f"tensor.bind_ops: expected {sorted(expected)}, got {sorted(functions)}")
    globals().update(functions)
