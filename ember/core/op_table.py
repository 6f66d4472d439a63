"""The op table: every tensor op ember has, declared once.

Each :class:`Op` row says what the op is (its name and kind), which dtype its result has,
how its gradient is computed and what its forward keeps for it, which function implements
it, which ``Tensor`` methods and top-level ``ember`` functions it has, and which backend
methods compute it. Built from it:

* the ``Tensor`` methods of :class:`ember.tensor.op_methods.OpMethods` and the top-level
  functions of :mod:`ember.tensor.op_functions`, both generated source files
  (``python -m ember.tensor.op_codegen`` rewrites them; a test fails when they are stale);
* the backend contract's op lists (``UNARY_OPS``, ``BINARY_OPS``, ``REDUCE_OPS`` in
  :mod:`ember.kernels.backend`);
* what the element-wise ops save for backward and which of them compute in float
  (:mod:`ember.tensor.ops.elementwise`).

``tests/tensor/test_op_table.py`` checks the table against the code: every op with a rule
has one in :mod:`ember.tensor.vjp` (and every rule an op), its forward saves exactly
``saves``, its backend methods exist on the reference backend, its dtype rule holds, and
its methods and functions exist.

Adding a unary op: one row here (``_unary``), its rule in ``vjp.py`` when it has a gradient,
its case in ``reference.py`` when NumPy has no function of that name, then the codegen.
Adding a fused element-wise op: docs/adding-a-fused-op.md.

This module is data: it imports nothing, so anything may read it cheaply.
"""

from __future__ import annotations

from typing import NamedTuple

# ---- kinds: how an op is computed ----------------------------------------------------------
UNARY = "unary"  # backend.unary(name, x)
BINARY = "binary"  # backend.binary(name, a, b), broadcasting
REDUCE = "reduce"  # backend.reduce(name, x, axes, keepdim)
ARG_REDUCE = "arg_reduce"  # backend.arg_reduce(name, x, axis, keepdim)
PRIMITIVE = "primitive"  # the backend primitives named in ``backend``
FUSED = "fused"  # a backend composite (forward and backward), fused on cpu/cuda
POINTWISE = (
    "pointwise"  # a fused element-wise composite of same-shape float tensors: backend.<name>(*operands)
)
COMPOSED = "composed"  # written with other ops of this table; no backend method of its own

# ---- gradients ---------------------------------------------------------------------------------
RULE = "rule"  # the op records a node of its name; vjp.VJP[name] is its backward
THROUGH = "through"  # gradients flow through the ops it is written with (or the node it records)
NONE = "none"  # no gradient: integer, bool or piecewise-constant results

# ---- dtype rules -------------------------------------------------------------------------------
SAME = "same"
FLOAT = "float"
PROMOTE = "promote"
PROMOTE_FLOAT = "promote_float"
BOOL = "bool"
LOGICAL = "logical"
COUNT = "count"
INT64 = "int64"
FLOAT_ONLY = "float_only"
TARGET = "target"

DTYPE_RULES = {
    SAME: "the input's dtype",
    FLOAT: "the input's dtype when float; int inputs compute in the default float dtype",
    PROMOTE: "the operands' promoted dtype (a Python scalar takes the tensor's)",
    PROMOTE_FLOAT: "the operands' promoted dtype, the default float dtype for ints",
    BOOL: "bool",
    LOGICAL: "bool, from bool operands (logical_not takes numbers too)",
    COUNT: "the input's dtype; bool counts as int64",
    INT64: "int64 (indices)",
    FLOAT_ONLY: "the input's dtype, which must be float",
    TARGET: "the dtype asked for",
}
"""What each dtype rule means, as the generated docstrings say it."""


