"""The forward of every fused element-wise op of the op table (kind ``POINTWISE``).

Such an op takes float tensors of one shape, dtype and device (the row's ``saves`` name them),
is computed by the backend method of its name (a composite of the backend contract, fused on
``cpu`` and ``cuda``), and records a node keeping its operands for its VJP rule, which calls
the backend's ``<name>_backward``. The op table row, the rule, the composite's default and the
backends' kernels are all a new one needs: its ``Tensor`` method and ``ember`` function are
generated from the row (``ember/tensor/op_codegen.py``).
"""

from __future__ import annotations

from ember.core.op_table import BY_NAME
from ember.tensor.ops._core import check_devices, detached, record, shape_str, wrap
from ember.tensor.tensor import Tensor


def pointwise(op: str, *operands: Tensor) -> Tensor:
    """The fused element-wise op ``op`` of ``operands`` (float tensors of one shape and dtype)."""
    names = BY_NAME[op].saves
    if len(operands) != len(names):
        raise TypeError(f"{op}: takes {len(names)} tensors ({', '.join(names)}), got {len(operands)}")
    for name, x in zip(names, operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(x).__name__}")
        if not x._dtype.is_float:
            raise TypeError(f"{op}: {name} must be a float tensor, got {x._dtype}")
    check_devices(op, *operands)
    first = operands[0]
    for name, x in zip(names[1:], operands[1:]):
        if x.shape != first.shape or x._dtype != first._dtype:
            raise ValueError(
                f"{op}: {names[0]} and {name} must have one shape and dtype, got "
                f"{shape_str(first.shape)} {first._dtype} and {shape_str(x.shape)} {x._dtype}"
            )
    data = getattr(first._device.backend, op)(*(x._data for x in operands))
    out = wrap(data, first._device, first._dtype)
    return record(out, op, operands, **{name: detached(x) for name, x in zip(names, operands)})
