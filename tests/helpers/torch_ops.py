"""The op map of the PyTorch differential test: every op of ember's op table and of
``ember.nn.functional``, plus the ``ember.nn`` composites built from modules (losses,
pooling, convolution), each with its PyTorch counterpart, or listed in :data:`NO_TORCH` with
the reason it has none.

A row (:class:`Case`) names an input family of :mod:`helpers.torch_compare` and one or more
*forms*: ``(label, ember_fn, torch_fn)``, both functions taking the family's tensors in the
same order. Where PyTorch's own result is undefined the form is left out and the reason
written in :data:`UNDEFINED`; where ember refuses an input PyTorch accepts, by design,
:data:`EMBER_REJECTS` says why (and the test checks that ember raises a clear error there).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

import ember
import ember.nn as enn
from ember.nn import functional as EF
from ember.nn.conv import conv_nd
from helpers.differential_values import DTYPES, FLOATS


@dataclass(frozen=True)
class Case:
    inputs: str
    """The input family (a key of ``helpers.torch_compare.FAMILIES``)."""
    forms: tuple
    """``((label, ember_fn, torch_fn), ...)``."""
    dtypes: tuple = DTYPES
    """The dtypes tried: PyTorch's and ember's refusals are compared as well."""
    grad: bool = True
    """Compare gradients (float32/float64) too."""
    rtol: float = 0.0
    """A larger relative tolerance than the dtype's, where PyTorch rounds a constant coarser."""
    constants: tuple = ()
    """Indices of float inputs that take no gradient (PyTorch refuses one for them)."""


def one(ember_fn, torch_fn, inputs: str, **kw) -> Case:
    return Case(inputs, (("", ember_fn, torch_fn),), **kw)


def _dims(ember_fn, torch_fn, dims=(-1, 0, None), **kw) -> Case:
    """A reduction over each of ``dims`` (None: every dim), keepdim off, and keepdim on over -1."""
    forms = tuple(
        (f"dim={d}", lambda x, d=d: ember_fn(x, d), lambda x, d=d: torch_fn(x, d, False)) for d in dims
    )
    forms += (("keepdim", lambda x: ember_fn(x, -1, True), lambda x: torch_fn(x, -1, True)),)
    return Case("rows", forms, **kw)


def _torch_reduce(name):
    def reduce(x, dim, keepdim):
        if dim is None:
            return getattr(torch, name)(x)
        return getattr(torch, name)(x, dim, keepdim=keepdim)

    return reduce


def _amax(name):
    def reduce(x, dim, keepdim):
        return getattr(torch, name)(x, () if dim is None else dim, keepdim=keepdim)

    return reduce


def _unary(name, torch_fn=None) -> Case:
    return one(getattr(ember, name), torch_fn or getattr(torch, name), "x")


def _binary(name, torch_fn) -> Case:
    return one(getattr(ember, name), torch_fn, "xy")


def _torch_quiet_softmax(x, dim=-1):
    # exp(x) / (1 + Σ exp(x)), shifted by max(x, 0) as ember's definition (and Burn's) reads
    m = torch.clamp(torch.amax(x, dim, keepdim=True), min=0.0).detach()
    e = torch.exp(x - m)
    return e / (e.sum(dim, keepdim=True) + torch.exp(-m))


def _torch_shrink(x, lambd=0.5, bias=0.5):
    return torch.where(x > lambd, x - bias, torch.where(x < -lambd, x + bias, torch.zeros_like(x)))


def _torch_bag(w, idx, offsets):
    return F.embedding_bag(idx, w, offsets, mode="mean")


def _ember_bag(w, idx, offsets):
    return ember.embedding_bag(w, idx, offsets, mode="mean")


def _pad_mask(q):
    return ember.tensor([[False, False, False, True, False]], device=q.device)


def _conv(x, w, b):
    return conv_nd(x, w, b, (1, 1), ((1, 0), (0, 1)), (1, 1), 1)


