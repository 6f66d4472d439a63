"""What the fusion engine records, and what it runs at once.

The tensor layer hands its element-wise ops (unary, binary, ``where``, float casts) to
:func:`unary`, :func:`binary`, :func:`where` and :func:`cast` with the backend and operands. An
op is recorded as a :class:`~.lazy.Lazy` when the backend has a chain runner, the engine is on,
every operand is float32/float64 (bool for conditions and comparison results), the op is one the
runner compiles, and the result is large enough for one kernel to beat the separate passes
(:data:`settings` ``min_elements``) or continues a recorded chain. Otherwise it runs now,
through the backend, on computed operands: results never depend on whether an op was fused
beyond the rounding of the kernels' maths.
"""

from __future__ import annotations

import math

import numpy as np

from ember import config
from ember.kernels.fusion.lazy import Lazy, realize
from ember.kernels.fusion.log import LOG

__all__ = [
    "FUSED_BINARY",
    "FUSED_REDUCE",
    "FUSED_UNARY",
    "GEMM_OPS",
    "binary",
    "cast",
    "expand",
    "linear",
    "matmul",
    "reduce",
    "reduction_kind",
    "reshape",
    "settings",
    "stats",
    "unary",
    "where",
]

FUSED_UNARY = frozenset(
    {
        "neg", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "abs", "sign", "sin", "cos", "tanh",
        "sigmoid", "erf", "relu", "reciprocal", "square", "floor", "ceil", "round", "logical_not",
        "isnan", "isinf", "isfinite",
    }
)  # fmt: skip
"""The unary ops of the op table a chain kernel computes."""

FUSED_BINARY = frozenset(
    {
        "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
        "logical_and", "logical_or", "logical_xor",
    }
)  # fmt: skip
"""The binary ops a chain kernel computes (floor division and remainder run unfused)."""

FUSED_REDUCE = frozenset({"sum", "max", "min"})
"""The reductions that read a pending chain as they go (over the last axis, or over leading axes)."""

GEMM_OPS = frozenset({"matmul", "linear"})
"""The matrix products a chain reading them fuses as its epilogue: the product's rows are handed
to the chain block by block while in cache, and the whole product is never stored."""

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.bool_))
_FUSED_DTYPES = frozenset(_DTYPES)


class Settings:
    """The engine's switches, from ``[fusion]`` of ``ember.toml`` (or ``EMBER_FUSION``,
    ``EMBER_FUSION_MIN_ELEMENTS``, ``EMBER_FUSION_COMPILE_AFTER``): ``enabled``,
    ``min_elements`` (results smaller than this run at once unless they continue a chain),
    ``compile_after`` (the sighting of a chain that compiles it); and ``max_depth`` (a chain
    deeper than this is computed when recorded). The configuration is read on the first use,
    not at ``import ember``; an attribute set (by a test) stays."""

    max_depth = 48

    def __getattr__(self, name):
        if name not in ("enabled", "min_elements", "compile_after"):
            raise AttributeError(name)
        value = config.get(f"fusion.{name}")
        setattr(self, name, value)
        return value


settings = Settings()

stats = {"recorded": 0}
"""Counters: ops recorded into chains."""


def _runner(backend):
    return backend.chain_runner() if settings.enabled else None


_RESULT_DTYPES: dict = {}


def _result_dtype(backend, kind: str, op: str, dtypes: tuple):
    """The dtype ``backend`` gives for ``op`` on operands of ``dtypes`` (asked once, on empty
    arrays of the backend's own array module, CuPy's on ``cuda``, so it is the eager rule
    exactly)."""
    key = (backend.name, kind, op, dtypes)
    dtype = _RESULT_DTYPES.get(key)
    if dtype is None:
        xp = getattr(backend, "xp", np)
        with np.errstate(all="ignore"):
            dtype = getattr(backend, kind)(op, *(xp.empty((0,), d) for d in dtypes)).dtype
        _RESULT_DTYPES[key] = dtype
    return dtype


def _record(op, args, shape, dtype, runner):
    node = Lazy(op, args, shape, dtype, runner)
    stats["recorded"] += 1
    if LOG.full:
        LOG.record(node)
    if node.depth > settings.max_depth:
        node.realize()
    return node


def _fusible(runner, shape, *operands) -> bool:
    # a plain loop: this runs for every element-wise op, fused or not
    if runner is None:
        return False
    pending = False
    for o in operands:
        if o.dtype not in _FUSED_DTYPES:
            return False
        if type(o) is Lazy and o.value is None:
            pending = True
    if pending:
        return True
    # an operand of the result's shape knows its size (cheaper than multiplying the shape out)
    size = operands[0].size if operands[0].shape == shape else math.prod(shape)
    return size >= settings.min_elements


