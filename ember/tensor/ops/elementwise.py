"""Element-wise ops: unary math, binary arithmetic with broadcasting, comparisons, where."""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes as dt
from ember.core import op_table as _table
from ember.kernels.fusion import engine as fusion
from ember.kernels.fusion.lazy import Lazy
from ember.kernels.fusion.log import LOG as _FUSION_LOG
from ember.tensor import creation
from ember.tensor.grad_mode import no_grad
from ember.tensor.ops._core import (
    Tensor,
    check_devices,
    detached,
    is_scalar,
    needs_grad,
    record,
    shape_str,
    wrap,
)

# What each unary and binary op computes in and saves for backward, from the op table.
_FLOAT_UNARY = frozenset(_table.names(_table.UNARY, dtype=_table.FLOAT))  # float output for int input
_LOGICAL_UNARY = frozenset(_table.names(_table.UNARY, dtype=_table.LOGICAL))  # the only ones taking bools
_NO_GRAD_UNARY = frozenset(_table.names(_table.UNARY, grad=_table.NONE))
_UNARY_SAVES_OUTPUT = frozenset(_table.names(_table.UNARY, grad=_table.RULE, saves=("y",)))
_UNARY_SAVES_NOTHING = frozenset(_table.names(_table.UNARY, grad=_table.RULE, saves=()))
_COMPARE = frozenset(_table.names(_table.BINARY, dtype=_table.BOOL))
_LOGICAL = frozenset(_table.names(_table.BINARY, dtype=_table.LOGICAL))
_FLOAT_BINARY = frozenset(_table.names(_table.BINARY, dtype=_table.PROMOTE_FLOAT))
_NO_GRAD_BINARY = frozenset(_table.names(_table.BINARY, grad=_table.NONE))
_BINARY_SAVES_NOTHING = frozenset(_table.names(_table.BINARY, grad=_table.RULE, saves=()))
_BINARY_SAVES_OUTPUT = frozenset(_table.names(_table.BINARY, grad=_table.RULE, saves=("a", "b", "y")))
_fusion_settings = fusion.settings


def unary(op: str, x: Tensor) -> Tensor:
    """The unary op ``op`` of the op table (``"exp"``, ``"sqrt"``, ...) on ``x``, element-wise."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x._dtype.is_bool and op not in _LOGICAL_UNARY:
        raise TypeError(f"{op}: not defined for bool tensors (got dtype bool); cast with .int() or .float()")
    if op in _FLOAT_UNARY and not x._dtype.is_float:
        x = x.to(dt.default_float)
    arr = x._arr
    if (
        type(arr) is not Lazy
        and math.prod(arr.shape) < _fusion_settings.min_elements
        and not _FUSION_LOG.full
    ):
        out = wrap(x._device.backend.unary(op, arr), x._device)  # nothing to fuse: the tiny-tensor path
    else:
        out = wrap(fusion.unary(x._device.backend, op, arr), x._device)
    if op in _NO_GRAD_UNARY or not needs_grad(x):
        return out
    # Save only what the op's rule reads: the output where it is cheaper than the input.
    if op in _UNARY_SAVES_OUTPUT:
        return record(out, op, (x,), y=detached(out))
    if op in _UNARY_SAVES_NOTHING:
        return record(out, op, (x,))
    return record(out, op, (x,), x=detached(x))


def _to_tensor_pair(op: str, a, b):
    """Promote (tensor|scalar, tensor|scalar) to two tensors of one dtype on one device."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        check_devices(op, a, b)
        rdt = dt.promote_types(a._dtype, b._dtype)
    elif isinstance(a, Tensor):
        if not is_scalar(b):
            return _to_tensor_pair(op, a, _coerce(op, b, a))
        rdt, b = _scalar_beside(a, b)
    elif isinstance(b, Tensor):
        if not is_scalar(a):
            return _to_tensor_pair(op, _coerce(op, a, b), b)
        rdt, a = _scalar_beside(b, a)
    else:
        raise TypeError(f"{op}: expected at least one Tensor, got {type(a).__name__} and {type(b).__name__}")
    if a._dtype is not rdt:
        a = a.to(rdt)
    if b._dtype is not rdt:
        b = b.to(rdt)
    return a, b


def _scalar_beside(t, value):
    """The dtype ``t`` and the Python scalar ``value`` promote to, and ``value`` as a 0-d
    tensor of that dtype on ``t``'s device."""
    rdt = dt.promote_scalar(t._dtype, value)
    return rdt, wrap(t._device.backend.full((), value, rdt), t._device, rdt)


