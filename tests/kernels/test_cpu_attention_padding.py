"""The cpu attention kernel leaves padded keys out of its products (their weight is exactly 0):
the results must be those of the full computation, including where leaving them out would not
be exact (rows whose scores sit near the -1e4 fill, non-finite padded values, infinite queries),
where the kernel takes every key."""

from __future__ import annotations

import numpy as np
import pytest

import ember

pytest.importorskip("numba")


def _run(device, q, k, v, mask, dout, **kw):
    leaves = [ember.tensor(a, device=device).require_grad() for a in (q, k, v)]
    ember.seed(99)
    out = ember.attention(*leaves, mask_pad=ember.tensor(mask, device=device), **kw)
    grads = out.backward(ember.tensor(dout, device=device))
    return [out.numpy()] + [grads.get(t).numpy() for t in leaves]


def _inputs(rng, b=3, h=2, sq=9, sk=11, d=4, dtype=np.float64):
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in ((b, h, sq, d), (b, h, sk, d), (b, h, sk, d)))
    dout = rng.standard_normal((b, h, sq, d)).astype(dtype)
    mask = np.zeros((b, sk), dtype=bool)
    mask[0, 7:] = True  # right padding
    mask[1, [0, 3, 4, 10]] = True  # anywhere
    mask[2, :] = False  # none
    return q, k, v, mask, dout


def _assert_as_the_reference(q, k, v, mask, dout):
    """cpu against reference, NaN pattern included (non-finite inputs)."""
    want = _run("reference", q, k, v, mask, dout)
    got = _run("cpu", q, k, v, mask, dout)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        finite = np.isfinite(w)
        np.testing.assert_allclose(g[finite], w[finite], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("quiet", [False, True], ids=["softmax", "quiet"])
@pytest.mark.parametrize("dropout_p", [0.0, 0.3])
def test_padded_keys_left_out_give_the_reference_results(quiet, dropout_p):
    q, k, v, mask, dout = _inputs(np.random.default_rng(0))
    want = _run("reference", q, k, v, mask, dout, quiet=quiet, dropout_p=dropout_p)
    got = _run("cpu", q, k, v, mask, dout, quiet=quiet, dropout_p=dropout_p)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    # the padded keys and values receive exactly no gradient
    for grad in got[2:]:
        assert (grad[0, :, 7:] == 0).all() and (grad[1][:, [0, 3, 4, 10]] == 0).all()


def test_float32_with_long_padding():
    rng = np.random.default_rng(1)
    q, k, v, mask, dout = _inputs(rng, b=3, h=4, sq=40, sk=64, d=8, dtype=np.float32)
    mask[0, 5:] = True
    mask[1, 50:] = True
    want = _run("reference", q, k, v, mask, dout)
    got = _run("cpu", q, k, v, mask, dout)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


def test_rows_whose_scores_sit_below_the_fill_still_weigh_the_padded_keys():
    # scores of about -2e4 on the real keys: the padded keys (-1e4) dominate the softmax
    rng = np.random.default_rng(2)
    q, k, v, mask, dout = _inputs(rng)
    q[:] = 100.0
    k[:] = -2.0 + 0.01 * k
    want = _run("reference", q, k, v, mask, dout, scale=25.0)
    got = _run("cpu", q, k, v, mask, dout, scale=25.0)
    assert np.abs(want[0][0] - v[0][:, 7:].mean(axis=1, keepdims=True)).max() < 1e-9  # padded keys won
    for g, w in zip(got, want):  # scores of 1e4: the gradients cancel to ~1e-9 of the values
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-8)


@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "mask"])
def test_huge_scores_give_finite_gradients(masked):
    # A score of 1e60: the backward's exp(s * scale - lse) must cancel exactly at the row's
    # maximum. Fused into one FMA, the unrounded product left 1e43 there: exp = inf, grads NaN.
    q = np.zeros((1, 2, 2, 2))
    q[0, 1, 1, 1] = 1e30
    mask = np.array([[False, masked]])
    _assert_as_the_reference(q, q.copy(), np.zeros_like(q), mask, np.ones_like(q))
    got = _run("cpu", q, q.copy(), np.zeros_like(q), mask, np.ones_like(q))
    assert all(np.isfinite(g).all() for g in got)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("where", ["padded_value", "padded_key", "query", "dout"])
