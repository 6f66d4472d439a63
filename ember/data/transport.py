"""Moving batches across the worker/main process boundary as plain NumPy data.

Worker processes build batches on the CPU device. Before a batch is sent to the main process
every ember tensor in it is replaced by a `HostArray` (its NumPy array); the
main process rebuilds the tensors directly on the loader's device. Only plain containers,
NumPy arrays and Python values cross the boundary, whatever `Tensor` itself holds (autodiff
nodes, backend handles). ember is imported lazily, so `ember.data` works without it.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from typing import Any

import ember

__all__ = ["HostArray", "cpu_device", "default_device", "from_host", "is_tensor", "to_host"]


@dataclasses.dataclass(frozen=True)
class HostArray:
    """A tensor in transit: its host NumPy array (its dtype is the tensor's dtype)."""

    array: Any


def _ember() -> Any | None:
    return ember if hasattr(ember, "from_numpy") else None  # None while ember itself is loading


def is_tensor(value: Any) -> bool:
    """Whether `value` is an ember tensor (without importing ember when it is not loaded)."""
    ember = sys.modules.get("ember")
    tensor_type = getattr(ember, "Tensor", None) if ember is not None else None
    if isinstance(tensor_type, type):
        return isinstance(value, tensor_type)
    return type(value).__name__ == "Tensor" and type(value).__module__.startswith("ember.")


def cpu_device() -> Any:
    """The host device handed to batchers in worker processes (`ember.Device("cpu")`, or the
    string `"cpu"` when ember's tensor layer is not available)."""
    ember = _ember()
    device_type = getattr(ember, "Device", None) if ember is not None else None
    return device_type("cpu") if device_type is not None else "cpu"


def default_device() -> Any:
    """ember's current default device (`ember.default_device()`), else `cpu_device()`."""
    ember = _ember()
    current = getattr(ember, "default_device", None) if ember is not None else None
    return current() if callable(current) else cpu_device()


def _map(value: Any, leaf: Any) -> Any:
    """Rebuild `value` with `leaf(x)` applied to every tensor/HostArray inside containers."""
    converted = leaf(value)
    if converted is not value:
        return converted
    kind = type(value)
    if kind is list:
        return [_map(item, leaf) for item in value]
    if kind is dict:
        return {key: _map(item, leaf) for key, item in value.items()}
    if kind is tuple:
        return tuple(_map(item, leaf) for item in value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # namedtuple
        return kind._make(_map(item, leaf) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        clone = copy.copy(value)
        for field in dataclasses.fields(value):
            # object.__setattr__ also works for frozen dataclasses
            object.__setattr__(clone, field.name, _map(getattr(value, field.name), leaf))
        return clone
    return value


def _tensor_to_host(value: Any) -> Any:
    if is_tensor(value):
        return HostArray(value.numpy())
    return value


def to_host(batch: Any) -> Any:
    """Replace every ember tensor in `batch` by a `HostArray` (done in the worker)."""
    return _map(batch, _tensor_to_host)


def from_host(payload: Any, device: Any) -> Any:
    """Turn every `HostArray` in `payload` back into an ember tensor on `device`."""
    ember = None

    def leaf(value: Any) -> Any:
        nonlocal ember
        if isinstance(value, HostArray):
            if ember is None:
                ember = _ember()
                if ember is None:
                    raise RuntimeError(
                        "DataLoader: a worker returned ember tensors but ember's tensor layer "
                        "cannot be imported in the main process"
                    )
            return ember.from_numpy(value.array, device=device)
        return value

    return _map(payload, leaf)
