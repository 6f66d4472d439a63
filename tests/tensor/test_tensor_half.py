"""float16 through the fused ops on every backend: results close to the float32 computation
(the fused kernels compute half inputs with float32 accumulation), gradients in float16."""

import numpy as np
import pytest

import ember

OPS = {
    "softmax": lambda x: ember.softmax(x),
    "log_softmax": lambda x: ember.log_softmax(x),
    "layer_norm": lambda x: ember.layer_norm(x),
    "rms_norm": lambda x: ember.rms_norm(x),
    "gelu": lambda x: ember.gelu(x),
    "gelu_tanh": lambda x: ember.gelu(x, approximate="tanh"),
    "cross_entropy": lambda x: ember.cross_entropy_per_sample(
        x, ember.tensor([0, 3, 7, 1, 2, 5], device=x.device)
    ),
    "embedding": lambda x: ember.embedding(x, ember.tensor([[1, 2], [5, 1]], device=x.device)),
    "attention": lambda x: ember.attention(*(x.reshape(1, 2, 3, 8),) * 3, quiet=True),
}


@pytest.mark.parametrize("op", list(OPS))
def test_half_matches_single_and_backprops(device, op):
    x32 = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)
    up = np.random.default_rng(1).standard_normal(OPS[op](ember.tensor(x32)).shape).astype(np.float32)
    outs, grads = {}, {}
    for dtype in (ember.float32, ember.float16):
        x = ember.tensor(x32, dtype=dtype, device=device).require_grad()
        y = OPS[op](x)
        assert y.dtype is dtype
        g = (y.float() * ember.tensor(up, device=device)).sum().backward().get(x)
        assert g.dtype is dtype
        outs[dtype], grads[dtype] = y.float().numpy(), g.float().numpy()
    np.testing.assert_allclose(outs[ember.float16], outs[ember.float32], rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(grads[ember.float16], grads[ember.float32], rtol=5e-2, atol=5e-2)


def test_half_dropout_keeps_the_float32_mask(device):
    x = ember.ones(64, 64, device=device)
    ember.seed(3)
    m32 = ember.dropout(x, 0.3).numpy() != 0
    ember.seed(3)
    m16 = ember.dropout(x.half(), 0.3).numpy() != 0
    np.testing.assert_array_equal(m16, m32)


# ---- float16 where half-precision arithmetic breaks: the reference (the specification)
# computes it with float32 statistics too, and every backend agrees with it --------------------
def _hard_norm_input():
    x = np.random.default_rng(2).standard_normal((4, 16)).astype(np.float32)
    x[1, 3] = 300.0  # x² = 90000 overflows float16 (max 65504)
    x[2] *= 200.0
    return [x]


def _hard_attention_input():
    r = np.random.default_rng(3)
    return [
        r.standard_normal((2, 2, 5, 16)) * 2,
        r.standard_normal((2, 2, 7, 16)) * 2,
        r.standard_normal((2, 2, 7, 16)),
    ]


FULL_MASK = np.array([[True] * 7, [False, False, True, False, True, True, False]])  # batch 0: all masked

HARD = {
    "layer_norm_300": (lambda x: ember.layer_norm(x), _hard_norm_input),
    "rms_norm_300": (lambda x: ember.rms_norm(x), _hard_norm_input),
    "layer_norm_affine_300": (
        lambda x: ember.layer_norm(x, ember.ones(16, device=x.device) * 0.5, ember.ones(16, device=x.device)),
        _hard_norm_input,
    ),
    "attention": (lambda q, k, v: ember.attention(q, k, v), _hard_attention_input),
    "attention_quiet": (lambda q, k, v: ember.attention(q, k, v, quiet=True), _hard_attention_input),
    "attention_fully_masked_row": (
        lambda q, k, v: ember.attention(q, k, v, mask_pad=ember.tensor(FULL_MASK, device=q.device)),
        _hard_attention_input,
    ),
}


def _hard_run(device, name, dtype):
    fn, make = HARD[name]
    arrays = [np.asarray(a, np.float16).astype(np.float32) for a in make()]  # inputs exact in half
    leaves = [ember.tensor(a, dtype=dtype, device=device).require_grad() for a in arrays]
    out = fn(*leaves)
    u = np.random.default_rng(4).standard_normal(out.shape).astype(np.float32)
    grads = out.backward(ember.tensor(u, dtype=dtype, device=device))
    return out.float().numpy(), [grads.get(t).float().numpy() for t in leaves]


@pytest.mark.parametrize("name", list(HARD))
def test_half_hard_cases_match_float32(device, name):
    """float16 results within a half-precision rounding of the float32 computation (the
    reference used to give zeros for the norms and the sum of the values for a masked row)."""
    want, want_g = _hard_run(device, name, ember.float32)
    got, got_g = _hard_run(device, name, ember.float16)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    for g, w in zip(got_g, want_g):
        np.testing.assert_allclose(g, w, rtol=1e-2, atol=1e-2 * max(1.0, float(np.abs(w).max())))


@pytest.mark.parametrize("name", list(HARD))
def test_half_hard_cases_agree_with_reference(other_device, name):
    want, want_g = _hard_run("reference", name, ember.float16)
    got, got_g = _hard_run(other_device, name, ember.float16)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    for g, w in zip(got_g, want_g):
        np.testing.assert_allclose(g, w, rtol=2e-3, atol=2e-3 * max(1.0, float(np.abs(w).max())))


@pytest.mark.parametrize("dtype", [ember.float16, ember.float32, ember.float64], ids=str)
@pytest.mark.parametrize("quiet", [False, True], ids=["softmax", "quiet"])
def test_fully_masked_row_averages_the_values(device, dtype, quiet):
    # every score is -1e4: softmax weighs the keys equally (quiet softmax: exp(-1e4) ~ 0)
    q, k, v = (np.asarray(a, np.float16).astype(np.float64) for a in _hard_attention_input())
    out = (
        ember.attention(
            *(ember.tensor(a, dtype=dtype, device=device) for a in (q, k, v)),
            mask_pad=ember.tensor(FULL_MASK, device=device),
            quiet=quiet,
        )
        .numpy()
        .astype(np.float64)
    )
    want = np.zeros_like(v[0]) if quiet else np.broadcast_to(v[0].mean(axis=1, keepdims=True), v[0].shape)
    rtol = {ember.float16: 2e-3, ember.float32: 1e-5, ember.float64: 1e-12}[dtype]
    np.testing.assert_allclose(out[0], want[:, :5], rtol=rtol, atol=rtol)
