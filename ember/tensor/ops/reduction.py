"""Reductions over one or several dims (with keepdim) and scans."""

from __future__ import annotations

import builtins
import math

from ember.core import dtypes as dt
from ember.kernels.fusion import engine as fusion
from ember.kernels.fusion.lazy import Lazy
from ember.kernels.fusion.log import LOG as _FUSION_LOG
from ember.tensor.grad_mode import no_grad
from ember.tensor.ops._core import Tensor, detached, needs_grad, normalize_dim, normalize_dims, record, wrap
from ember.tensor.ops.elementwise import binary, unary


def _reduce(op: str, x: Tensor, dim, keepdim: bool, out_dtype=None) -> Tensor:
    axes = normalize_dims(op, dim, x.ndim)
    if x.numel == 0 and op in ("max", "min") and builtins.any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op}: cannot reduce over an empty dim of a tensor of shape {list(x.shape)}")
    arr = x._arr
    if type(arr) is Lazy or _FUSION_LOG.full:  # a pending chain the reduction may read as it goes
        data = fusion.reduce(x._device.backend, op, arr, axes, keepdim)
    else:  # a computed array: nothing to fuse (the engine's checks skipped)
        data = x._device.backend.reduce(op, arr, axes, keepdim)
    out = wrap(data, x._device, out_dtype)
    if op in ("all", "any") or not needs_grad(x):
        return out
    if op == "sum":
        return record(out, "sum", (x,), axes=axes, keepdim=keepdim)
    return record(out, op, (x,), axes=axes, keepdim=keepdim, x=detached(x), y=detached(out))


def sum(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Sum over ``dim`` (an int, a tuple, or None for all); bool sums count as int64."""
    if x._dtype.is_bool:
        x = x.to(dt.int64)
    return _reduce("sum", x, dim, keepdim)


def prod(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Product over ``dim``. Its gradient is ``g * prod / x`` (undefined where x == 0)."""
    if x._dtype.is_bool:
        x = x.to(dt.int64)
    return _reduce("prod", x, dim, keepdim)


def max(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Maximum over ``dim``; ties share the gradient equally, a NaN maximum among the NaNs."""
    return _reduce("max", x, dim, keepdim)


def min(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Minimum over ``dim``; ties share the gradient equally, a NaN minimum among the NaNs."""
    return _reduce("min", x, dim, keepdim)


def all(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Whether every element over ``dim`` is true (non-zero), as a bool tensor."""
    return _reduce("all", x.to(dt.bool_), dim, keepdim, dt.bool_)


def any(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Whether some element over ``dim`` is true (non-zero), as a bool tensor."""
    return _reduce("any", x.to(dt.bool_), dim, keepdim, dt.bool_)


def _count(x: Tensor, dim) -> int:
    n = 1
    for a in normalize_dims("mean", dim, x.ndim):
        n *= x.shape[a]
    return n


def mean(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """Mean over ``dim`` (an int, a tuple, or None for all); int inputs give the default float."""
    if not x._dtype.is_float:
        x = x.to(dt.default_float)
    return binary("div", sum(x, dim, keepdim), float(_count(x, dim)))


def var(
    x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False, correction: int = 1
) -> Tensor:
    """Variance with Bessel's ``correction`` (1 = unbiased, as Burn and PyTorch default)."""
    if not x._dtype.is_float:
        x = x.to(dt.default_float)
    n = _count(x, dim)
    centered = binary("sub", x, mean(x, dim, keepdim=True))
    return binary(
        "div",
        sum(unary("square", centered), dim, keepdim),
        float(n - correction) if n > correction else float("nan"),
    )


def std(
    x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False, correction: int = 1
) -> Tensor:
    """Standard deviation: the square root of :func:`var` (same ``correction``).

    float16 and float32 inputs take their variance in the next wider float (as PyTorch
    accumulates), so a standard deviation within the dtype's range stays finite when its
    variance is not (1.5e38 from a float32 variance of 2.25e76).
    """
    wide = _WIDER.get(x._dtype)
    if wide is None:
        return unary("sqrt", var(x, dim, keepdim, correction))
    return unary("sqrt", var(x.to(wide), dim, keepdim, correction)).to(x._dtype)


_WIDER = {dt.float16: dt.float32, dt.float32: dt.float64}


def logsumexp(x: Tensor, dim: int | tuple | list | None = None, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``dim``, computed stably (shifted by the detached max)."""
    if not x._dtype.is_float:
        x = x.to(dt.default_float)
    if builtins.any(x.shape[a] == 0 for a in normalize_dims("logsumexp", dim, x.ndim)):
        # the log of an empty sum: -inf (as PyTorch), still connected to x for backward
        out = binary("add", sum(binary("mul", x, 0.0), dim, keepdim=True), -math.inf)
    else:
        with no_grad():
            m = max(x, dim, keepdim=True)
            m = m.mask_fill(~m.isfinite(), 0.0)
        out = binary("add", unary("log", sum(unary("exp", binary("sub", x, m)), dim, keepdim=True)), m)
    if not keepdim:
        out = out.squeeze(normalize_dims("logsumexp", dim, x.ndim))
    return out


def _arg(op: str, x: Tensor, dim, keepdim: bool) -> Tensor:
    if dim is None:
        if x.numel == 0:
            raise ValueError(f"{op}: cannot take {op} of an empty tensor (shape {list(x.shape)})")
        flat = x.reshape(-1)
        out = wrap(x._device.backend.arg_reduce(op, flat._data, 0, False), x._device, dt.int64)
        return out.reshape([1] * x.ndim) if keepdim else out
    d = normalize_dim(op, dim, x.ndim)
    if x.ndim == 0:  # the single element is its own arg-max
        return wrap(x._device.backend.full((), 0, dt.int64), x._device, dt.int64)
    if x.shape[d] == 0:
        raise ValueError(f"{op}: cannot take {op} over an empty dim {dim} of shape {list(x.shape)}")
    return wrap(x._device.backend.arg_reduce(op, x._data, d, keepdim), x._device, dt.int64)


def argmax(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the maximum along ``dim`` (first one on ties; of the flattened tensor when
    ``dim`` is None), int64."""
    return _arg("argmax", x, dim, keepdim)


def argmin(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the minimum along ``dim`` (first one on ties; of the flattened tensor when
    ``dim`` is None), int64."""
    return _arg("argmin", x, dim, keepdim)


def cumsum(x: Tensor, dim: int) -> Tensor:
    """Cumulative sum along ``dim``."""
    d = normalize_dim("cumsum", dim, x.ndim)
    if x.ndim == 0:  # NumPy's cumsum would flatten a 0-d array to shape [1]
        return cumsum(x.reshape(1), 0).reshape(())
    if x._dtype.is_bool:
        x = x.to(dt.int64)
    out = wrap(x._device.backend.cumsum(x._data, d), x._device)
    return record(out, "cumsum", (x,), dim=d)