def _cut(runner, fused: bool, shape, *operands) -> str:
    """Why an element-wise op ran at once (for the fusion log's ``full`` level)."""
    if runner is None:
        return "fusion disabled" if not settings.enabled else "backend has no chain runner"
    if not fused:
        return "op not fused"
    for dtype in (o.dtype for o in operands):
        if dtype not in _DTYPES:
            return f"dtype {dtype} not fused"
    if not _fusible(runner, shape, *operands):
        return "below min_elements"
    return "result dtype not fused"


def unary(backend, op: str, x):
    """``backend.unary(op, x)``, recorded when it fuses."""
    runner = _runner(backend)
    if op in FUSED_UNARY and _fusible(runner, x.shape, x):
        dtype = _result_dtype(backend, "unary", op, (x.dtype,))
        if dtype in _DTYPES:
            return _record(f"unary:{op}", (x,), tuple(x.shape), dtype, runner)
    if LOG.full:
        LOG.eager(f"unary:{op}", _cut(runner, op in FUSED_UNARY, x.shape, x))
    return backend.unary(op, realize(x))


def binary(backend, op: str, a, b):
    """``backend.binary(op, a, b)`` (broadcasting; shapes already checked), recorded when it fuses."""
    runner = _runner(backend)
    if op in FUSED_BINARY and runner is not None:
        shape = a.shape if a.shape == b.shape else tuple(np.broadcast_shapes(a.shape, b.shape))
        if _fusible(runner, shape, a, b):
            dtype = _result_dtype(backend, "binary", op, (a.dtype, b.dtype))
            if dtype in _DTYPES:
                return _record(f"binary:{op}", (a, b), shape, dtype, runner)
    if LOG.full:
        shape = np.broadcast_shapes(a.shape, b.shape)
        LOG.eager(f"binary:{op}", _cut(runner, op in FUSED_BINARY, shape, a, b))
    return backend.binary(op, realize(a), realize(b))


def where(backend, cond, a, b):
    """``backend.where(cond, a, b)`` (broadcasting), recorded when it fuses."""
    runner = _runner(backend)
    if runner is not None and cond.dtype == np.bool_ and a.dtype == b.dtype:
        shape = tuple(np.broadcast_shapes(cond.shape, a.shape, b.shape))
        if _fusible(runner, shape, cond, a, b):
            return _record("where", (cond, a, b), shape, a.dtype, runner)
    if LOG.full:
        LOG.eager("where", _cut(runner, True, np.broadcast_shapes(cond.shape, a.shape, b.shape), cond, a, b))
    return backend.where(realize(cond), realize(a), realize(b))


def cast(backend, x, dtype):
    """``backend.cast(x, dtype)`` (an :class:`ember.core.dtypes.DType`), recorded when it fuses."""
    runner = _runner(backend)
    target = np.dtype(dtype.numpy)
    if target in _DTYPES[:2] and _fusible(runner, x.shape, x):
        return _record(f"cast:{target.name}", (x,), tuple(x.shape), target, runner)
    if LOG.full:
        LOG.eager(f"cast:{target.name}", _cut(runner, target in _DTYPES[:2], x.shape, x))
    return backend.cast(realize(x), dtype)


def reduction_kind(axes: tuple, ndim: int) -> str | None:
    """``"rows"`` for the last axis alone, ``"columns:k"`` for the first ``k`` axes (not all of
    them), None for any other set of axes: the two patterns a chain runner reduces on read."""
    if ndim >= 2 and axes == (ndim - 1,):
        return "rows"
    if 0 < len(axes) < ndim and axes == tuple(range(len(axes))):
        return f"columns:{len(axes)}"
    return None


def reduce(backend, op: str, x, axes: tuple, keepdim: bool):
    """``backend.reduce(op, x, axes, keepdim)``, recorded when ``x`` is a pending chain the
    reduction can read as it goes (its values are then never stored)."""
    # a computed input (the common case, tiny tensors included) is tested first: nothing to fuse
    if (
        type(x) is Lazy
        and x.value is None
        and op in FUSED_REDUCE
        and _runner(backend) is not None
        and x.op not in GEMM_OPS
        and not x.op.startswith("reduce:")  # a reduction of a pending reduction reads it computed
        and x.dtype in _DTYPES[:2]
        and 0 not in x.shape
    ):
        kind = reduction_kind(tuple(axes), len(x.shape))
        if kind is not None:
            shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape) if keepdim or d not in axes)
            return _record(f"reduce:{op}:{kind}", (x,), shape, x.dtype, x.runner)
    if LOG.full:
        LOG.eager(f"reduce:{op}", _reduce_cut(_runner(backend), op, x, axes))
    return backend.reduce(op, realize(x), axes, keepdim)


