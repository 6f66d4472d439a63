import numpy as np
import pytest
from helpers.devices import DEV, cpu_available
from helpers.encoder_classifier import IDS, EncoderClassifier
from helpers.gradcheck import check_grads

import ember
from ember import nn
from ember.nn.quantize import dequantize, quantize
from ember.optim import AdamConfig, GradientsParams
from ember.record import RecordError


def _expand(scales: np.ndarray, scheme: nn.QuantScheme, shape) -> np.ndarray:
    """The scale of every element (an independent reading of the block layout)."""
    block = scheme.block_dims(shape)
    if block is None:
        return np.broadcast_to(scales.reshape(()), shape)
    for axis, extent in enumerate(block):
        scales = np.repeat(scales, extent, axis=axis)
    return scales


@pytest.mark.parametrize("value", list(nn.QuantValue))
@pytest.mark.parametrize("block", [None, (8,), (2, 4)])
def test_quantization_error_is_at_most_half_a_step(value, block):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 24)).astype(np.float32) * 3
    scheme = nn.QuantScheme(value, block, store=nn.QuantStore.PackedU32)
    packed, scales = quantize(ember.tensor(x, device=DEV), scheme)
    native = nn.QuantScheme(value, block)
    unpacked, _ = quantize(ember.tensor(x, device=DEV), native)
    assert unpacked.dtype is ember.int32 and unpacked.shape == x.shape
    np.testing.assert_array_equal(
        dequantize(unpacked, scales, native, x.shape).numpy(),
        unpacked.numpy().astype(np.float32) * _expand(scales.numpy(), native, x.shape),
    )
    # packed 32/bits to an int32 word along the last dim
    assert packed.dtype is ember.int32 and packed.shape == (6, {8: 6, 4: 3, 2: 2}[value.bits])
    assert scales.shape == {None: (1,), (8,): (6, 3), (2, 4): (3, 6)}[block]
    back = dequantize(packed, scales, scheme, x.shape).numpy()
    step = _expand(scales.numpy(), scheme, x.shape)
    q = back / step
    a, b = value.range
    np.testing.assert_allclose(q, np.round(q), atol=1e-3)
    assert q.min() >= a - 1e-3 and q.max() <= b + 1e-3
    assert np.all(np.abs(back - x) <= step / 2 * (1 + 1e-4))
    # MinMax: the scale maps the block's largest magnitude onto the range
    amax = np.abs(x).max() if block is None else None
    if amax is not None:
        np.testing.assert_allclose(scales.numpy()[0], 2 * amax / (b - a), rtol=1e-6)


def test_values_match_burns_reference_quantization():
    # burn-ndarray's test_int8_symmetric_quantization: Q8S over [-1.8, 0.5]
    x = ember.tensor([-1.8, -1.0, 0.0, 0.5], device=DEV)
    scheme = nn.QuantScheme(nn.QuantValue.Q8S, store="packed_u32")
    packed, scales = quantize(x, scheme)
    back = dequantize(packed, scales, scheme, (4,)).numpy()
    np.testing.assert_allclose(back / scales.numpy()[0], [-127, -71, 0, 35], atol=1e-4)
    np.testing.assert_allclose(back, [-1.8, -1.0062993, 0.0, 0.496063], rtol=1e-6)
    # the four values sit in one word, first in the lowest byte (two's complement)
    word = int(packed.numpy()[0]) & 0xFFFFFFFF
    assert [(word >> (8 * k)) & 0xFF for k in range(4)] == [0x81, 0xB9, 0x00, 0x23]


def test_halves_round_away_from_zero_and_zero_blocks_get_a_step():
    scheme = nn.QuantScheme(nn.QuantValue.Q8S)  # scale = 127 / 127 = 1
    x = ember.tensor([127.0, 2.5, -2.5, 0.5, -0.5, 1.5], device=DEV)
    packed, scales = quantize(x, scheme)
    np.testing.assert_array_equal(dequantize(packed, scales, scheme, (6,)).numpy(), [127, 3, -3, 1, -1, 2])
    zeros = ember.zeros(3, 8, device=DEV)
    packed, scales = quantize(zeros, scheme.per_block((4,)))
    np.testing.assert_allclose(scales.numpy(), 0.1)  # Burn's reference: a zero scale becomes 0.1
    assert np.all(dequantize(packed, scales, scheme.per_block((4,)), (3, 8)).numpy() == 0)


