"""The table of backward rules (vector-Jacobian products), keyed by op name.

Where an op is not differentiable (a kink, a tie, a NaN operand) its rule returns PyTorch's
choice of gradient; README.md ("A tour of the API": gradients at kinks) states the rule and
``tests/tensor/test_kinks.py`` checks every case against PyTorch.

Each rule is ``rule(node, g) -> tuple`` with one gradient (or None) per recorded input, written
with tensor ops; the engine runs it under ``no_grad`` and then undoes broadcasting and casts
for every input in one place (``backward.py``), so rules may return broadcast-shaped grads.
``node.ctx`` holds what the forward saved; ``needs(node, i)`` says whether input i wants a grad.
"""

from __future__ import annotations

import math

from ember.core import dtypes as dt
from ember.tensor.ops._core import wrap
from ember.tensor.ops.elementwise import where
from ember.tensor.sparse import RowSparse

VJP: dict = {}


def rule(*names):
    def register(fn):
        for n in names:
            VJP[n] = fn
        return fn

    return register


def needs(node, i: int) -> bool:
    return node.inputs[i][0] is not None


def _zeros(shape, like):
    return wrap(like._device.backend.full(tuple(shape), 0, like._dtype), like._device, like._dtype)


def _keepdim(g, axes, keepdim):
    if keepdim:
        return g
    for a in axes:
        g = g.unsqueeze(a)
    return g


# ---- unary ---------------------------------------------------------------------------------
@rule("neg")
def _neg(node, g):
    return (-g,)


@rule("exp")
def _exp(node, g):
    return (g * node.ctx.y,)


@rule("expm1")
def _expm1(node, g):
    return (g * (node.ctx.y + 1),)


@rule("log")
def _log(node, g):
    return (g / node.ctx.x,)


@rule("log1p")
def _log1p(node, g):
    return (g / (node.ctx.x + 1),)


@rule("sqrt")
def _sqrt(node, g):
    return (g * 0.5 / node.ctx.y,)


@rule("rsqrt")
def _rsqrt(node, g):
    y = node.ctx.y
    return (g * -0.5 * y * y * y,)


@rule("abs")
def _abs(node, g):
    # PyTorch's sgn: 0 at ±0 and at NaN (where sign(NaN) is NaN)
    x = node.ctx.x
    return (g * ((x > 0).to(g.dtype) - (x < 0).to(g.dtype)),)


@rule("sin")
def _sin(node, g):
    return (g * node.ctx.x.cos(),)


@rule("cos")
def _cos(node, g):
    return (-g * node.ctx.x.sin(),)


@rule("tanh")
def _tanh(node, g):
    y = node.ctx.y
    return (g * (1 - y * y),)


@rule("sigmoid")
def _sigmoid(node, g):
    y = node.ctx.y
    return (g * y * (1 - y),)


@rule("erf")
def _erf(node, g):
    x = node.ctx.x
    return (g * (2 / math.sqrt(math.pi)) * (-(x * x)).exp(),)


@rule("relu")
def _relu(node, g):
    # PyTorch's threshold_backward: 0 where x <= 0 (at 0 too), g elsewhere (NaN included)
    return (where(node.ctx.x <= 0, 0.0, g),)


@rule("reciprocal")
def _reciprocal(node, g):
    y = node.ctx.y
    return (-g * y * y,)


@rule("square")
def _square(node, g):
    return (g * 2 * node.ctx.x,)


@rule("softplus")
def _softplus(node, g):
    # PyTorch's softplus_backward: sigmoid(beta·x) (1/2 at 0), 1 where beta·x > threshold
    c = node.ctx
    bx = c.x * c.beta if c.beta != 1.0 else c.x
    return (where(bx > c.threshold, g, g * bx.sigmoid()),)


@rule("silu")
def _silu(node, g):
    # PyTorch's silu_backward: sigmoid(x)·(1 + x·(1 − sigmoid(x))), finite at any finite x
    x = node.ctx.x
    s = x.sigmoid()
    return (g * (s * (1 + x * (1 - s))),)


