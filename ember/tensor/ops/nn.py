"""Neural-network functions backed by the backends' fused composites.

Each forward calls one backend composite (a fused kernel on ``cpu``/``cuda``) and records one
node whose rule calls the matching fused backward, so e.g. a layer norm is one kernel each way.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes as dt
from ember.kernels.fusion import engine as fusion
from ember.kernels.fusion.log import LOG as _FUSION_LOG
from ember.tensor.grad_mode import is_grad_enabled, no_grad
from ember.tensor.ops._core import (
    Tensor,
    check_devices,
    detached,
    needs_grad,
    normalize_dim,
    record,
    shape_str,
    wrap,
)
from ember.tensor.ops.indexing import check_index_range


def _float_input(op: str, x: Tensor) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if not x._dtype.is_float:
        raise TypeError(f"{op}: expected a float tensor, got {x._dtype}")


def _last_dim_composite(op: str, x: Tensor, dim: int) -> Tensor:
    """The backend composite ``op`` (softmax, log_softmax), which works on the last dim: a
    scalar is taken as one element, another ``dim`` is moved there and back. The node
    recorded keeps the output, which both backward rules use."""
    _float_input(op, x)
    if x.ndim == 0:
        return _last_dim_composite(op, x.reshape(1), -1).reshape(())
    d = normalize_dim(op, dim, x.ndim)
    if d != x.ndim - 1:
        return _last_dim_composite(op, x.swap_dims(d, -1), -1).swap_dims(d, -1)
    out = wrap(getattr(x._device.backend, op)(x._data), x._device, x._dtype)
    return record(out, op, (x,), y=detached(out))


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (computed stably)."""
    return _last_dim_composite("softmax", x, dim)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """x - logsumexp(x) along ``dim``."""
    return _last_dim_composite("log_softmax", x, dim)


def quiet_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / (1 + sum(exp(x))): Burn's softmax that lets a row attend to nothing."""
    _float_input("quiet_softmax", x)
    with no_grad():
        # an empty dim has no max: shift by 0 (the output is empty, the 0 logit alone remains)
        empty = x.ndim and x.shape[normalize_dim("quiet_softmax", dim, x.ndim)] == 0
        m = x.sum(dim, keepdim=True) if empty else x.max(dim, keepdim=True).clamp(min=0.0)
    e = (x - m).exp()
    return e / (e.sum(dim, keepdim=True) + (-m).exp())


def _check_param(op, name, p, d, x):
    if p is None:
        return
    check_devices(op, x, p)
    if p.shape != (d,):
        raise ValueError(
            f"{op}: {name} must have shape [{d}] (the last dim of x {shape_str(x.shape)}), "
            f"got {shape_str(p.shape)}"
        )


def _check_eps(op: str, eps) -> float:
    # checked here, not by the kernels, so that every backend rejects the same values
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: eps must be a number, got {type(eps).__name__}") from None
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"{op}: eps must be a finite number >= 0, got {eps!r}")
    return value


def _check_not_scalar(op: str, x: Tensor) -> None:
    if x.ndim == 0:
        raise ValueError(f"{op}: normalises over the last dim, but x is 0-d (shape []); reshape it to [1]")


