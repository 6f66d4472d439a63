"""The engine of the PyTorch differential test: edge-value inputs, running one op on ember
and on PyTorch, and comparing what both made of it.

Inputs come in *families* (:data:`FAMILIES`): the same few arrays for every op of a family,
built for the dtype under test from :func:`edge` (±0, ±inf, NaN, 1e-38, ±3e38 and ordinary
values, rounded to the dtype: in float16 1e-38 is 0 and 3e38 is inf) and from
:func:`ordinary` values, plus empty dims and broadcasting. The same host arrays go to both
frameworks.

Comparison rules (:func:`compare`): same shape and dtype; ints and bools exactly; floats NaN
where NaN, ±inf where ±inf with the sign, finite values within the dtype's tolerance. The
sign of a zero is not compared (-0.0 == 0.0, as in IEEE 754 and ``tests/helpers/differential.py``),
nor a NaN's sign or payload. Where PyTorch raises, ember must raise too, a clear error from
its own code; where ember raises and PyTorch does not, that is a mismatch unless
``helpers.torch_ops.BY_DESIGN`` says why. Gradients (float32 and float64) are those of
``sum(output · seed)`` for a fixed uneven seed, against ``torch.autograd.grad``.
"""

from __future__ import annotations

import os
import traceback

import numpy as np
import torch

import ember
from helpers.differential_values import FLOATS, INF, NAN
from helpers.numeric import tol

GRAD_DTYPES = ("float32", "float64")

EDGE_FLOATS = (0.0, -0.0, INF, -INF, NAN, 1e-38, -1e-38, 3e38, -3e38, 1.0, -1.0, 0.5, -2.5, 2.0)
"""The float edge values of issue #30, one list for every float dtype (rounded to it), where
``helpers.differential_values`` draws specials chosen per dtype."""


def tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol) of the finite values: ``helpers.numeric.tol`` with twice its rtol, as
    PyTorch's vectorised loops and ember's kernels round the same formula in another order."""
    rtol, atol = tol(dtype)
    return 2 * rtol, atol


_EMBER_DIR = os.path.dirname(os.path.abspath(ember.__file__)) + os.sep


def edge(dtype: str) -> np.ndarray:
    """The edge values of ``dtype`` (1-D): the float specials, or an int type's 0, ±1, its
    extremes and small values, or both bools."""
    if dtype == "bool":
        return np.array([False, True, True, False])
    if dtype in FLOATS:
        with np.errstate(over="ignore"):
            return np.array(EDGE_FLOATS, dtype=np.float64).astype(dtype)
    info = np.iinfo(dtype)
    return np.array([0, -1, 1, 2, -3, 7, 5, -6, info.max, info.min], dtype=dtype)


def ordinary(shape, dtype: str, shift: int = 0) -> np.ndarray:
    """Deterministic ordinary values of ``shape`` (distinct enough to avoid ties in a row)."""
    n = int(np.prod(shape)) if len(shape) else 1
    if dtype == "bool":
        return (np.arange(shift, shift + n) % 3 == 0).reshape(shape)
    if dtype in FLOATS:
        base = np.array([0.5, -1.25, 2.0, -0.75, 1.5, 0.25, -2.0, 1.0, -0.5, 0.75, -1.5])
        return np.resize(np.roll(base, shift), n).reshape(shape).astype(dtype)
    base = np.array([1, -2, 3, 0, 2, -1, 4, -3, 5])
    return np.resize(np.roll(base, shift), n).reshape(shape).astype(dtype)


def rows(dtype: str, width: int = 4) -> np.ndarray:
    """``[R, width]``: row i holds edge value i among ordinary ones; for floats two more rows,
    +inf twice beside ordinary values and -inf only."""
    e = edge(dtype)
    m = ordinary((len(e), width), dtype)
    m[:, min(2, width - 1)] = e
    if dtype in FLOATS:
        extra = np.array([[INF, INF] + [1.0] * (width - 2), [-INF] * width], dtype=dtype)
        m = np.concatenate([m, extra])
    return m


def zeros(shape, dtype: str) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)


def ints(values, dtype: str = "int64") -> np.ndarray:
    return np.array(values, dtype=dtype)


def _image(dtype: str) -> np.ndarray:
    x = ordinary((1, 2, 4, 4), dtype)
    e = edge(dtype)
    x.reshape(-1)[: len(e)] = e
    return x


def _attention(dtype: str):
    q = ordinary((1, 2, 3, 4), dtype)
    e = edge(dtype)
    if dtype in FLOATS:  # a NaN query: PyTorch's CPU kernel returns a row of 0 (see torch_ops.UNDEFINED)
        e = e[~np.isnan(e)]
    q.reshape(-1)[: len(e)] = e
    return q, ordinary((1, 2, 5, 4), dtype, 1), ordinary((1, 2, 5, 4), dtype, 2)


def _family(name: str, dtype: str) -> list:
    """``[(label, arrays), ...]`` of family ``name`` for ``dtype``."""
    e, r = edge(dtype), rows(dtype)
    n = len(r)
    if name == "x":
        return [("edge", (e,)), ("empty", (zeros((0, 3), dtype),))]
    if name == "xy":
        return [
            ("grid", (e[:, None], e[None, :])),
            ("empty", (zeros((0, 1), dtype), zeros((1, 3), dtype))),
        ]
    if name == "rows":
        return [("rows", (r,)), ("empty", (zeros((0, 4), dtype),)), ("empty_dim", (zeros((3, 0), dtype),))]
    if name == "rows_nonempty":
        return [("rows", (r,)), ("empty", (zeros((0, 4), dtype),))]
    if name == "pair":
        return [
            ("rows", (r, ordinary(r.shape, dtype, 4))),
            ("empty", (zeros((0, 4), dtype), zeros((0, 4), dtype))),
        ]
    if name == "where":
        cond = ordinary((len(e), len(e)), "bool")
        return [("grid", (cond, e[:, None], e[None, :]))]
    if name == "mask":
        return [
            ("rows", (r, ordinary(r.shape, "bool"))),
            ("empty", (zeros((0, 4), dtype), zeros((0, 4), "bool"))),
        ]
    if name == "clamp":
        return [("grid", (e[:, None], e[None, :], ordinary((1, len(e)), dtype, 3)))]
    if name == "mat":
        return [
            ("a_edge", (r, ordinary((4, 3), dtype))),
            ("b_edge", (ordinary((3, 4), dtype), np.ascontiguousarray(r.T))),
            ("empty_m", (zeros((0, 4), dtype), ordinary((4, 3), dtype))),
            ("empty_k", (zeros((3, 0), dtype), zeros((0, 2), dtype))),
        ]
    if name == "linear":
        return [
            ("x_edge", (r, ordinary((3, 4), dtype), ordinary((3,), dtype, 1))),
            ("empty", (zeros((0, 4), dtype), ordinary((3, 4), dtype), ordinary((3,), dtype, 1))),
        ]
    if name == "gather":
        return [("rows", (r, ints(np.resize([3, 0, 2, 1, 2], (n, 2)))))]
    if name == "scatter":
        return [("rows", (r, ints(np.resize([3, 0, 3, 1, 2], (n, 3))), ordinary((n, 3), dtype)))]
    if name == "index_select":
        return [("rows", (r, ints([3, 0, 3]))), ("empty_index", (r, ints([])))]
    if name == "one_hot":
        return [("ids", (ints([0, 2, 1, 3, 3], dtype),)), ("empty", (ints([], dtype),))]
    if name == "embedding":
        return [("ids", (r, ints([[0, 2, n - 1], [4, 4, 7]]))), ("empty", (r, ints(np.zeros((0, 2)))))]
    if name == "embedding_bag":
        return [("bags", (r, ints([0, 2, n - 1, 4, 4, 7, 3]), ints([0, 3, 3, 5])))]
    if name == "cross_entropy":
        return [
            ("logits", (r, ints(np.arange(n) % 4))),
            ("empty", (zeros((0, 4), dtype), ints([]))),
        ]
    if name == "bce":
        return [("logits", (e, (np.arange(len(e)) % 2).astype(dtype)))]
    if name == "counts":  # predictions and non-negative targets
        return [("rows", (r, np.abs(ordinary(r.shape, dtype, 4))))]
    if name == "probabilities":  # log-probabilities and target probabilities, 0 and 1 included
        p = np.abs(ordinary(r.shape, dtype, 4)) / 2
        p[:2, 0] = [0.0, 1.0]
        return [("rows", (r, p))]
    if name == "signs":  # logits and ±1 targets
        return [("logits", (e, np.where(np.arange(len(e)) % 2, 1, -1).astype(dtype)))]
    if name == "image":
        return [("image", (_image(dtype),)), ("empty", (zeros((0, 2, 4, 4), dtype),))]
    if name == "conv":
        w, b = ordinary((3, 2, 2, 2), dtype, 1), ordinary((3,), dtype, 2)
        return [("image", (_image(dtype), w, b)), ("empty", (zeros((0, 2, 4, 4), dtype), w, b))]
    if name == "signal":
        return [("signal", (_image(dtype).reshape(1, 2, 16),)), ("empty", (zeros((0, 2, 16), dtype),))]
    if name == "conv1d":
        w, b = ordinary((3, 2, 3), dtype, 1), ordinary((3,), dtype, 2)
        return [
            ("signal", (_image(dtype).reshape(1, 2, 16), w, b)),
            ("empty", (zeros((0, 2, 16), dtype), w, b)),
        ]
    if name == "attention":
        return [("q_edge", _attention(dtype))]
    if name == "norm":
        d = r.shape[1]
        return [("rows", (r, ordinary((d,), dtype, 1), ordinary((d,), dtype, 2)))]
    raise KeyError(f"no input family {name!r}")


FAMILIES = (
    "x",
    "xy",
    "rows",
    "rows_nonempty",
    "pair",
    "where",
    "mask",
    "clamp",
    "mat",
    "linear",
    "gather",
    "scatter",
    "index_select",
    "one_hot",
    "embedding",
    "embedding_bag",
    "cross_entropy",
    "bce",
    "signs",
    "counts",
    "probabilities",
    "image",
    "conv",
    "signal",
    "conv1d",
    "attention",
    "norm",
)
"""Every input family; an op's row in the table names one."""


