"""Cross-attention: Burn's ``CrossAttention`` (grouped key/value heads) against NumPy and
PyTorch, its gradients, dropout placement and cache; ``MultiHeadAttention`` as cross-attention
with its autoregressive cache (``forward_cache`` / ``forward_step``)."""

import math

import numpy as np
import pytest
from helpers import npref
from helpers.devices import DEV
from helpers.gradcheck import check_grads, params64, weighted_sum

import ember
from ember import nn

B, LQ, LK = 2, 3, 5


def t(a, dtype=None, device=DEV):
    return ember.tensor(a, dtype=dtype, device=device)


def np_cross_attention(ca, query, context, mask=None):
    q = npref.heads(query, ca.query, ca.n_heads)
    rep = ca.n_heads // ca.n_heads_kv  # query head j reads key/value head j // rep
    k = np.repeat(npref.heads(context, ca.key, ca.n_heads_kv), rep, axis=1)
    v = np.repeat(npref.heads(context, ca.value, ca.n_heads_kv), rep, axis=1)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(ca.d_head)
    if mask is not None:
        scores = np.where(mask[:, None, None, :], ca.min_float, scores)
    return npref.attend(scores, v, ca.output, ca.quiet_softmax)[0]


def _data(seed, d_model, d_context, lq=LQ, lk=LK):
    rng = np.random.default_rng(seed)
    query = rng.standard_normal((B, lq, d_model)).astype(np.float32)
    context = rng.standard_normal((B, lk, d_context)).astype(np.float32)
    mask = np.zeros((B, lk), dtype=bool)
    mask[0, -2:] = True
    return query, context, mask


HEADS = {"mha": (4, 4), "gqa": (4, 2), "mqa": (4, 1)}  # n_heads, n_heads_kv


@pytest.mark.parametrize("quiet", [False, True], ids=["softmax", "quiet"])
@pytest.mark.parametrize("heads", list(HEADS))
def test_cross_attention_matches_numpy(heads, quiet, device):
    ember.seed(0)
    n_heads, n_kv = HEADS[heads]
    ca = nn.CrossAttentionConfig(12, 10, n_heads, n_kv, 3, dropout=0.0, quiet_softmax=quiet).init(device)
    query, context, mask = _data(1, 12, 10)
    expected = np_cross_attention(ca, query, context, mask)
    out = ca(t(query, device=device), t(context, device=device), t(mask, device=device))
    assert out.shape == (B, LQ, 12)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)
    # a custom min_float takes the composed path: the same result
    ca.min_float = -30.0
    np.testing.assert_allclose(
        ca(t(query, device=device), t(context, device=device), t(mask, device=device)).numpy(),
        np_cross_attention(ca, query, context, mask),
        rtol=1e-4,
        atol=1e-5,
    )