def _torch_conv(x, w, b):
    return F.conv2d(F.pad(x, (0, 1, 1, 0)), w, b)


def _module(config):
    """A module of ``config`` built on the first input's device and (float) dtype, called."""

    def call(*xs):
        dtype = xs[0].dtype if xs[0].dtype.is_float else None
        return config.init(device=xs[0].device, dtype=dtype)(*xs)

    return call


def _conv1d(x, w, b):
    return conv_nd(x, w, b, (2,), ((1, 1),), (1,), 1)


_TABLE = {
    # ---- unary math ---------------------------------------------------------------------------
    "neg": one(lambda x: -x, torch.neg, "x"),
    "exp": _unary("exp"),
    "log": _unary("log"),
    "log1p": _unary("log1p"),
    "expm1": _unary("expm1"),
    "sqrt": _unary("sqrt"),
    "rsqrt": _unary("rsqrt"),
    "abs": one(abs, torch.abs, "x"),
    "sign": _unary("sign"),
    "sin": _unary("sin"),
    "cos": _unary("cos"),
    "tanh": _unary("tanh"),
    "sigmoid": _unary("sigmoid"),
    "erf": _unary("erf"),
    "relu": _unary("relu"),
    "reciprocal": _unary("reciprocal"),
    "square": _unary("square"),
    "floor": _unary("floor"),
    "ceil": _unary("ceil"),
    "round": _unary("round"),
    "logical_not": _unary("logical_not"),
    "isnan": _unary("isnan"),
    "isinf": _unary("isinf"),
    "isfinite": _unary("isfinite"),
    # ---- binary -------------------------------------------------------------------------------
    "add": _binary("add", torch.add),
    "sub": _binary("sub", torch.sub),
    "mul": _binary("mul", torch.mul),
    "div": _binary("div", torch.div),
    "floordiv": one(ember.floor_divide, torch.floor_divide, "xy", grad=False),
    "mod": _binary("remainder", torch.remainder),
    "pow": _binary("pow", torch.pow),
    "maximum": _binary("maximum", torch.maximum),
    "minimum": _binary("minimum", torch.minimum),
    "eq": _binary("eq", torch.eq),
    "ne": _binary("ne", torch.ne),
    "lt": _binary("lt", torch.lt),
    "le": _binary("le", torch.le),
    "gt": _binary("gt", torch.gt),
    "ge": _binary("ge", torch.ge),
    "logical_and": _binary("logical_and", torch.logical_and),
    "logical_or": _binary("logical_or", torch.logical_or),
    "logical_xor": _binary("logical_xor", torch.logical_xor),
    # ---- selection ----------------------------------------------------------------------------
    "where": one(ember.where, torch.where, "where"),
    "clamp": Case(
        "clamp",
        (
            ("scalars", lambda x, lo, hi: ember.clamp(x, -1, 2), lambda x, lo, hi: torch.clamp(x, -1, 2)),
            (
                "min_only",
                lambda x, lo, hi: ember.clamp(x, min=0.5),
                lambda x, lo, hi: torch.clamp(x, min=0.5),
            ),
            ("tensors", lambda x, lo, hi: ember.clamp(x, lo, hi), lambda x, lo, hi: torch.clamp(x, lo, hi)),
        ),
    ),
    "mask_fill": one(lambda x, m: x.mask_fill(m, -1), lambda x, m: x.masked_fill(m, -1), "mask"),
    # ---- reductions and scans -----------------------------------------------------------------
    "sum": _dims(ember.sum, _torch_reduce("sum")),
    # torch.prod(x)'s backward returns 0 everywhere when x holds two zeros, even beside a NaN
    # (the product of the others is then NaN); its dim form computes the products exactly
    "prod": _dims(
        ember.prod, lambda x, d, k: torch.prod(x.flatten(), 0) if d is None else torch.prod(x, d, k)
    ),
    "max": _dims(ember.max, _amax("amax")),
    "min": _dims(ember.min, _amax("amin")),
    "all": _dims(ember.all, _torch_reduce("all")),
    "any": _dims(ember.any, _torch_reduce("any")),
    "argmax": _dims(ember.argmax, _torch_reduce("argmax")),
    "argmin": _dims(ember.argmin, _torch_reduce("argmin")),
    "mean": _dims(ember.mean, _torch_reduce("mean")),
    "var": _dims(ember.var, _torch_reduce("var")),
    "std": _dims(ember.std, _torch_reduce("std")),
    "logsumexp": _dims(
        ember.logsumexp, lambda x, d, k: torch.logsumexp(x, (0, 1) if d is None else d, keepdim=k)
    ),
    "cumsum": Case(
        "rows",
        tuple((f"dim={d}", lambda x, d=d: x.cumsum(d), lambda x, d=d: torch.cumsum(x, d)) for d in (-1, 0)),
    ),
    # ---- dtype and device ---------------------------------------------------------------------
    "cast": Case(
        "x",
        tuple(
            (f"to_{t}", lambda x, t=t: x.to(t), lambda x, t=t: x.to(getattr(torch, t)))
            for t in ("float32", "float64", "float16", "int64", "bool")
        ),
    ),
    "to_device": one(lambda x: x.to("reference").to(x.device), lambda x: x.to("cpu"), "x"),
    # ---- movement -----------------------------------------------------------------------------
    "reshape": one(lambda x: x.reshape(-1, 2), lambda x: x.reshape(-1, 2), "rows_nonempty"),
    "permute": one(lambda x: x.permute(1, 0), lambda x: x.permute(1, 0), "rows"),
    "swap_dims": one(lambda x: x.swap_dims(0, 1), lambda x: x.transpose(0, 1), "rows"),
    "transpose": one(lambda x: x.transpose(), lambda x: x.transpose(-2, -1), "rows"),
    "flatten": one(lambda x: x.flatten(), lambda x: x.flatten(), "rows"),
    "squeeze": one(lambda x: x.unsqueeze(1).squeeze(1), lambda x: x.unsqueeze(1).squeeze(1), "rows"),
    "unsqueeze": one(lambda x: x.unsqueeze(0), lambda x: x.unsqueeze(0), "rows"),
    "expand": one(
        lambda x: x.unsqueeze(0).expand(3, -1, -1), lambda x: x.unsqueeze(0).expand(3, -1, -1), "rows"
    ),
    "repeat": one(lambda x: x.repeat(2, 3), lambda x: x.repeat(2, 3), "rows"),
    "narrow": one(
        lambda x: x.narrow(0, 1, 2), lambda x: x.narrow(0, 1, 2), "rows_nonempty", dtypes=FLOATS + ("int64",)
    ),
    "flip": one(lambda x: x.flip((0, 1)), lambda x: x.flip((0, 1)), "rows"),
    "cat": one(lambda x: ember.cat([x, -x], 1), lambda x: torch.cat([x, -x], 1), "rows"),
    "stack": one(lambda x: ember.stack([x, x * 2], 1), lambda x: torch.stack([x, x * 2], 1), "rows"),
    "split": one(lambda x: x.split([1, 3], 1), lambda x: x.split([1, 3], 1), "rows_nonempty"),
    "chunk": one(lambda x: x.chunk(2, 1), lambda x: x.chunk(2, 1), "rows_nonempty"),
    "pad": one(lambda x: ember.pad(x, (1, 2, 0, 1), -3), lambda x: F.pad(x, (1, 2, 0, 1), value=-3), "rows"),
    # ---- indexing -----------------------------------------------------------------------------
    "index": Case(
        "rows",
        (
            ("slice", lambda x: x[1:, ::2], lambda x: x[1:, ::2]),
            ("int", lambda x: x[:, -1], lambda x: x[:, -1]),
        ),
    ),
    "index_put": one(
        lambda x, i: x.index_put((i,), x[0:1] if x.shape[0] else x[:0], accumulate=True),
        lambda x, i: x.index_put((i,), x[0:1] if x.shape[0] else x[:0], accumulate=True),
        "index_select",
        dtypes=FLOATS + ("int64",),
    ),
    "gather": one(lambda x, i: x.gather(1, i), lambda x, i: torch.gather(x, 1, i), "gather"),
    "scatter_add": one(
        lambda x, i, s: x.scatter_add(1, i, s), lambda x, i, s: x.scatter_add(1, i, s), "scatter"
    ),
    "index_select": one(lambda x, i: x.index_select(0, i), lambda x, i: x.index_select(0, i), "index_select"),
    "take_along_dim": one(
        lambda x, i: ember.take_along_dim(x, i, 1), lambda x, i: torch.take_along_dim(x, i, 1), "gather"
    ),
    "one_hot": one(lambda i: ember.one_hot(i, 4), lambda i: F.one_hot(i, 4), "one_hot", dtypes=("int64",)),
    "sort": Case(
        "rows",
        tuple(
            (
                f"descending={d}",
                lambda x, d=d: x.sort(-1, d),
                lambda x, d=d: tuple(torch.sort(x, dim=-1, descending=d, stable=True)),
            )
            for d in (False, True)
        ),
    ),
    "argsort": one(lambda x: x.argsort(-1), lambda x: torch.argsort(x, dim=-1, stable=True), "rows"),
    # PyTorch leaves topk's order among ties unspecified: its stable descending sort, cut at k
    "topk": one(
        lambda x: x.topk(2, -1),
        lambda x: tuple(t[:, :2] for t in torch.sort(x, dim=-1, descending=True, stable=True)),
        "rows_nonempty",
    ),
    # ---- linear algebra -----------------------------------------------------------------------
    "matmul": one(lambda a, b: a @ b, torch.matmul, "mat"),
    "linear": one(
        lambda x, w, b: ember.linear(x, w.transpose(), b), F.linear, "linear"
    ),  # ember: [d_in, d_out]
    # ---- activations and nn composites --------------------------------------------------------
    "silu": one(ember.silu, F.silu, "x"),
    "softplus": one(ember.softplus, F.softplus, "x"),
    "leaky_relu": one(lambda x: ember.leaky_relu(x, 0.2), lambda x: F.leaky_relu(x, 0.2), "x"),
    "quiet_softmax": one(ember.quiet_softmax, _torch_quiet_softmax, "rows_nonempty"),
    "softmax": Case(
        "rows",
        tuple(
            (f"dim={d}", lambda x, d=d: ember.softmax(x, d), lambda x, d=d: torch.softmax(x, d))
            for d in (-1, 0)
        ),
    ),
    "log_softmax": Case(
        "rows",
        tuple(
            (f"dim={d}", lambda x, d=d: ember.log_softmax(x, d), lambda x, d=d: torch.log_softmax(x, d))
            for d in (-1, 0)
        ),
    ),
    "gelu": Case(
        "x",
        tuple(
            (a, lambda x, a=a: ember.gelu(x, a), lambda x, a=a: F.gelu(x, approximate=a))
            for a in ("none", "tanh")
        ),
    ),
    "layer_norm": one(
        lambda x, g, b: ember.layer_norm(x, g, b), lambda x, g, b: F.layer_norm(x, (4,), g, b), "norm"
    ),
    "rms_norm": one(
        lambda x, g, b: ember.rms_norm(x, g), lambda x, g, b: F.rms_norm(x, (4,), g, eps=1e-5), "norm"
    ),
    "cross_entropy": Case(
        "cross_entropy",
        tuple(
            (
                f"smoothing={s}",
                lambda z, t, s=s: ember.cross_entropy_per_sample(z, t, s),
                lambda z, t, s=s: F.cross_entropy(z, t, reduction="none", label_smoothing=s),
            )
            for s in (0.0, 0.1)
        ),
    ),
    "embedding": one(lambda w, i: ember.embedding(w, i), lambda w, i: F.embedding(i, w), "embedding"),
    "embedding_bag": one(_ember_bag, _torch_bag, "embedding_bag"),
    # p = 0 (identity) and evaluation mode: the masks' random streams differ by design
    "dropout": Case(
        "x",
        (
            ("p=0", lambda x: ember.dropout(x, 0.0), lambda x: F.dropout(x, 0.0)),
            (
                "eval",
                lambda x: ember.dropout(x, 0.5, training=False),
                lambda x: F.dropout(x, 0.5, training=False),
            ),
        ),
    ),
    "attention": Case(
        "attention",
        (
            ("plain", lambda q, k, v: ember.attention(q, k, v), F.scaled_dot_product_attention),
            (
                "pad_mask",
                lambda q, k, v: ember.attention(q, k, v, mask_pad=_pad_mask(q)),
                lambda q, k, v: F.scaled_dot_product_attention(
                    q, k, v, attn_mask=torch.tensor([[[[True, True, True, False, True]]]])
                ),
            ),
        ),
    ),
}