def inputs(family: str, dtype: str) -> list:
    return _family(family, dtype)


# ---- running ------------------------------------------------------------------------------------
def seed_like(shape, dtype) -> np.ndarray:
    """A fixed, uneven output gradient (so that no rule's terms cancel by symmetry)."""
    n = int(np.prod(shape)) if len(shape) else 1
    return np.resize(np.array([1.0, -0.5, 2.0, 0.25, -1.5]), n).reshape(shape).astype(dtype)


def _as_list(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _float_array(a: np.ndarray, grad: bool) -> bool:
    return grad and a.dtype.kind == "f" and a.dtype.name in GRAD_DTYPES


def _wants_grad(arrays, grad: bool, constants=()) -> list:
    return [_float_array(a, grad) and i not in constants for i, a in enumerate(arrays)]


def run_ember(fn, arrays, device: str, grad: bool, constants=()):
    """``(outputs, grads, error)``: the outputs as host arrays, the gradient of each float
    input (None when it got none) of ``sum(out · seed)``, or the exception raised."""
    ts = []
    for a, wants in zip(arrays, _wants_grad(arrays, grad, constants)):
        t = ember.tensor(a, dtype=ember.dtype_from_numpy(a.dtype), device=device)
        if wants:
            t.require_grad()
        ts.append(t)
    try:
        outs = _as_list(fn(*ts))
        host = [np.array(o.numpy(), copy=True) for o in outs]
        grads = None
        if any(t.is_require_grad() for t in ts):
            loss = None
            for o in outs:
                if o.dtype.is_float and o.is_require_grad():
                    term = (
                        o * ember.tensor(seed_like(o.shape, o.dtype.numpy), dtype=o.dtype, device=device)
                    ).sum()
                    loss = term if loss is None else loss + term
            if loss is not None:
                g = loss.backward()
                grads = []
                for t in ts:
                    gt = g.get(t) if t.is_require_grad() else None
                    if gt is not None and not isinstance(gt, ember.Tensor):
                        gt = gt.to_dense()
                    grads.append(None if gt is None else np.array(gt.numpy(), copy=True))
    except Exception as exc:  # - compared with PyTorch's outcome
        return None, None, exc
    return host, grads, None


def run_torch(fn, arrays, grad: bool, constants=()):
    """As :func:`run_ember`, with ``torch.autograd.grad``."""
    ts = [torch.tensor(a, requires_grad=w) for a, w in zip(arrays, _wants_grad(arrays, grad, constants))]
    try:
        outs = _as_list(fn(*ts))
        host = [o.detach().numpy().copy() for o in outs]
        grads = None
        wanted = [t for t in ts if t.requires_grad]
        if wanted:
            loss = None
            for o in outs:
                if o.dtype.is_floating_point and o.requires_grad:
                    term = (
                        o * torch.tensor(seed_like(tuple(o.shape), str(o.dtype).removeprefix("torch.")))
                    ).sum()
                    loss = term if loss is None else loss + term
            if loss is not None:
                got = iter(torch.autograd.grad(loss, wanted, allow_unused=True))
                grads = []
                for t in ts:
                    gt = next(got) if t.requires_grad else None
                    grads.append(None if gt is None else gt.numpy().copy())
    except Exception as exc:  # - the oracle's refusal is part of the comparison
        return None, None, exc
    return host, grads, None


def unclear_error(exc: BaseException) -> str | None:
    """Why ``exc`` is not a clear ember error (raised from ember's own code), or None."""
    frames = traceback.extract_tb(exc.__traceback__)
    origin = os.path.abspath(frames[-1].filename) if frames else ""
    if not origin.startswith(_EMBER_DIR):
        return f"{type(exc).__name__}({exc}) raised from {origin}, not by ember's own checks"
    if not isinstance(exc, (ValueError, TypeError, IndexError, ZeroDivisionError, NotImplementedError)):
        return f"{type(exc).__name__}({exc}) is not a ValueError/TypeError/IndexError/ZeroDivisionError"
    return None


# ---- comparing ----------------------------------------------------------------------------------
def compare(
    got: np.ndarray,
    want: np.ndarray,
    what: str,
    skip: np.ndarray | None = None,
    overflow: bool = False,
    min_rtol: float = 0.0,
    overflow_to_zero: bool = False,
    overflow_order: bool = False,
) -> str | None:
    """None when ember's ``got`` matches PyTorch's ``want`` by the module's rules, else why
    not; elements where ``skip`` is True are not compared; ``overflow``: PyTorch's ±inf
    matches a finite value of the same sign within 1/64 of the dtype's largest;
    ``overflow_to_zero``: PyTorch's 0 matches any finite value; ``overflow_order``: PyTorch's
    NaN matches ±inf and its ±inf matches NaN."""
    if got.shape != want.shape:
        return f"{what}: shape {got.shape} != PyTorch's {want.shape}"
    if got.dtype != want.dtype:
        return f"{what}: dtype {got.dtype} != PyTorch's {want.dtype}"
    if got.dtype.kind != "f":
        bad = got != want
        if skip is not None:
            bad &= ~skip
        if bad.any():
            i = np.argwhere(bad)[0]
            return f"{what}: {got[tuple(i)]!r} != PyTorch's {want[tuple(i)]!r} at {tuple(i)} ({int(bad.sum())} differ)"
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    rtol, atol = tolerance(got.dtype.name)
    rtol = max(rtol, min_rtol)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(g) & np.isfinite(w)
        close = np.abs(g - w) <= atol + rtol * np.abs(w)
        same_special = (np.isnan(g) & np.isnan(w)) | (np.isinf(g) & (g == w))
    if overflow:
        big = (
            np.isinf(w)
            & np.isfinite(g)
            & (np.abs(g) >= np.finfo(got.dtype).max / 64)
            & (np.sign(g) == np.sign(w))
        )
        same_special |= big
    if overflow_order:
        same_special |= (np.isnan(w) & np.isinf(g)) | (np.isinf(w) & np.isnan(g))
    bad = ~np.where(finite, close, same_special)
    if overflow_to_zero:
        bad &= ~((w == 0) & np.isfinite(g))
    if skip is not None:
        bad &= ~skip
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return f"{what}: {g[i]!r} != PyTorch's {w[i]!r} at {i} ({int(bad.sum())} of {bad.size} differ)"
    return None


def _input_mask(arrays, shape, test) -> np.ndarray | None:
    """Where ``test`` holds for any float element-wise input, broadcast to ``shape`` (None
    when the inputs do not broadcast to it)."""
    try:
        mask = np.zeros(shape, dtype=bool)
        for a in arrays:
            if a.dtype.kind == "f":
                mask = mask | np.broadcast_to(test(a), shape)
        return mask
    except ValueError:
        return None


_TESTS = {"nan": np.isnan, "inf": np.isinf}

UNDEFINED_MODES = (
    "forward@nan",
    "forward@inf",
    "grad@nan",
    "grad@inf",
    "grad:torch_nonfinite",
    "overflow",
    "overflow_to_zero",
    "overflow_order",
)
"""What an entry of ``torch_ops.UNDEFINED`` may leave out: the outputs (gradients) at NaN or
±inf inputs (element-wise ops); the gradients where PyTorch's is not finite; and ``overflow``:
PyTorch's ±inf where ember has a finite value of the same sign near the dtype's limit (an
intermediate overflowed in PyTorch only); ``overflow_to_zero``: PyTorch's 0 where ember has a
finite value (PyTorch divided by an overflowed intermediate); ``overflow_order``: NaN on one side
and ±inf on the other, where a sum of products near the dtype's limit overflows to +inf and
-inf in one summation order and to one infinity in another (the order is the BLAS library's,
and differs by version and CPU, so this mode may leave nothing out on some machines: see
:data:`MACHINE_DEPENDENT_MODES`)."""

MACHINE_DEPENDENT_MODES = frozenset({"overflow_order"})
"""Modes whose differences appear on some machines only (the staleness test skips them)."""


def _skip(undefined, kind: str, arrays, shape, want) -> np.ndarray | None:
    skip = None
    for name, test in _TESTS.items():
        if f"{kind}@{name}" in undefined:
            mask = _input_mask(arrays, shape, test)
            if mask is not None:
                skip = mask if skip is None else skip | mask
    if kind == "grad" and "grad:torch_nonfinite" in undefined and want.dtype.kind == "f":
        bad = ~np.isfinite(want)
        skip = bad if skip is None else skip | bad
    return skip


def check(
    case, dtype: str, device: str, *, cast_torch: bool = False, undefined=(), rtol: float = 0.0
) -> list:
    """Every mismatch of ``case`` (a row of the op map) at ``dtype`` on ``device``, as
    ``(kind, message)``: kind ``refuses`` (ember raised, PyTorch returned), ``accepts``
    (PyTorch raised, ember returned), ``unclear`` (ember's error is not its own), or
    ``value``. ``cast_torch``: compare PyTorch's results cast to ember's dtype (a documented
    dtype rule of ember's). ``rtol``: at least this relative tolerance. ``undefined``: modes of :data:`UNDEFINED_MODES` whose elements
    are left out, where PyTorch's result is undefined."""
    problems = []
    overflow = "overflow" in undefined
    to_zero = "overflow_to_zero" in undefined
    order = "overflow_order" in undefined
    for label, arrays in inputs(case.inputs, dtype):
        for form, efn, tfn in case.forms:
            where = f"{form or 'forward'}({label})"
            grad = case.grad and dtype in GRAD_DTYPES
            t_out, t_grads, t_err = run_torch(tfn, arrays, grad, case.constants)
            e_out, e_grads, e_err = run_ember(efn, arrays, device, grad, case.constants)
            if t_err is not None:
                if e_err is None:
                    first = str(t_err).splitlines()[0]
                    problems.append(
                        (
                            "accepts",
                            f"{where}: PyTorch raises {type(t_err).__name__}({first}), ember returned",
                        )
                    )
                elif (why := unclear_error(e_err)) is not None:
                    problems.append(("unclear", f"{where}: PyTorch raises, ember {why}"))
                continue
            if e_err is not None:
                problems.append(
                    ("refuses", f"{where}: ember raised {type(e_err).__name__}: {e_err}; PyTorch returned")
                )
                if (why := unclear_error(e_err)) is not None:
                    problems.append(("unclear", f"{where}: ember {why}"))
                continue
            if len(e_out) != len(t_out):
                problems.append(("value", f"{where}: {len(e_out)} outputs, PyTorch {len(t_out)}"))
                continue
            if (e_grads is None) != (t_grads is None):  # no gradient at all: zero (floor, sign, ...)
                e_grads, t_grads = e_grads or [None] * len(arrays), t_grads or [None] * len(arrays)
            for k, (g, w) in enumerate(zip(e_out, t_out)):
                if cast_torch:
                    w = w.astype(g.dtype)
                skip = _skip(undefined, "forward", arrays, g.shape, w)
                if (
                    msg := compare(g, w, f"{where} output {k}", skip, overflow, rtol, to_zero, order)
                ) is not None:
                    problems.append(("value", msg))
            for k, (g, w) in enumerate(zip(e_grads or [], t_grads or [])):
                ref = arrays[k]
                if (g is None and w is None) or not _wants_grad(arrays, grad, case.constants)[k]:
                    continue
                g = np.zeros(ref.shape, ref.dtype) if g is None else g
                w = np.zeros(ref.shape, ref.dtype) if w is None else w
                skip = _skip(undefined, "grad", arrays, g.shape, w)
                if (
                    msg := compare(
                        g, w, f"{where} gradient of input {k}", skip, overflow, rtol, to_zero, order
                    )
                ) is not None:
                    problems.append(("value", msg))
    return problems
