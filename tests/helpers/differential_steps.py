"""The steps of the differential test's random programs, as Hypothesis strategies.

A :class:`Step` is one op applied to the program's current tensor ``x`` and to operands it
carries (host arrays, the same on every backend). Each strategy looks at the current tensor
(on the reference backend) to draw a step that fits it: axes within its rank, broadcastable
or matmul-compatible partners, indices in range. A few drawn steps are invalid on purpose
(a float op on an int tensor, an empty axis where one is needed): every backend must then
raise the same clear ember error.

Flags: ``view`` steps return a view of ``x`` (their non-contiguous, stride-0 or reversed
result is what the next step sees); ``jumps`` steps are discontinuous in ``x`` (rounding,
comparisons, orderings, ties, kinks), so two backends may legitimately diverge after them
once their inputs differ by rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

import ember
from helpers.differential_values import (
    DTYPES,
    FLOATS,
    INTS,
    Operand,
    arrays,
    broadcast_partner,
    index_operand,
    np_dtype,
    operands,
)


@dataclass(eq=False)
class Step:
    """``label`` is the op as code (``x`` the input, ``a0``, ``a1``... the operands)."""

    op: str
    label: str
    fn: Callable
    operands: tuple = ()
    view: bool = False
    jumps: bool = False
    seed: int | None = None  # ember.seed(seed) before the step runs (dropout)
    names: tuple = field(default=())  # other op names an error message may use
    degree: int = 0  # rounding errors grow like (input magnitude) ** degree (see differential.py)
    conditioning: Callable | None = None  # inputs -> that growth factor, when degree says too little

    def __repr__(self) -> str:
        args = "".join(f"; a{i} = {o!r}" for i, o in enumerate(self.operands))
        return f"{self.label}{args}"

    def _repr_pretty_(self, printer, cycle):  # how Hypothesis prints a failing case's draws
        printer.text(repr(self))


def _dims(draw, ndim: int, allow_none: bool = True, allow_tuple: bool = True):
    """None, one dim (maybe negative) or a tuple of distinct dims of a rank-``ndim`` tensor."""
    n = max(ndim, 1)
    kinds = ["one"] + (["none"] if allow_none else []) + (["tuple"] if allow_tuple and ndim >= 2 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    if kind == "one":
        return draw(st.integers(-n, n - 1))
    return tuple(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True)))


def _float_like(x) -> str:
    return x.dtype.name if x.dtype.is_float else "float32"


def _scalar(draw, name: str, wild: bool):
    if name == "bool":
        return draw(st.booleans())
    if name in INTS:
        return draw(st.integers(-4, 4))
    values = [0.5, -1.5, 2.0, 3.0, 0.0, -0.0] + ([math.inf, -math.inf, math.nan, 1e30] if wild else [])
    return draw(st.sampled_from(values))


def _partner(draw, x, wild: bool, same_dtype_bias: int = 3):
    """A tensor operand broadcastable against ``x``, of x's dtype or (sometimes) another."""
    name = x.dtype.name if draw(st.integers(0, same_dtype_bias)) else draw(st.sampled_from(DTYPES))
    return draw(operands(name, broadcast_partner(draw, x.shape), wild))


# ---- element-wise ------------------------------------------------------------------------
UNARY = (
    "neg",
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "abs",
    "sign",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "erf",
    "relu",
    "reciprocal",
    "square",
    "floor",
    "ceil",
    "round",
    "isnan",
    "isinf",
    "isfinite",
)
_UNARY_JUMPS = {"abs", "sign", "relu", "floor", "ceil", "round", "isnan", "isinf", "isfinite"}


