"""TransformerDecoder (Burn's): forward against NumPy and PyTorch, float64 gradients, the
autoregressive caches of the decoder and encoder against the full causal forward, records,
edge cases and errors."""

import math

import numpy as np
import pytest
from helpers import npref
from helpers.devices import DEV
from helpers.gradcheck import check_grads, params64, weighted_sum

import ember
from ember import nn

B, S, M, D, H, F = 2, 5, 4, 8, 2, 16


def t(a, device=DEV):
    return ember.tensor(a, device=device)


def causal(b, s, device=DEV):
    return nn.generate_autoregressive_mask(b, s, device)


def _randomise_norms(module, rng):
    for path, p in module.named_parameters():
        if path.endswith("gamma"):
            p.set_value(t(rng.uniform(0.5, 1.5, p.shape).astype(np.float32), p.device))
        elif path.endswith("beta"):
            p.set_value(t(rng.normal(0.0, 0.1, p.shape).astype(np.float32), p.device))


def _data(seed=0, b=B, s=S, m=M):
    rng = np.random.default_rng(seed)
    target = rng.standard_normal((b, s, D)).astype(np.float32)
    memory = rng.standard_normal((b, m, D)).astype(np.float32)
    memory_pad = np.zeros((b, m), dtype=bool)
    memory_pad[0, -1] = True
    target_pad = np.zeros((b, s), dtype=bool)
    target_pad[-1, -2:] = True
    return target, memory, memory_pad, target_pad


# ---- NumPy reference of Burn's layer ------------------------------------------------------------
def np_layer_norm(x, norm):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + norm.epsilon) * norm.gamma.numpy() + norm.beta.numpy()


def np_gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def np_mha(mha, q_in, kv_in, pad=None, attn=None):
    return npref.multi_head_attention(mha, q_in, kv_in, kv_in, pad, attn)[0]


def np_decoder_layer(layer, x, memory, target_pad=None, target_attn=None, memory_pad=None):
    ff = layer.pwff

    def pwff(h):
        inner = np_gelu(h @ ff.linear_inner.weight.numpy() + ff.linear_inner.bias.numpy())
        return inner @ ff.linear_outer.weight.numpy() + ff.linear_outer.bias.numpy()

    if layer.norm_first:
        h = np_layer_norm(x, layer.norm_3)
        x = x + np_mha(layer.self_attn, h, h, target_pad, target_attn)
        x = x + np_mha(layer.cross_attn, np_layer_norm(x, layer.norm_1), memory, memory_pad)
        return x + pwff(np_layer_norm(x, layer.norm_2))
    x = np_layer_norm(x + np_mha(layer.self_attn, x, x, target_pad, target_attn), layer.norm_1)
    x = np_layer_norm(x + np_mha(layer.cross_attn, x, memory, memory_pad), layer.norm_2)
    return np_layer_norm(x + pwff(x), layer.norm_3)


# ---- structure ----------------------------------------------------------------------------------
def test_parameter_paths_and_count_follow_burn():
    dec = nn.TransformerDecoderConfig(D, F, H, 2).init(DEV)
    paths = [p for p, _ in dec.named_parameters()]
    # Burn's field order: cross_attn, self_attn, pwff, norm_1, norm_2, norm_3
    assert paths[:2] == ["layers.0.cross_attn.query.weight", "layers.0.cross_attn.query.bias"]
    for name in (
        "layers.0.self_attn.output.bias",
        "layers.1.pwff.linear_inner.weight",
        "layers.1.norm_3.gamma",
        "layers.0.norm_1.beta",
        "layers.1.cross_attn.value.weight",
    ):
        assert name in paths
    assert (
        paths.index("layers.0.self_attn.query.weight")
        < paths.index("layers.0.pwff.linear_inner.weight")
        < paths.index("layers.0.norm_1.gamma")
        < paths.index("layers.0.norm_3.gamma")
    )
    # Burn's display test: TransformerDecoderConfig::new(2, 4, 2, 3) has 246 parameters
    assert nn.TransformerDecoderConfig(2, 4, 2, 3).init(DEV).num_params() == 246
    text = repr(nn.TransformerDecoderConfig(2, 4, 2, 1).init(DEV))
    assert "n_layers: 1, dropout: 0.1, norm_first: False, quiet_softmax: False" in text


