"""The ``Tensor``: one backend array, its device and dtype, and (when tracked) a graph node."""
from __future__ import annotations

import functools

import numpy as np

from ember.tensor import dtypes as dt
from ember.tensor.device import Device, as_device


class Tensor:
    """An n-dimensional array on a device, with reverse-mode autodiff.

    Create tensors with :func:`ember.tensor`, :func:`ember.zeros`, :func:`ember.randn`, ...
    Gradients are never stored on tensors: ``loss.backward()`` returns them in a
    :class:`ember.Gradients` container. Ops and methods also take *tensor-like* operands,
    objects with ``__ember_tensor__()`` such as ``nn.Param`` (see :func:`as_tensor`).
    """

    __slots__ = ("_data", "_device", "_dtype", "_node", "__weakref__")
    __array_priority__ = 1000  # so that ndarray <op> Tensor defers to Tensor

    # ---- properties ---------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape)

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    def dims(self) -> tuple:
        """The shape (Burn's name)."""
        return self.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def numel(self) -> int:
        return int(self._data.size)

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
            raise ValueError(f"item: only a one-element tensor converts to a Python scalar, got shape {list(self.shape)}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.numel != 1:
            raise ValueError(f"the truth value of a tensor of shape {list(self.shape)} is ambiguous; use .any() or .all()")
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
            from ember.tensor.ops.elementwise import cast
            out = cast(out, dtype)
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
        from ember.tensor.node import Node
        if flag:
            if not self._dtype.is_float:
                raise TypeError(f"require_grad: only float tensors can require grad, got {self._dtype}")
            if self._node is None:
                self._node = Node(None)
        else:
            self._node = None
        return self

    def is_require_grad(self) -> bool:
        return self._node is not None

    @property
    def requires_grad(self) -> bool:
        return self._node is not None

    def detach(self) -> "Tensor":
        """The same values, cut from the graph."""
        from ember.tensor.ops._core import wrap
        return wrap(self._data, self._device, self._dtype)

    def backward(self, grad: "Tensor | None" = None):
        """Gradients of this tensor with respect to every leaf that requires grad.

        Args:
            grad: the seed gradient; required unless this tensor has a single element.
        Returns:
            :class:`ember.Gradients`.
        """
        from ember.tensor.backward import backward
        return backward(self, grad)

    # ---- repr ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", threshold=200, edgeitems=3, precision=4,
                               prefix="tensor(")
        extra = ", requires_grad" if self._node is not None else ""
        return f"tensor({body}, shape={list(self.shape)}, dtype={self._dtype}, device={self._device}{extra})"

    def __hash__(self):
        return id(self)

    def __reduce__(self):
        # data loader workers send tensors between processes as plain NumPy data
        return (_rebuild, (self.numpy(), str(self._dtype), str(self._device)))


def _rebuild(array, dtype_name, device):
    from ember.tensor.creation import from_numpy
    t = from_numpy(array, device if not device.startswith("cuda") else "cpu")
    return t.to(device) if device.startswith("cuda") else t


def _is_dtype_name(value) -> bool:
    return isinstance(value, str) and value in ("float16", "float32", "float64", "int32", "int64", "bool",
                                                "f16", "f32", "f64", "half", "float", "double", "int", "long")


def _to_device(t: Tensor, device: Device) -> Tensor:
    if t._device == device:
        return t
    from ember.tensor.ops._core import record, wrap
    src, dst = t._device.backend, device.backend
    host = src.to_host(t._data)
    out = wrap(dst.from_host(np.ascontiguousarray(host)), device, t._dtype)
    return record(out, "to_device", (t,), device=t._device)


# ---- tensor-like objects ----------------------------------------------------------------------
# An object that stands for a tensor (an ``nn.Param``: its effective value) defines
# ``__ember_tensor__()``. Operands are converted here, in one place: Tensor methods and the
# top-level op functions are wrapped with ``accepts_tensor_like``, so ``x + param``,
# ``x @ param`` and ``ember.gelu(param)`` compute on that tensor, autodiff included.
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
        raise TypeError(f"{type(value).__name__}.__ember_tensor__() must return an ember Tensor, "
                        f"got {type(out).__name__}")
    return out


def _converted(value):
    if type(value) is list or type(value) is tuple:
        return type(value)(as_tensor(item) for item in value)
    return as_tensor(value)


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


from ember.tensor import methods as _methods  # noqa: E402,F401  attaches ops as Tensor methods