def test_non_finite_values_propagate_as_in_the_full_product(where):
    rng = np.random.default_rng(3)
    q, k, v, mask, dout = _inputs(rng)
    if where == "padded_value":
        v[0, 1, 8, 2] = np.inf  # 0 * inf: the full product makes NaN
    elif where == "padded_key":
        k[1, 0, 3, 1] = np.nan
    elif where == "query":
        q[0, 0, 2, 0] = np.inf
    else:
        dout[1, 1, 4, 3] = np.inf
    _assert_as_the_reference(q, k, v, mask, dout)


def test_heads_split_off_a_projection_are_read_and_written_without_copies():
    # q/k/v as the multi-head attention makes them: [B, S, H, D] memory viewed as [B, H, S, D]
    from ember.kernels.cpu import attention as kernel

    rng = np.random.default_rng(4)
    q, k, v, mask, dout = _inputs(rng, dtype=np.float32)
    views = [np.ascontiguousarray(a.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3) for a in (q, k, v, dout)]
    out, lse = kernel.attention(q, k, v, mask, 0.5, False, 0.1, 7)
    out_v, lse_v = kernel.attention(*views[:3], mask, 0.5, False, 0.1, 7)
    np.testing.assert_array_equal(out_v, out)
    np.testing.assert_array_equal(lse_v, lse)
    assert out.transpose(0, 2, 1, 3).flags.c_contiguous  # merging the heads back is free
    grads = kernel.attention_backward(dout, q, k, v, out, lse, mask, 0.5, False, 0.1, 7)
    grads_v = kernel.attention_backward(views[3], *views[:3], out_v, lse_v, mask, 0.5, False, 0.1, 7)
    for g, gv in zip(grads, grads_v):
        np.testing.assert_array_equal(gv, g)
        assert g.shape == q.shape[:2] + g.shape[2:] and g.transpose(0, 2, 1, 3).flags.c_contiguous


def _packed_like(rng, dtype=np.float64):
    """Inputs as token packing makes them: padded query positions are all-zero rows, and
    their output gradient is all zero (the packed context discards them)."""
    q, k, v, mask, dout = _inputs(rng, sq=11, dtype=dtype)
    for b in range(q.shape[0]):
        q[b][:, mask[b]] = 0.0
        k[b][:, mask[b]] = 0.0
        v[b][:, mask[b]] = 0.0
        dout[b][:, mask[b]] = 0.0
    return q, k, v, mask, dout


@pytest.mark.parametrize("quiet", [False, True], ids=["softmax", "quiet"])
@pytest.mark.parametrize("dropout_p", [0.0, 0.3])
def test_padded_queries_and_silent_rows_give_the_reference_results(quiet, dropout_p):
    q, k, v, mask, dout = _packed_like(np.random.default_rng(5))
    q[2, :, 5] = 0.0  # a zero query in an unpadded row too: it attends every key uniformly
    dout[2, 1, 6] = 0.0  # and a silent output row that is not padding
    want = _run("reference", q, k, v, mask, dout, quiet=quiet, dropout_p=dropout_p)
    got = _run("cpu", q, k, v, mask, dout, quiet=quiet, dropout_p=dropout_p)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    assert (got[1][0][:, 7:] == 0).all()  # the silent rows' dq is exactly 0


def test_padded_queries_in_float32():
    rng = np.random.default_rng(6)
    q, k, v, mask, dout = _inputs(rng, b=3, h=4, sq=64, sk=64, d=8, dtype=np.float32)
    mask[0, 5:] = True
    mask[1, 50:] = True
    for b in range(3):
        for a in (q, k, v, dout):
            a[b][:, mask[b]] = 0.0
    want = _run("reference", q, k, v, mask, dout, dropout_p=0.1)
    got = _run("cpu", q, k, v, mask, dout, dropout_p=0.1)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("where", ["key", "value", "query_nan", "lse"])
def test_zero_rows_next_to_non_finite_values_are_computed_in_full(where):
    # a zero query row scores 0 * inf = NaN against an infinite key; a silent dout row
    # multiplies an infinite value (or weight) by 0: the NaNs must appear as in the reference
    q, k, v, mask, dout = _packed_like(np.random.default_rng(7))
    if where == "key":
        k[2, 0, 3, 1] = np.inf
    elif where == "value":
        v[2, 1, 4, 0] = -np.inf
    elif where == "query_nan":
        q[0, 1, 8, 2] = np.nan  # a padded query with a NaN is not a zero row
    else:
        q[1, 0, 1, :] = 1e30  # its scores overflow: lse is inf, its weights NaN
        dout[1, 0, 1, :] = 0.0
    _assert_as_the_reference(q, k, v, mask, dout)