_FUNCTIONAL = {
    "celu": one(lambda x: EF.celu(x, 0.5), lambda x: F.celu(x, 0.5), "x"),
    "elu": one(EF.elu, F.elu, "x"),
    "gelu_approximate": one(EF.gelu_approximate, lambda x: F.gelu(x, approximate="tanh"), "x"),
    "glu": one(EF.glu, F.glu, "rows"),
    "hard_shrink": one(EF.hard_shrink, F.hardshrink, "x"),
    # PyTorch's hardsigmoid backward multiplies by a float32 1/6, in float64 too
    "hard_sigmoid": one(lambda x: EF.hard_sigmoid(x, 1.0 / 6.0, 0.5), F.hardsigmoid, "x", rtol=1e-7),
    "hard_swish": one(EF.hard_swish, F.hardswish, "x"),
    "hardtanh": one(EF.hardtanh, F.hardtanh, "x"),
    "log_sigmoid": one(EF.log_sigmoid, F.logsigmoid, "x"),
    "mish": one(EF.mish, F.mish, "x"),
    "prelu": one(
        lambda x: EF.prelu(x, ember.tensor([0.25], dtype=x.dtype, device=x.device)),
        lambda x: F.prelu(x, torch.tensor([0.25], dtype=x.dtype)),
        "x",
    ),
    "relu6": one(EF.relu6, F.relu6, "x"),
    "selu": one(EF.selu, F.selu, "x"),
    "shrink": one(lambda x: EF.shrink(x, 0.5, 0.25), lambda x: _torch_shrink(x, 0.5, 0.25), "x"),
    "soft_shrink": one(EF.soft_shrink, F.softshrink, "x"),
    "softmin": one(EF.softmin, lambda x: F.softmin(x, -1), "rows"),
    "softsign": one(EF.softsign, F.softsign, "x"),
    "tanhshrink": one(EF.tanhshrink, F.tanhshrink, "x"),
    "threshold": one(lambda x: EF.threshold(x, 0.5, -2.0), lambda x: F.threshold(x, 0.5, -2.0), "x"),
    "thresholded_relu": one(lambda x: EF.thresholded_relu(x, 1.0), lambda x: F.threshold(x, 1.0, 0.0), "x"),
}
"""``ember.nn.functional``'s own functions (the others there re-export ops of the table)."""