@st.composite
def unary(draw, x, wild):
    op = draw(st.sampled_from(UNARY + ("silu", "softplus", "leaky_relu", "gelu", "logical_not")))
    if op == "softplus":
        beta, threshold = draw(st.sampled_from([1.0, 2.0, 0.5])), draw(st.sampled_from([20.0, 1.0]))
        return Step(
            op,
            f"ember.softplus(x, beta={beta}, threshold={threshold})",
            lambda t: ember.softplus(t, beta, threshold),
            jumps=True,
            names=("mul", "div", "log1p", "exp", "abs", "relu", "gt", "where"),
        )
    if op == "leaky_relu":
        slope = draw(st.sampled_from([0.01, 0.2, -1.0]))
        return Step(
            op,
            f"ember.leaky_relu(x, {slope})",
            lambda t: ember.leaky_relu(t, slope),
            jumps=True,
            names=("ge", "mul", "where"),
        )
    if op == "gelu":
        approx = draw(st.sampled_from(["none", "tanh"]))
        return Step(op, f"ember.gelu(x, {approx!r})", lambda t: ember.gelu(t, approx))
    if op == "silu":
        return Step(op, "ember.silu(x)", ember.silu, names=("mul", "sigmoid"))
    if op == "logical_not":
        return Step(op, "~x", lambda t: ~t, jumps=True, names=("~",))
    return Step(op, f"x.{op}()", lambda t: getattr(t, op)(), jumps=op in _UNARY_JUMPS)