def test_cross_attention_matches_torch():
    torch = pytest.importorskip("torch")
    ember.seed(2)
    ca = nn.CrossAttentionConfig(8, 6, 2, 2, 4, dropout=0.0).init(DEV)  # n_heads·d_head = d_model
    ref = torch.nn.MultiheadAttention(8, 2, dropout=0.0, kdim=6, vdim=6, batch_first=True)

    def cp(dst, arr):
        dst.copy_(torch.from_numpy(np.ascontiguousarray(arr)))

    with torch.no_grad():
        cp(ref.q_proj_weight, ca.query.weight.numpy().T)
        cp(ref.k_proj_weight, ca.key.weight.numpy().T)
        cp(ref.v_proj_weight, ca.value.weight.numpy().T)
        cp(
            ref.in_proj_bias,
            np.concatenate([ca.query.bias.numpy(), ca.key.bias.numpy(), ca.value.bias.numpy()]),
        )
        cp(ref.out_proj.weight, ca.output.weight.numpy().T)
        cp(ref.out_proj.bias, ca.output.bias.numpy())
    query, context, mask = _data(2, 8, 6)
    expected, _ = ref(
        torch.from_numpy(query),
        torch.from_numpy(context),
        torch.from_numpy(context),
        key_padding_mask=torch.from_numpy(mask),
    )
    np.testing.assert_allclose(
        ca(t(query), t(context), t(mask)).numpy(), expected.detach().numpy(), rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize("path", ["fused", "composed"])
def test_cross_attention_gradients(path):
    ember.seed(3)
    ca = nn.CrossAttentionConfig(4, 3, 2, 1, 2, dropout=0.0, quiet_softmax=True).init(DEV)
    if path == "composed":
        ca.min_float = -50.0
    params = params64(ca)
    rng = np.random.default_rng(3)
    query = t(rng.standard_normal((2, 2, 4))).require_grad()
    context = t(rng.standard_normal((2, 3, 3))).require_grad()
    mask = t(np.array([[False, False, True], [False, False, False]]))
    check_grads(lambda: weighted_sum(ca(query, context, mask)), params + [query, context], n_dirs=1)


def _constant_values(layer, d):
    """value(x) = 1 for every key and output = identity: the output is the sum of the weights."""
    with ember.no_grad():
        layer.value.weight.set_value(layer.value.weight.value * 0.0)
        layer.value.bias.set_value(ember.ones(layer.value.bias.shape, device=DEV))
        layer.output.weight.set_value(ember.eye(d, device=DEV))
        layer.output.bias.set_value(ember.zeros(d, device=DEV))


def test_dropout_acts_after_the_softmax_in_cross_attention_and_before_it_in_mha():
    ember.seed(4)
    query, context, _ = _data(4, 8, 8, lq=6, lk=16)
    ca = nn.CrossAttentionConfig(8, 8, 2, 2, 4, dropout=0.5).init(DEV)
    _constant_values(ca, 8)
    # dropped weights after the softmax: a row no longer sums to 1 (Burn's CrossAttention)
    sums = ca(t(query), t(context)).numpy()
    assert np.abs(sums - 1.0).max() > 0.1
    np.testing.assert_allclose(ca.valid()(t(query), t(context)).numpy(), 1.0, rtol=1e-5)
    mha = nn.MultiHeadAttentionConfig(8, 2, dropout=0.5).init(DEV)
    _constant_values(mha, 8)
    # dropped scores before the softmax: every row still sums to 1 (Burn's MultiHeadAttention)
    np.testing.assert_allclose(mha(t(query), t(context)).context.numpy(), 1.0, rtol=1e-5)


def test_cross_attention_cache_init_and_records(tmp_path):
    ember.seed(5)
    ca = nn.CrossAttentionConfig(6, 8, 3, 1, 2).init(DEV).valid()
    query, context, mask = _data(5, 6, 8)
    cache = nn.CrossAttentionCache.new()
    first = ca.forward_cache(t(query), t(context), t(mask), cache)
    np.testing.assert_allclose(first.numpy(), ca(t(query), t(context), t(mask)).numpy(), rtol=1e-6, atol=1e-7)
    assert cache.k.shape == (B, 1, LK, 2)
    other_query = np.random.default_rng(6).standard_normal((B, 1, 6)).astype(np.float32)
    again = ca.forward_cache(t(other_query), t(context), t(mask), cache)  # the context's projection is reused
    np.testing.assert_allclose(
        again.numpy(), ca(t(other_query), t(context), t(mask)).numpy(), rtol=1e-6, atol=1e-7
    )
    with pytest.raises(ValueError, match=r"context of shape \[2, 5, 8\], got \[2, 4, 8\]"):
        ca.forward_cache(t(query), t(context[:, :4]), None, cache)
    # Burn's initialisation: KaimingUniform with gain 1/sqrt(d_head), i.e. U(±sqrt(3/(d_head·fan_in)))
    bound = math.sqrt(3.0 / (2 * 8))
    assert np.abs(ca.key.weight.numpy()).max() <= bound and np.abs(ca.key.weight.numpy()).max() > 0.5 * bound
    paths = [p for p, _ in ca.named_parameters()]
    assert paths == [
        "query.weight",
        "query.bias",
        "key.weight",
        "key.bias",
        "value.weight",
        "value.bias",
        "output.weight",
        "output.bias",
    ]
    assert [tuple(p.shape) for _, p in ca.named_parameters()][::2] == [(6, 6), (8, 2), (8, 2), (6, 6)]
    loaded = nn.CrossAttentionConfig(6, 8, 3, 1, 2).init(DEV).load_file(ca.save_file(tmp_path / "ca.bpk"))
    np.testing.assert_array_equal(
        loaded.valid()(t(query), t(context)).numpy(), ca(t(query), t(context)).numpy()
    )
    # an empty batch and a single context position
    assert ca(ember.zeros(0, 2, 6, device=DEV), ember.zeros(0, 3, 8, device=DEV)).shape == (0, 2, 6)
    assert ca(t(query), t(context[:, :1])).shape == (B, LQ, 6)


def test_cross_attention_errors():
    with pytest.raises(ValueError, match="query heads must be divisible by key/value heads"):
        nn.CrossAttentionConfig(32, 32, 5, 2, 8).init(DEV)
    with pytest.raises(ValueError, match="sizes must be positive, got d_head=0"):
        nn.CrossAttentionConfig(32, 32, 4, 2, 0).init(DEV)
    ca = nn.CrossAttentionConfig(6, 8, 2, 2, 3).init(DEV)
    with pytest.raises(
        ValueError, match=r"CrossAttention: context must be \[batch, seq, 8\], got \[2, 5, 6\]"
    ):
        ca(ember.zeros(2, 3, 6, device=DEV), ember.zeros(2, 5, 6, device=DEV))
    with pytest.raises(
        ValueError, match=r"query \[2, 3, 6\] and context \[1, 5, 8\] must have the same batch"
    ):
        ca(ember.zeros(2, 3, 6, device=DEV), ember.zeros(1, 5, 8, device=DEV))
    with pytest.raises(ValueError, match=r"mask must be a bool tensor \[2, 5\]"):
        ca(
            ember.zeros(2, 3, 6, device=DEV),
            ember.zeros(2, 5, 8, device=DEV),
            ember.zeros(2, 3, dtype="bool", device=DEV),
        )
    with pytest.raises(TypeError, match="CrossAttentionConfig"):
        nn.CrossAttention(6, 8, 2, 2, 3)


# ---- MultiHeadAttention as cross-attention, and its cache ---------------------------------------
def test_mha_cross_attention_cache_equals_forward():
    ember.seed(7)
    mha = nn.MultiHeadAttentionConfig(8, 2, quiet_softmax=True).init(DEV).valid()
    rng = np.random.default_rng(7)
    x = t(rng.standard_normal((B, 4, 8)).astype(np.float32))
    memory = t(rng.standard_normal((B, 6, 8)).astype(np.float32))
    pad = t(np.array([[False] * 5 + [True], [False] * 6]))
    full = mha(x, memory, memory, mask_pad=pad).context.numpy()
    cache = nn.MhaCache.autoregressive_cross_attention()
    for i in range(1, 5):  # the query grows, the memory is projected once
        out = mha.forward_cache(nn.MhaInput(x[:, :i], memory, memory).mask_pad(pad), cache)
        np.testing.assert_allclose(out.context.numpy(), full[:, :i], rtol=1e-5, atol=1e-6)
    assert cache.key_length == 6 and cache.length == 4 and "cross_attention" in repr(cache)
    # self-attention: keys/values appended, a causal mask over the whole sequence so far
    causal_full = mha(x, mask_attn=nn.generate_autoregressive_mask(B, 4, DEV)).context.numpy()
    cache = nn.MhaCache.autoregressive()
    for i in range(1, 5):
        out = mha.forward_cache(
            x[:, :i], cache, mask_attn=nn.generate_autoregressive_mask(B, i, DEV), need_weights=True
        )
        assert out.weights.shape == (B, 2, 1, i)  # the weights of the new row
        np.testing.assert_allclose(out.context.numpy(), causal_full[:, :i], rtol=1e-5, atol=1e-6)
    cache = nn.MhaCache.autoregressive()
    steps = [mha.forward_step(x[:, i : i + 1], x[:, i : i + 1], x[:, i : i + 1], cache) for i in range(4)]
    np.testing.assert_allclose(
        ember.cat([s.context for s in steps], 1).numpy(), causal_full, rtol=1e-5, atol=1e-6
    )


def test_mha_cache_errors():
    mha = nn.MultiHeadAttentionConfig(8, 2).init(DEV).valid()
    x = ember.randn(2, 3, 8, device=DEV)
    with pytest.raises(
        ValueError, match=r"MultiHeadAttention: key \[2, 4, 8\] and value \[2, 5, 8\] must match"
    ):
        mha(x, ember.randn(2, 4, 8, device=DEV), ember.randn(2, 5, 8, device=DEV))
    with pytest.raises(ValueError, match=r"MultiHeadAttention: mask_attn must be a bool tensor \[2, 3, 4\]"):
        mha(x, ember.randn(2, 4, 8, device=DEV), mask_attn=nn.generate_autoregressive_mask(2, 3, DEV))
    cache = nn.MhaCache.autoregressive()
    mha.forward_cache(x, cache)
    with pytest.raises(ValueError, match="has 3 positions but the cache already holds 3"):
        mha.forward_cache(x, cache)
    with pytest.raises(ValueError, match="advanced by forward_step"):
        step_cache = nn.MhaCache.autoregressive()
        mha.forward_step(x, x, x, step_cache)
        mha.forward_cache(ember.randn(2, 4, 8, device=DEV), step_cache)
    with pytest.raises(ValueError, match=r"forward_step: mask_attn must be a bool tensor \[2, 1, 4\]"):
        mha.forward_step(
            x[:, :1], x[:, :1], x[:, :1], cache, mask_attn=nn.generate_autoregressive_mask(2, 4, DEV)
        )
    with pytest.raises(ValueError, match="keys of batch size 2, got new positions of batch size 1"):
        mha.forward_step(x[:1, :1], x[:1, :1], x[:1, :1], cache)
    assert cache.key_length == 3 and cache.length == 3  # refused steps change nothing
    with pytest.raises(TypeError, match="cache must be an MhaCache"):
        mha.forward_step(x, x, x, nn.CrossAttentionCache())
