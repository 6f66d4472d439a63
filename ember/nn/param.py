"""Parameters: a tensor, a stable ``ParamId`` and a require-grad flag (Burn's ``Param``).

A :class:`Param` stores one tensor. When the parameter is trainable its tensor is a graph
*leaf* marked with ``require_grad``, so ``loss.backward()`` returns its gradient
(``grads.get(param.value)``); a frozen parameter stores a plain tensor. The :class:`ParamId`
identifies the parameter across devices, copies, optimizer state and record files.

A parameter may carry a *reparameterization* (a LoRA adapter, see ``ember.nn.lora``): then
:meth:`Param.val` returns the effective value ``base + scale·(a@b)`` built from the stored
base and the adapter's own parameters, while :attr:`Param.value` stays the stored base.

A :class:`Param` behaves as a tensor: ``x + param``, ``param @ x``, ``ember.gelu(param)``,
``param.sum()``, ``param[0]``, comparisons and ``len(param)`` compute on :meth:`Param.val`
(it is a *tensor-like*: ``__ember_tensor__`` returns that value), so gradients reach the
parameter exactly as through ``param.val()``. ``shape``, ``dtype``, ``device`` and
``numpy()`` describe the stored tensor (the same, unless a LoRA adapter is attached).
"""

from __future__ import annotations

import base64
import secrets

from ember._deprecation import renamed_property
from ember.tensor import Tensor, creation
from ember.tensor.grad_mode import no_grad
from ember.tensor.ops._core import wrap

__all__ = ["Param", "ParamId", "RunningState"]

_U64 = 1 << 64


class ParamId:
    """A parameter's identifier: an unsigned 64-bit integer, random by default.

    It prints as Burn does (the little-endian bytes in lowercase base32hex without padding,
    e.g. ``'1hl0b6gq5ap4o'``) and converts with ``int(pid)`` / :meth:`val`.

    Args:
        value: the id; a fresh random id when None.
    """

    __slots__ = ("_value",)

    def __init__(self, value: int | None = None):
        if value is None:
            value = secrets.randbits(64)
        if isinstance(value, ParamId):
            value = value._value
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _U64:
            raise ValueError(f"ParamId: expected an int in [0, 2**64), got {value!r}")
        self._value = int(value)

    @classmethod
    def new(cls) -> "ParamId":
        """A fresh random id."""
        return cls()

    @classmethod
    def from_str(cls, text: str) -> "ParamId":
        """Parse the printed form (base32hex of the little-endian bytes) back into an id."""
        if not isinstance(text, str) or not text:
            raise ValueError(f"ParamId.from_str: expected a non-empty string, got {text!r}")
        padded = text.upper() + "=" * (-len(text) % 8)
        try:
            raw = base64.b32hexdecode(padded)
        except (ValueError, base64.binascii.Error):
            raise ValueError(f"ParamId.from_str: {text!r} is not a base32hex-encoded id") from None
        if len(raw) > 8:
            raise ValueError(f"ParamId.from_str: {text!r} encodes {len(raw)} bytes, expected at most 8")
        return cls(int.from_bytes(raw.ljust(8, b"\0"), "little"))

    def val(self) -> int:
        """The id as an int (Burn's ``ParamId::val``)."""
        return self._value

    def __int__(self) -> int:
        return self._value

    def __index__(self) -> int:
        return self._value

    def __eq__(self, other) -> bool:
        if isinstance(other, ParamId):
            return self._value == other._value
        if isinstance(other, int) and not isinstance(other, bool):
            return self._value == other
        return NotImplemented

    def __lt__(self, other: "ParamId") -> bool:
        return self._value < int(other)

    def __hash__(self) -> int:
        return hash(self._value)

    def __str__(self) -> str:
        return base64.b32hexencode(self._value.to_bytes(8, "little")).decode("ascii").rstrip("=").lower()

    def __repr__(self) -> str:
        return f"ParamId({str(self)!r})"

    def __copy__(self) -> "ParamId":
        return self

    def __deepcopy__(self, memo) -> "ParamId":
        return self


def _as_leaf(value: Tensor, require_grad: bool) -> Tensor:
    """``value`` as a graph leaf: kept when it already is one in the right state, else detached."""
    node = value._node
    if require_grad:
        if node is not None and node.is_leaf:
            return value
        return wrap(value._data, value._device, value._dtype).set_require_grad(True)
    if node is None:
        return value
    return wrap(value._data, value._device, value._dtype)


def _copy_tensor(t: Tensor) -> Tensor:
    """A detached copy of ``t``'s data on the same device."""
    with no_grad():
        return t.detach().clone()


