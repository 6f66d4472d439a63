"""Neural-network functions backed by the backends' fused composites.

Each forward calls one backend composite (a fused kernel on ``cpu``/``cuda``) and records one
node whose rule calls the matching fused backward, so e.g. a layer norm is one kernel each way.
"""
from __future__ import annotations

import math

from ember.tensor.grad_mode import is_grad_enabled
from ember.tensor.ops._core import Tensor, check_devices, detached, needs_grad, normalize_dim, record, shape_str, wrap
from ember.tensor.ops.indexing import check_index_range


def _float_input(op: str, x: Tensor) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if not x._dtype.is_float:
        raise TypeError(f"{op}: expected a float tensor, got {x._dtype}")


def _last_dim_op(op: str, x: Tensor, dim: int):
    """Composites work on the last dim: move ``dim`` there and back."""
    d = normalize_dim(op, dim, x.ndim)
    return d, (d != x.ndim - 1)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (computed stably)."""
    _float_input("softmax", x)
    if x.ndim == 0:
        return softmax(x.reshape(1)).reshape(())
    d, moved = _last_dim_op("softmax", x, dim)
    if moved:
        return softmax(x.swap_dims(d, -1), -1).swap_dims(d, -1)
    out = wrap(x._device.backend.softmax(x._data), x._device, x._dtype)
    return record(out, "softmax", (x,), y=detached(out))


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """x - logsumexp(x) along ``dim``."""
    _float_input("log_softmax", x)
    if x.ndim == 0:
        return log_softmax(x.reshape(1)).reshape(())
    d, moved = _last_dim_op("log_softmax", x, dim)
    if moved:
        return log_softmax(x.swap_dims(d, -1), -1).swap_dims(d, -1)
    out = wrap(x._device.backend.log_softmax(x._data), x._device, x._dtype)
    return record(out, "log_softmax", (x,), y=detached(out))


def quiet_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / (1 + sum(exp(x))): Burn's softmax that lets a row attend to nothing."""
    _float_input("quiet_softmax", x)
    from ember.tensor.grad_mode import no_grad
    with no_grad():
        m = x.max(dim, keepdim=True).clamp(min=0.0)
    e = (x - m).exp()
    return e / (e.sum(dim, keepdim=True) + (-m).exp())


def _check_param(op, name, p, d, x):
    if p is None:
        return
    check_devices(op, x, p)
    if p.shape != (d,):
        raise ValueError(f"{op}: {name} must have shape [{d}] (the last dim of x {shape_str(x.shape)}), "
                         f"got {shape_str(p.shape)}")


def layer_norm(x: Tensor, gamma: Tensor | None = None, beta: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the last dim: (x - mean) / sqrt(var + eps) * gamma + beta (biased var)."""
    _float_input("layer_norm", x)
    d = x.shape[-1]
    _check_param("layer_norm", "gamma", gamma, d, x)
    _check_param("layer_norm", "beta", beta, d, x)
    g = gamma.to(x._dtype) if gamma is not None else None
    bt = beta.to(x._dtype) if beta is not None else None
    y, mean, rstd = x._device.backend.layer_norm(x._data, None if g is None else g._data,
                                                 None if bt is None else bt._data, eps)
    out = wrap(y, x._device, x._dtype)
    if not needs_grad(x, g, bt):
        return out
    gamma_arg = g if g is not None else (
        wrap(x._device.backend.full((d,), 1.0, x._dtype), x._device, x._dtype) if bt is not None else None)
    return record(out, "layer_norm", (x, g, bt), x=detached(x), mean=mean, rstd=rstd,
                  gamma=None if gamma_arg is None else detached(gamma_arg))


def rms_norm(x: Tensor, gamma: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * gamma over the last dim."""
    _float_input("rms_norm", x)
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
        raise ValueError(f"{op}: targets must be [batch]={logits.shape[0]} ints, got shape {shape_str(targets.shape)}")
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"{op}: smoothing must be in [0, 1], got {smoothing}")
    check_index_range(op, targets, logits.shape[1], "target")
    b = logits._device.backend
    loss, lse = b.cross_entropy(logits._data, targets._data, float(smoothing))
    out = wrap(loss, logits._device, logits._dtype)
    return record(out, "cross_entropy", (logits,), logits=detached(logits), targets=detached(targets),
                  lse=lse, smoothing=float(smoothing))


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


def attention(q: Tensor, k: Tensor, v: Tensor, mask_pad: Tensor | None = None, scale: float | None = None,
              quiet: bool = False, dropout_p: float = 0.0) -> Tensor:
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
    bq, h, sq, dh = q.shape
    if k.shape != v.shape or k.shape[0] != bq or k.shape[1] != h or k.shape[3] != dh:
        raise ValueError(f"{op}: q {shape_str(q.shape)}, k {shape_str(k.shape)}, v {shape_str(v.shape)} "
                         f"are incompatible (expected k, v = [B, H, Sk, D])")
    if q._dtype is not k._dtype or q._dtype is not v._dtype:
        raise TypeError(f"{op}: q, k, v dtypes differ: {q._dtype}, {k._dtype}, {v._dtype}")
    if mask_pad is not None and (not mask_pad._dtype.is_bool or mask_pad.shape != (bq, k.shape[2])):
        raise ValueError(f"{op}: mask_pad must be bool [batch, seq_k] = [{bq}, {k.shape[2]}], "
                         f"got {mask_pad._dtype} {shape_str(mask_pad.shape)}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1), got {dropout_p}")
    scale = 1.0 / math.sqrt(dh) if scale is None else float(scale)
    p = float(dropout_p) if is_grad_enabled() else 0.0
    b = q._device.backend
    seed = b.next_seed() if p > 0 else 0
    m = None if mask_pad is None else mask_pad._data
    out_data, lse = b.attention(q._data, k._data, v._data, m, scale, bool(quiet), p, seed)
    out = wrap(out_data, q._device, q._dtype)
    return record(out, "attention", (q, k, v), q=detached(q), k=detached(k), v=detached(v), out=detached(out),
                  lse=lse, mask=m, scale=scale, quiet=bool(quiet), p=p, seed=seed)