_MODULES = {
    "CrossEntropyLoss": one(
        _module(enn.CrossEntropyLossConfig()), lambda z, t: F.cross_entropy(z, t), "cross_entropy"
    ),
    "BinaryCrossEntropyLoss(logits)": one(
        _module(enn.BinaryCrossEntropyLossConfig(logits=True)),
        F.binary_cross_entropy_with_logits,
        "bce",
    ),
    "MseLoss": one(lambda a, b: enn.MseLoss()(a, b), F.mse_loss, "pair"),
    "MaxPool2d": one(_module(enn.MaxPool2dConfig((2, 2))), lambda x: F.max_pool2d(x, 2), "image"),
    "AvgPool2d": one(_module(enn.AvgPool2dConfig((2, 2))), lambda x: F.avg_pool2d(x, 2), "image"),
    "AdaptiveAvgPool2d": one(
        _module(enn.AdaptiveAvgPool2dConfig((3, 2))), lambda x: F.adaptive_avg_pool2d(x, (3, 2)), "image"
    ),
    "conv2d": one(_conv, _torch_conv, "conv"),
    "conv1d": one(_conv1d, lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), "conv1d"),
    "MaxPool1d": one(_module(enn.MaxPool1dConfig(2)), lambda x: F.max_pool1d(x, 2), "signal"),
    "AvgPool1d": one(_module(enn.AvgPool1dConfig(2)), lambda x: F.avg_pool1d(x, 2), "signal"),
    "GroupNorm": one(_module(enn.GroupNormConfig(2, 2)), lambda x: F.group_norm(x, 2), "image"),
    "InstanceNorm": one(_module(enn.InstanceNormConfig(2)), F.instance_norm, "image"),
    "HuberLoss": one(
        lambda a, b: enn.HuberLossConfig(1.0).init()(a, b), lambda a, b: F.huber_loss(a, b, delta=1.0), "pair"
    ),
    # ember's default reduction of the KL divergence is Burn's (and PyTorch's recommended) batchmean
    "KlDivLoss": one(
        lambda a, b: enn.KlDivLossConfig().init()(a, b),
        lambda a, b: F.kl_div(a, b, reduction="batchmean"),
        "probabilities",
    ),
    "SoftMarginLoss": one(
        lambda a, b: enn.SoftMarginLoss()(a, b), F.soft_margin_loss, "signs", constants=(1,)
    ),
    "HingeEmbeddingLoss": one(
        lambda a, b: enn.HingeEmbeddingLossConfig(1.0).init()(a, b),
        F.hinge_embedding_loss,
        "signs",
        constants=(1,),
    ),
    "PoissonNllLoss": one(lambda a, b: enn.PoissonNllLossConfig().init()(a, b), F.poisson_nll_loss, "counts"),
    "LpLoss(1)": one(lambda a, b: enn.LpLossConfig(1.0).init()(a, b), F.l1_loss, "pair"),
    "CosineSimilarity": one(
        lambda a, b: enn.CosineSimilarityConfig(1).init()(a, b),
        lambda a, b: F.cosine_similarity(a, b, 1),
        "pair",
    ),
    "PairwiseDistance": one(
        lambda a, b: enn.PairwiseDistanceConfig().init()(a, b), F.pairwise_distance, "pair"
    ),
    "SmoothL1Loss": one(
        lambda a, b: enn.SmoothL1LossConfig(1.0).init().forward_with_reduction(a, b),
        lambda a, b: F.smooth_l1_loss(a, b),
        "pair",
    ),
}
"""The ``ember.nn`` composites built from modules or their shared functions."""

