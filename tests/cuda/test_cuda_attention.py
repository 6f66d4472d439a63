"""The fused attention kernels against a materialised NumPy attention (float64).

Covers every head-dimension specialisation (Dh padded to 32, 64, 128), Sq != Sk, tiles
that straddle the sequence ends, padding masks, quiet softmax and dropout on the
pre-softmax scores, forward and backward, in float32, float16 and float64.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from cuda_numpy_reference import DTYPES, assert_close, keep_mask, rounded
from ember.kernels import cuda as K

RNG = np.random.default_rng(77)


def _scores(q, k, mask, scale, p, seed):
    s = q @ np.swapaxes(k, -1, -2) * scale
    if p > 0:
        keep = keep_mask(s.size, p, seed).reshape(s.shape)
        s = np.where(keep, s * (1.0 / (1.0 - p)), 0.0)
    else:
        keep = np.ones(s.shape, dtype=bool)
    if mask is not None:
        s = np.where(mask[:, None, None, :], -1.0e4, s)
    return s, keep


def attention_ref(q, k, v, mask, scale, quiet, p, seed):
    s, _ = _scores(q, k, mask, scale, p, seed)
    m = s.max(-1, keepdims=True)
    if quiet:
        m = np.maximum(m, 0.0)
        lse = m + np.log(np.exp(s - m).sum(-1, keepdims=True) + np.exp(-m))
    else:
        lse = m + np.log(np.exp(s - m).sum(-1, keepdims=True))
    w = np.exp(s - lse)
    return w @ v, lse[..., 0]


def attention_backward_ref(dout, q, k, v, out, lse, mask, scale, p, seed):
    s, keep = _scores(q, k, mask, scale, p, seed)
    w = np.exp(s - lse[..., None])
    dv = np.swapaxes(w, -1, -2) @ dout
    dw = dout @ np.swapaxes(v, -1, -2)
    ds = w * (dw - (dout * out).sum(-1, keepdims=True))
    if mask is not None:
        ds = np.where(mask[:, None, None, :], 0.0, ds)
    if p > 0:
        ds = np.where(keep, ds * (1.0 / (1.0 - p)), 0.0)
    ds = ds * scale
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, dv


# (B, H, Sq, Sk, Dh, masked, quiet, dropout_p)
CASES = [
    (2, 2, 37, 45, 40, True, False, 0.0),     # Dh 40 -> 64, two key tiles, partial last tile
    (1, 3, 20, 33, 16, True, True, 0.2),      # Dh 16 -> 32, quiet, dropout, mask
    (2, 1, 9, 70, 100, False, True, 0.0),     # Dh 100 -> 128 (4 threads per row)
    (1, 2, 33, 17, 32, True, False, 0.5),     # Sq > Sk, 32 = Dh exactly
    (1, 1, 130, 5, 64, False, False, 0.0),    # more query rows than one block holds
]


def _inputs(b, h, sq, sk, dh, masked, dtype):
    q, q64 = rounded(RNG.standard_normal((b, h, sq, dh)), dtype)
    k, k64 = rounded(RNG.standard_normal((b, h, sk, dh)), dtype)
    v, v64 = rounded(RNG.standard_normal((b, h, sk, dh)), dtype)
    mask = None
    if masked:
        mask = RNG.random((b, sk)) < 0.3
        mask[:, 0] = False  # keep one real key per row (an all-masked row is tested apart)
    return (q, q64), (k, k64), (v, v64), mask


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(str(int(a)) for a in c[:5])
                         + ("-mask" if c[5] else "") + ("-quiet" if c[6] else "")
                         + (f"-p{c[7]}" if c[7] else ""))
def test_attention_forward_and_backward(xp, dtype, case):
    b, h, sq, sk, dh, masked, quiet, p = case
    seed = 2024
    scale = 1.0 / math.sqrt(dh)
    (q, q64), (k, k64), (v, v64), mask = _inputs(b, h, sq, sk, dh, masked, dtype)
    dev_mask = None if mask is None else xp.asarray(mask)
    out, lse = K.attention(xp.asarray(q), xp.asarray(k), xp.asarray(v), dev_mask, scale, quiet,
                           p, seed)
    out_ref, lse_ref = attention_ref(q64, k64, v64, mask, scale, quiet, p, seed)
    assert out.shape == (b, h, sq, dh) and out.dtype == dtype
    assert lse.shape == (b, h, sq)
    assert lse.dtype == (np.float64 if dtype == np.float64 else np.float32)
    assert_close(xp.asnumpy(out), out_ref, dtype, what="attention out")
    assert_close(xp.asnumpy(lse), lse_ref, np.float32 if dtype == np.float16 else dtype,
                 scale=10, what="attention lse")

    dout, dout64 = rounded(RNG.standard_normal((b, h, sq, dh)), dtype)
    dq, dk, dv = K.attention_backward(xp.asarray(dout), xp.asarray(q), xp.asarray(k),
                                      xp.asarray(v), out, lse, dev_mask, scale, quiet, p, seed)
    out_used = xp.asnumpy(out).astype(np.float64)  # the backward sees the kernel's own out
    dq_ref, dk_ref, dv_ref = attention_backward_ref(dout64, q64, k64, v64, out_used, lse_ref,
                                                    mask, scale, p, seed)
    for name, got, want in (("dq", dq, dq_ref), ("dk", dk, dk_ref), ("dv", dv, dv_ref)):
        assert got.dtype == dtype
        assert_close(xp.asnumpy(got), want, dtype, scale=4, what=f"attention {name}")


def test_attention_fully_masked_rows_are_uniform(xp):
    # Every key padded: all scores are -1e4, so the weights are uniform (not NaN).
    b, h, sq, sk, dh = 1, 2, 5, 7, 8
    q = RNG.standard_normal((b, h, sq, dh)).astype(np.float32)
    k = RNG.standard_normal((b, h, sk, dh)).astype(np.float32)
    v = RNG.standard_normal((b, h, sk, dh)).astype(np.float32)
    mask = np.ones((b, sk), dtype=bool)
    out, _ = K.attention(xp.asarray(q), xp.asarray(k), xp.asarray(v), xp.asarray(mask), 0.5,
                         False, 0.0, 0)
    want = np.broadcast_to(v.mean(2, keepdims=True), out.shape)
    np.testing.assert_allclose(xp.asnumpy(out), want, rtol=2e-3, atol=2e-3)


def test_attention_ag_news_size(xp):
    """B=32, H=4, S=256, Dh=32 with mask, quiet softmax and dropout, as in the AG News run."""
    if getattr(xp, "__name__", "") != "cupy":
        pytest.skip("too large for the CPU emulator; runs on the GPU")
    b, h, s, dh = 32, 4, 256, 32
    (q, q64), (k, k64), (v, v64), mask = _inputs(b, h, s, s, dh, True, np.float32)
    out, lse = K.attention(xp.asarray(q), xp.asarray(k), xp.asarray(v), xp.asarray(mask),
                           dh ** -0.5, True, 0.1, 5)
    out_ref, lse_ref = attention_ref(q64, k64, v64, mask, dh ** -0.5, True, 0.1, 5)
    assert_close(xp.asnumpy(out), out_ref, np.float32, what="out")
    dout = RNG.standard_normal(q.shape).astype(np.float32)
    grads = K.attention_backward(xp.asarray(dout), xp.asarray(q), xp.asarray(k), xp.asarray(v),
                                 out, lse, xp.asarray(mask), dh ** -0.5, True, 0.1, 5)
    refs = attention_backward_ref(dout.astype(np.float64), q64, k64, v64,
                                  xp.asnumpy(out).astype(np.float64), lse_ref, mask, dh ** -0.5,
                                  0.1, 5)
    for got, want in zip(grads, refs):
        assert_close(xp.asnumpy(got), want, np.float32, scale=4, what="grad")


def test_attention_rejects_bad_input(xp):
    q = xp.asarray(np.zeros((1, 2, 3, 8), np.float32))
    k = xp.asarray(np.zeros((1, 2, 4, 8), np.float32))
    with pytest.raises(ValueError, match=r"attention: expected k and v of shape"):
        K.attention(q, k, xp.asarray(np.zeros((1, 2, 5, 8), np.float32)), None, 1.0, False, 0.0, 0)
    with pytest.raises(ValueError, match=r"mask_pad must have shape \(B=1, Sk=4\)"):
        K.attention(q, k, k, xp.asarray(np.zeros((1, 3), bool)), 1.0, False, 0.0, 0)
    with pytest.raises(TypeError, match="mask_pad must be bool"):
        K.attention(q, k, k, xp.asarray(np.zeros((1, 4), np.float32)), 1.0, False, 0.0, 0)
    big = xp.asarray(np.zeros((1, 1, 2, 160), np.float32))
    with pytest.raises(ValueError, match="head dimension Dh=160 is not supported"):
        K.attention(big, big, big, None, 1.0, False, 0.0, 0)