def test_float16_scales_round_up_and_abs_mean_calibration():
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((4, 16)), dtype="float64", device=DEV)
    scheme = nn.QuantScheme(nn.QuantValue.Q8S).per_block((16,), "float16")
    packed, scales = quantize(x, scheme)
    assert scales.dtype is ember.float16
    raw = np.abs(x.numpy()).max(axis=1, keepdims=True) / 127
    assert np.all(scales.numpy().astype(np.float64) >= raw)  # never below: the maximum does not clip
    assert np.all(np.nextafter(scales.numpy(), np.float16(0)).astype(np.float64) < raw)
    back = dequantize(packed, scales, scheme, x.shape, "float64").numpy()
    assert back.dtype == np.float64 and np.abs(back - x.numpy()).max() <= scales.numpy().max() / 2
    ternary = nn.QuantScheme(nn.QuantValue.Q2S)
    packed, scales = quantize(x, ternary, nn.Calibration.AbsMean)
    gamma = np.abs(x.numpy()).mean()
    np.testing.assert_allclose(scales.numpy()[0], gamma, rtol=1e-6)  # 2γ / (1 - -1)
    q = dequantize(packed, scales, ternary, x.shape, "float64").numpy() / scales.numpy()[0]
    assert set(np.round(q).ravel().tolist()) <= {-1.0, 0.0, 1.0}


@pytest.mark.skipif(not cpu_available(), reason="cpu backend unavailable")
def test_cpu_backend_dequantizes_like_the_reference():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 13)).astype(np.float32)
    for value in (nn.QuantValue.Q8F, nn.QuantValue.Q4S, nn.QuantValue.Q2F):
        scheme = nn.QuantScheme(value, store=nn.QuantStore.PackedU32)
        ref = dequantize(*quantize(ember.tensor(x, device=DEV), scheme), scheme, x.shape).numpy()
        cpu = dequantize(*quantize(ember.tensor(x, device="cpu"), scheme), scheme, x.shape).numpy()
        np.testing.assert_array_equal(cpu, ref)


def test_qlora_stores_packed_bases_and_trains_only_adapters():
    ember.seed(0)
    model = EncoderClassifier(4)
    qlora = nn.QLora(nn.Lora(2, 4.0), nn.Quantizer(scheme=nn.QuantScheme(nn.QuantValue.Q4S)))
    model.apply_qlora(qlora)
    paths = dict(model.named_parameters())
    w = model.head.weight
    assert w.dtype is ember.int32 and w.shape == (8, 4)  # Native store: one int32 per value
    assert set(np.unique(w.numpy())) <= set(range(-7, 8))
    assert isinstance(w.adapter(), nn.QLoraAdapter) and w.val().shape == (8, 4)
    assert "head.weight.lora.quant.scales" in paths and "head.bias.quant.scales" in paths
    assert isinstance(model.head.bias.adapter(), nn.QuantizedStorage)  # rank 1: quantized, no factors
    assert paths["embedding.weight"].adapter().a.shape == (20, 2)
    trainable = [p for p, par in model.named_parameters() if par.is_require_grad()]
    assert trainable and all(p.endswith((".lora.a", ".lora.b")) for p in trainable)
    with pytest.raises(ValueError, match="already have LoRA adapters or quantized storage"):
        model.apply_lora(nn.Lora(2, 4.0))
    with pytest.raises(ValueError, match="already have"):
        model.apply_qlora(qlora)
    # gradients reach only the factors
    adapter = w.adapter()
    adapter.b.set_value(ember.randn(2, 4, device=DEV))
    grads = model(IDS).sum().backward()
    assert grads.get(adapter.a.value) is not None and grads.get(adapter.b.value) is not None
    frozen = [par for p, par in model.named_parameters() if not par.is_require_grad()]
    assert all(grads.get(par.value) is None for par in frozen)