def test_config_defaults_and_options_reach_the_layers():
    cfg = nn.TransformerDecoderConfig(D, F, H, 1)
    assert (cfg.dropout, cfg.norm_first, cfg.quiet_softmax, cfg.layer_norm_eps) == (0.1, False, False, 1e-5)
    assert nn.TransformerDecoderConfig.from_json(cfg.with_norm_first(True).to_json()).norm_first is True
    layer = (
        nn.TransformerDecoderConfig(
            D,
            F,
            H,
            1,
            dropout=0.2,
            quiet_softmax=True,
            activation="relu",
            layer_norm_eps=1e-3,
            norm_first=True,
        )
        .init(DEV)
        .layers[0]
    )
    assert isinstance(layer.pwff.activation, nn.Relu) and layer.norm_first
    assert layer.self_attn.quiet_softmax and layer.cross_attn.quiet_softmax
    assert layer.self_attn.dropout.prob == layer.cross_attn.dropout.prob == layer.dropout.prob == 0.2
    assert layer.norm_1.epsilon == layer.norm_2.epsilon == layer.norm_3.epsilon == 1e-3
    with pytest.raises(ValueError, match="n_layers must be >= 0"):
        nn.TransformerDecoderConfig(D, F, H, -1).init(DEV)
    with pytest.raises(ValueError, match="multiple of n_heads"):
        nn.TransformerDecoderConfig(10, F, 3, 1).init(DEV)


# ---- forward ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "norm_first,quiet",
    [(False, False), (True, False), (True, True)],
    ids=["post_norm", "pre_norm", "pre_norm_quiet"],
)
def test_forward_matches_numpy(norm_first, quiet, device):
    ember.seed(0)
    rng = np.random.default_rng(0)
    dec = nn.TransformerDecoderConfig(
        D, F, H, 2, dropout=0.0, norm_first=norm_first, quiet_softmax=quiet
    ).init(device)
    _randomise_norms(dec, rng)
    target, memory, memory_pad, target_pad = _data(1)
    attn = np.triu(np.ones((S, S), dtype=bool), 1)[None].repeat(B, 0)
    expected = target
    for layer in dec.layers:
        expected = np_decoder_layer(layer, expected, memory, target_pad, attn, memory_pad)
    inp = (
        nn.TransformerDecoderInput(t(target, device), t(memory, device))
        .target_mask_attn(causal(B, S, device))
        .target_mask_pad(t(target_pad, device))
        .memory_mask_pad(t(memory_pad, device))
    )
    out = dec(inp)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-4)
    # the tensor form with keyword masks is the same call
    same = dec(
        t(target, device),
        t(memory, device),
        target_mask_attn=causal(B, S, device),
        target_mask_pad=t(target_pad, device),
        memory_mask_pad=t(memory_pad, device),
    )
    np.testing.assert_array_equal(same.numpy(), out.numpy())
    assert inp.target.shape == (B, S, D)  # the input object is not consumed


def _torch_decoder_layer(torch, layer):
    ref = torch.nn.TransformerDecoderLayer(
        D,
        H,
        F,
        dropout=0.0,
        activation="gelu",
        layer_norm_eps=1e-5,
        batch_first=True,
        norm_first=layer.norm_first,
    )

    def cp(dst, arr):
        dst.copy_(torch.from_numpy(np.ascontiguousarray(arr)))

    def attention(dst, mha):
        cp(
            dst.in_proj_weight,
            np.concatenate(
                [mha.query.weight.numpy().T, mha.key.weight.numpy().T, mha.value.weight.numpy().T]
            ),
        )
        cp(
            dst.in_proj_bias,
            np.concatenate([mha.query.bias.numpy(), mha.key.bias.numpy(), mha.value.bias.numpy()]),
        )
        cp(dst.out_proj.weight, mha.output.weight.numpy().T)
        cp(dst.out_proj.bias, mha.output.bias.numpy())

    with torch.no_grad():
        attention(ref.self_attn, layer.self_attn)
        attention(ref.multihead_attn, layer.cross_attn)
        cp(ref.linear1.weight, layer.pwff.linear_inner.weight.numpy().T)
        cp(ref.linear1.bias, layer.pwff.linear_inner.bias.numpy())
        cp(ref.linear2.weight, layer.pwff.linear_outer.weight.numpy().T)
        cp(ref.linear2.bias, layer.pwff.linear_outer.bias.numpy())
        # PyTorch's norm1/2/3 precede (pre-norm) or follow (post-norm) self-attn, cross-attn and
        # feed-forward; Burn's pre-norm layer uses norm_3, norm_1, norm_2 there, post-norm 1, 2, 3.
        order = (
            (layer.norm_3, layer.norm_1, layer.norm_2)
            if layer.norm_first
            else (layer.norm_1, layer.norm_2, layer.norm_3)
        )
        for dst, src in zip((ref.norm1, ref.norm2, ref.norm3), order):
            cp(dst.weight, src.gamma.numpy())
            cp(dst.bias, src.beta.numpy())
    return ref