def _coerce(op, value, like):
    if isinstance(value, (list, tuple, np.ndarray)):
        return creation.tensor(value, device=like._device)
    raise TypeError(f"{op}: unsupported operand of type {type(value).__name__}")


def _check_broadcast(op: str, a: Tensor, b: Tensor):
    sa, sb = a._arr.shape, b._arr.shape
    if sa == sb:
        return
    for x, y in zip(reversed(sa), reversed(sb)):
        if x != y and x != 1 and y != 1:
            raise ValueError(
                f"{op}: shapes {shape_str(sa)} and {shape_str(sb)} cannot be broadcast together "
                f"(trailing dims must be equal or 1)"
            )


# Integer ops whose result is undefined for some divisor or exponent: what the kernels would
# give there (0, or NumPy's own error) is not an answer, so they raise as PyTorch does.
_INTEGER_CHECKS = {
    "floordiv": ("eq", "floordiv (//, floor_divide): integer division by zero", "divisor", "zero"),
    "mod": ("eq", "mod (%, remainder): integer modulo by zero", "divisor", "zero"),
    "pow": (
        "lt",
        "pow (**): integers to negative integer powers are not allowed",
        "exponent",
        "negative value",
    ),
}


def _check_integer_operands(op: str, a: Tensor, b: Tensor) -> None:
    """Raise when an integer ``op`` meets a divisor of 0 (floordiv, mod) or a negative exponent
    (pow) in ``b`` at a position the result holds (an empty result computes nothing)."""
    if 0 in np.broadcast_shapes(a.shape, b.shape):
        return
    compare, problem, role, what = _INTEGER_CHECKS[op]
    backend = b._device.backend
    hits = backend.cast(backend.binary(compare, b._data, backend.full((), 0, b._dtype)), dt.int64)
    count = int(np.asarray(backend.to_host(backend.reduce("sum", hits, tuple(range(b.ndim)), False))))
    if not count:
        return
    detail = (
        f"{problem}: the {role}, {b._dtype} of shape {shape_str(b.shape)}, has {count} "
        f"{what}{'s' if count > 1 else ''} (the other operand is {a._dtype} of shape {shape_str(a.shape)})"
    )
    if op == "pow":
        raise ValueError(detail + "; cast the base to a float dtype for fractional powers")
    raise ZeroDivisionError(detail + "; cast to a float dtype for inf/NaN results")


def binary(op: str, a, b) -> Tensor:
    """The binary op ``op`` of the op table (``"add"``, ``"lt"``, ...) on ``a`` and ``b``
    (tensors or scalars, at least one a tensor), broadcasting."""
    # two tensors of one dtype on one device (most calls) skip the promotion and device checks
    if not (type(a) is Tensor and type(b) is Tensor and a._dtype is b._dtype and a._device is b._device):
        a, b = _to_tensor_pair(op, a, b)
    _check_broadcast(op, a, b)
    if op in _LOGICAL:
        if not (a._dtype.is_bool and b._dtype.is_bool):
            raise TypeError(f"{op}: expected bool tensors, got {a._dtype} and {b._dtype}")
    elif a._dtype.is_bool and op not in _COMPARE:
        raise TypeError(f"{op}: not defined for bool tensors; cast with .int() or .float() first")
    if op in _FLOAT_BINARY and not a._dtype.is_float:
        a, b = a.to(dt.default_float), b.to(dt.default_float)
    if a._dtype.is_int and op in _INTEGER_CHECKS:
        _check_integer_operands(op, a, b)
    arr_a, arr_b = a._arr, b._arr
    # small and computed (the result has at most a.size * b.size elements): nothing to fuse, and
    # the engine's call is skipped on this, the tiny-tensor path
    if (
        type(arr_a) is not Lazy
        and type(arr_b) is not Lazy
        and math.prod(arr_a.shape) * math.prod(arr_b.shape) < _fusion_settings.min_elements
        and not _FUSION_LOG.full
    ):
        out = wrap(a._device.backend.binary(op, arr_a, arr_b), a._device)
    else:
        out = wrap(fusion.binary(a._device.backend, op, arr_a, arr_b), a._device)
    if op in _NO_GRAD_BINARY or not needs_grad(a, b):
        return out
    if op in _BINARY_SAVES_NOTHING:
        return record(out, op, (a, b))
    if op in _BINARY_SAVES_OUTPUT:
        return record(out, op, (a, b), a=detached(a), b=detached(b), y=detached(out))
    return record(out, op, (a, b), a=detached(a), b=detached(b))