@pytest.mark.parametrize("store", list(nn.QuantStore))
def test_output_equals_lora_on_the_dequantized_weights(store):
    ember.seed(1)
    model = EncoderClassifier(4)
    plain = model.clone()
    scheme = nn.QuantScheme(nn.QuantValue.Q8S, store=store).per_block((4,))
    # packed words change the stored shape, which norms check in forward: quantize the weights
    weights = (lambda path, pid: path.endswith("weight")) if store is nn.QuantStore.PackedU32 else None
    model.apply_qlora(nn.QLora(nn.Lora(2, 4.0), nn.Quantizer(scheme=scheme, param_group=weights)))
    if store is nn.QuantStore.PackedU32:
        assert model.head.weight.shape == (8, 1) and model.head.weight.val().shape == (8, 4)
    quantized = dict(model.named_parameters())
    for path, p in plain.named_parameters():  # the same model holding dequantized weights...
        reparam = quantized[path].adapter()
        if reparam is not None:
            p.set_value(getattr(reparam, "quant", reparam).dequantize(quantized[path].value))
    with ember.no_grad():
        base_only = plain(IDS).numpy()
    plain.apply_lora(nn.Lora(2, 4.0))
    for path, p in plain.named_parameters():  # ...and the same factors
        if ".lora." in path:
            p.set_value(ember.randn(*p.shape, device=DEV, std=0.3))
            quantized[path].set_value(p.value)
    with ember.no_grad():
        out = model(IDS).numpy()
        np.testing.assert_array_equal(out, plain(IDS).numpy())
    assert np.abs(out - base_only).max() > 1e-3  # the factors took part


def test_adapter_gradients_match_finite_differences_in_float64():
    ember.seed(2)
    lin = nn.LinearConfig(6, 5).init(DEV, dtype="float64")
    lin.apply_qlora(nn.QLora(nn.Lora(3, 6.0), nn.Quantizer(scheme=nn.QuantScheme(nn.QuantValue.Q4F))))
    adapter = lin.weight.adapter()
    assert adapter.a.dtype is ember.float64 and lin.weight.val().dtype is ember.float64
    adapter.b.set_value(ember.randn(3, 5, device=DEV, dtype="float64"))
    x = ember.randn(4, 6, device=DEV, dtype="float64")
    target = ember.randn(4, 5, device=DEV, dtype="float64")
    check_grads(lambda: ((lin(x) - target) ** 2).sum(), [adapter.a.value, adapter.b.value])


def test_record_round_trip_through_bpk(tmp_path):
    ember.seed(3)
    scheme = nn.QuantScheme(nn.QuantValue.Q4F, store="packed_u32").per_block((4,))
    settings = nn.QLora(
        nn.Lora(2, 4.0), nn.Quantizer(scheme=scheme, param_group=lambda path, pid: "weight" in path)
    )
    model = EncoderClassifier(4).apply_qlora(settings)
    model.head.weight.adapter().b.set_value(ember.randn(2, 4, device=DEV))
    record = model.into_record()
    assert record["head.weight"].array.dtype == np.int32
    assert record["head.weight.lora.quant.scales"].array.shape == (8, 1)
    path = model.save_file(tmp_path / "qlora")
    other = EncoderClassifier(4).apply_qlora(settings)
    other.load_file(path)
    for name, p in model.named_parameters():
        loaded = dict(other.named_parameters())[name]
        np.testing.assert_array_equal(loaded.numpy(), p.numpy())
        assert loaded.id == p.id
    with ember.no_grad():
        np.testing.assert_array_equal(other(IDS).numpy(), model(IDS).numpy())
    # a record of another packing does not fit, and says where
    wider = EncoderClassifier(4).apply_qlora(nn.QLora(nn.Lora(2, 4.0)))  # Native: one value per int32
    with pytest.raises(RecordError, match="head.weight: shape mismatch"):
        wider.load_file(path)


def test_merge_dequantizes_folds_and_restores_trainability():
    ember.seed(4)
    model = EncoderClassifier(4)
    model.embedding.freeze()
    before = {path: p.is_require_grad() for path, p in model.named_parameters()}
    model.apply_qlora(nn.QLora(nn.Lora(2, 4.0)))
    for p in model.parameters():
        if p.is_require_grad():
            p.set_value(ember.randn(*p.shape, device=DEV, std=0.3))
    with ember.no_grad():
        unmerged = model(IDS).numpy()
    valid = model.valid()
    assert all(p.dtype is ember.float32 and p.adapter() is None for p in valid.parameters())
    np.testing.assert_allclose(valid(IDS).numpy(), unmerged, rtol=1e-5, atol=1e-6)
    effective = model.head.weight.val().numpy()
    model.merge_lora()
    assert {path: p.is_require_grad() for path, p in model.named_parameters()} == before
    np.testing.assert_array_equal(model.head.weight.numpy(), effective)
    with ember.no_grad():
        np.testing.assert_allclose(model(IDS).numpy(), unmerged, rtol=1e-5, atol=1e-6)


