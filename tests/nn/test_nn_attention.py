import numpy as np
import pytest
from helpers import npref
from helpers.devices import DEV
from helpers.gradcheck import check_grads, params64, weighted_sum

import ember
from ember import nn

B, S, D, H = 2, 5, 8, 2


def _data(seed=0, sq=S, sk=S):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, sq, D)).astype(np.float32)
    kv = rng.standard_normal((B, sk, D)).astype(np.float32)
    pad = np.zeros((B, sk), dtype=bool)
    pad[0, -2:] = True
    attn = np.triu(np.ones((sq, sk), dtype=bool), 1)[None].repeat(B, 0)
    return q, kv, pad, attn


def t(a, dtype=None):
    return ember.tensor(a, dtype=dtype, device=DEV)


@pytest.mark.parametrize("quiet", [False, True])
def test_fused_and_composed_paths_match_numpy(quiet):
    ember.seed(0)
    mha = nn.MultiHeadAttentionConfig(D, H, dropout=0.0, quiet_softmax=quiet).init(DEV)
    q, kv, pad, attn = _data()
    expected, w = npref.multi_head_attention(mha, q, kv, kv, pad)
    fused = mha(nn.MhaInput(t(q), t(kv), t(kv)).mask_pad(t(pad)))
    assert fused.weights is None
    np.testing.assert_allclose(fused.context.numpy(), expected, rtol=1e-4, atol=1e-5)
    composed = mha(t(q), t(kv), t(kv), mask_pad=t(pad), need_weights=True)
    np.testing.assert_allclose(composed.context.numpy(), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(composed.weights.numpy(), w, rtol=1e-4, atol=1e-6)
    # with an attention mask the composed path runs
    expected, w = npref.multi_head_attention(mha, q, q, q, pad, attn)
    out = mha(nn.MhaInput.self_attn(t(q)).mask_pad(t(pad)).mask_attn(t(attn)), need_weights=True)
    np.testing.assert_allclose(out.context.numpy(), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.weights.numpy(), w, rtol=1e-4, atol=1e-6)


def test_cross_attention_lengths_and_custom_min_float():
    mha = nn.MultiHeadAttentionConfig(D, H, dropout=0.0, min_float=-30.0).init(DEV)
    q, kv, pad, _ = _data(1, sq=3, sk=6)
    expected, _ = npref.multi_head_attention(mha, q, kv, kv, pad)
    np.testing.assert_allclose(
        mha(t(q), t(kv), t(kv), mask_pad=t(pad)).context.numpy(), expected, rtol=1e-4, atol=1e-5
    )


def test_gradients_fused_and_composed():
    ember.seed(2)
    mha = nn.MultiHeadAttentionConfig(4, 2, dropout=0.0, quiet_softmax=True).init(DEV)
    params = params64(mha)
    q, kv, pad, attn = _data(2)
    x = ember.randn(B, S, 4, device=DEV, dtype="float64").require_grad()
    pad_t, attn_t = t(pad), t(attn)
    check_grads(lambda: weighted_sum(mha(x, mask_pad=pad_t).context), params + [x])
    check_grads(lambda: weighted_sum(mha(x, mask_pad=pad_t, mask_attn=attn_t).context), params + [x])


def test_dropout_acts_on_pre_softmax_scores():
    ember.seed(3)
    mha = nn.MultiHeadAttentionConfig(D, H, dropout=0.5).init(DEV)
    q, _, _, attn = _data(3)
    out = mha(t(q), mask_attn=t(attn), need_weights=True)
    w = out.weights.numpy()
    # dropout before the softmax keeps every row a distribution (after it, rows would not sum to 1)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)
    v = mha.valid()
    a = v(t(q)).context.numpy()
    np.testing.assert_array_equal(a, v(t(q)).context.numpy())


def test_input_validation():
    mha = nn.MultiHeadAttentionConfig(D, H).init(DEV)
    with pytest.raises(ValueError, match="query must be"):
        mha(ember.randn(2, 3, D + 1, device=DEV))
    with pytest.raises(ValueError, match="mask_pad must be a bool tensor"):
        mha(ember.randn(2, 3, D, device=DEV), mask_pad=ember.zeros(2, 4, dtype="bool", device=DEV))
    with pytest.raises(ValueError, match="multiple of n_heads"):
        nn.MultiHeadAttentionConfig(10, 3).init(DEV)


def test_parameter_paths():
    mha = nn.MultiHeadAttentionConfig(D, H, key_bias=False).init(DEV)
    assert [p for p, _ in mha.named_parameters()] == [
        "query.weight",
        "query.bias",
        "key.weight",
        "value.weight",
        "value.bias",
        "output.weight",
        "output.bias",
    ]


def test_matches_torch_multihead_attention():
    torch = pytest.importorskip("torch")
    ember.seed(4)
    mha = nn.MultiHeadAttentionConfig(D, H, dropout=0.0).init(DEV)
    ref = torch.nn.MultiheadAttention(D, H, dropout=0.0, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(
            torch.from_numpy(
                np.concatenate(
                    [mha.query.weight.numpy().T, mha.key.weight.numpy().T, mha.value.weight.numpy().T]
                )
            )
        )
        ref.in_proj_bias.copy_(
            torch.from_numpy(
                np.concatenate([mha.query.bias.numpy(), mha.key.bias.numpy(), mha.value.bias.numpy()])
            )
        )
        ref.out_proj.weight.copy_(torch.from_numpy(mha.output.weight.numpy().T.copy()))
        ref.out_proj.bias.copy_(torch.from_numpy(mha.output.bias.numpy()))
    q, kv, pad, _ = _data(5)
    # PyTorch fills masked scores with -inf, Burn/ember with -1e4: identical once exp() underflows
    ctx, w = ref(
        torch.from_numpy(q),
        torch.from_numpy(kv),
        torch.from_numpy(kv),
        key_padding_mask=torch.from_numpy(pad),
        average_attn_weights=False,
    )
    out = mha(t(q), t(kv), t(kv), mask_pad=t(pad), need_weights=True)
    np.testing.assert_allclose(out.context.numpy(), ctx.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.weights.numpy(), w.detach().numpy(), rtol=1e-4, atol=1e-6)


# ---- fused attention where the CUDA kernels stop (issue 11, item 5): on cpu, the fused path --
# ---- and the composed one (need_weights) agree, forward and every gradient -------------------
ATTENTION_EDGES = {  # d_model, n_heads, key length, padding (None / "last" / "batch 1 entirely"), dropout
    "head_dim_256": (512, 2, 4, "last", 0.0),
    "head_dim_256_dropout": (512, 2, 4, "last", 0.2),
    "zero_keys": (8, 2, 0, None, 0.0),
    "fully_masked_rows": (8, 2, 4, "all", 0.0),
}


@pytest.mark.parametrize("quiet", [False, True], ids=["softmax", "quiet"])
@pytest.mark.parametrize("case", list(ATTENTION_EDGES))
def test_fused_attention_matches_the_composed_path_at_the_edges(case, quiet):
    d_model, heads, sk, padding, p = ATTENTION_EDGES[case]
    ember.seed(6)
    mha = nn.MultiHeadAttentionConfig(d_model, heads, dropout=p, quiet_softmax=quiet).init("cpu", "float64")
    rng = np.random.default_rng(6)
    q = ember.tensor(rng.standard_normal((2, 3, d_model)), device="cpu").require_grad()
    kv = ember.tensor(rng.standard_normal((2, sk, d_model)), device="cpu").require_grad()
    pad = np.zeros((2, sk), dtype=bool)
    if padding == "last":
        pad[0, -1] = True
    elif padding == "all":
        pad[1] = True
    weights = ember.tensor(rng.standard_normal((2, 3, d_model)), device="cpu")

    def run(need_weights):
        ember.seed(8)  # the same dropout mask on both paths (both drop pre-softmax scores)
        out = mha(q, kv, kv, mask_pad=ember.tensor(pad, device="cpu"), need_weights=need_weights).context
        grads = (out * weights).sum().backward()
        return out.numpy(), [
            grads.get(t).numpy() for t in [q, kv] + [p.value for _, p in mha.named_parameters()]
        ]

    fused, fused_grads = run(False)
    composed, composed_grads = run(True)
    np.testing.assert_allclose(fused, composed, rtol=1e-10, atol=1e-12)
    for i, (a, b) in enumerate(zip(fused_grads, composed_grads)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"gradient {i}")