@rule("cast", "to_device")
def _identity_cast(node, g):
    dev = getattr(node.ctx, "device", None) if node.ctx is not None else None
    return (g.to(dev) if dev is not None else g,)


# ---- binary ----------------------------------------------------------------------------------
@rule("add")
def _add(node, g):
    return g, g


@rule("sub")
def _sub(node, g):
    return g, (-g if needs(node, 1) else None)


@rule("mul")
def _mul(node, g):
    c = node.ctx
    return (g * c.b if needs(node, 0) else None), (g * c.a if needs(node, 1) else None)


@rule("div")
def _div(node, g):
    c = node.ctx
    ga = g / c.b
    return ga, (-ga * c.a / c.b if needs(node, 1) else None)


@rule("pow")
def _pow(node, g):
    c = node.ctx
    ga = g * c.b * c.a ** (c.b - 1) if needs(node, 0) else None
    gb = None
    if needs(node, 1):
        pos = c.a > 0
        gb = where(pos, g * c.y * where(pos, c.a, 1.0).log(), 0.0)
    return ga, gb


@rule("mod")
def _mod(node, g):
    c = node.ctx
    return g, (-g * (c.a / c.b).floor() if needs(node, 1) else None)


def _minmax(node, g, a_loses, b_loses):
    # PyTorch's: a tie gives each operand half; a NaN operand (no comparison holds) gives both
    # the whole gradient
    c = node.ctx
    half = where(c.a == c.b, g * 0.5, g)
    return (
        where(a_loses, 0.0, half) if needs(node, 0) else None,
        where(b_loses, 0.0, half) if needs(node, 1) else None,
    )


@rule("maximum")
def _maximum(node, g):
    return _minmax(node, g, node.ctx.a < node.ctx.b, node.ctx.a > node.ctx.b)


@rule("minimum")
def _minimum(node, g):
    return _minmax(node, g, node.ctx.a > node.ctx.b, node.ctx.a < node.ctx.b)


@rule("clamp")
def _clamp(node, g):
    # PyTorch's clamp_backward: x gets g where low <= x <= high (bounds included), a tensor
    # low where x < low, a tensor high where x > high (a NaN x passes to none of them); where
    # low > high the result is high, so high gets g and low nothing
    c = node.ctx
    x = c.x
    both = c.low is not None and c.high is not None
    inside = None
    if c.low is not None:
        inside = x >= c.low
    if c.high is not None:
        inside = (x <= c.high) if inside is None else inside & (x <= c.high)
    gx = where(inside, g, 0.0) if needs(node, 0) else None
    glow = ghigh = None
    if needs(node, 1):
        below = (x < c.low) & (c.low < c.high) if both else x < c.low
        glow = where(below, g, 0.0)
    if needs(node, 2):
        above = (x > c.high) | (c.high < c.low) if both else x > c.high
        ghigh = where(above, g, 0.0)
    return gx, glow, ghigh


@rule("where")
def _where(node, g):
    cond = node.ctx.cond
    return (where(cond, g, 0.0) if needs(node, 0) else None), (
        where(cond, 0.0, g) if needs(node, 1) else None
    )


# ---- reductions ------------------------------------------------------------------------------
@rule("sum")
def _sum(node, g):
    c = node.ctx
    return (_keepdim(g, c.axes, c.keepdim).expand(node.inputs[0][1]),)


@rule("max", "min")
def _max(node, g):
    # ties share evenly (torch.amax); a NaN result is shared by the NaNs it came from (torch.max())
    c = node.ctx
    y = _keepdim(c.y, c.axes, c.keepdim)
    mask = ((c.x == y) | (c.x.isnan() & y.isnan())).to(g.dtype)
    return (_keepdim(g, c.axes, c.keepdim) * mask / mask.sum(c.axes, keepdim=True),)


@rule("prod")
def _prod(node, g):
    # d prod / d x_i is the product of the others, taken as such (not y / x_i, which is NaN
    # at a zero or an infinity): PyTorch's prod_safe_zeros_backward
    c = node.ctx
    return (_keepdim(g, c.axes, c.keepdim) * _products_of_the_others(c.x, c.axes),)