class Op(NamedTuple):
    """One op of the table."""

    name: str
    """The op's name: the ``op`` of the graph node it records and its key in ``vjp.VJP``;
    for the unary, binary, reduce and arg-reduce kinds also the name the backend takes."""
    kind: str
    """How it is computed: UNARY, BINARY, REDUCE, ARG_REDUCE, PRIMITIVE, FUSED, POINTWISE or COMPOSED."""
    dtype: str
    """Its result's dtype rule: a key of :data:`DTYPE_RULES`."""
    grad: str
    """RULE, THROUGH or NONE."""
    saves: tuple
    """What the forward keeps on the node for the backward rule (the node's ``ctx`` fields)."""
    function: str
    """The function implementing it, as ``module.name`` under ``ember.tensor`` (for the
    unary and binary kinds the function that takes the op's name first)."""
    methods: tuple
    """Tensor methods and operators generated from ``function``: its parameters, ``self``
    the first operand."""
    reflected: tuple
    """Reflected operators generated from ``function`` (``__radd__``): ``self`` the second operand."""
    written: tuple
    """Tensor methods, properties and operators of the op written by hand in ``tensor.py``
    (arguments in another order, or more than a call)."""
    top_level: tuple
    """Functions of the ``ember`` namespace generated from ``function``."""
    backend: tuple
    """The backend methods computing it: the reference implementation every backend matches."""
    doc: str
    """The docstring of the generated unary and binary methods and functions (the others
    copy the docstring of ``function``)."""


def _op(
    name,
    kind,
    dtype,
    grad,
    function,
    *,
    saves=(),
    methods=(),
    reflected=(),
    written=(),
    top_level=(),
    backend=(),
    doc="",
):
    return Op(
        name,
        kind,
        dtype,
        grad,
        tuple(saves),
        function,
        tuple(methods),
        tuple(reflected),
        tuple(written),
        tuple(top_level),
        tuple(backend),
        doc,
    )


def _unary(name, dtype, saves, doc, *, operator=None, written=()):
    """A unary primitive; ``saves`` None when it has no gradient; ``operator`` the name of its
    Python operator (``"neg"``: ``__neg__``)."""
    return _op(
        name,
        UNARY,
        dtype,
        NONE if saves is None else RULE,
        "ops.elementwise.unary",
        saves=saves or (),
        methods=(name,) + ((f"__{operator}__",) if operator else ()),
        written=written,
        top_level=(name,),
        backend=("unary",),
        doc=doc,
    )


def _binary(name, dtype, saves, doc, *, methods=None, operator=None, top_level=None, written=()):
    """A binary primitive with broadcasting; ``saves`` None when it has no gradient. ``operator``
    is the name of its Python operator (``"sub"``: ``__sub__`` and the reflected ``__rsub__``),
    generated unless ``written`` by hand."""
    methods = (name,) if methods is None else methods
    operators = tuple(m for m in ((f"__{operator}__",) if operator else ()) if m not in written)
    return _op(
        name,
        BINARY,
        dtype,
        NONE if saves is None else RULE,
        "ops.elementwise.binary",
        saves=saves or (),
        methods=methods + operators,
        reflected=(f"__r{operator}__",) if operator else (),
        written=written,
        top_level=(name,) if top_level is None else top_level,
        backend=("binary",),
        doc=doc,
    )


def _pointwise(name, operands, doc, *, methods=None):
    """A fused element-wise op of ``operands`` (float tensors of one shape), computed by the
    backend composite ``name`` and differentiated by ``name + "_backward"`` (which takes the
    operands and the output's gradient and returns one gradient per operand); its function is
    the generic :func:`ember.tensor.ops.pointwise.pointwise`."""
    return _op(
        name,
        POINTWISE,
        FLOAT_ONLY,
        RULE,
        "ops.pointwise.pointwise",
        saves=operands,
        methods=(name,) if methods is None else methods,
        top_level=(name,),
        backend=(name, f"{name}_backward"),
        doc=doc,
    )


def _comparison(name, doc, *, aliases=()):
    """A comparison: a bool result, no gradient; Python reflects its operator itself (``2 < x``
    is ``x > 2``)."""
    return _binary(name, BOOL, None, doc, methods=(name,) + aliases + (f"__{name}__",))


def _tensor_op(name, kind, dtype, grad, function, **kw):
    """An op whose method and top-level function share its name (unless given)."""
    kw.setdefault("methods", (name,))
    kw.setdefault("top_level", (name,))
    return _op(name, kind, dtype, grad, function, **kw)


_REDUCED = ("axes", "keepdim")
_NN_ONLY = {"methods": ()}  # functions of the network layers: top-level only, no method