BINARY = (
    "add",
    "sub",
    "mul",
    "div",
    "floor_divide",
    "remainder",
    "pow",
    "maximum",
    "minimum",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
)
_BINARY_JUMPS = {"floor_divide", "remainder", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"}
_BINARY_OP_NAMES = {"floor_divide": "floordiv", "remainder": "mod"}


@st.composite
def binary(draw, x, wild):
    op = draw(st.sampled_from(BINARY))
    name = _BINARY_OP_NAMES.get(op, op)
    jumps = op in _BINARY_JUMPS or op.startswith("logical")
    if draw(st.integers(0, 3)) == 0:  # a Python scalar
        value = _scalar(draw, x.dtype.name if draw(st.booleans()) else draw(st.sampled_from(DTYPES)), wild)
        return Step(name, f"x.{op}({value!r})", lambda t: getattr(t, op)(value), jumps=jumps)
    a = _partner(draw, x, wild)
    if draw(st.booleans()):
        return Step(name, f"a0.{op}(x)", lambda t, o: getattr(o, op)(t), (a,), jumps=jumps)
    return Step(name, f"x.{op}(a0)", lambda t, o: getattr(t, op)(o), (a,), jumps=jumps)


@st.composite
def where(draw, x, wild):
    other = _partner(draw, x, wild)
    if x.dtype.is_bool or draw(st.booleans()):
        cond = draw(operands("bool", broadcast_partner(draw, x.shape), False))
        return Step("where", "ember.where(a0, x, a1)", lambda t, c, o: ember.where(c, t, o), (cond, other))
    limit = _scalar(draw, x.dtype.name, False)
    return Step(
        "where",
        f"ember.where(x > {limit!r}, a0, x)",
        lambda t, o: ember.where(t > limit, o, t),
        (other,),
        jumps=True,
        names=("gt",),
    )


@st.composite
def clamp(draw, x, wild):
    def bound():
        kind = draw(st.sampled_from(["none", "scalar", "tensor"]))
        if kind == "none":
            return None
        if kind == "scalar":
            return _scalar(draw, x.dtype.name, wild)
        return draw(operands(x.dtype.name, broadcast_partner(draw, x.shape), wild))

    low, high = bound(), bound()
    if low is None and high is None:
        low = -1.0 if x.dtype.is_float else -1
    ops = tuple(b for b in (low, high) if isinstance(b, Operand))
    names = iter(f"a{i}" for i in range(2))
    lo_lbl = next(names) if isinstance(low, Operand) else repr(low)
    hi_lbl = next(names) if isinstance(high, Operand) else repr(high)

    def fn(t, *tensors):
        it = iter(tensors)
        lo = next(it) if isinstance(low, Operand) else low
        hi = next(it) if isinstance(high, Operand) else high
        return t.clamp(lo, hi)

    return Step("clamp", f"x.clamp({lo_lbl}, {hi_lbl})", fn, ops, jumps=True, names=("maximum", "minimum"))


# ---- reductions and scans -------------------------------------------------------------------
_REDUCE = ("sum", "prod", "max", "min", "mean", "var", "std", "logsumexp", "any", "all", "argmax", "argmin")


@st.composite
def reduction(draw, x, wild):
    op = draw(st.sampled_from(_REDUCE + ("cumsum",)))
    if op == "cumsum":
        d = draw(st.integers(-max(x.ndim, 1), max(x.ndim, 1) - 1))
        return Step(op, f"x.cumsum({d})", lambda t: t.cumsum(d), degree=1)
    keepdim = draw(st.booleans())
    dims = _dims(draw, x.ndim, allow_tuple=op not in ("argmax", "argmin"))
    if op in ("var", "std"):
        c = draw(st.sampled_from([0, 1]))
        return Step(
            op,
            f"x.{op}({dims!r}, keepdim={keepdim}, correction={c})",
            lambda t: getattr(t, op)(dims, keepdim=keepdim, correction=c),
            names=("mean", "div", "sum"),
            degree=2,
        )
    jumps = op in ("max", "min", "argmax", "argmin", "any", "all")
    names = ("sum", "max", "mean", "div") if op in ("mean", "logsumexp") else ()
    return Step(
        op,
        f"x.{op}({dims!r}, keepdim={keepdim})",
        lambda t: getattr(t, op)(dims, keepdim=keepdim),
        jumps=jumps,
        names=names,
        degree=1 if op in ("sum", "mean", "logsumexp") else 0,
    )


# ---- linear algebra ---------------------------------------------------------------------------
@st.composite
def matmul(draw, x, wild):
    name = x.dtype.name if draw(st.integers(0, 5)) else draw(st.sampled_from(DTYPES))
    m = draw(st.integers(0, 4)) if draw(st.integers(0, 5)) == 0 else draw(st.integers(1, 4))
    if x.ndim == 0:
        shape = (draw(st.integers(1, 3)),)
    elif draw(st.booleans()):  # x @ a0
        k = x.shape[-1]
        kind = draw(st.sampled_from(["matrix", "vector", "batched"]))
        if kind == "vector":
            shape = (k,)
        elif kind == "batched" and x.ndim >= 2:
            shape = broadcast_partner(draw, x.shape[:-2]) + (k, m)
        else:
            shape = (k, m)
        a = draw(operands(name, shape, wild))
        return Step("matmul", "x @ a0", lambda t, o: t @ o, (a,), degree=2)
    else:  # a0 @ x
        r = x.shape[-2] if x.ndim >= 2 else x.shape[0]
        lead = broadcast_partner(draw, x.shape[:-2]) if x.ndim > 2 and draw(st.booleans()) else ()
        shape = lead + (m, r) if draw(st.integers(0, 4)) else (r,)
    a = draw(operands(name, shape, wild))
    return Step("matmul", "a0 @ x", lambda t, o: o @ t, (a,), degree=2)


# ---- neural-network composites (fused kernels on cpu and cuda) --------------------------------
@st.composite
def softmax(draw, x, wild):
    op = draw(st.sampled_from(["softmax", "log_softmax", "quiet_softmax"]))
    d = draw(st.integers(-max(x.ndim, 1), max(x.ndim, 1) - 1))
    names = ("max", "sum", "exp", "sub", "div", "clamp", "add", "neg") if op == "quiet_softmax" else ()
    return Step(op, f"ember.{op}(x, {d})", lambda t: getattr(ember, op)(t, d), names=names, degree=1)


@st.composite
def norm(draw, x, wild):
    op = draw(st.sampled_from(["layer_norm", "rms_norm"]))
    eps = draw(st.sampled_from([1e-5, 0.0, 0.1]))
    d = x.shape[-1] if x.ndim else 1
    name = x.dtype.name if draw(st.integers(0, 5)) else draw(st.sampled_from(FLOATS))
    gamma = draw(operands(name, (d,), wild)) if draw(st.booleans()) else None
    beta = draw(operands(name, (d,), wild)) if op == "layer_norm" and draw(st.booleans()) else None
    ops = tuple(p for p in (gamma, beta) if p is not None)
    names = iter(f"a{i}" for i in range(2))
    g_lbl = next(names) if gamma is not None else "None"
    b_lbl = next(names) if beta is not None else "None"

    def fn(t, *params):
        it = iter(params)
        g = next(it) if gamma is not None else None
        if op == "rms_norm":
            return ember.rms_norm(t, g, eps)
        return ember.layer_norm(t, g, next(it) if beta is not None else None, eps)

    def conditioning(inputs):
        # results are (x - mean) * rstd * gamma + beta: rounding of x (and of the output
        # gradient times gamma, backward) is magnified by rstd, large for near-constant rows
        x, params = inputs[0], inputs[1:]
        k = (1.0 + _finite_abs_max(x)) * (1.0 + _rstd_max(x, eps, op == "layer_norm"))
        return k * (1.0 + (_finite_abs_max(params[0]) if gamma is not None else 1.0)) + (
            _finite_abs_max(params[-1]) if beta is not None else 0.0
        )

    extra = f", {b_lbl}" if op == "layer_norm" else ""
    return Step(op, f"ember.{op}(x, {g_lbl}{extra}, eps={eps})", fn, ops, conditioning=conditioning)


def _finite_abs_max(a) -> float:
    a = np.abs(np.asarray(a, dtype=np.float64))
    a = a[np.isfinite(a)]
    return float(a.max()) if a.size else 0.0


def _rstd_max(x, eps: float, centred: bool) -> float:
    """The largest 1 / sqrt(var + eps) (or 1 / sqrt(mean(x^2) + eps)) of x's rows, float64."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0 or x.shape[-1] == 0 or x.size == 0:
        return 0.0
    with np.errstate(all="ignore"):
        spread = x.var(-1) if centred else np.square(x).mean(-1)
        rstd = 1.0 / np.sqrt(spread + eps)
    return _finite_abs_max(rstd)


def _as_matrix(x):
    """``x`` as [rows, last dim] (label and function)."""
    if x.ndim == 2 or x.ndim == 0:
        return "x", (lambda t: t)
    return "x.reshape(-1, x.shape[-1])", (lambda t: t.reshape(-1, t.shape[-1]))


@st.composite
def cross_entropy(draw, x, wild):
    lbl, mat = _as_matrix(x)
    n, c = (math.prod(x.shape[:-1]), x.shape[-1]) if x.ndim else (1, 1)
    targets = draw(index_operand((n,), c))
    s = draw(st.sampled_from([0.0, 0.1, 1.0]))
    return Step(
        "cross_entropy",
        f"ember.cross_entropy_per_sample({lbl}, a0, {s})",
        lambda t, y: ember.cross_entropy_per_sample(mat(t), y, s),
        (targets,),
        names=("reshape",),
        degree=1,
    )


@st.composite
def embedding(draw, x, wild):
    lbl, mat = _as_matrix(x)
    v = math.prod(x.shape[:-1]) if x.ndim else 1
    ids = draw(index_operand(tuple(draw(st.lists(st.integers(0, 3), max_size=2))), v))
    return Step(
        "embedding",
        f"ember.embedding({lbl}, a0)",
        lambda t, i: ember.embedding(mat(t), i),
        (ids,),
        names=("reshape",),
    )


@st.composite
def embedding_bag(draw, x, wild):
    lbl, mat = _as_matrix(x)
    v = math.prod(x.shape[:-1]) if x.ndim else 1
    mode = draw(st.sampled_from(["sum", "mean", "max"]))
    weighted = mode == "sum" and draw(st.booleans())
    sparse = draw(st.booleans())  # a row-sparse gradient of the table (compared densified)
    if draw(st.booleans()):  # flat indices and offsets
        n = draw(st.integers(0, 6))
        idx = draw(index_operand((n,), v))
        cuts = sorted(draw(st.lists(st.integers(0, n), min_size=1, max_size=4)))
        offsets = Operand(np.array([0] + cuts[1:], dtype=np.int64))
        psw = draw(operands(_float_like(x), (n,), wild, layout=False)) if weighted else None
        ops = (idx, offsets) + ((psw,) if psw is not None else ())

        def fn(t, i, o, *w):
            return ember.embedding_bag(
                mat(t), i, o, per_sample_weights=w[0] if w else None, mode=mode, sparse=sparse
            )

        return Step(
            "embedding_bag",
            f"ember.embedding_bag({lbl}, a0, offsets=a1, "
            f"per_sample_weights={'a2' if weighted else None}, mode={mode!r}, sparse={sparse})",
            fn,
            ops,
            names=("reshape",),
            degree=1,
        )
    b, length = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    idx = draw(index_operand((b, length), v))
    mask = draw(operands("bool", (b, length), False, layout=False))
    psw = draw(operands(_float_like(x), (b, length), wild, layout=False)) if weighted else None
    ops = (idx, mask) + ((psw,) if psw is not None else ())

    def padded(t, i, m, *w):
        return ember.embedding_bag(
            mat(t), i, mask=m, per_sample_weights=w[0] if w else None, mode=mode, sparse=sparse
        )

    return Step(
        "embedding_bag",
        f"ember.embedding_bag({lbl}, a0, mask=a1, "
        f"per_sample_weights={'a2' if weighted else None}, mode={mode!r}, sparse={sparse})",
        padded,
        ops,
        names=("reshape",),
        degree=1,
    )


@st.composite
def attention(draw, x, wild):
    if x.ndim == 4:
        lbl, as_q = "x", (lambda t: t)
    elif x.ndim in (2, 3):
        pad = (1,) * (4 - x.ndim)
        lbl, as_q = f"x.reshape({pad} + x.shape)", (lambda t: t.reshape(pad + t.shape))
    else:
        lbl, as_q = "x", (lambda t: t)
    b, h, _, dh = (1,) * (4 - x.ndim) + x.shape if 2 <= x.ndim <= 4 else (1, 1, 1, 1)
    sk = draw(st.integers(0, 4)) if draw(st.integers(0, 4)) == 0 else draw(st.integers(1, 4))
    name = x.dtype.name if draw(st.integers(0, 7)) else draw(st.sampled_from(FLOATS))
    k = draw(operands(name, (b, h, sk, dh), wild))
    v = draw(operands(name, (b, h, sk, dh), wild))
    mask = None
    if draw(st.booleans()):
        mask = draw(operands("bool", (b, sk), False, layout=False))
        if draw(st.integers(0, 3)) == 0:
            mask = Operand(np.ones((b, sk), dtype=bool))  # every key padded
    quiet = draw(st.booleans())
    scale = draw(st.sampled_from([None, 0.5, 2.0]))
    p = 0.25 if draw(st.integers(0, 3)) == 0 else 0.0
    ops = (k, v) + ((mask,) if mask is not None else ())

    def fn(t, kk, vv, *m):
        return ember.attention(
            as_q(t), kk, vv, mask_pad=m[0] if m else None, scale=scale, quiet=quiet, dropout_p=p
        )

    return Step(
        "attention",
        f"ember.attention({lbl}, a0, a1, mask_pad={'a2' if mask is not None else None}, "
        f"scale={scale}, quiet={quiet}, dropout_p={p})",
        fn,
        ops,
        seed=draw(st.integers(0, 2**20)),
        names=("reshape",),
        degree=3,
    )


@st.composite
def dropout(draw, x, wild):
    p = draw(st.sampled_from([0.0, 0.3, 1.0]))
    return Step(
        "dropout", f"ember.dropout(x, {p})", lambda t: ember.dropout(t, p), seed=draw(st.integers(0, 2**20))
    )


# ---- movement: views ----------------------------------------------------------------------------
def _factor(draw, n: int, ndim: int) -> tuple:
    """A random shape of ``ndim`` dims holding ``n`` elements."""
    if ndim == 0:
        return ()
    if n == 0:
        shape = [draw(st.integers(0, 3)) for _ in range(ndim)]
        shape[draw(st.integers(0, ndim - 1))] = 0
        return tuple(shape)
    shape = [1] * ndim
    rest, p = n, 2
    while rest > 1:
        while rest % p == 0:
            shape[draw(st.integers(0, ndim - 1))] *= p
            rest //= p
        p += 1
    return tuple(shape)


@st.composite
def view(draw, x, wild):
    n = x.ndim
    kinds = ["reshape", "unsqueeze", "expand", "slice", "flip"] + (["squeeze"] if n else [])
    kinds += ["permute", "transpose"] if n >= 2 else []
    kinds += ["narrow"] if n else []
    kind = draw(st.sampled_from(kinds))
    if kind == "reshape":
        if x.numel == 1 and draw(st.booleans()):
            shape = ()
        else:
            shape = _factor(draw, x.numel, draw(st.integers(1, 4)))
        if shape and x.numel and draw(st.integers(0, 3)) == 0:
            i = draw(st.integers(0, len(shape) - 1))
            shape = shape[:i] + (-1,) + shape[i + 1 :]
        return Step("reshape", f"x.reshape({shape})", lambda t: t.reshape(shape), view=True)
    if kind == "unsqueeze":
        d = draw(st.integers(-n - 1, n))
        return Step("unsqueeze", f"x.unsqueeze({d})", lambda t: t.unsqueeze(d), view=True, names=("reshape",))
    if kind == "squeeze":
        ones = [i for i, s in enumerate(x.shape) if s == 1]
        d = draw(st.sampled_from(ones)) if ones and draw(st.booleans()) else None
        return Step("squeeze", f"x.squeeze({d})", lambda t: t.squeeze(d), view=True, names=("reshape",))
    if kind == "expand":
        shape = tuple(draw(st.integers(0, 3)) if s == 1 and draw(st.booleans()) else s for s in x.shape)
        if draw(st.integers(0, 3)) == 0:
            shape = (draw(st.integers(1, 3)),) + shape
        return Step("expand", f"x.expand({shape})", lambda t: t.expand(shape), view=True)
    if kind == "slice":
        key = []
        for s in x.shape:
            choice = draw(st.integers(0, 5))
            if choice == 0 and s:
                key.append(draw(st.integers(-s, s - 1)))
            elif choice == 1:
                key.append(None)
            else:
                start = draw(st.integers(0, s))
                key.append(slice(start, draw(st.integers(start, s)), draw(st.integers(1, 3))))
        key = tuple(key)
        return Step("index", f"x[{_key_str(key)}]", lambda t: t[key], view=True)
    if kind == "flip":
        dims = tuple(
            draw(st.lists(st.integers(0, max(n - 1, 0)), min_size=1, max_size=max(n, 1), unique=True))
        )
        return Step("flip", f"x.flip({dims})", lambda t: t.flip(dims), view=True)
    if kind == "permute":
        perm = tuple(draw(st.permutations(range(n))))
        return Step("permute", f"x.permute({perm})", lambda t: t.permute(perm), view=True)
    if kind == "transpose":
        a, b = draw(st.integers(-n, n - 1)), draw(st.integers(-n, n - 1))
        return Step(
            "transpose",
            f"x.transpose({a}, {b})",
            lambda t: t.transpose(a, b),
            view=True,
            names=("swap_dims", "permute"),
        )
    d = draw(st.integers(0, n - 1))
    start = draw(st.integers(0, x.shape[d]))
    length = draw(st.integers(0, x.shape[d] - start))
    return Step(
        "narrow",
        f"x.narrow({d}, {start}, {length})",
        lambda t: t.narrow(d, start, length),
        view=True,
        names=("index",),
    )


def _key_str(key) -> str:
    def one(k):
        if k is None:
            return "None"
        if isinstance(k, slice):
            return f"{k.start}:{k.stop}:{k.step}"
        return repr(k)

    return ", ".join(one(k) for k in key) + ("," if len(key) == 1 else "")


# ---- movement: copies ---------------------------------------------------------------------------
@st.composite
def join(draw, x, wild):
    n = x.ndim
    kind = draw(st.sampled_from(["cat", "stack", "pad", "repeat"]))
    name = x.dtype.name if draw(st.integers(0, 3)) else draw(st.sampled_from(DTYPES))
    if kind == "cat":
        d = draw(st.integers(-max(n, 1), max(n, 1) - 1))
        shape = list(x.shape)
        if n:
            shape[d % n] = draw(st.integers(0, 3))
        a = draw(operands(name, tuple(shape), wild))
        return Step("cat", f"ember.cat([x, a0], {d})", lambda t, o: ember.cat([t, o], d), (a,))
    if kind == "stack":
        d = draw(st.integers(-n - 1, n))
        a = draw(operands(name, x.shape, wild))
        return Step(
            "stack",
            f"ember.stack([a0, x], {d})",
            lambda t, o: ember.stack([o, t], d),
            (a,),
            names=("cat", "unsqueeze", "reshape"),
        )
    if kind == "pad":
        pads = tuple(draw(st.lists(st.integers(0, 2), min_size=0, max_size=2 * n)))
        pads = pads[: len(pads) - len(pads) % 2]
        value = _scalar(draw, x.dtype.name, wild) if not x.dtype.is_bool else 0
        return Step("pad", f"x.pad({pads}, {value!r})", lambda t: t.pad(pads, value))
    reps = tuple(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n + 1)))
    return Step("repeat", f"x.repeat({reps})", lambda t: t.repeat(reps), names=("reshape", "tile"))


@st.composite
def indexing(draw, x, wild):
    n = x.ndim
    kinds = ["cast"] + (
        ["int_index", "bool_index", "gather", "index_select", "sort", "topk", "index_put", "scatter_add"]
        if n
        else []
    )
    kinds += ["one_hot"] if x.dtype.is_int else []
    kind = draw(st.sampled_from(kinds))
    if kind == "cast":
        target = draw(st.sampled_from(DTYPES))
        return Step(
            "cast", f"x.to(ember.{target})", lambda t: t.to(ember.dtype(target)), jumps=target not in FLOATS
        )
    if kind == "one_hot":
        c = draw(st.integers(1, 6))
        return Step("one_hot", f"x.one_hot({c})", lambda t: t.one_hot(c))
    d = draw(st.integers(0, n - 1))
    size = x.shape[d]
    if kind == "int_index":
        idx = draw(index_operand(tuple(draw(st.lists(st.integers(0, 3), max_size=2))), size, low=-size))
        key_lbl = ":, " * d + "a0"
        return Step("index", f"x[{key_lbl}]", lambda t, i: t[(slice(None),) * d + (i,)], (idx,))
    if kind == "bool_index":
        k = draw(st.integers(1, n))
        mask = draw(operands("bool", x.shape[:k], False, layout=False))
        return Step("index", "x[a0]", lambda t, m: t[m], (mask,))
    if kind == "gather":
        shape = tuple(
            draw(st.integers(0, s)) if i != d else draw(st.integers(0, 3)) for i, s in enumerate(x.shape)
        )
        idx = draw(index_operand(shape, size))
        return Step("gather", f"x.gather({d}, a0)", lambda t, i: t.gather(d, i), (idx,), names=("index",))
    if kind == "index_select":
        idx = draw(index_operand((draw(st.integers(0, 4)),), size))
        return Step("index_select", f"x.index_select({d}, a0)", lambda t, i: t.index_select(d, i), (idx,))
    if kind == "sort":
        desc, which = draw(st.booleans()), draw(st.sampled_from([0, 1]))
        return Step(
            "sort", f"x.sort({d}, descending={desc})[{which}]", lambda t: t.sort(d, desc)[which], jumps=True
        )
    if kind == "topk":
        k, largest, which = draw(st.integers(0, size)), draw(st.booleans()), draw(st.sampled_from([0, 1]))
        return Step(
            "topk",
            f"x.topk({k}, {d}, largest={largest})[{which}]",
            lambda t: t.topk(k, d, largest)[which],
            jumps=True,
            names=("sort", "gather"),
        )
    if kind == "index_put":
        idx = draw(index_operand((draw(st.integers(0, 4)),), x.shape[0], low=-x.shape[0]))
        values = draw(operands(x.dtype.name, x.shape[1:] if draw(st.booleans()) else (), wild))
        acc = draw(st.booleans())
        return Step(
            "index_put",
            f"x.index_put((a0,), a1, accumulate={acc})",
            lambda t, i, v: t.index_put((i,), v, accumulate=acc),
            (idx, values),
            names=("index",),
        )
    shape = tuple(
        draw(st.integers(0, s)) if i != d else draw(st.integers(0, 3)) for i, s in enumerate(x.shape)
    )
    idx = draw(index_operand(shape, size))
    src = draw(operands(x.dtype.name, shape, wild))
    return Step(
        "scatter_add", f"x.scatter_add({d}, a0, a1)", lambda t, i, s: t.scatter_add(d, i, s), (idx, src)
    )


STEPS = {
    "unary": unary,
    "binary": binary,
    "where": where,
    "clamp": clamp,
    "reduction": reduction,
    "matmul": matmul,
    "softmax": softmax,
    "norm": norm,
    "cross_entropy": cross_entropy,
    "embedding": embedding,
    "embedding_bag": embedding_bag,
    "attention": attention,
    "dropout": dropout,
    "view": view,
    "join": join,
    "indexing": indexing,
}
"""Step strategies by family; each takes the current tensor (on ``reference``) and the
program's value regime."""


@st.composite
def steps(draw, x, wild, families):
    """One step of a family drawn from ``families`` (a dict family -> weight)."""
    names = [f for f, w in families.items() for _ in range(w)]
    return draw(STEPS[draw(st.sampled_from(names))](x, wild))


def seed_gradient(shape, dtype, index: int) -> np.ndarray:
    """The output gradient fed to a step's backward: fixed by the step's position."""
    return np.random.default_rng(1000 + index).standard_normal(shape).astype(np_dtype(dtype.name))


__all__ = ["STEPS", "Step", "arrays", "seed_gradient", "steps"]
