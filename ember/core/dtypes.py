"""Element types of ember tensors and their promotion rules.

Promotion follows PyTorch rather than NumPy where the two differ: mixing an integer tensor
with a float tensor gives the float tensor's type (NumPy would widen int64 + float32 to
float64), and a Python scalar never widens a tensor's type within its category.
"""

from __future__ import annotations

import numpy as np


class DType:
    """An ember element type (``ember.float32``, ``ember.int64``, ``ember.bool_``...)."""

    __slots__ = ("itemsize", "kind", "name", "numpy", "rank")

    def __init__(self, name: str, np_dtype, kind: str, rank: int):
        self.name = name
        self.numpy = np.dtype(np_dtype)
        self.kind = kind  # "float" | "int" | "bool"
        self.itemsize = self.numpy.itemsize
        self.rank = rank  # order within its kind, for promotion

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):  # dtypes cross process boundaries (data loader workers) by name
        return (dtype, (self.name,))


float16 = DType("float16", np.float16, "float", 0)
float32 = DType("float32", np.float32, "float", 1)
float64 = DType("float64", np.float64, "float", 2)
int32 = DType("int32", np.int32, "int", 0)
int64 = DType("int64", np.int64, "int", 1)
bool_ = DType("bool", np.bool_, "bool", 0)

ALL_DTYPES = (float16, float32, float64, int32, int64, bool_)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update(
    {
        "bool_": bool_,
        "f16": float16,
        "f32": float32,
        "f64": float64,
        "half": float16,
        "float": float32,
        "double": float64,
        "int": int64,
        "long": int64,
    }
)
_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES}
# Narrow integer types widen to the nearest ember type when imported from NumPy.
_NUMPY_ALIASES = {
    np.dtype(np.int8): int32,
    np.dtype(np.int16): int32,
    np.dtype(np.uint8): int32,
    np.dtype(np.uint16): int32,
    np.dtype(np.uint32): int64,
}

default_float = float32
default_int = int64


def dtype(value) -> DType:
    """Return the ember DType for a DType, a name ("float32", "f16"...) or a NumPy dtype."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is float:
        return default_float
    if value is int:
        return default_int
    if value is bool:
        return bool_
    try:
        return dtype_from_numpy(np.dtype(value))
    except TypeError:
        pass
    raise TypeError(f"unknown dtype {value!r}; expected one of {[d.name for d in ALL_DTYPES]}")


def dtype_from_numpy(np_dtype) -> DType:
    """Map a NumPy dtype to the ember DType that holds it (narrow ints widen)."""
    found = _BY_NUMPY.get(np_dtype)  # an array's own dtype, on every op: no np.dtype() call
    if found is not None:
        return found
    try:
        np_dtype = np.dtype(np_dtype)
    except TypeError:
        # another array library's dtype (the torch backend's torch.float32): by its name,
        # remembered so that the next lookup is the fast one above
        found = _BY_NAME.get(str(np_dtype).rpartition(".")[2])
        if found is None:
            raise
        _BY_NUMPY[np_dtype] = found
        return found
    found = _BY_NUMPY.get(np_dtype) or _NUMPY_ALIASES.get(np_dtype)
    if found is None:
        raise TypeError(
            f"NumPy dtype {np_dtype} has no ember equivalent; expected one of {[d.name for d in ALL_DTYPES]}"
        )
    return found


_KIND_ORDER = {"bool": 0, "int": 1, "float": 2}


def promote_types(a: DType, b: DType) -> DType:
    """Result type of a binary op between two tensors."""
    if a is b:
        return a
    ka, kb = _KIND_ORDER[a.kind], _KIND_ORDER[b.kind]
    if ka != kb:
        return a if ka > kb else b
    return a if a.rank >= b.rank else b


def promote_scalar(t: DType, scalar) -> DType:
    """Result type of a binary op between a tensor of type ``t`` and a Python scalar."""
    if isinstance(scalar, (bool, np.bool_)):
        return t
    if isinstance(scalar, (int, np.integer)):
        return default_int if t.is_bool else t
    if isinstance(scalar, (float, np.floating)):
        return t if t.is_float else default_float
    raise TypeError(f"unsupported scalar {scalar!r} of type {type(scalar).__name__}")