def _reduce_cut(runner, op: str, x, axes) -> str:
    """Why a reduction ran on its own (for the fusion log's ``full`` level)."""
    if runner is None:
        return _cut(runner, True, x.shape, x)
    if op not in FUSED_REDUCE:
        return "op not fused"
    if type(x) is not Lazy or x.value is not None:
        return "input already computed"
    if x.dtype not in _DTYPES[:2]:
        return f"dtype {x.dtype} not fused"
    if 0 in x.shape:
        return "empty input"
    if x.op in GEMM_OPS:
        return "input is a matrix product (computed first)"
    if x.op.startswith("reduce:"):
        return "input is a reduction (computed first)"
    return "axes not fused (the last axis, or leading axes, are)"


def _gemm_runner(backend, dtype, *arrays):
    """The backend's runner when it fuses matrix products and ``arrays`` are computed 2-D
    arrays of the float ``dtype``; else None."""
    runner = _runner(backend)
    if runner is None or not getattr(runner, "fuses_gemm", False) or dtype not in _DTYPES[:2]:
        return None
    for a in arrays:
        if a is not None and (type(a) is Lazy or a.ndim != 2 or a.dtype != dtype):
            return None
    return runner


def _gemm_worth_keeping(a, b) -> bool:
    """Whether ``a [M, K] @ b [K, N]`` is recorded: large enough, and ``K <= N`` — a pending
    product holds ``a`` until it is made, which takes no more memory than the product eager
    execution would hold only when ``a`` is no larger than it."""
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    return 0 < k <= n and m * n >= settings.min_elements


def matmul(backend, a, b):
    """``backend.matmul(a, b)``; a 2-D product large enough is recorded, for a chain that reads
    it to take its rows as they are made."""
    a, b = realize(a), realize(b)
    runner = _gemm_runner(backend, a.dtype, a, b)
    if runner is not None and _gemm_worth_keeping(a, b):
        return _record("matmul", (a, b), (a.shape[0], b.shape[1]), a.dtype, runner)
    if LOG.full:
        LOG.eager("matmul", _gemm_cut(backend, runner))
    return backend.matmul(a, b)


def linear(backend, x, w, b):
    """``backend.linear(x, w, b)`` (``b`` None: no bias), recorded as :func:`matmul` is."""
    x, w, b = realize(x), realize(w), realize(b)
    runner = _gemm_runner(backend, x.dtype, x, w, None if b is None else b.reshape(1, -1))
    if runner is not None and _gemm_worth_keeping(x, w):
        return _record("linear", (x, w, b), (x.shape[0], w.shape[1]), x.dtype, runner)
    if LOG.full:
        LOG.eager("linear", _gemm_cut(backend, runner))
    return backend.linear(x, w, b)


def _gemm_cut(backend, runner) -> str:
    """Why a matrix product ran at once (for the fusion log's ``full`` level)."""
    if runner is None:
        chain_runner = _runner(backend)
        if chain_runner is None:
            return _cut(None, True, ())
        if not getattr(chain_runner, "fuses_gemm", False):
            return "backend fuses no matrix products"
        return "not 2-D float operands of one dtype"
    return "below min_elements, or an inner dimension larger than the output's (or empty)"


def reshape(backend, x, shape: tuple):
    """``backend.reshape(x, shape)``; a pending product, or a pending reduction over leading
    axes (a gradient summed back to a bias's shape), stays pending with the new shape (the
    runner computes it C-contiguous and views it so)."""
    if type(x) is Lazy and x.value is None and (x.op in GEMM_OPS or ":columns:" in x.op):
        return _record(x.op, x.args, tuple(shape), x.dtype, x.runner)
    return backend.reshape(realize(x), shape)


def expand(backend, x, shape: tuple):
    """``backend.expand(x, shape)``; a pending element-wise value or reduction stays pending,
    broadcast, so a chain reading it (a reduction's gradient spread back over its rows) fuses
    with the chain that made it. Computed on its own, it is the broadcast view eager execution
    gives (see the runners)."""
    if type(x) is Lazy and x.value is None and x.op not in GEMM_OPS and x.runner is _runner(backend):
        return _record("expand", (x,), tuple(shape), x.dtype, x.runner)
    return backend.expand(realize(x), shape)