OPS = (
    # ---- unary math (element-wise) -----------------------------------------------------------
    _unary("neg", SAME, (), "``-x``, element-wise.", operator="neg"),
    _unary("exp", FLOAT, ("y",), "``e ** x``, element-wise."),
    _unary("log", FLOAT, ("x",), "The natural logarithm, element-wise."),
    _unary("log1p", FLOAT, ("x",), "``log(1 + x)``, element-wise (accurate for small x)."),
    _unary("expm1", FLOAT, ("y",), "``exp(x) - 1``, element-wise (accurate for small x)."),
    _unary("sqrt", FLOAT, ("y",), "The square root, element-wise."),
    _unary("rsqrt", FLOAT, ("y",), "``1 / sqrt(x)``, element-wise."),
    _unary(
        "abs",
        SAME,
        ("x",),
        "The absolute value, element-wise (its gradient at 0 and NaN is 0).",
        operator="abs",
    ),
    _unary("sign", SAME, None, "-1, 0 or 1 by the sign of each element."),
    _unary("sin", FLOAT, ("x",), "The sine (of radians), element-wise."),
    _unary("cos", FLOAT, ("x",), "The cosine (of radians), element-wise."),
    _unary("tanh", FLOAT, ("y",), "The hyperbolic tangent, element-wise."),
    _unary("sigmoid", FLOAT, ("y",), "``1 / (1 + exp(-x))``, element-wise (computed without overflow)."),
    _unary("erf", FLOAT, ("x",), "The Gauss error function, element-wise."),
    _unary("relu", SAME, ("x",), "``max(x, 0)``, element-wise (its gradient at 0 is 0, at NaN 1)."),
    _unary("reciprocal", FLOAT, ("y",), "``1 / x``, element-wise."),
    _unary("square", SAME, ("x",), "``x * x``, element-wise."),
    _unary("floor", SAME, None, "Each element rounded down to an integer value."),
    _unary("ceil", SAME, None, "Each element rounded up to an integer value."),
    _unary("round", SAME, None, "Each element rounded to the nearest integer value (halves to even)."),
    _unary(
        "logical_not",
        LOGICAL,
        None,
        "``not x``, element-wise (a bool result: True where x is 0 or False).",
        written=("__invert__",),
    ),
    _unary("isnan", BOOL, None, "True where an element is NaN."),
    _unary("isinf", BOOL, None, "True where an element is +inf or -inf."),
    _unary("isfinite", BOOL, None, "True where an element is neither NaN nor infinite."),
    # ---- binary arithmetic, comparisons and logic (element-wise, broadcasting) -----------------
    # add's operator is written by hand (``dense + row-sparse`` hands over to the sparse side)
    _binary("add", PROMOTE, (), "``a + b``.", operator="add", written=("__add__",)),
    _binary("sub", PROMOTE, (), "``a - b``.", operator="sub"),
    _binary("mul", PROMOTE, ("a", "b"), "``a * b``.", operator="mul"),
    _binary("div", PROMOTE_FLOAT, ("a", "b"), "``a / b`` (true division).", operator="truediv"),
    _binary(
        "floordiv",
        PROMOTE,
        None,
        "``a // b``: the quotient rounded toward -inf.",
        methods=("floor_divide",),
        top_level=("floor_divide",),
        operator="floordiv",
    ),
    _binary(
        "mod",
        PROMOTE,
        ("a", "b"),
        "``a % b``, with the sign of b (as Python's %).",
        methods=("remainder",),
        top_level=("remainder",),
        operator="mod",
    ),
    _binary(
        "pow", PROMOTE, ("a", "b", "y"), "``a ** b`` (the gradient of b is 0 where a <= 0).", operator="pow"
    ),
    _binary(
        "maximum",
        PROMOTE,
        ("a", "b"),
        "The larger of a and b, element-wise (a tie gives each half the gradient, a NaN both all of it).",
    ),
    _binary(
        "minimum",
        PROMOTE,
        ("a", "b"),
        "The smaller of a and b, element-wise (a tie gives each half the gradient, a NaN both all of it).",
    ),
    _comparison("eq", "``a == b``, element-wise.", aliases=("equal",)),
    _comparison("ne", "``a != b``, element-wise."),
    _comparison("lt", "``a < b``, element-wise.", aliases=("lower",)),
    _comparison("le", "``a <= b``, element-wise.", aliases=("lower_equal",)),
    _comparison("gt", "``a > b``, element-wise.", aliases=("greater",)),
    _comparison("ge", "``a >= b``, element-wise.", aliases=("greater_equal",)),
    _binary("logical_and", LOGICAL, None, "``a and b`` of bool tensors, element-wise.", operator="and"),
    _binary("logical_or", LOGICAL, None, "``a or b`` of bool tensors, element-wise.", operator="or"),
    _binary("logical_xor", LOGICAL, None, "``a != b`` of bool tensors, element-wise.", operator="xor"),
    # ---- selection ----------------------------------------------------------------------------
    _op(
        "where",
        PRIMITIVE,
        PROMOTE,
        RULE,
        "ops.elementwise.where",
        saves=("cond",),
        written=("where", "mask_where"),
        top_level=("where",),
        backend=("where",),
    ),
    _tensor_op(
        "clamp",
        COMPOSED,
        PROMOTE,
        RULE,
        "ops.elementwise.clamp",
        saves=("x", "low", "high"),
        written=("clamp_min", "clamp_max"),
    ),
    _tensor_op(
        "mask_fill",
        COMPOSED,
        SAME,
        THROUGH,
        "ops.elementwise.mask_fill",
        methods=("mask_fill", "masked_fill"),
    ),
    # ---- reductions and scans -----------------------------------------------------------------
    _tensor_op("sum", REDUCE, COUNT, RULE, "ops.reduction.sum", saves=_REDUCED, backend=("reduce",)),
    _tensor_op(
        "prod", REDUCE, COUNT, RULE, "ops.reduction.prod", saves=_REDUCED + ("x", "y"), backend=("reduce",)
    ),
    _tensor_op(
        "max", REDUCE, SAME, RULE, "ops.reduction.max", saves=_REDUCED + ("x", "y"), backend=("reduce",)
    ),
    _tensor_op(
        "min", REDUCE, SAME, RULE, "ops.reduction.min", saves=_REDUCED + ("x", "y"), backend=("reduce",)
    ),
    _tensor_op("all", REDUCE, BOOL, NONE, "ops.reduction.all", backend=("reduce",)),
    _tensor_op("any", REDUCE, BOOL, NONE, "ops.reduction.any", backend=("reduce",)),
    _tensor_op("argmax", ARG_REDUCE, INT64, NONE, "ops.reduction.argmax", backend=("arg_reduce",)),
    _tensor_op("argmin", ARG_REDUCE, INT64, NONE, "ops.reduction.argmin", backend=("arg_reduce",)),
    _tensor_op("mean", COMPOSED, FLOAT, THROUGH, "ops.reduction.mean"),
    _tensor_op("var", COMPOSED, FLOAT, THROUGH, "ops.reduction.var"),
    _tensor_op("std", COMPOSED, FLOAT, THROUGH, "ops.reduction.std"),
    _tensor_op("logsumexp", COMPOSED, FLOAT, THROUGH, "ops.reduction.logsumexp"),
    _tensor_op("cumsum", PRIMITIVE, COUNT, RULE, "ops.reduction.cumsum", saves=("dim",), backend=("cumsum",)),
    # ---- dtype and device --------------------------------------------------------------------
    _op(
        "cast",
        PRIMITIVE,
        TARGET,
        RULE,
        "ops.elementwise.cast",
        written=("to", "float", "double", "half", "int", "long", "bool"),
        backend=("cast",),
    ),
    _op(
        "to_device",
        PRIMITIVE,
        SAME,
        RULE,
        "tensor._to_device",
        saves=("device",),
        written=("to",),
        backend=("to_host", "from_host"),
    ),
    # ---- movement -----------------------------------------------------------------------------
    _tensor_op(
        "reshape",
        PRIMITIVE,
        SAME,
        RULE,
        "ops.movement.reshape",
        methods=("reshape", "view"),
        backend=("reshape",),
    ),
    _tensor_op(
        "permute",
        PRIMITIVE,
        SAME,
        RULE,
        "ops.movement.permute",
        saves=("axes",),
        written=("T",),
        backend=("permute",),
    ),
    _tensor_op("swap_dims", COMPOSED, SAME, THROUGH, "ops.movement.swap_dims"),
    _tensor_op("transpose", COMPOSED, SAME, THROUGH, "ops.movement.transpose"),
    _tensor_op("flatten", COMPOSED, SAME, THROUGH, "ops.movement.flatten"),
    _tensor_op("squeeze", COMPOSED, SAME, THROUGH, "ops.movement.squeeze"),
    _tensor_op("unsqueeze", COMPOSED, SAME, THROUGH, "ops.movement.unsqueeze"),
    _tensor_op("expand", PRIMITIVE, SAME, RULE, "ops.movement.expand", top_level=(), backend=("expand",)),
    # top-level ``repeat`` would read as NumPy's (which repeats elements, not the whole tensor)
    _tensor_op(
        "repeat",
        PRIMITIVE,
        SAME,
        RULE,
        "ops.movement.repeat",
        saves=("reps", "shape"),
        top_level=(),
        backend=("tile",),
    ),
    _tensor_op("narrow", COMPOSED, SAME, THROUGH, "ops.movement.narrow"),
    _tensor_op("flip", PRIMITIVE, SAME, RULE, "ops.movement.flip", saves=("axes",), backend=("flip",)),
    _tensor_op(
        "cat",
        PRIMITIVE,
        PROMOTE,
        RULE,
        "ops.movement.cat",
        saves=("dim", "sizes"),
        methods=(),
        backend=("cat",),
    ),
    _tensor_op("stack", COMPOSED, PROMOTE, THROUGH, "ops.movement.stack", methods=()),
    _tensor_op("split", COMPOSED, SAME, THROUGH, "ops.movement.split"),
    _tensor_op("chunk", COMPOSED, SAME, THROUGH, "ops.movement.chunk"),
    _tensor_op("pad", PRIMITIVE, SAME, RULE, "ops.movement.pad", saves=("width",), backend=("pad",)),
    # ---- indexing -----------------------------------------------------------------------------
    _op(
        "index",
        PRIMITIVE,
        SAME,
        RULE,
        "ops.indexing.getitem",
        saves=("key", "shape"),
        methods=("__getitem__",),
        backend=("getitem", "index_add"),
    ),
    _tensor_op(
        "index_put",
        PRIMITIVE,
        SAME,
        RULE,
        "ops.indexing.index_put",
        saves=("key", "accumulate"),
        written=("__setitem__",),
        backend=("index_put", "getitem"),
    ),
    _tensor_op(
        "gather",
        PRIMITIVE,
        SAME,
        RULE,
        "ops.indexing.gather",
        saves=("dim", "index", "shape"),
        backend=("gather", "scatter_add"),
    ),
    _tensor_op(
        "scatter_add",
        PRIMITIVE,
        SAME,
        RULE,
        "ops.indexing.scatter_add",
        saves=("dim", "index"),
        backend=("scatter_add", "gather"),
    ),
    _tensor_op(
        "index_select",
        PRIMITIVE,
        SAME,
        RULE,
        "ops.indexing.index_select",
        saves=("dim", "index", "shape"),
        methods=("index_select", "select"),
        backend=("index_select", "index_add"),
    ),
    _tensor_op("take_along_dim", COMPOSED, SAME, THROUGH, "ops.indexing.take_along_dim"),
    _tensor_op("one_hot", PRIMITIVE, INT64, NONE, "ops.indexing.one_hot", backend=("scatter_add",)),
    # the values of a sort record a gather node (differentiated by gather's rule)
    _tensor_op("sort", PRIMITIVE, SAME, THROUGH, "ops.indexing.sort", backend=("sort",)),
    _tensor_op("argsort", COMPOSED, INT64, NONE, "ops.indexing.argsort"),
    _tensor_op("topk", COMPOSED, SAME, THROUGH, "ops.indexing.topk"),
    # ---- linear algebra -----------------------------------------------------------------------
    _tensor_op(
        "matmul",
        PRIMITIVE,
        PROMOTE,
        RULE,
        "ops.linalg.matmul",
        saves=("a", "b"),
        methods=("matmul", "__matmul__"),
        reflected=("__rmatmul__",),
        backend=("matmul",),
    ),
    _tensor_op(
        "linear",
        FUSED,
        PROMOTE,
        RULE,
        "ops.nn.linear",
        saves=("x", "weight"),
        backend=("linear",),
        **_NN_ONLY,
    ),
    # ---- activations composed from the primitives -----------------------------------------------
    _tensor_op("silu", COMPOSED, FLOAT, RULE, "ops.elementwise.silu", saves=("x",)),
    _tensor_op(
        "softplus", COMPOSED, FLOAT, RULE, "ops.elementwise.softplus", saves=("x", "beta", "threshold")
    ),
    _tensor_op("leaky_relu", COMPOSED, FLOAT, THROUGH, "ops.elementwise.leaky_relu"),
    _tensor_op("quiet_softmax", COMPOSED, FLOAT_ONLY, THROUGH, "ops.nn.quiet_softmax", **_NN_ONLY),
    # ---- fused composites: one backend kernel forward, one backward ---------------------------
    _tensor_op(
        "softmax",
        FUSED,
        FLOAT_ONLY,
        RULE,
        "ops.nn.softmax",
        saves=("y",),
        backend=("softmax", "softmax_backward"),
    ),
    _tensor_op(
        "log_softmax",
        FUSED,
        FLOAT_ONLY,
        RULE,
        "ops.nn.log_softmax",
        saves=("y",),
        backend=("log_softmax", "log_softmax_backward"),
    ),
    _tensor_op(
        "gelu",
        FUSED,
        FLOAT_ONLY,
        RULE,
        "ops.nn.gelu",
        saves=("x", "approximate"),
        backend=("gelu", "gelu_backward"),
    ),
    _tensor_op(
        "layer_norm",
        FUSED,
        FLOAT_ONLY,
        RULE,
        "ops.nn.layer_norm",
        saves=("x", "mean", "rstd", "gamma"),
        backend=("layer_norm", "layer_norm_backward"),
        **_NN_ONLY,
    ),
    _tensor_op(
        "rms_norm",
        FUSED,
        FLOAT_ONLY,
        RULE,
        "ops.nn.rms_norm",
        saves=("x", "rstd", "gamma"),
        backend=("rms_norm", "rms_norm_backward"),
        **_NN_ONLY,
    ),
    _tensor_op(
        "cross_entropy",
        FUSED,
        FLOAT_ONLY,
        RULE,
        "ops.nn.cross_entropy_per_sample",
        saves=("logits", "targets", "lse", "smoothing"),
        top_level=("cross_entropy_per_sample",),
        backend=("cross_entropy", "cross_entropy_backward"),
        **_NN_ONLY,
    ),
    _tensor_op(
        "embedding",
        FUSED,
        FLOAT_ONLY,
        RULE,
        "ops.nn.embedding",
        saves=("ids", "num"),
        backend=("embedding", "embedding_backward"),
        **_NN_ONLY,
    ),
    _tensor_op(
        "embedding_bag",
        FUSED,
        FLOAT_ONLY,
        RULE,
        "ops.nn.embedding_bag",
        saves=("indices", "bounds", "mode", "max_pos", "num", "sparse", "psw", "weight"),
        backend=(
            "embedding_bag",
            "embedding_bag_backward",
            "embedding_bag_weights_backward",
            "rows_to_dense",
        ),
        **_NN_ONLY,
    ),
    _tensor_op(
        "dropout",
        FUSED,
        FLOAT_ONLY,
        RULE,
        "ops.nn.dropout",
        saves=("p", "seed"),
        backend=("dropout", "dropout_backward"),
        **_NN_ONLY,
    ),
    _tensor_op(
        "attention",
        FUSED,
        FLOAT_ONLY,
        RULE,
        "ops.nn.attention",
        saves=("q", "k", "v", "out", "lse", "mask", "scale", "quiet", "p", "seed"),
        backend=("attention", "attention_backward"),
        **_NN_ONLY,
    ),
    # ---- fused element-wise ops: one kernel forward, one backward -------------------------------
    _pointwise(
        "swiglu",
        ("a", "b"),
        "``silu(a) * b = a * sigmoid(a) * b``, element-wise: the SwiGLU gate, fused.",
    ),
)
"""Every op, grouped by family."""

BY_NAME = {op.name: op for op in OPS}
"""The ops by name."""


def names(
    kind: str | None = None, *, dtype: str | None = None, grad: str | None = None, saves: tuple | None = None
) -> tuple:
    """The names of the ops matching every given field, in table order."""
    return tuple(
        op.name
        for op in OPS
        if (kind is None or op.kind == kind)
        and (dtype is None or op.dtype == dtype)
        and (grad is None or op.grad == grad)
        and (saves is None or op.saves == saves)
    )