def _torch_grads_like_ember(layer, ref):
    """The gradients of PyTorch's layer ``ref`` laid out as ember's parameters of ``layer``."""

    def attention(mha, dst):
        q, k, v = (g.T for g in dst.in_proj_weight.grad.numpy().reshape(3, D, D))
        qb, kb, vb = dst.in_proj_bias.grad.numpy().reshape(3, D)
        return {
            mha + "query.weight": q,
            mha + "key.weight": k,
            mha + "value.weight": v,
            mha + "query.bias": qb,
            mha + "key.bias": kb,
            mha + "value.bias": vb,
            mha + "output.weight": dst.out_proj.weight.grad.numpy().T,
            mha + "output.bias": dst.out_proj.bias.grad.numpy(),
        }

    grads = {
        **attention("self_attn.", ref.self_attn),
        **attention("cross_attn.", ref.multihead_attn),
        "pwff.linear_inner.weight": ref.linear1.weight.grad.numpy().T,
        "pwff.linear_inner.bias": ref.linear1.bias.grad.numpy(),
        "pwff.linear_outer.weight": ref.linear2.weight.grad.numpy().T,
        "pwff.linear_outer.bias": ref.linear2.bias.grad.numpy(),
    }
    names = ("norm_3", "norm_1", "norm_2") if layer.norm_first else ("norm_1", "norm_2", "norm_3")
    for name, norm in zip(names, (ref.norm1, ref.norm2, ref.norm3)):
        grads[name + ".gamma"], grads[name + ".beta"] = norm.weight.grad.numpy(), norm.bias.grad.numpy()
    return grads


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_forward_and_gradients_match_torch_decoder_layers(norm_first):
    torch = pytest.importorskip("torch")
    ember.seed(3)
    dec = nn.TransformerDecoderConfig(D, F, H, 2, dropout=0.0, norm_first=norm_first).init(DEV)
    _randomise_norms(dec, np.random.default_rng(3))
    dec.to(ember.float64)
    refs = [_torch_decoder_layer(torch, layer).double() for layer in dec.layers]
    target, memory, memory_pad, target_pad = (
        a.astype(np.float64) if a.dtype == np.float32 else a for a in _data(3)
    )
    weights = np.random.default_rng(4).standard_normal((B, S, D))
    tgt_ref = torch.from_numpy(target).requires_grad_()
    mem_ref = torch.from_numpy(memory).requires_grad_()
    y_ref = tgt_ref
    for ref in refs:
        y_ref = ref(
            y_ref,
            mem_ref,
            tgt_mask=torch.from_numpy(np.triu(np.ones((S, S), bool), 1)),
            tgt_key_padding_mask=torch.from_numpy(target_pad),
            memory_key_padding_mask=torch.from_numpy(memory_pad),
        )
    (y_ref * torch.from_numpy(weights)).sum().backward()

    tgt, mem = t(target).require_grad(), t(memory).require_grad()
    out = dec(
        nn.TransformerDecoderInput(tgt, mem)
        .target_mask_attn(causal(B, S))
        .target_mask_pad(t(target_pad))
        .memory_mask_pad(t(memory_pad))
    )
    np.testing.assert_allclose(out.numpy(), y_ref.detach().numpy(), rtol=1e-10, atol=1e-10)
    grads = (out * t(weights)).sum().backward()
    np.testing.assert_allclose(grads.get(tgt).numpy(), tgt_ref.grad.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(grads.get(mem).numpy(), mem_ref.grad.numpy(), rtol=1e-9, atol=1e-10)
    for i, (layer, ref) in enumerate(zip(dec.layers, refs)):
        expected = _torch_grads_like_ember(layer, ref)
        assert len(expected) == len(list(layer.named_parameters()))
        for path, p in layer.named_parameters():
            np.testing.assert_allclose(
                grads.get(p.value).numpy(),
                expected[path],
                rtol=1e-9,
                atol=1e-10,
                err_msg=f"layers.{i}.{path}",
            )


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_every_gradient_matches_finite_differences(norm_first):
    ember.seed(4)
    layer = nn.TransformerDecoderConfig(
        4, 6, 2, 1, dropout=0.0, norm_first=norm_first, quiet_softmax=norm_first
    ).init_layer(DEV)
    params = params64(layer)
    rng = np.random.default_rng(4)
    target = ember.tensor(rng.standard_normal((2, 3, 4)), device=DEV).require_grad()
    memory = ember.tensor(rng.standard_normal((2, 2, 4)), device=DEV).require_grad()
    memory_pad = t(np.array([[False, True], [False, False]]))
    inp = (
        nn.TransformerDecoderInput(target, memory).target_mask_attn(causal(2, 3)).memory_mask_pad(memory_pad)
    )
    check_grads(lambda: weighted_sum(layer(inp).target), params + [target, memory], n_dirs=1)


def test_dropout_is_active_in_training_only():
    ember.seed(5)
    dec = nn.TransformerDecoderConfig(D, F, H, 1, dropout=0.5).init(DEV)
    target, memory, _, _ = _data(5)
    inp = nn.TransformerDecoderInput(t(target), t(memory)).target_mask_attn(causal(B, S))
    valid = dec.valid()
    a, b = valid(inp), valid(inp)
    assert not a.is_require_grad()
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    trained = dec(inp)
    assert trained.is_require_grad() and np.abs(trained.numpy() - a.numpy()).max() > 1e-3


# ---- autoregressive inference -------------------------------------------------------------------
class Recording(nn.Module):
    """Passes through to ``inner`` and records the input shapes it sees."""

    def __init__(self, inner):
        self.inner = inner
        self.shapes = []

    def forward(self, x):
        self.shapes.append(tuple(x.shape))
        return self.inner(x)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_cached_decoding_equals_the_full_causal_forward_at_every_position(norm_first, device):
    # Burn's test (decoder::tests::test_autoregressive), with a padded memory and three layers
    ember.seed(6)
    dec = nn.TransformerDecoderConfig(D, F, H, 3, norm_first=norm_first).init(device).valid()
    target, memory, memory_pad, _ = _data(6)
    tgt, mem, mpad = t(target, device), t(memory, device), t(memory_pad, device)
    full = dec(
        nn.TransformerDecoderInput(tgt, mem).target_mask_attn(causal(B, S, device)).memory_mask_pad(mpad)
    )
    full = full.numpy()

    feed_forward = dec.layers[-1].pwff
    feed_forward.linear_inner = Recording(feed_forward.linear_inner)
    cache = dec.new_autoregressive_cache()
    for i in range(1, S + 1):  # Burn's form: the whole target so far, every position back
        out = dec.forward_autoregressive_inference(
            nn.TransformerDecoderInput(tgt[:, :i], mem)
            .target_mask_attn(causal(B, i, device))
            .memory_mask_pad(mpad),
            cache,
        )
        assert out.shape == (B, i, D) and cache.length == i
        np.testing.assert_allclose(out.numpy(), full[:, :i], rtol=1e-5, atol=1e-5)

    # each step computes one position, not the prefix again
    assert feed_forward.linear_inner.shapes == [(B, 1, D)] * S
    cache = dec.new_autoregressive_cache()  # one step per token: only the new position goes in
    steps = [dec.forward_step(tgt[:, i : i + 1], cache, mem, memory_mask_pad=mpad) for i in range(S)]
    for i, step in enumerate(steps):
        assert step.shape == (B, 1, D)
        np.testing.assert_allclose(step.numpy(), full[:, i : i + 1], rtol=1e-5, atol=1e-5)
    assert all(c.self_attn.key_length == S and c.cross_attn.key_length == M for c in cache.layers)


def test_prefill_then_steps_and_the_layer_level_cache():
    ember.seed(7)
    dec = nn.TransformerDecoderConfig(D, F, H, 2, quiet_softmax=True).init(DEV).valid()
    target, memory, memory_pad, _ = _data(7)
    tgt, mem = t(target), t(memory)
    full = dec(tgt, mem, target_mask_attn=causal(B, S)).numpy()
    cache = dec.new_autoregressive_cache()
    prompt = dec.forward_step(
        tgt[:, :3], cache, mem, target_mask_attn=causal(B, 3)
    )  # a 3-token prompt at once
    rest = [dec.forward_step(tgt[:, i : i + 1], cache, mem) for i in (3, 4)]
    np.testing.assert_allclose(ember.cat([prompt] + rest, 1).numpy(), full, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cache.output.numpy(), full, rtol=1e-5, atol=1e-5)
    # Burn's layer-level form takes the whole sequence too and returns the input, target replaced
    layer = dec.layers[0]
    layer_full = layer(nn.TransformerDecoderInput(tgt, mem).target_mask_attn(causal(B, S))).target.numpy()
    layer_cache = nn.TransformerDecoderLayerAutoregressiveCache.empty()
    for i in (2, 5):  # two positions, then three more
        res = layer.forward_autoregressive_inference(
            nn.TransformerDecoderInput(tgt[:, :i], mem).target_mask_attn(causal(B, i)), layer_cache
        )
        np.testing.assert_allclose(res.target.numpy(), layer_full[:, :i], rtol=1e-5, atol=1e-5)


def test_encoder_autoregressive_cache_equals_the_causal_forward():
    # Burn's encoder has the same cache (a causal encoder used as a decoder-only model)
    ember.seed(8)
    for norm_first in (False, True):
        enc = nn.TransformerEncoderConfig(D, F, H, 2, norm_first=norm_first).init(DEV).valid()
        x = ember.randn(B, S, D, device=DEV)
        pad = t(np.array([[False] * S, [False] * (S - 1) + [True]]))
        full = enc(nn.TransformerEncoderInput(x).mask_attn(causal(B, S)).mask_pad(pad)).numpy()
        cache = enc.new_autoregressive_cache()
        for i in range(1, S + 1):
            out = enc.forward_autoregressive_inference(
                nn.TransformerEncoderInput(x[:, :i]).mask_attn(causal(B, i)).mask_pad(pad[:, :i]), cache
            )
            np.testing.assert_allclose(out.numpy(), full[:, :i], rtol=1e-5, atol=1e-5)
        cache = enc.new_autoregressive_cache()
        steps = [enc.forward_step(x[:, i : i + 1], cache, mask_pad=pad[:, : i + 1]) for i in range(S)]
        np.testing.assert_allclose(ember.cat(steps, 1).numpy(), full, rtol=1e-5, atol=1e-5)
        layer_cache = nn.TransformerEncoderLayerAutoregressiveCache.empty()
        layer = enc.layers[0]
        layer_full = layer(x, None, causal(B, S)).numpy()
        for i in range(1, S + 1):
            out = layer.forward_autoregressive_inference(x[:, :i], None, causal(B, i), layer_cache)
        np.testing.assert_allclose(out.numpy(), layer_full, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="has 5 positions but the cache already holds 5"):
        enc.forward_autoregressive_inference(x, cache)
    with pytest.raises(ValueError, match="batch of 2 sequences, got new positions for 1"):
        enc.forward_step(x[:1, :1], cache)
    with pytest.raises(ValueError, match=r"TransformerEncoder.forward_step: input must be \[batch, seq, 8\]"):
        enc.forward_step(ember.zeros(2, 1, 4, device=DEV), cache)


def test_edge_cases_length_one_empty_batch_and_no_layers():
    ember.seed(9)
    dec = nn.TransformerDecoderConfig(D, F, H, 1).init(DEV).valid()
    mem = ember.randn(2, 1, D, device=DEV)  # a single memory position
    one = ember.randn(2, 1, D, device=DEV)
    full = dec(one, mem, target_mask_attn=causal(2, 1))
    step = dec.forward_step(one, dec.new_autoregressive_cache(), mem)
    np.testing.assert_allclose(step.numpy(), full.numpy(), rtol=1e-5, atol=1e-6)
    # an empty batch runs through forward and the cache
    empty = dec(
        ember.zeros(0, 3, D, device=DEV), ember.zeros(0, 2, D, device=DEV), target_mask_attn=causal(0, 3)
    )
    assert empty.shape == (0, 3, D)
    cache = dec.new_autoregressive_cache()
    for i in range(1, 3):
        out = dec.forward_autoregressive_inference(
            nn.TransformerDecoderInput(ember.zeros(0, i, D, device=DEV), ember.zeros(0, 2, D, device=DEV)),
            cache,
        )
        assert out.shape == (0, i, D)
    # no layers: the target comes back unchanged, and the cache still counts positions
    none = nn.TransformerDecoderConfig(D, F, H, 0).init(DEV)
    assert none.num_params() == 0
    np.testing.assert_array_equal(none(one, mem).numpy(), one.numpy())
    cache = none.new_autoregressive_cache()
    none.forward_step(one, cache, mem)
    assert cache.length == 1


def test_clear_errors():
    dec = nn.TransformerDecoderConfig(D, F, H, 1).init(DEV).valid()
    tgt, mem = ember.randn(2, 3, D, device=DEV), ember.randn(2, 4, D, device=DEV)
    with pytest.raises(
        ValueError, match=r"TransformerDecoder: memory must be \[batch, seq, 8\], got \[2, 4, 6\]"
    ):
        dec(tgt, ember.randn(2, 4, 6, device=DEV))
    with pytest.raises(
        ValueError, match=r"target \[2, 3, 8\] and memory \[3, 4, 8\] must have the same batch"
    ):
        dec(tgt, ember.randn(3, 4, D, device=DEV))
    with pytest.raises(TypeError, match="needs its memory"):
        dec(tgt)
    with pytest.raises(TypeError, match="TransformerDecoderLayer: expected a TransformerDecoderInput"):
        dec.layers[0](tgt)
    with pytest.raises(TypeError, match="unknown keyword"):
        dec(tgt, mem, mask_attn=causal(2, 3))
    with pytest.raises(ValueError, match=r"mask_attn must be a bool tensor \[2, 3, 3\]"):
        dec(tgt, mem, target_mask_attn=causal(2, 4))
    with pytest.raises(ValueError, match=r"mask_pad must be a bool tensor \[2, 4\]"):
        dec(tgt, mem, memory_mask_pad=ember.zeros(2, 3, dtype="bool", device=DEV))
    cache = dec.new_autoregressive_cache()
    dec.forward_autoregressive_inference(nn.TransformerDecoderInput(tgt, mem), cache)
    with pytest.raises(ValueError, match="has 3 positions but the cache already holds 3"):
        dec.forward_autoregressive_inference(nn.TransformerDecoderInput(tgt, mem), cache)
    with pytest.raises(
        ValueError, match=r"target_mask_attn must be a bool tensor \[2, 4, 4\] over the whole"
    ):
        dec.forward_autoregressive_inference(
            nn.TransformerDecoderInput(ember.randn(2, 4, D, device=DEV), mem).target_mask_attn(causal(2, 1)),
            cache,
        )
    with pytest.raises(ValueError, match=r"memory of shape \[2, 4, 8\], got a memory of shape \[2, 5, 8\]"):
        dec.forward_step(ember.randn(2, 1, D, device=DEV), cache, ember.randn(2, 5, D, device=DEV))
    with pytest.raises(ValueError, match="batch of 2 sequences, got new positions for 3"):
        dec.forward_step(ember.randn(3, 1, D, device=DEV), cache, ember.randn(3, 4, D, device=DEV))
    assert cache.length == 3  # refused steps leave the cache as it was
    with pytest.raises(TypeError, match="cache must be a TransformerDecoderAutoregressiveCache"):
        dec.forward_step(tgt, nn.MhaCache.autoregressive(), mem)
    with pytest.raises(ValueError, match="2 layer caches for 1 layers"):
        dec.forward_step(tgt, nn.TransformerDecoderAutoregressiveCache.empty(2), mem)
    # a layer cache advanced through the decoder keeps no layer outputs: the layer's Burn form refuses it
    with pytest.raises(ValueError, match="keeps no layer outputs"):
        dec.layers[0].forward_autoregressive_inference(nn.TransformerDecoderInput(tgt, mem), cache.layers[0])


def test_record_round_trip(tmp_path):
    ember.seed(10)
    dec = nn.TransformerDecoderConfig(D, F, H, 2, norm_first=True).init(DEV)
    path = dec.save_file(tmp_path / "decoder.bpk")
    other = nn.TransformerDecoderConfig(D, F, H, 2, norm_first=True).init(DEV).load_file(path)
    for (p1, a), (p2, b) in zip(dec.named_parameters(), other.named_parameters()):
        assert p1 == p2 and a.id == b.id
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    target, memory, _, _ = _data(10)
    inp = nn.TransformerDecoderInput(t(target), t(memory)).target_mask_attn(causal(B, S))
    np.testing.assert_array_equal(dec.valid()(inp).numpy(), other.valid()(inp).numpy())
    with pytest.raises(Exception, match="layers.0.self_attn.query.weight"):
        nn.TransformerDecoderConfig(D + 2, F, H, 2).init(DEV).load_file(path)