def layer_norm(
    x: Tensor, gamma: Tensor | None = None, beta: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    """Normalise over the last dim: (x - mean) / sqrt(var + eps) * gamma + beta (biased var)."""
    _float_input("layer_norm", x)
    _check_not_scalar("layer_norm", x)
    eps = _check_eps("layer_norm", eps)
    d = x.shape[-1]
    _check_param("layer_norm", "gamma", gamma, d, x)
    _check_param("layer_norm", "beta", beta, d, x)
    g = gamma.to(x._dtype) if gamma is not None else None
    bt = beta.to(x._dtype) if beta is not None else None
    y, mean, rstd = x._device.backend.layer_norm(
        x._data, None if g is None else g._data, None if bt is None else bt._data, eps
    )
    out = wrap(y, x._device, x._dtype)
    if not needs_grad(x, g, bt):
        return out
    gamma_arg = (
        g
        if g is not None
        else (
            wrap(x._device.backend.full((d,), 1.0, x._dtype), x._device, x._dtype) if bt is not None else None
        )
    )
    return record(
        out,
        "layer_norm",
        (x, g, bt),
        x=detached(x),
        mean=mean,
        rstd=rstd,
        gamma=None if gamma_arg is None else detached(gamma_arg),
    )


def rms_norm(x: Tensor, gamma: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * gamma over the last dim."""
    _float_input("rms_norm", x)
    _check_not_scalar("rms_norm", x)
    eps = _check_eps("rms_norm", eps)
    _check_param("rms_norm", "gamma", gamma, x.shape[-1], x)
    g = gamma.to(x._dtype) if gamma is not None else None
    y, rstd = x._device.backend.rms_norm(x._data, None if g is None else g._data, eps)
    out = wrap(y, x._device, x._dtype)
    return record(out, "rms_norm", (x, g), x=detached(x), rstd=rstd, gamma=None if g is None else detached(g))


def gelu(x: Tensor, approximate: str | bool = "none") -> Tensor:
    """GELU: x * Phi(x) (``approximate="none"``) or its tanh approximation (``"tanh"``)."""
    _float_input("gelu", x)
    approx = approximate in (True, "tanh")
    if approximate not in (True, False, "none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    out = wrap(x._device.backend.gelu(x._data, approx), x._device, x._dtype)
    return record(out, "gelu", (x,), x=detached(x), approximate=approx)


def cross_entropy_per_sample(logits: Tensor, targets: Tensor, smoothing: float = 0.0) -> Tensor:
    """Per-sample cross-entropy from logits ``[N, C]`` and int targets ``[N]`` (fused).

    With label ``smoothing`` s the target distribution is (1-s)·onehot + s/C.
    """
    op = "cross_entropy"
    _float_input(op, logits)
    check_devices(op, logits, targets)
    if logits.ndim != 2:
        raise ValueError(f"{op}: logits must be [batch, classes], got shape {shape_str(logits.shape)}")
    if targets.ndim != 1 or targets.shape[0] != logits.shape[0]:
        raise ValueError(
            f"{op}: targets must be [batch]={logits.shape[0]} ints, got shape {shape_str(targets.shape)}"
        )
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"{op}: smoothing must be in [0, 1], got {smoothing}")
    check_index_range(op, targets, logits.shape[1], "target")
    b = logits._device.backend
    loss, lse = b.cross_entropy(logits._data, targets._data, float(smoothing))
    out = wrap(loss, logits._device, logits._dtype)
    return record(
        out,
        "cross_entropy",
        (logits,),
        logits=detached(logits),
        targets=detached(targets),
        lse=lse,
        smoothing=float(smoothing),
    )


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight + bias`` over the last dim of ``x`` (Burn's ``linear``): ``x [..., d_in]``,
    ``weight [d_in, d_out]``, ``bias [d_out]`` or None -> ``[..., d_out]``, in the operands'
    promoted dtype, which must be float.

    One backend call: the ``cpu`` backend adds the bias to each block of the product's rows
    while they are in cache, instead of in a second pass over the whole result.
    """
    op = "linear"
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor input, got {type(x).__name__}")
    _float_input(op, weight)
    if bias is not None:
        _float_input(op, bias)
    check_devices(op, x, weight, bias)  # (skips a None bias)
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight must be [d_input, d_output], got {shape_str(weight.shape)}")
    d_in, d_out = weight.shape
    if x.ndim == 0 or x.shape[-1] != d_in:
        raise ValueError(f"{op}: input of shape {shape_str(x.shape)} does not end with d_input={d_in}")
    if x._dtype.is_bool:
        raise TypeError(f"{op}: bool inputs are not supported")
    if bias is not None and tuple(bias.shape) != (d_out,):
        raise ValueError(f"{op}: bias must be [d_output] = [{d_out}], got {shape_str(bias.shape)}")
    rdt = dt.promote_types(x._dtype, weight._dtype)
    if bias is not None:
        rdt = dt.promote_types(rdt, bias._dtype)
    lead = tuple(x.shape[:-1])
    # one 2-D GEMM over all leading dims: the weight gradient is then a single GEMM too
    rows = x.reshape(math.prod(lead), d_in).to(rdt)
    w = weight.to(rdt)
    b = None if bias is None else bias.to(rdt)
    backend = x._device.backend
    bias_arr = None if b is None else b._arr
    # kept pending for a chain's epilogue in training only, and when large (see linalg.matmul)
    if is_grad_enabled() and (math.prod(lead) * d_out >= fusion.settings.min_elements or _FUSION_LOG.full):
        data = fusion.linear(backend, rows._arr, w._arr, bias_arr)
    else:
        data = backend.linear(rows._data, w._data, None if b is None else b._data)
    out = wrap(data, x._device, rdt)
    if needs_grad(rows, w, b):
        out = record(out, op, (rows, w, b), x=detached(rows), weight=detached(w))
    return out.reshape(lead + (d_out,))


def embedding(weight: Tensor, ids: Tensor) -> Tensor:
    """Rows of ``weight`` [V, D] at int ``ids`` (any shape) -> [*ids.shape, D]."""
    op = "embedding"
    _float_input(op, weight)
    check_devices(op, weight, ids)
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight must be [num_embeddings, dim], got {shape_str(weight.shape)}")
    check_index_range(op, ids, weight.shape[0], "id")
    out = wrap(weight._device.backend.embedding(weight._data, ids._data), weight._device, weight._dtype)
    return record(out, "embedding", (weight,), ids=detached(ids), num=weight.shape[0])


_BAG_MODES = ("sum", "mean", "max")


def _int_tensor(op: str, name: str, t, ndim: int | None = None) -> None:
    if not isinstance(t, Tensor) or not t._dtype.is_int:
        got = t._dtype if isinstance(t, Tensor) else type(t).__name__
        raise TypeError(f"{op}: {name} must be an int tensor, got {got}")
    if ndim is not None and t.ndim != ndim:
        raise ValueError(f"{op}: {name} must be {ndim}-D, got shape {shape_str(t.shape)}")


def _bags(op: str, indices: Tensor, offsets, per_sample_weights, mask):
    """Flat int64 indices [N], bounds [B + 1] (backend arrays) and the per-sample weights [N]."""
    b = indices._device.backend
    if indices.ndim == 1:
        if mask is not None:
            raise ValueError(f"{op}: mask goes with padded indices [B, L]; 1-D indices take offsets")
        if offsets is None:
            raise ValueError(
                f"{op}: 1-D indices [N] need offsets [B] (the start of each bag, offsets[0] = 0); "
                f"pass padded indices [B, L] (with an optional mask) otherwise"
            )
        _int_tensor(op, "offsets", offsets, 1)
        n = indices.shape[0]
        starts = b.cast(offsets._data, dt.int64)
        host = np.asarray(b.to_host(starts))
        if not host.size and n:
            raise ValueError(f"{op}: offsets is empty (no bags) but there are {n} indices")
        if host.size and (host[0] != 0 or np.any(host[1:] < host[:-1]) or host[-1] > n):
            raise ValueError(
                f"{op}: offsets must start at 0, never decrease and stay <= the number of "
                f"indices ({n}), got {host[:8].tolist()}{'...' if host.size > 8 else ''}"
            )
        bounds = b.cat([starts, b.full((1,), n, dt.int64)], 0)
        flat = b.cast(indices._data, dt.int64)
        if per_sample_weights is not None and per_sample_weights.shape != (n,):
            raise ValueError(
                f"{op}: per_sample_weights must have the shape of indices {shape_str(indices.shape)}, "
                f"got {shape_str(per_sample_weights.shape)}"
            )
        return flat, bounds, per_sample_weights
    if indices.ndim != 2:
        raise ValueError(
            f"{op}: indices must be flat [N] (with offsets) or padded [B, L] (with an optional "
            f"mask), got shape {shape_str(indices.shape)}"
        )
    if offsets is not None:
        raise ValueError(f"{op}: offsets go with 1-D indices; padded indices [B, L] mark padding with mask")
    nb, length = indices.shape
    if per_sample_weights is not None and per_sample_weights.shape != indices.shape:
        raise ValueError(
            f"{op}: per_sample_weights must have the shape of indices {shape_str(indices.shape)}, "
            f"got {shape_str(per_sample_weights.shape)}"
        )
    if mask is None:
        flat = b.cast(b.reshape(indices._data, (-1,)), dt.int64)
        bounds = (
            b.arange(0, nb * length + 1, max(length, 1), dt.int64)
            if length
            else b.full((nb + 1,), 0, dt.int64)
        )
        psw = None if per_sample_weights is None else per_sample_weights.reshape(-1)
        return flat, bounds, psw
    if not isinstance(mask, Tensor) or not mask._dtype.is_bool or mask.shape != indices.shape:
        got = f"{mask._dtype} {shape_str(mask.shape)}" if isinstance(mask, Tensor) else type(mask).__name__
        raise ValueError(
            f"{op}: mask must be a bool tensor of the shape of indices {shape_str(indices.shape)} "
            f"(True = padding), got {got}"
        )
    keep = b.unary("logical_not", mask._data)
    flat = b.cast(b.getitem(indices._data, keep), dt.int64)
    counts = b.reduce("sum", b.cast(keep, dt.int64), (1,), False)
    bounds = b.cat([b.full((1,), 0, dt.int64), b.cumsum(counts, 0)], 0)
    psw = None
    if per_sample_weights is not None:
        psw = per_sample_weights[wrap(keep, mask._device, dt.bool_)]
    return flat, bounds, psw


def embedding_bag(
    weight: Tensor,
    indices: Tensor,
    offsets: Tensor | None = None,
    per_sample_weights: Tensor | None = None,
    mask: Tensor | None = None,
    mode: str = "mean",
    sparse: bool = False,
) -> Tensor:
    """Sum, mean or max of rows of ``weight [n, d]`` over bags of indices -> ``[B, d]``.

    Bags are given either as flat ``indices [N]`` with ``offsets [B]`` (PyTorch's form: bag b
    is ``indices[offsets[b]:offsets[b+1]]``, the last bag runs to N, offsets[0] = 0), or as
    padded ``indices [B, L]`` with an optional bool ``mask [B, L]`` (True = padding, ember's
    convention; the values at padded positions are ignored). An empty bag gives zeros.

    Args:
        weight: the table ``[n, d]`` (float).
        indices: int tensor, values in [0, n) (padded positions excepted).
        offsets: int ``[B]`` with 1-D indices, else None.
        per_sample_weights: float weights of the rows, shaped like ``indices`` (mode "sum"
            only); differentiable.
        mask: bool ``[B, L]`` with padded indices, or None.
        mode: "sum", "mean" (PyTorch's default) or "max" (per feature; the gradient goes to
            the first maximum).
        sparse: give ``weight`` a row-sparse gradient (:class:`ember.RowSparse`) holding only
            the rows the batch touched, instead of a dense ``[n, d]`` tensor.

    Raises:
        IndexError: an index outside the table, naming its size.
        ValueError: bad offsets, shapes, mode, or per-sample weights with mode "mean"/"max".
    """
    op = "embedding_bag"
    _float_input(op, weight)
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight must be [num_embeddings, dim], got {shape_str(weight.shape)}")
    if mode not in _BAG_MODES:
        raise ValueError(f"{op}: mode must be one of {list(_BAG_MODES)}, got {mode!r}")
    _int_tensor(op, "indices", indices)
    if per_sample_weights is not None:
        if mode != "sum":
            raise ValueError(
                f"{op}: per_sample_weights are only supported with mode='sum' (got mode={mode!r}); "
                f"weighting rows before a mean or a max is not defined"
            )
        _float_input(op, per_sample_weights)
        per_sample_weights = per_sample_weights.to(weight._dtype)
    check_devices(op, weight, indices, offsets, per_sample_weights, mask)
    flat, bounds, psw = _bags(op, indices, offsets, per_sample_weights, mask)
    b = weight._device.backend
    n_rows = weight.shape[0]
    if flat.shape[0]:
        lo = int(b.to_host(b.reduce("min", flat, (0,), False)))
        hi = int(b.to_host(b.reduce("max", flat, (0,), False)))
        if lo < 0 or hi >= n_rows:
            raise IndexError(
                f"{op}: index {lo if lo < 0 else hi} is out of range for the embedding table of "
                f"{n_rows} rows (expected 0 <= index < {n_rows})"
            )
    data, max_pos = b.embedding_bag(weight._data, flat, bounds, None if psw is None else psw._data, mode)
    out = wrap(data, weight._device, weight._dtype)
    if not needs_grad(weight, psw):
        return out
    return record(
        out,
        "embedding_bag",
        (weight, psw),
        indices=flat,
        bounds=bounds,
        mode=mode,
        max_pos=max_pos,
        num=n_rows,
        sparse=bool(sparse),
        psw=None if psw is None else detached(psw),
        weight=detached(weight) if needs_grad(psw) else None,
    )


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability ``p``, scale the rest by 1/(1-p).

    Active only when ``training`` and grad recording is on (as Burn's autodiff device). The
    mask comes from a counter-based hash of a seed drawn from the device's generator, so it is
    regenerated in backward instead of stored.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    _float_input("dropout", x)
    if not training or p == 0.0 or not is_grad_enabled():
        return x
    b = x._device.backend
    seed = b.next_seed()
    out = wrap(b.dropout(x._data, float(p), seed), x._device, x._dtype)
    return record(out, "dropout", (x,), p=float(p), seed=seed)


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask_pad: Tensor | None = None,
    scale: float | None = None,
    quiet: bool = False,
    dropout_p: float = 0.0,
) -> Tensor:
    """Fused scaled-dot-product attention as in Burn's MultiHeadAttention.

    scores = q @ kᵀ · scale (default 1/√d) → dropout on the scores → masked fill -1e4 where
    ``mask_pad`` [B, Sk] is True → softmax (or quiet softmax) → @ v. Shapes: q [B,H,Sq,D],
    k and v [B,H,Sk,D]. Dropout is applied only while grad recording is on.
    """
    op = "attention"
    for name, t in (("q", q), ("k", k), ("v", v)):
        _float_input(op, t)
        if t.ndim != 4:
            raise ValueError(f"{op}: {name} must be [batch, heads, seq, head_dim], got {shape_str(t.shape)}")
    check_devices(op, q, k, v, mask_pad)
    bq, h, _sq, dh = q.shape
    if k.shape != v.shape or k.shape[0] != bq or k.shape[1] != h or k.shape[3] != dh:
        raise ValueError(
            f"{op}: q {shape_str(q.shape)}, k {shape_str(k.shape)}, v {shape_str(v.shape)} "
            f"are incompatible (expected k, v = [B, H, Sk, D])"
        )
    if q._dtype is not k._dtype or q._dtype is not v._dtype:
        raise TypeError(f"{op}: q, k, v dtypes differ: {q._dtype}, {k._dtype}, {v._dtype}")
    if mask_pad is not None and (not mask_pad._dtype.is_bool or mask_pad.shape != (bq, k.shape[2])):
        raise ValueError(
            f"{op}: mask_pad must be bool [batch, seq_k] = [{bq}, {k.shape[2]}], "
            f"got {mask_pad._dtype} {shape_str(mask_pad.shape)}"
        )
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1), got {dropout_p}")
    if scale is None:  # head_dim 0: the output is empty whatever the scale
        scale = 1.0 / math.sqrt(dh) if dh else 1.0
    scale = float(scale)
    p = float(dropout_p) if is_grad_enabled() else 0.0
    b = q._device.backend
    seed = b.next_seed() if p > 0 else 0
    m = None if mask_pad is None else mask_pad._data
    out_data, lse = b.attention(q._data, k._data, v._data, m, scale, bool(quiet), p, seed)
    out = wrap(out_data, q._device, q._dtype)
    return record(
        out,
        "attention",
        (q, k, v),
        q=detached(q),
        k=detached(k),
        v=detached(v),
        out=detached(out),
        lse=lse,
        mask=m,
        scale=scale,
        quiet=bool(quiet),
        p=p,
        seed=seed,
    )