def test_groups_choose_what_is_quantized_and_what_is_adapted():
    model = EncoderClassifier(4)
    only_weights = nn.Quantizer().with_param_group(lambda path, pid: path.endswith("weight"))
    only_head = nn.Lora(2, 2.0).with_param_group(lambda path, pid: path.startswith("head"))
    model.apply_qlora(nn.QLora(only_head, only_weights))
    assert model.head.bias.dtype is ember.float32 and model.head.bias.adapter() is None
    assert not model.head.bias.is_require_grad()  # frozen all the same, as in Burn
    assert isinstance(model.head.weight.adapter(), nn.QLoraAdapter)
    assert isinstance(model.embedding.weight.adapter(), nn.QuantizedStorage)  # quantized, not adapted
    adapted = [p for p, par in model.named_parameters() if isinstance(par.adapter(), nn.LoraAdapter)]
    assert adapted == ["head.weight"]


def test_a_tiny_finetune_reduces_the_loss():
    ember.seed(5)
    lin = nn.LinearConfig(8, 3).init(DEV)
    scheme = nn.QuantScheme(nn.QuantValue.Q4S, store=nn.QuantStore.PackedU32)
    lin.apply_qlora(nn.QLora(nn.Lora(2, 4.0), nn.Quantizer(scheme=scheme)))
    assert lin.weight.adapter().quant.nbytes == 8 * 4 + 4  # 8 rows of one word + one scale
    x = ember.randn(32, 8, device=DEV)
    target = x @ ember.randn(8, 3, device=DEV)
    optim = AdamConfig().init()
    packed = lin.weight.numpy().copy()
    losses = []
    for _ in range(60):
        loss = ((lin(x) - target) ** 2).mean()
        losses.append(float(loss.item()))
        lin = optim.step(3e-2, lin, GradientsParams.from_grads(loss.backward(), lin))
    assert losses[-1] < 0.5 * losses[0]
    np.testing.assert_array_equal(lin.weight.numpy(), packed)  # the base never moves


def test_bad_inputs_raise_clear_errors():
    lin = nn.LinearConfig(4, 6).init(DEV)
    bad = nn.LinearConfig(4, 6).init(DEV)
    bad.weight.set_require_grad(False)
    bad.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"'weight' \[4, 6\].*NaN or inf"):
        bad.apply_qlora(nn.QLora(nn.Lora(2, 2.0)))
    assert bad.weight.dtype is ember.float32 and bad.bias.adapter() is None  # nothing changed
    blocks = nn.Quantizer(scheme=nn.QuantScheme().per_block((4,)))
    with pytest.raises(ValueError, match=r"'weight' \[4, 6\].*not a whole number of blocks"):
        lin.apply_qlora(nn.QLora(nn.Lora(2, 2.0), blocks))
    with pytest.raises(ValueError, match="more dims than the tensor"):
        quantize(ember.ones(8, device=DEV), nn.QuantScheme().per_block((2, 4)))
    with pytest.raises(TypeError, match="float tensor"):
        quantize(ember.tensor([1, 2], device=DEV))
    with pytest.raises(ValueError, match="value must be one of"):
        nn.QuantScheme("q3x")
    with pytest.raises(TypeError, match="float32 or float16"):
        nn.QuantScheme(scale_dtype="float64")
    with pytest.raises(ValueError, match="positive ints"):
        nn.QuantScheme(block_size=(0,))
    with pytest.raises(TypeError, match="nn.Lora"):
        nn.QLora(2)
    with pytest.raises(TypeError, match="expected a QLora"):
        nn.apply_qlora(lin, nn.Lora(2, 2.0))
    packed, scales = quantize(ember.ones(4, 8, device=DEV), nn.QuantScheme(store="packed_u32"))
    with pytest.raises(ValueError, match=r"dequantize: expected int32 values of shape \[4, 1\]"):
        dequantize(packed, scales, nn.QuantScheme(nn.QuantValue.Q4S, store="packed_u32"), (4, 8))
    with pytest.raises(ValueError, match="store must be"):
        nn.QuantScheme(store="u8")