TORCH_OPS = {**_TABLE, **_FUNCTIONAL, **_MODULES}
"""Every compared op: its row of the op table (or its ``ember.nn`` name) -> its Case."""

NO_TORCH: dict = {}
"""Ops of the op table without a PyTorch counterpart: name -> why."""

REEXPORTED = {
    "gelu",
    "leaky_relu",
    "log_softmax",
    "quiet_softmax",
    "relu",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
}
"""``ember.nn.functional`` names that re-export an op of the table (compared under its row)."""

# ember's bool tensors are Burn's Bool kind: logic, comparisons, where, movement, casts
_BOOL_KIND = "ember's bool tensors take logic, comparisons, selection and movement only (Burn's Bool kind): cast with .int() or .float() first"
_FLOAT_ONLY = "ember's function is float-only (as Burn's); PyTorch also takes ints"
_INT_TO_FLOAT = "ember computes int (and bool) inputs in the default float dtype (op table rule FLOAT); PyTorch refuses them"
_LOGICAL = "ember's logical ops take bool tensors only (Burn's bool_and/or/xor); PyTorch also takes numbers"
_BOOL_ARG = "ember orders bools as 0 < 1 for argmax and argmin; PyTorch has no bool kernel for them"


def _each(ops, dtypes, reason):
    return {f"{op}[{d}]": reason for op in ops for d in dtypes}