def where(cond: Tensor, a, b) -> Tensor:
    """Element-wise ``a if cond else b`` with broadcasting."""
    if not isinstance(cond, Tensor) or not cond._dtype.is_bool:
        raise TypeError(
            f"where: condition must be a bool tensor, got "
            f"{cond._dtype if isinstance(cond, Tensor) else type(cond).__name__}"
        )
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        kind = (
            dt.default_float
            if isinstance(a, float) or isinstance(b, float)
            else dt.promote_scalar(dt.bool_, a)
        )
        a = wrap(cond._device.backend.full((), a, kind), cond._device, kind)
    a, b = _to_tensor_pair("where", a, b)
    check_devices("where", cond, a, b)
    try:  # the three together: pairwise checks let [2, 4, 1] and [3, 1, 0] through with a [1, 1, 0] cond
        np.broadcast_shapes(cond.shape, a.shape, b.shape)
    except ValueError:
        raise ValueError(
            f"where: shapes {shape_str(cond.shape)} (condition), {shape_str(a.shape)} and "
            f"{shape_str(b.shape)} cannot be broadcast together (trailing dims must be equal or 1)"
        ) from None
    out = wrap(fusion.where(a._device.backend, cond._arr, a._arr, b._arr), a._device)
    return record(out, "where", (a, b), cond=detached(cond))


def mask_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """``x`` with ``value`` wherever ``mask`` (bool, broadcastable) is True."""
    if not isinstance(mask, Tensor) or not mask._dtype.is_bool:
        raise TypeError("mask_fill: mask must be a bool tensor")
    if is_scalar(value):
        value = wrap(x._device.backend.full((), value, x._dtype), x._device, x._dtype)
    return where(mask, value.to(x._dtype), x)


def clamp(x: Tensor, min=None, max=None) -> Tensor:
    """Clamp to ``[min, max]`` (either may be None; tensor bounds broadcast).

    The gradient of ``x`` is 1 where ``min <= x <= max``, bounds included (as PyTorch and
    Burn), and 0 elsewhere; a tensor ``min`` (``max``) gets it where ``x < min`` (``x > max``).
    """
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    with no_grad():
        out = x
        if min is not None:
            out = binary("maximum", out, min)
        if max is not None:
            out = binary("minimum", out, max)
    bounds = tuple(b if isinstance(b, Tensor) else None for b in (min, max))
    if not needs_grad(x, *bounds):
        return out
    return record(
        out,
        "clamp",
        (x,) + bounds,
        x=detached(x),
        low=None if min is None else (detached(min) if isinstance(min, Tensor) else min),
        high=None if max is None else (detached(max) if isinstance(max, Tensor) else max),
    )


def cast(x: Tensor, dtype) -> Tensor:
    dtype = dt.dtype(dtype)
    if dtype is x._dtype:
        return x
    out = wrap(fusion.cast(x._device.backend, x._arr, dtype), x._device, dtype)
    if dtype.is_float and x._dtype.is_float:
        return record(out, "cast", (x,))
    return out


# ---- activations composed from primitives (fused ones live in ops/nn.py) -------------------
def relu(x):
    return unary("relu", x)


def sigmoid(x):
    return unary("sigmoid", x)


def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)`` (SiLU, also called swish).

    Its gradient is ``sigmoid(x)·(1 + x·(1 − sigmoid(x)))``, as PyTorch's: the composition's
    own would multiply the output gradient by x first, which overflows at large |x| (NaN then).
    """
    with no_grad():
        out = binary("mul", x, unary("sigmoid", x))
    if not needs_grad(x):
        return out
    return record(out, "silu", (x,), x=detached(x))


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, linear where ``beta x > threshold`` for stability.

    Its gradient is ``sigmoid(beta x)`` (1/2 at 0), 1 where linear, as PyTorch's (README, "A tour
    of the API": gradients at kinks).
    """
    with no_grad():  # the composition's own gradient would be 0 at x = 0 (|x| and max(x, 0))
        bx = binary("mul", x, beta) if beta != 1.0 else x
        # log1p(exp(-|bx|)) + max(bx, 0) never overflows
        soft = binary("add", unary("log1p", unary("exp", unary("neg", unary("abs", bx)))), unary("relu", bx))
        if beta != 1.0:
            soft = binary("div", soft, beta)
        out = where(binary("gt", bx, threshold), x, soft)
    if not needs_grad(x):
        return out
    return record(out, "softplus", (x,), x=detached(x), beta=float(beta), threshold=float(threshold))


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``x`` where ``x > 0``, ``negative_slope * x`` elsewhere (so the gradient at 0 and at NaN is
    ``negative_slope``, as PyTorch's)."""
    return where(binary("gt", x, 0.0), x, binary("mul", x, negative_slope))
