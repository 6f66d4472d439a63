import numpy as np
import pytest
from helpers.devices import DEV, cpu_available
from helpers.gradcheck import check_grads, params64, weighted_sum

import ember
from ember import nn

B, S, D, H, F = 2, 5, 8, 2, 16


def t(a, dtype=None):
    return ember.tensor(a, dtype=dtype, device=DEV)


def _randomise_norms(enc):
    for layer in enc.layers:
        for norm in (layer.norm_1, layer.norm_2):
            norm.gamma.set_value(ember.rand(D, device=DEV, low=0.5, high=1.5))
            norm.beta.set_value(ember.randn(D, device=DEV, std=0.1))


def test_parameter_names_follow_burn():
    enc = nn.TransformerEncoderConfig(D, F, H, 2).init(DEV)
    paths = [p for p, _ in enc.named_parameters()]
    assert paths[:2] == ["layers.0.mha.query.weight", "layers.0.mha.query.bias"]
    for name in (
        "layers.1.pwff.linear_inner.weight",
        "layers.1.pwff.linear_outer.bias",
        "layers.0.norm_1.gamma",
        "layers.0.norm_2.beta",
        "layers.1.mha.output.weight",
    ):
        assert name in paths
    per_layer = 4 * (D * D + D) + (D * F + F) + (F * D + D) + 4 * D
    assert enc.num_params() == 2 * per_layer