def _products_of_the_others(x, axes):
    """For each element of ``x``, the product of the other elements of its slice over
    ``axes``: the exclusive prefix product times the exclusive suffix product."""
    if not x.numel:
        return x
    kept = [a for a in range(x.ndim) if a not in axes]
    order = kept + sorted(axes)
    xt = x.permute(order)
    lead = tuple(xt.shape[: len(kept)])
    flat = xt.reshape(lead + (math.prod(xt.shape[len(kept) :]),))
    others = _exclusive_products(flat) * _exclusive_products(flat.flip(-1)).flip(-1)
    inverse = [0] * len(order)
    for i, a in enumerate(order):
        inverse[a] = i
    return others.reshape(xt.shape).permute(inverse)


def _exclusive_products(t):
    """``[1, t0, t0·t1, ...]`` along the last dim: inclusive products by doubling (each step
    multiplies by the row shifted ``s`` places), then shifted by one."""
    n = t.shape[-1]
    s = 1
    while s < n:
        t = t * t.narrow(-1, 0, n - s).pad((s, 0), 1.0)
        s *= 2
    return t.narrow(-1, 0, n - 1).pad((1, 0), 1.0)


@rule("cumsum")
def _cumsum(node, g):
    d = node.ctx.dim
    return (g.flip(d).cumsum(d).flip(d),)


# ---- movement --------------------------------------------------------------------------------
@rule("reshape")
def _reshape(node, g):
    return (g.reshape(node.inputs[0][1]),)


@rule("permute")
def _permute(node, g):
    axes = node.ctx.axes
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return (g.permute(inverse),)


@rule("expand")
def _expand(node, g):
    return (g,)  # the engine sums the broadcast dims back


@rule("repeat")
def _repeat(node, g):
    c = node.ctx
    split = []
    for r, s in zip(c.reps, c.shape):
        split += [r, s]
    return (g.reshape(split).sum(tuple(range(0, 2 * len(c.reps), 2))),)


@rule("flip")
def _flip(node, g):
    return (g.flip(node.ctx.axes),)


@rule("cat")
def _cat(node, g):
    c = node.ctx
    out, start = [], 0
    for i, s in enumerate(c.sizes):
        out.append(g.narrow(c.dim, start, s) if needs(node, i) else None)
        start += s
    return tuple(out)


@rule("pad")
def _pad(node, g):
    key = tuple(slice(b, g.shape[i] - a) for i, (b, a) in enumerate(node.ctx.width))
    return (g[key],)


@rule("index")
def _index(node, g):
    c = node.ctx
    b = g._device.backend
    zeros = b.full(c.shape, 0, g._dtype)
    return (wrap(b.index_add(zeros, c.key, g._data), g._device, g._dtype),)


@rule("index_put")
def _index_put(node, g):
    c = node.ctx
    b = g._device.backend
    gx = None
    if needs(node, 0):
        gx = (
            g
            if c.accumulate
            else wrap(b.index_put(g._data, c.key, b.full((), 0, g._dtype), False), g._device, g._dtype)
        )
    gv = wrap(b.getitem(g._data, c.key), g._device, g._dtype) if needs(node, 1) else None
    return gx, gv


@rule("gather")
def _gather(node, g):
    c = node.ctx
    return (_zeros(c.shape, g).scatter_add(c.dim, c.index, g),)


@rule("scatter_add")
def _scatter_add(node, g):
    c = node.ctx
    return g, (g.gather(c.dim, c.index) if needs(node, 1) else None)


@rule("index_select")
def _index_select(node, g):
    c = node.ctx
    b = g._device.backend
    key = (slice(None),) * c.dim + (c.index._data,)
    return (wrap(b.index_add(b.full(c.shape, 0, g._dtype), key, g._data), g._device, g._dtype),)