class Param:
    """A module parameter: a tensor, its :class:`ParamId` and whether it is trainable.

    Args:
        value: the tensor. It is stored as a graph leaf (a tensor produced by ops is detached).
        id: the parameter's id; a fresh random id when None.
        require_grad: whether the optimizer trains it; defaults to True for float tensors
            (int and bool tensors never require grad).
    """

    __slots__ = (
        "_adapter",
        "_lora_restore_grad",
        "_require_grad",
        "_restore_grad",
        "_save_transposed",
        "_value",
        "id",
    )
    __array_priority__ = Tensor.__array_priority__  # ndarray <op> Param defers to Param, as to a Tensor

    def __init__(self, value: Tensor, id: ParamId | int | None = None, require_grad: bool | None = None):
        if not isinstance(value, Tensor):
            raise TypeError(f"Param: expected an ember Tensor, got {type(value).__name__}")
        if require_grad is None:
            require_grad = value.dtype.is_float
        if require_grad and not value.dtype.is_float:
            raise TypeError(f"Param: only float tensors can require grad, got {value.dtype}")
        self.id = id if isinstance(id, ParamId) else ParamId(id)
        self._require_grad = bool(require_grad)
        self._value = _as_leaf(value, self._require_grad)
        self._adapter = None
        self._restore_grad = None  # the flag a valid() copy returns to on train()
        self._save_transposed = False  # rank-2 value stored transposed in records (LinearLayout.Col)
        self._lora_restore_grad = None  # the flag before apply_lora froze it; merge_lora restores it

    # ---- construction -----------------------------------------------------------------------
    @classmethod
    def from_tensor(cls, value: Tensor, require_grad: bool | None = None) -> "Param":
        """A new parameter (fresh id) holding ``value``; float tensors require grad by default."""
        return cls(value, None, require_grad)

    @classmethod
    def from_data(cls, data, device=None, dtype=None, require_grad: bool | None = None) -> "Param":
        """A new parameter from nested lists / a NumPy array (see :func:`ember.tensor`)."""
        return cls(creation.tensor(data, dtype=dtype, device=device), None, require_grad)

    # ---- value ---------------------------------------------------------------------------------
    @property
    def value(self) -> Tensor:
        """The stored tensor (for a LoRA-adapted weight: the frozen base)."""
        return self._value

    @value.setter
    def value(self, tensor: Tensor) -> None:
        self.set_value(tensor)

    def set_value(self, tensor: Tensor) -> "Param":
        """Replace the stored tensor (same id and flag), e.g. after an optimizer step.

        The new tensor must have the old one's shape; it is stored as a fresh leaf.
        """
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Param.set_value: expected an ember Tensor, got {type(tensor).__name__}")
        if tensor.shape != self._value.shape:
            raise ValueError(
                f"Param.set_value: shape {list(tensor.shape)} differs from the parameter's "
                f"shape {list(self._value.shape)}"
            )
        if self._require_grad and not tensor.dtype.is_float:
            raise TypeError(
                f"Param.set_value: a trainable parameter needs a float tensor, got {tensor.dtype}"
            )
        self._value = _as_leaf(tensor, self._require_grad)
        return self

    def val(self) -> Tensor:
        """The effective value used in forward passes: the stored tensor, or for an adapted
        weight ``base + adapter delta`` (recomputed on each call, so gradients reach the adapter)."""
        if self._adapter is None:
            return self._value
        return self._adapter.materialize(self._value)

    def base(self) -> Tensor:
        """The stored tensor, ignoring any adapter."""
        return self._value

    def adapter(self):
        """The LoRA adapter attached to this parameter, or None."""
        return self._adapter

    # ---- properties ----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def device(self):
        return self._value.device

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def numel(self) -> int:
        return self._value.numel

    def dims(self) -> tuple:
        return self._value.shape

    def is_require_grad(self) -> bool:
        """Whether the optimizer trains this parameter (Burn's name, as ``Tensor.is_require_grad``)."""
        return self._require_grad

    # A flag here but a method on Tensor (``t.require_grad()`` marks it): one release, then gone.
    require_grad = renamed_property("require_grad", "is_require_grad", call=True)

    def set_require_grad(self, flag: bool = True) -> "Param":
        """Mark the parameter trainable (its tensor becomes a leaf requiring grad) or frozen."""
        flag = bool(flag)
        if flag and not self._value.dtype.is_float:
            raise TypeError(
                f"Param.set_require_grad: only float parameters can require grad, got {self._value.dtype}"
            )
        self._require_grad = flag
        self._value = _as_leaf(self._value, flag)
        return self

    def numpy(self):
        """The stored values as a NumPy array."""
        return self._value.numpy()

    # ---- a Param behaves as its tensor -----------------------------------------------------------
    def __ember_tensor__(self) -> Tensor:
        """The tensor that ops see in place of this parameter: :meth:`val`."""
        return self.val()

    def __getattr__(self, name: str):
        # Reached only for names Param itself lacks: Tensor's methods and properties
        # (``sum``, ``reshape``, ``T``, ``requires_grad``, ...) act on the effective value.
        if name.startswith("_") or not hasattr(Tensor, name):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")
        return getattr(self.val(), name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | {n for n in dir(Tensor) if not n.startswith("_")})

    def __setitem__(self, key, value) -> None:
        """``param[key] = value`` writes into the stored tensor of a frozen parameter (as on a
        Tensor, a trainable one refuses: its gradient would no longer be defined)."""
        if self._adapter is not None:
            raise RuntimeError(
                f"{type(self).__name__}: cannot assign into a LoRA-adapted parameter; merge_lora() first"
            )
        if self._require_grad:
            raise RuntimeError(
                f"{type(self).__name__}: cannot assign into a trainable parameter; "
                f"store a new tensor with param.set_value(param.value.index_put(key, value)) "
                f"or freeze it first with set_require_grad(False)"
            )
        self._value[key] = value

    def _in_place(self, *_):
        raise TypeError(
            f"{type(self).__name__}: in-place arithmetic would replace the parameter by a "
            f"tensor; change its value with param.set_value(new_tensor), or write "
            f"y = param + x for a new tensor"
        )

    __iadd__ = __isub__ = __imul__ = __itruediv__ = __ifloordiv__ = __imod__ = __ipow__ = _in_place
    __imatmul__ = __iand__ = __ior__ = __ixor__ = _in_place
    __hash__ = object.__hash__  # identity, as a Tensor's (== compares element-wise)

    # ---- copies --------------------------------------------------------------------------------
    def _with_value(self, tensor: Tensor, require_grad: bool | None = None) -> "Param":
        """A new Param with the same id (and class), holding ``tensor``; adapter not copied."""
        out = object.__new__(type(self))
        out.id = self.id
        out._require_grad = self._require_grad if require_grad is None else bool(require_grad)
        if out._require_grad and not tensor.dtype.is_float:
            out._require_grad = False
        out._value = _as_leaf(tensor, out._require_grad)
        out._adapter = None
        out._restore_grad = self._restore_grad
        out._save_transposed = self._save_transposed
        out._lora_restore_grad = self._lora_restore_grad
        return out

    def __deepcopy__(self, memo):
        out = self._with_value(_copy_tensor(self._value))
        if self._adapter is not None:
            import copy

            out._adapter = copy.deepcopy(self._adapter, memo)
        return out

    def __repr__(self) -> str:
        flag = "" if self._require_grad else ", frozen"
        lora = ", lora" if self._adapter is not None else ""
        return (
            f"{type(self).__name__}(id={self.id}, shape={list(self.shape)}, dtype={self.dtype}, "
            f"device={self.device}{flag}{lora})"
        )