BY_DESIGN = {
    **_each(
        (
            "exp",
            "log",
            "log1p",
            "expm1",
            "sqrt",
            "rsqrt",
            "sign",
            "sin",
            "cos",
            "tanh",
            "sigmoid",
            "erf",
            "reciprocal",
            "square",
            "isnan",
            "isinf",
            "isfinite",
            "add",
            "mul",
            "div",
            "maximum",
            "minimum",
            "log_softmax",
            "softmax",
            "matmul",
            "linear",
            "dropout",
            "embedding",
            "conv2d",
            "AdaptiveAvgPool2d",
        ),
        ("bool",),
        _BOOL_KIND,
    ),
    **_each(
        ("logical_and", "logical_or", "logical_xor"),
        ("float16", "float32", "float64", "int32", "int64"),
        _LOGICAL,
    ),
    **_each(
        (
            "log_softmax",
            "softmax",
            "quiet_softmax",
            "dropout",
            "embedding",
            "linear",
            "hardtanh",
            "relu6",
            "shrink",
            "softmin",
            "softsign",
            "tanhshrink",
            "threshold",
            "thresholded_relu",
            "AdaptiveAvgPool2d",
            "MaxPool2d",
        ),
        ("int32", "int64"),
        _FLOAT_ONLY,
    ),
    "AvgPool2d[int64]": _FLOAT_ONLY,
    "AvgPool1d[int64]": _FLOAT_ONLY,
    "conv1d[bool]": _BOOL_KIND,
    **_each(("InstanceNorm",), ("int32", "int64", "bool"), _FLOAT_ONLY),
    **_each(("PoissonNllLoss", "PairwiseDistance"), ("int32", "int64"), _FLOAT_ONLY),
    **_each(("mean", "var", "std"), ("int32", "int64", "bool"), _INT_TO_FLOAT),
    **_each(("leaky_relu", "silu", "softplus"), ("int32", "int64"), _INT_TO_FLOAT),
    "leaky_relu[bool]": _INT_TO_FLOAT,
    **_each(("argmax", "argmin"), ("bool",), _BOOL_ARG),
    # issue #30 item 3 allows a clear error or PyTorch's result: ember raises (the README says so)
    **_each(
        ("pow",),
        ("int32", "int64"),
        "an int base to a negative int power raises ValueError naming pow; PyTorch returns its truncated integer",
    ),
}
"""``op[dtype]`` -> why ember refuses an input PyTorch accepts (or the reverse), by design. The
test checks that these are the only differences there, and that ember's refusals are clear."""