# ---- linear algebra --------------------------------------------------------------------------
@rule("matmul")
def _matmul(node, g):
    c = node.ctx
    a, b = c.a, c.b
    ga = g @ b.transpose() if needs(node, 0) else None
    gb = None
    if needs(node, 1):
        if b.ndim == 2 and a.ndim > 2:
            # a shared weight (x [..., n, k] @ w [k, m]): fold the batch into one GEMM instead
            # of a batched product summed afterwards
            rows = math.prod(a.shape[:-1])  # not -1: it cannot be inferred for an empty a with k = 0
            gb = a.reshape(rows, a.shape[-1]).transpose() @ g.reshape(rows, g.shape[-1])
        else:
            gb = a.transpose() @ g
    return ga, gb


@rule("linear")
def _linear(node, g):
    c = node.ctx
    gx = g @ c.weight.transpose() if needs(node, 0) else None
    gw = c.x.transpose() @ g if needs(node, 1) else None
    gb = g.sum(0) if needs(node, 2) else None
    return gx, gw, gb


# ---- fused composites: each calls its backend's fused backward -------------------------------
def _fused(g, data):
    return wrap(data, g._device)


@rule("softmax")
def _softmax(node, g):
    return (_fused(g, g._device.backend.softmax_backward(node.ctx.y._data, g._data)),)


@rule("log_softmax")
def _log_softmax(node, g):
    return (_fused(g, g._device.backend.log_softmax_backward(node.ctx.y._data, g._data)),)


@rule("layer_norm")
def _layer_norm(node, g):
    c = node.ctx
    gamma = None if c.gamma is None else c.gamma._data
    dx, dgamma, dbeta = g._device.backend.layer_norm_backward(g._data, c.x._data, c.mean, c.rstd, gamma)
    return (
        _fused(g, dx),
        None if dgamma is None else _fused(g, dgamma),
        None if dbeta is None else _fused(g, dbeta),
    )


@rule("rms_norm")
def _rms_norm(node, g):
    c = node.ctx
    dx, dgamma = g._device.backend.rms_norm_backward(
        g._data, c.x._data, c.rstd, None if c.gamma is None else c.gamma._data
    )
    return _fused(g, dx), (None if dgamma is None else _fused(g, dgamma))


@rule("gelu")
def _gelu(node, g):
    c = node.ctx
    return (_fused(g, g._device.backend.gelu_backward(c.x._data, g._data, c.approximate)),)


@rule("swiglu")
def _swiglu(node, g):
    c = node.ctx
    da, db = g._device.backend.swiglu_backward(c.a._data, c.b._data, g._data)
    return _fused(g, da), _fused(g, db)


@rule("cross_entropy")
def _cross_entropy(node, g):
    c = node.ctx
    d = g._device.backend.cross_entropy_backward(c.logits._data, c.targets._data, c.lse, g._data, c.smoothing)
    return (_fused(g, d),)


@rule("embedding")
def _embedding(node, g):
    c = node.ctx
    return (_fused(g, g._device.backend.embedding_backward(g._data, c.ids._data, c.num)),)


@rule("embedding_bag")
def _embedding_bag(node, g):
    c = node.ctx
    b, dev = g._device.backend, g._device
    gw = gpsw = None
    if needs(node, 0):
        psw = None if c.psw is None else c.psw._data
        rows, values = b.embedding_bag_backward(g._data, c.indices, c.bounds, psw, c.mode, c.max_pos)
        if c.sparse:
            gw = RowSparse._trusted(wrap(rows, dev, dt.int64), _fused(g, values), (c.num, g.shape[1]))
        else:
            gw = _fused(g, b.rows_to_dense(rows, values, c.num))
    if needs(node, 1):
        gpsw = _fused(g, b.embedding_bag_weights_backward(g._data, c.weight._data, c.indices, c.bounds))
    return gw, gpsw


@rule("dropout")
def _dropout(node, g):
    c = node.ctx
    return (_fused(g, g._device.backend.dropout_backward(g._data, c.p, c.seed)),)


@rule("attention")
def _attention(node, g):
    c = node.ctx
    dq, dk, dv = g._device.backend.attention_backward(
        g._data, c.q._data, c.k._data, c.v._data, c.out._data, c.lse, c.mask, c.scale, c.quiet, c.p, c.seed
    )
    return _fused(g, dq), _fused(g, dk), _fused(g, dv)
