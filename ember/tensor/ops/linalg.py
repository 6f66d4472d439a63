"""Matrix multiplication with batch broadcasting."""

from __future__ import annotations

import numpy as np

from ember.core import dtypes as dt
from ember.kernels.fusion import engine as fusion
from ember.kernels.fusion.log import LOG as _FUSION_LOG
from ember.tensor.grad_mode import is_grad_enabled
from ember.tensor.ops._core import Tensor, check_devices, detached, record, shape_str, wrap


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b``: 1-D operands are promoted as in NumPy, leading (batch) dims broadcast."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError("matmul: both operands must be Tensors")
    check_devices("matmul", a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: operands must have at least 1 dim (use * for scalars)")
    if a._dtype.is_bool or b._dtype.is_bool:
        raise TypeError("matmul: bool tensors are not supported")
    if a.ndim == 1 or b.ndim == 1:
        # 1-D operands become a row (left) / column (right) matrix, then that dim is dropped
        out = matmul(a.unsqueeze(0) if a.ndim == 1 else a, b.unsqueeze(-1) if b.ndim == 1 else b)
        if b.ndim == 1:
            out = out.squeeze(-1)
        if a.ndim == 1:
            out = out.squeeze(-1 if b.ndim == 1 else -2)
        return out
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(
            f"matmul: inner dims differ: {shape_str(a.shape)} @ {shape_str(b.shape)} "
            f"({a.shape[-1]} != {b.shape[-2]})"
        )
    if a.ndim > 2 or b.ndim > 2:
        try:
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise ValueError(
                f"matmul: batch dims of {shape_str(a.shape)} and {shape_str(b.shape)} cannot be broadcast"
            ) from None
    rdt = dt.promote_types(a._dtype, b._dtype)
    a, b = a.to(rdt), b.to(rdt)
    backend = a._device.backend
    # a product kept pending for a chain to take as its epilogue pays off in training; under
    # no_grad (inference) it measured slower than making it at once, so it is made at once, as
    # is one too small to keep (the tiny-tensor path skips the engine's checks)
    ma, nb = a._arr.shape[-2], b._arr.shape[-1]
    if is_grad_enabled() and (ma * nb >= fusion.settings.min_elements or _FUSION_LOG.full):
        data = fusion.matmul(backend, a._arr, b._arr)
    else:
        data = backend.matmul(a._data, b._data)
    out = wrap(data, a._device, rdt)
    return record(out, "matmul", (a, b), a=detached(a), b=detached(b))