def _torch_layer(torch, layer, norm_first):
    ref = torch.nn.TransformerEncoderLayer(
        D, H, F, dropout=0.0, activation="gelu", layer_norm_eps=1e-5, batch_first=True, norm_first=norm_first
    )
    mha = layer.mha

    def cp(dst, arr):
        dst.copy_(torch.from_numpy(np.ascontiguousarray(arr)))

    with torch.no_grad():
        cp(
            ref.self_attn.in_proj_weight,
            np.concatenate(
                [mha.query.weight.numpy().T, mha.key.weight.numpy().T, mha.value.weight.numpy().T]
            ),
        )
        cp(
            ref.self_attn.in_proj_bias,
            np.concatenate([mha.query.bias.numpy(), mha.key.bias.numpy(), mha.value.bias.numpy()]),
        )
        cp(ref.self_attn.out_proj.weight, mha.output.weight.numpy().T)
        cp(ref.self_attn.out_proj.bias, mha.output.bias.numpy())
        cp(ref.linear1.weight, layer.pwff.linear_inner.weight.numpy().T)
        cp(ref.linear1.bias, layer.pwff.linear_inner.bias.numpy())
        cp(ref.linear2.weight, layer.pwff.linear_outer.weight.numpy().T)
        cp(ref.linear2.bias, layer.pwff.linear_outer.bias.numpy())
        # Burn's pre-norm layer normalises the attention input with norm_2 and the
        # feed-forward input with norm_1; PyTorch uses norm1 then norm2.
        first, second = (layer.norm_2, layer.norm_1) if norm_first else (layer.norm_1, layer.norm_2)
        cp(ref.norm1.weight, first.gamma.numpy())
        cp(ref.norm1.bias, first.beta.numpy())
        cp(ref.norm2.weight, second.gamma.numpy())
        cp(ref.norm2.bias, second.beta.numpy())
    return ref


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_matches_torch(norm_first):
    torch = pytest.importorskip("torch")
    ember.seed(0)
    enc = nn.TransformerEncoderConfig(D, F, H, 2, dropout=0.0, norm_first=norm_first).init(DEV)
    _randomise_norms(enc)
    refs = [_torch_layer(torch, layer, norm_first) for layer in enc.layers]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((B, S, D)).astype(np.float32)
    pad = np.zeros((B, S), dtype=bool)
    pad[1, -2:] = True
    # train mode keeps PyTorch off its nested-tensor fast path (dropout is 0 anyway)
    y_ref = torch.from_numpy(x)
    for ref in refs:
        y_ref = ref(y_ref, src_key_padding_mask=torch.from_numpy(pad))
    y = enc(nn.TransformerEncoderInput(t(x)).mask_pad(t(pad)))
    # by default the layers run on the real tokens only: equal there, 0 at the padding
    np.testing.assert_allclose(y.numpy()[~pad], y_ref.detach().numpy()[~pad], rtol=1e-4, atol=1e-4)
    assert not y.numpy()[pad].any()
    # inference copy gives the same result without a graph
    yv = enc.valid()(nn.TransformerEncoderInput(t(x)).mask_pad(t(pad)))
    assert not yv.is_require_grad()
    np.testing.assert_allclose(yv.numpy(), y.numpy(), rtol=1e-6, atol=1e-6)
    # skip_padding=False computes the padded positions too, as Burn and PyTorch's training path
    enc.skip_padding = False
    y_full = enc(nn.TransformerEncoderInput(t(x)).mask_pad(t(pad)))
    np.testing.assert_allclose(y_full.numpy(), y_ref.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_layer_with_attention_mask_and_quiet_softmax_gradients():
    ember.seed(2)
    layer = nn.TransformerEncoderConfig(
        4, 6, 2, 1, dropout=0.0, quiet_softmax=True, norm_first=True
    ).init_layer(DEV)
    params = params64(layer)
    x = ember.randn(2, 3, 4, device=DEV, dtype="float64").require_grad()
    pad = t(np.array([[False, False, True], [False, False, False]]))
    attn = nn.generate_autoregressive_mask(2, 3, DEV)
    check_grads(lambda: weighted_sum(layer(x, pad, attn)), params + [x])


def test_activation_and_eps_are_passed_down():
    enc = nn.TransformerEncoderConfig(D, F, H, 1, activation="relu", layer_norm_eps=1e-3).init(DEV)
    layer = enc.layers[0]
    assert isinstance(layer.pwff.activation, nn.Relu)
    assert layer.norm_1.epsilon == 1e-3 and layer.mha.dropout.prob == 0.1
    cfg = nn.TransformerEncoderConfig(D, F, H, 1, norm_first=True)
    back = nn.TransformerEncoderConfig.from_json(cfg.to_json())
    assert back == cfg


def test_pwff_matches_formula():
    ember.seed(3)
    ff = nn.PositionWiseFeedForwardConfig(4, 6, dropout=0.0).init(DEV)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    h = x @ ff.linear_inner.weight.numpy() + ff.linear_inner.bias.numpy()
    import math

    h = h * 0.5 * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    expected = h @ ff.linear_outer.weight.numpy() + ff.linear_outer.bias.numpy()
    np.testing.assert_allclose(ff(t(x)).numpy(), expected, rtol=1e-4, atol=1e-5)


BURN_SINUSOIDS = np.array(
    [
        [0.00000, 1.00000, 0.00000, 1.00000, 0.00000, 1.00000],
        [0.84147, 0.54030, 0.04640, 0.99892, 0.00215, 1.00000],
        [0.90930, -0.41615, 0.09270, 0.99569, 0.00431, 0.99999],
        [0.14112, -0.98999, 0.13880, 0.99032, 0.00646, 0.99998],
        [-0.75680, -0.65364, 0.18460, 0.98281, 0.00862, 0.99996],
        [-0.95892, 0.28366, 0.23000, 0.97319, 0.01077, 0.99994],
        [-0.27942, 0.96017, 0.27491, 0.96147, 0.01293, 0.99992],
        [0.65699, 0.75390, 0.31922, 0.94768, 0.01508, 0.99989],
        [0.98936, -0.14550, 0.36285, 0.93185, 0.01723, 0.99985],
        [0.41212, -0.91113, 0.40570, 0.91401, 0.01939, 0.99981],
        [-0.54402, -0.83907, 0.44767, 0.89420, 0.02154, 0.99977],
        [-0.99999, 0.00443, 0.48868, 0.87246, 0.02370, 0.99972],
    ]
)


def test_sinusoids_match_burn_values():
    np.testing.assert_allclose(nn.generate_sinusoids(12, 6, 10_000, DEV).numpy(), BURN_SINUSOIDS, atol=1e-5)
    pe = nn.PositionalEncodingConfig(6).init(DEV)
    out = pe(ember.zeros(2, 3, 6, device=DEV))
    np.testing.assert_allclose(out.numpy(), np.broadcast_to(BURN_SINUSOIDS[:3], (2, 3, 6)), atol=1e-5)
    assert pe.num_params() == 0 and len(pe.into_record()) == 0


def test_positional_encoding_errors():
    pe = nn.PositionalEncodingConfig(8, max_sequence_size=10).init(DEV)
    with pytest.raises(ValueError, match="d_model"):
        pe(ember.zeros(1, 5, 10, device=DEV))
    with pytest.raises(ValueError, match="exceeds max_sequence_size"):
        pe(ember.zeros(1, 11, 8, device=DEV))
    with pytest.raises(ValueError, match="even"):
        nn.generate_sinusoids(4, 5)
    with pytest.raises(ValueError, match="max_timescale"):
        nn.PositionalEncodingConfig(4, max_sequence_size=100, max_timescale=10).init(DEV)


@pytest.mark.skipif(not cpu_available(), reason="cpu backend not importable yet")
def test_encoder_on_cpu_backend_agrees_with_reference():
    ember.seed(5)
    enc = nn.TransformerEncoderConfig(D, F, H, 2, norm_first=True, quiet_softmax=True).init(DEV).valid()
    x = ember.randn(B, S, D, device=DEV)
    pad = t(np.array([[False] * S, [False] * (S - 2) + [True] * 2]))
    ref = enc(x, pad).numpy()
    enc.to("cpu")
    np.testing.assert_allclose(enc(x.to("cpu"), pad.to("cpu")).numpy(), ref, rtol=1e-4, atol=1e-5)