def _forwarded(name: str):
    def method(self, *args, **kwargs):
        value = self.val()
        return getattr(type(value), name)(value, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``Tensor.{name}`` on the parameter's effective value (:meth:`Param.val`)."
    return method


# Python looks operators up on the type, not through __getattr__: give Param each special
# method of Tensor (arithmetic, comparisons, @, indexing, len, bool/int/float, __array__,
# DLPack) that Param does not define itself. Pickling (__reduce__) stays Param's own.
for _klass in Tensor.__mro__[:-1]:
    for _name, _attr in list(vars(_klass).items()):
        if (
            _name.startswith("__")
            and _name.endswith("__")
            and callable(_attr)
            and _name not in vars(Param)
            and _name != "__reduce__"
        ):
            setattr(Param, _name, _forwarded(_name))


class RunningState(Param):
    """A non-trainable parameter updated by the forward pass itself (BatchNorm's running
    statistics). It is saved in records like any parameter but never requires grad:
    ``freeze``/``unfreeze`` and optimizers leave it alone.

    Args:
        value: the tensor.
        id: the parameter's id; a fresh random id when None.
    """

    __slots__ = ()

    def __init__(self, value: Tensor, id: ParamId | int | None = None, require_grad: bool | None = None):
        if require_grad:
            raise ValueError("RunningState: running statistics never require grad")
        super().__init__(value, id, False)

    def set_require_grad(self, flag: bool = True) -> "RunningState":
        """No effect: running statistics are updated by the forward pass, not trained."""
        return self

    def update(self, tensor: Tensor) -> None:
        """Store new running values (detached)."""
        self.set_value(tensor.detach())
