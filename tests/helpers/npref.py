"""NumPy transcriptions of ember's neural-network ops, written independently of the backends.

Every function computes in float64 and returns float64; the tests compare float32 results at
float32 tolerances. ``keep_mask`` re-implements the dropout hash from its specification in
ember/kernels/backend.py (SplitMix64 finaliser over the flat element index).
"""

from __future__ import annotations

import math

import numpy as np

MASK_FILL = -1.0e4  # Burn fills padded attention scores with -1e4

_erf_vec = np.vectorize(math.erf, otypes=[np.float64])


def erf(x):
    return _erf_vec(np.asarray(x, dtype=np.float64))


def sigmoid(x):
    x = np.asarray(x, dtype=np.float64)
    return 1.0 / (1.0 + np.exp(-x))


def gelu(x, approximate: bool = False):
    x = np.asarray(x, dtype=np.float64)
    if approximate:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def softplus(x, beta: float = 1.0, threshold: float = 20.0):
    x = np.asarray(x, dtype=np.float64)
    bx = beta * x
    return np.where(bx > threshold, x, np.log1p(np.exp(np.minimum(bx, threshold))) / beta)


def logsumexp(x, axis=-1, keepdims=False):
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    return x - logsumexp(x, axis=axis, keepdims=True)


def quiet_softmax(x, axis=-1):
    """exp(x) / (1 + sum exp(x)): softmax with an extra zero logit that absorbs mass."""
    x = np.asarray(x, dtype=np.float64)
    m = np.maximum(np.max(x, axis=axis, keepdims=True), 0.0)
    e = np.exp(x - m)
    return e / (np.sum(e, axis=axis, keepdims=True) + np.exp(-m))


def layer_norm_stats(x, gamma=None, beta=None, eps=1e-5):
    """``(y, mean, rstd)``: the layer norm and the statistics its backward reads (the kernels'
    ``mean`` and ``rstd``, shaped as ``x`` without its last axis)."""
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    y = (x - mean) * rstd
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y, mean[..., 0], rstd[..., 0]


def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    return layer_norm_stats(x, gamma, beta, eps)[0]


def rms_norm(x, gamma=None, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return y if gamma is None else y * gamma


def cross_entropy(logits, targets, smoothing: float = 0.0):
    """Per-sample CE against the smoothed target (1 - s) * onehot + s / C."""
    logits = np.asarray(logits, dtype=np.float64)
    n, c = logits.shape
    y = np.full((n, c), smoothing / c)
    y[np.arange(n), targets] += 1.0 - smoothing
    return -(y * log_softmax(logits)).sum(-1)


_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_M64 = (1 << 64) - 1


def keep_mask(shape, p: float, seed: int) -> np.ndarray:
    """Dropout keep-mask: element i (flat, row-major) is kept when u_i >= p, with
    z = (i + 1) * GOLDEN + seed (mod 2^64), the SplitMix64 finaliser applied to z, and
    u_i = (z >> 40) / 2^24."""
    n = int(np.prod(shape)) if len(shape) else 1
    with np.errstate(over="ignore"):
        z = (np.arange(1, n + 1, dtype=np.uint64) * np.uint64(_GOLDEN)) + np.uint64(seed & _M64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(40)).astype(np.float64) / float(1 << 24)
    return (u >= p).reshape(shape)


def attention(q, k, v, mask_pad=None, scale=None, quiet=False, dropout_p=0.0, seed=0):
    """Burn's MHA core: scores = q kᵀ·scale → dropout on the scores → fill -1e4 where
    mask_pad [B, Sk] is True → softmax (or quiet softmax) → @ v."""
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if dropout_p > 0:
        s = np.where(keep_mask(s.shape, dropout_p, seed), s / (1 - dropout_p), 0.0)
    if mask_pad is not None:
        s = np.where(np.asarray(mask_pad)[:, None, None, :], MASK_FILL, s)
    w = quiet_softmax(s) if quiet else softmax(s)
    return w @ v


def heads(x, linear, n_heads: int):
    """``linear(x)`` of a [B, S, D] input split into heads: [B, n_heads, S, D_out / n_heads]."""
    y = np.asarray(x, dtype=np.float64) @ linear.weight.numpy() + linear.bias.numpy()
    return y.reshape(y.shape[0], y.shape[1], n_heads, -1).transpose(0, 2, 1, 3)


def attend(scores, v, output, quiet: bool):
    """The softmax (quiet or not) of ``scores`` [B, H, Sq, Sk] applied to the heads ``v``, the
    heads joined and passed through the ``output`` linear: ``(out [B, Sq, D], weights)``."""
    w = quiet_softmax(scores) if quiet else softmax(scores)
    ctx = (w @ v).transpose(0, 2, 1, 3)
    ctx = ctx.reshape(ctx.shape[0], ctx.shape[1], -1)
    return ctx @ output.weight.numpy() + output.bias.numpy(), w


def multi_head_attention(mha, q, k, v, mask_pad=None, mask_attn=None):
    """A ``MultiHeadAttention`` forward: ``(out, weights)``; ``mask_pad`` [B, Sk] and
    ``mask_attn`` [B, Sq, Sk] fill the scores with the module's ``min_float`` where True."""
    qh, kh, vh = (
        heads(q, mha.query, mha.n_heads),
        heads(k, mha.key, mha.n_heads),
        heads(v, mha.value, mha.n_heads),
    )
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(mha.d_k)
    if mask_pad is not None:
        scores = np.where(mask_pad[:, None, None, :], mha.min_float, scores)
    if mask_attn is not None:
        scores = np.where(mask_attn[:, None, :, :], mha.min_float, scores)
    return attend(scores, vh, mha.output, mha.quiet_softmax)
