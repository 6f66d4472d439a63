"""Dropout and fused attention on every backend.

Dropout masks come from a counter-based hash of a seed (ember/kernels/backend.py), checked
here against an independent NumPy transcription (helpers/npref.keep_mask); backward must
regenerate the very mask the forward used. Attention follows Burn's MHA: dropout on the
pre-softmax scores, -1e4 fill of padded keys, optional quiet softmax.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import npref
from helpers.differential import ScriptedDraws, check_random_program
from helpers.differential_steps import Step
from helpers.differential_values import Operand
from helpers.gradcheck import gradcheck_np
from helpers.numeric import assert_close

import ember

FLOATS = [ember.float32, ember.float64]


# ---- dropout ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_dropout_mask_fraction_and_scaling(device, dtype):
    p = 0.3
    x = ember.ones(100, 120, dtype=dtype, device=device)
    ember.seed(11)
    y = ember.dropout(x, p).numpy()
    dropped = y == 0
    assert abs(dropped.mean() - p) < 0.02, f"dropped fraction {dropped.mean()} for p={p}"
    np.testing.assert_allclose(y[~dropped], 1.0 / (1.0 - p), rtol=1e-6)
    ember.seed(11)
    again = ember.dropout(x, p).numpy()
    np.testing.assert_array_equal(again, y)  # same seed, same mask
    assert not np.array_equal(ember.dropout(x, p).numpy(), y)  # the next draw differs


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_dropout_matches_hash_specification(device, backend, rng, dtype):
    x = rng.standard_normal((6, 7, 9)).astype(dtype.numpy)
    tx = ember.tensor(x, device=device)
    for p, seed in ((0.1, 0), (0.5, 12345), (0.9, 2**62 + 7)):
        got = np.asarray(backend.to_host(backend.dropout(tx._data, p, seed)))
        keep = npref.keep_mask(x.shape, p, seed)
        want = np.where(keep, x.astype(np.float64) / (1 - p), 0.0)
        assert got.dtype == dtype.numpy and got.shape == x.shape
        np.testing.assert_array_equal(got == 0, ~keep | (x == 0))
        rtol = 1e-6 if dtype is ember.float32 else 1e-14
        np.testing.assert_allclose(got, want, rtol=rtol)


def test_dropout_backward_uses_the_forward_mask(device, rng):
    p = 0.4
    x = ember.tensor(rng.standard_normal((30, 40)), dtype=ember.float64, device=device).require_grad()
    y = ember.dropout(x, p)
    u = rng.standard_normal((30, 40))
    g = y.backward(ember.tensor(u, dtype=ember.float64, device=device)).get(x).numpy()
    kept = y.numpy() != 0
    np.testing.assert_allclose(g, np.where(kept, u / (1 - p), 0.0), rtol=1e-14)
    assert 0.3 < 1 - kept.mean() < 0.5


def test_dropout_gradcheck(device, rng):
    def fn(t):
        ember.seed(5)  # the same mask on every evaluation
        return ember.dropout(t, 0.35) * t

    gradcheck_np(fn, device, rng.standard_normal((5, 6)))


def test_dropout_inactive_cases(device, rng):
    x = ember.tensor(rng.standard_normal((4, 5)), device=device)
    assert ember.dropout(x, 0.5, training=False) is x
    assert ember.dropout(x, 0.0) is x
    with ember.no_grad():
        assert ember.dropout(x, 0.5) is x  # off without grad recording, as Burn's inner device
    ones = ember.dropout(x, 1.0)
    assert_close(ones, np.zeros((4, 5)))
    with pytest.raises(ValueError, match="dropout"):
        ember.dropout(x, 1.5)
    with pytest.raises(TypeError, match="dropout"):
        ember.dropout(ember.tensor([1, 2], device=device), 0.5)


# ---- attention ----------------------------------------------------------------------------------
B, H, SQ, SK, D = 2, 2, 3, 5, 4
MASK = np.array([[False, False, False, True, True], [False, False, False, False, False]])

ATTN = {
    "plain": dict(),
    "mask": dict(mask_pad=True),
    "quiet": dict(quiet=True),
    "quiet_mask": dict(quiet=True, mask_pad=True),
    "scale": dict(scale=0.3),
}


def _qkv(rng, dtype=np.float64, scale=1.0):
    return (
        rng.standard_normal((B, H, SQ, D)).astype(dtype) * scale,
        rng.standard_normal((B, H, SK, D)).astype(dtype) * scale,
        rng.standard_normal((B, H, SK, D)).astype(dtype),
    )


def _kw(case, device):
    kw = dict(ATTN[case])
    if kw.pop("mask_pad", False):
        kw["mask_pad"] = ember.tensor(MASK, device=device)
    return kw


def _np_kw(case):
    kw = dict(ATTN[case])
    if kw.pop("mask_pad", False):
        kw["mask_pad"] = MASK
    return kw


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("case", list(ATTN))
def test_attention_forward(device, rng, case, dtype):
    q, k, v = _qkv(rng, dtype.numpy, scale=1.5)
    out = ember.attention(*(ember.tensor(a, device=device) for a in (q, k, v)), **_kw(case, device))
    assert out.shape == (B, H, SQ, D) and out.dtype is dtype
    assert_close(out, npref.attention(q, k, v, **_np_kw(case)), dtype=dtype)


@pytest.mark.parametrize("case", list(ATTN))
def test_attention_gradients(device, rng, case):
    kw = _kw(case, device)
    gradcheck_np(lambda q, k, v: ember.attention(q, k, v, **kw), device, *_qkv(rng))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("quiet", [False, True], ids=["softmax", "quiet"])
def test_attention_dropout_forward(device, backend, rng, quiet, dtype):
    q, k, v = _qkv(rng, dtype.numpy)
    p, seed = 0.3, 987654321
    scale = 1 / math.sqrt(D)
    out, _ = backend.attention(
        *(ember.tensor(a, device=device)._data for a in (q, k, v)),
        ember.tensor(MASK, device=device)._data,
        scale,
        quiet,
        p,
        seed,
    )
    got = np.asarray(backend.to_host(out))
    want = npref.attention(q, k, v, mask_pad=MASK, quiet=quiet, dropout_p=p, seed=seed)
    rtol, atol = (1e-5, 1e-6) if dtype is ember.float32 else (1e-10, 1e-12)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    # through the public op: dropout is active only while grad recording is on
    tq, tk, tv = (ember.tensor(a, device=device) for a in (q, k, v))
    with ember.no_grad():
        plain = ember.attention(tq, tk, tv, quiet=quiet, dropout_p=p)
    assert_close(plain, npref.attention(q, k, v, quiet=quiet), dtype=dtype)
    ember.seed(3)
    d1 = ember.attention(tq, tk, tv, quiet=quiet, dropout_p=p).numpy()
    ember.seed(3)
    d2 = ember.attention(tq, tk, tv, quiet=quiet, dropout_p=p).numpy()
    np.testing.assert_array_equal(d1, d2)
    assert not np.allclose(d1, plain.numpy())


@pytest.mark.parametrize("quiet", [False, True], ids=["softmax", "quiet"])
def test_attention_dropout_gradients(device, rng, quiet):
    mask = ember.tensor(MASK, device=device)

    def fn(q, k, v):
        ember.seed(21)  # the same dropout mask on every evaluation
        return ember.attention(q, k, v, mask_pad=mask, quiet=quiet, dropout_p=0.25)

    gradcheck_np(fn, device, *_qkv(rng))


def test_attention_fully_masked_row(device, rng):
    q, k, v = _qkv(rng)
    mask = np.zeros((B, SK), dtype=bool)
    mask[0] = True  # batch 0 attends to nothing
    tq, tk, tv = (ember.tensor(a, device=device) for a in (q, k, v))
    out = ember.attention(tq, tk, tv, mask_pad=ember.tensor(mask, device=device))
    # every score is -1e4: softmax is uniform over the keys, as in Burn
    assert_close(out[0], np.broadcast_to(v[0].mean(axis=1, keepdims=True), (H, SQ, D)))
    quiet = ember.attention(tq, tk, tv, mask_pad=ember.tensor(mask, device=device), quiet=True)
    assert np.abs(quiet[0].numpy()).max() < 1e-30  # quiet softmax lets the row attend to nothing
    assert_close(quiet[1], npref.attention(q, k, v, mask_pad=mask, quiet=True)[1])


def test_attention_sq_differs_from_sk_and_mask_grad_zero(device, rng):
    q, k, v = _qkv(rng)
    tq, tk, tv = (ember.tensor(a, dtype=ember.float64, device=device).require_grad() for a in (q, k, v))
    out = ember.attention(tq, tk, tv, mask_pad=ember.tensor(MASK, device=device))
    grads = out.sum().backward()
    gk, gv = grads.get(tk).numpy(), grads.get(tv).numpy()
    # padded keys and values receive (numerically) no gradient in batch 0
    assert np.abs(gk[0, :, 3:]).max() < 1e-12 and np.abs(gv[0, :, 3:]).max() < 1e-12


# ---- found by the differential test (tests/tensor/test_differential.py) -----------------------
@pytest.mark.parametrize("sk", [5, 70])
def test_attention_gradients_of_fully_masked_rows_are_float32_exact(other_device, rng, sk):
    # cpu recomputed the weights as exp(s - lse) with a float32 lse = -1e4 + log(Sk), which one
    # float32 holds to ~5e-4 only: dv of such rows was off by up to 4.5e-4 (relative)
    q, k, v = (
        rng.standard_normal(s).astype(np.float32) for s in ((1, 2, 3, 4), (1, 2, sk, 4), (1, 2, sk, 4))
    )
    mask = np.ones((1, sk), dtype=bool)
    dout = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    grads = {}
    for dev in ("reference", other_device):
        leaves = [ember.tensor(a, device=dev).require_grad() for a in (q, k, v)]
        out = ember.attention(*leaves, mask_pad=ember.tensor(mask, device=dev))
        g = out.backward(ember.tensor(dout, device=dev))
        grads[dev] = [g.get(t).numpy() for t in leaves]
    exact_dv = np.broadcast_to(dout.astype(np.float64).sum(2, keepdims=True) / sk, v.shape)
    np.testing.assert_allclose(grads[other_device][2], exact_dv, rtol=1e-5, atol=1e-7)
    for got, want in zip(grads[other_device], grads["reference"]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf in the reference
def test_attention_with_an_infinite_score_is_nan_alike(other_device):
    # a +inf score makes its row NaN, gradients included; the reference shifted such a row by
    # 0 instead of its max and left the other keys' dv at 0 where cpu (online softmax) gave NaN
    q = np.zeros((1, 1, 2, 1), np.float32)
    q[0, 0, :, 0] = 1.0
    k = np.zeros((1, 1, 2, 1), np.float32)
    k[0, 0, 0, 0] = np.inf
    v = np.zeros((1, 1, 2, 1), np.float32)
    results = {}
    for dev in ("reference", other_device):
        leaves = [ember.tensor(a, device=dev).require_grad() for a in (q, k, v)]
        out = ember.attention(*leaves)
        g = out.backward(ember.ones_like(out))
        results[dev] = [out.numpy()] + [g.get(t).numpy() for t in leaves]
    for got, want in zip(results[other_device], results["reference"]):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(results["reference"][3]).all()  # dv: every key of the NaN row


# ---- the differential test's whole-program check on chained attentions ----------------------------
# Two attentions, the second's weights nearly one-hot: its backward's ds = w (dw - rowdot) is
# what is left of terms ~20 that cancel, so float32 fixes it only to eps times them. A square
# sends in an output gradient parallel to the output, where the cancellation is worst (a random
# one, as each step gets on its own, is never parallel). These two programs, drawn by
# tests/tensor/test_differential.py::test_attention_programs, failed its whole-program check.
def _chained_attention(reshape: bool, k, v, mask, scale, quiet: bool, p: float) -> Step:
    def fn(t, kk, vv, *m):
        q = t.reshape((1, 1) + t.shape) if reshape else t
        return ember.attention(q, kk, vv, mask_pad=m[0] if m else None, scale=scale, quiet=quiet, dropout_p=p)

    ops = (Operand(k), Operand(v)) + (() if mask is None else (Operand(mask),))
    return Step("attention", "ember.attention(...)", fn, ops, seed=0, names=("reshape",), degree=3)


def _one_hot_rows(shape, entries) -> np.ndarray:
    a = np.zeros(shape, np.float32)
    for index, value in entries.items():
        a[index] = value
    return a


def test_differential_check_of_a_dropout_attention_whose_reference_gradient_cancels():
    # x's gradient at (1, 3): reference -8.9716e-05, cpu -1.0253e-04, float64 -1.0185e-04: the
    # reference's float32 backward is 12% off (eps times the cancelled terms), the cpu's
    # float64 rowdot is closer; only that step's backward under the square's gradient shows it
    shape = (1, 1, 3, 4)
    x = _one_hot_rows((3, 4), {(1, 3): -1.0})
    k0, v0 = _one_hot_rows(shape, {(0, 0, 1, 3): 3.0}), _one_hot_rows(shape, {(0, 0, 0, 3): 3.0})
    k1 = _one_hot_rows(shape, {(0, 0, 1, 3): 2.0})
    v1 = _one_hot_rows(shape, {(0, 0, 1, 1): 3.0, (0, 0, 1, 3): -1.0})
    first = _chained_attention(True, k0, v0, np.array([[False, False, True]]), None, False, 0.25)
    second = _chained_attention(False, k1, v1, None, 2.0, False, 0.25)
    data = ScriptedDraws((Operand(x), False), 2, first, second, "square")
    check_random_program(data, "cpu", {"attention": 1})


def test_differential_check_of_a_saturated_quiet_attention_whose_cpu_gradient_cancels():
    # here the reference cancels exactly (its output row is the value row bit for bit) and the
    # cpu's float64 rowdot against float32 dw leaves one ulp of ~64 in ds: dq 4.6e-05 instead
    # of 5.6e-12, which every query row adds into v's gradient alike (float64: 1.124e-05,
    # reference 1.105e-05, cpu -8.05e-05; within float32 rounding of the terms that cancel)
    x = np.array([[0.0, 2.0, 4.0, 2.0], [-2.275526, 0.0, 3.0050664, -2.0], [0.0, 3.0, 2.0, 1.1920929e-07]])
    k = np.array([[-3.4230072, -0.97354424, -2.0, 0.0], [-1.8887368, 3.0, 0.0, 2.0], [2.0, 2.0, 0.0, 0.0]])
    v = np.array([[-2.0, 2.0, 2.0, -1.0], [-3.0, 2.0, 3.197888, 2.9951084], [-3.0, 0.0, 0.0, -0.0]])
    x, k, v = (a.astype(np.float32).reshape(1, 1, 3, 4) for a in (x, k, v))
    mask = np.array([[False, False, True]])
    step = _chained_attention(False, k, v, mask, 2.0, True, 0.0)
    again = _chained_attention(False, k, v, mask, 2.0, True, 0.0)
    data = ScriptedDraws((Operand(x, "strided"), False), 2, step, again, "square")
    check_random_program(data, "cpu", {"attention": 1})