DTYPE_RULES = {
    **_each(
        ("sum", "prod", "cumsum"),
        ("int32",),
        "ember keeps int32 (the op table's COUNT rule, as Burn); PyTorch widens to int64",
    ),
}
"""``op[dtype]`` -> why ember's result dtype differs from PyTorch's: values compared after a cast."""

UNDEFINED = {
    **{
        conv: (
            {"overflow_order"},
            "a window summing products near ±3e38: float32 partial sums that overflow to +inf and "
            "-inf (NaN) in PyTorch's order reach one infinity in BLAS's (each library's and CPU's order)",
        )
        for conv in ("conv1d", "conv2d")
    },
    "sign": (
        {"forward@nan"},
        "sign(NaN): PyTorch returns 0, ember NaN (NaN propagates, as NumPy and IEEE 754)",
    ),
    "hard_shrink": ({"grad@nan"}, "the gradient at NaN: PyTorch 0, ember passes it"),
    "soft_shrink": ({"grad@nan"}, "the gradient at NaN: PyTorch 0, ember passes it"),
    "shrink": (
        {"forward@nan", "grad@nan"},
        "PyTorch has no shrink: its composition with where() maps NaN to 0",
    ),
    "hard_swish": (
        {"forward@inf", "overflow"},
        "PyTorch's hard_swish(-inf) is -inf·0 = NaN (the limit is 0); "
        "x·(x+3)/6 overflows in PyTorch at 3e38 where x·hard_sigmoid(x) does not",
    ),
    "hardtanh": (
        {"grad@nan"},
        "the gradient at NaN: no derivative exists there (PyTorch 0 or the gradient by dtype)",
    ),
    "relu6": (
        {"grad@nan"},
        "the gradient at NaN: no derivative exists there (PyTorch 0 or the gradient by dtype)",
    ),
    "pow": (
        {"grad:torch_nonfinite"},
        "the exponent's gradient a^b·log(a) at a = 0 or ±inf: PyTorch NaN, ember ±inf",
    ),
    "square": ({"overflow"}, "PyTorch's 2·x overflows at ±3e38 before the output gradient scales it"),
    "gelu": (
        {"forward@inf", "grad:torch_nonfinite", "overflow"},
        "PyTorch's gelu(±inf) is NaN (the limits are +inf and 0, gradients 1 and 0), its tanh form's gradient "
        "at 3e38 NaN (the limit is 1), and its x·Φ(x) overflows at 3e38 in float32",
    ),
    "gelu_approximate": (
        {"grad:torch_nonfinite"},
        "PyTorch's tanh-gelu gradient at ±inf and 3e38 is NaN; the limits are 1 and 0",
    ),
    "CosineSimilarity[float32]": (
        {"overflow_to_zero"},
        "a row holding 3e38: PyTorch's norm overflows to inf and the similarity (and the other row's gradient) "
        "to 0; ember scales each row by its largest |x| first and gives the finite value",
    ),
    "KlDivLoss": (
        {"grad:torch_nonfinite"},
        "the gradient of a target of 0 (log 0 + 1 − x): PyTorch NaN, ember 0 (the term is absent)",
    ),
    "SoftMarginLoss": (
        {"grad:torch_nonfinite"},
        "the gradient at a logit of ±inf: PyTorch's exp(inf)/(1 + exp(inf)) is NaN, the limit ±1/N",
    ),
    "max": (
        {"grad:torch_nonfinite"},
        "the gradient of a max over NaN: PyTorch spreads 0/0 = NaN over the row, ember 0",
    ),
    "min": (
        {"grad:torch_nonfinite"},
        "the gradient of a min over NaN: PyTorch spreads 0/0 = NaN over the row, ember 0",
    ),
    "var": (
        {"grad:torch_nonfinite"},
        "the gradient of a row holding ±inf or NaN: PyTorch ±inf or NaN, ember NaN",
    ),
    "attention": (
        {"grad:torch_nonfinite"},
        "a padded key's gradient with an infinite query: PyTorch's -inf mask gives 0·inf = NaN, ember's -1e4 fill 0; "
        "a NaN query is left out of the inputs: PyTorch's CPU kernel returns a row of 0 for it",
    ),
}
"""op (or ``op[dtype]``) -> (what is left out, why): where PyTorch's own result is undefined,
or is an artefact of how it computes (see ``helpers.torch_compare.UNDEFINED_MODES``)."""


def policy(case_id: str) -> dict:
    """The keyword arguments of ``helpers.torch_compare.check`` for ``op[dtype]``."""
    name = case_id.split("[")[0]
    modes, _ = UNDEFINED.get(case_id) or UNDEFINED.get(name) or ((), "")
    return {"cast_torch": case_id in DTYPE_RULES, "undefined": frozenset(modes), "rtol": TORCH_OPS[name].rtol}
