import numpy as np
import pytest
from helpers.devices import DEV
from helpers.encoder_classifier import IDS, EncoderClassifier

import ember
from ember import nn


def test_only_adapters_are_trainable_and_output_is_unchanged():
    ember.seed(0)
    model = EncoderClassifier(3)
    before = model.valid()(IDS).numpy()
    n_base = model.num_params()
    model.apply_lora(nn.Lora(4, 8.0))
    trainable = [p for p, par in model.named_parameters() if par.is_require_grad()]
    assert trainable and all(".lora." in p for p in trainable)
    assert "encoder.layers.0.mha.query.weight.lora.a" in trainable
    assert "embedding.weight.lora.b" in trainable and "head.weight.lora.a" in trainable
    assert not any(p.endswith(("bias.lora.a", "gamma.lora.a")) for p in trainable)  # rank-1: no adapter
    a = model.head.weight.adapter().a
    assert a.shape == (8, 4) and model.head.weight.adapter().b.shape == (4, 3)
    assert model.head.weight.adapter().scale == 2.0
    lora_params = sum(par.numel for p, par in model.named_parameters() if ".lora." in p)
    assert model.num_params() == n_base + lora_params
    assert model.num_params(trainable_only=True) == lora_params
    with ember.no_grad():
        np.testing.assert_allclose(model(IDS).numpy(), before, rtol=1e-5, atol=1e-6)


def test_init_std_defaults_to_one_over_rank():
    ember.seed(1)
    lin = nn.LinearConfig(400, 300).init(DEV).apply_lora(nn.Lora(8, 16.0))
    a = lin.weight.adapter().a.numpy()
    assert abs(a.std() - 1 / 8) < 0.01 and np.all(lin.weight.adapter().b.numpy() == 0)
    lin2 = nn.LinearConfig(40, 30).init(DEV).apply_lora(nn.Lora(2, 1.0, init_std=0.0))
    assert np.all(lin2.weight.adapter().a.numpy() == 0)


def test_gradients_reach_only_the_adapters():
    ember.seed(2)
    model = EncoderClassifier(3).apply_lora(nn.Lora(2, 4.0))
    adapter = model.head.weight.adapter()
    adapter.b.set_value(ember.randn(2, 3, device=DEV))
    grads = model(IDS).sum().backward()
    assert grads.get(adapter.a.value) is not None and grads.get(adapter.b.value) is not None
    assert grads.get(model.head.weight.value) is None and grads.get(model.head.bias.value) is None
    # effective weight = base + scale * a @ b
    eff = model.head.weight.val().numpy()
    np.testing.assert_allclose(
        eff,
        model.head.weight.base().numpy() + 2.0 * adapter.a.numpy() @ adapter.b.numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_merge_equals_unmerged_output_and_valid_folds():
    ember.seed(3)
    model = EncoderClassifier(3).apply_lora(nn.Lora(2, 4.0))
    for _, p in model.named_parameters():
        if p.is_require_grad():
            p.set_value(ember.randn(*p.shape, device=DEV, std=0.3))
    with ember.no_grad():
        unmerged = model(IDS).numpy()
    valid = model.valid()
    assert not any(".lora." in p for p, _ in valid.named_parameters())
    np.testing.assert_allclose(valid(IDS).numpy(), unmerged, rtol=1e-5, atol=1e-5)
    ids_before = {p: par.id for p, par in model.named_parameters() if ".lora." not in p}
    model.merge_lora()
    assert all(par.adapter() is None for par in model.parameters())
    assert {p: par.id for p, par in model.named_parameters()} == ids_before
    with ember.no_grad():
        np.testing.assert_allclose(model(IDS).numpy(), unmerged, rtol=1e-5, atol=1e-5)


def test_param_group_restricts_adapters_but_everything_is_frozen():
    model = EncoderClassifier(3)

    class QueryValue:
        def matches(self, path, param_id):
            return path.endswith(("query.weight", "value.weight"))

    nn.apply_lora(model, nn.Lora(2, 2.0).with_param_group(QueryValue()))
    adapted = [p for p, par in model.named_parameters() if par.adapter() is not None]
    assert adapted == ["encoder.layers.0.mha.query.weight", "encoder.layers.0.mha.value.weight"]
    assert model.head.weight.adapter() is None and not model.head.weight.is_require_grad()


def test_lora_dtype_validation_and_double_application():
    lin = nn.LinearConfig(4, 4).init(DEV)
    lin.apply_lora(nn.Lora(2, 2.0, dtype="float64"))
    assert lin.weight.adapter().a.dtype is ember.float64
    assert lin.weight.val().dtype is ember.float64
    with pytest.raises(ValueError, match="already have LoRA adapters"):
        lin.apply_lora(nn.Lora(2, 2.0))
    with pytest.raises(ValueError, match="rank"):
        nn.Lora(0, 1.0)
    with pytest.raises(TypeError):
        nn.Lora(2, 1.0, dtype="int64")


def test_lora_record_round_trip(tmp_path):
    ember.seed(4)
    model = EncoderClassifier(3).apply_lora(nn.Lora(2, 4.0))
    model.head.weight.adapter().b.set_value(ember.randn(2, 3, device=DEV))
    path = model.save_file(tmp_path / "lora")
    assert path.suffix == ".bpk"
    other = EncoderClassifier(3).apply_lora(nn.Lora(2, 4.0))
    other.load_file(path)
    np.testing.assert_array_equal(
        other.head.weight.adapter().b.numpy(), model.head.weight.adapter().b.numpy()
    )
    assert other.head.weight.adapter().a.id == model.head.weight.adapter().a.id
    with ember.no_grad():
        np.testing.assert_allclose(other(IDS).numpy(), model(IDS).numpy(), rtol=1e-6)
    # a base checkpoint loads into a plain model, then LoRA is applied (the fine-tuning flow)
    base = EncoderClassifier(3)
    base.save_file(tmp_path / "base.bpk")
    tuned = EncoderClassifier(3).load_file(tmp_path / "base.bpk").apply_lora(nn.Lora(2, 4.0))
    with ember.no_grad():
        np.testing.assert_allclose(tuned(IDS).numpy(), base.valid()(IDS).numpy(), rtol=1e-5, atol=1e-6)


def test_merge_restores_the_trainability_apply_lora_took():
    ember.seed(5)
    model = EncoderClassifier(3)
    model.embedding.freeze()  # frozen by the user before LoRA: stays frozen
    before = {path: p.is_require_grad() for path, p in model.named_parameters()}
    n_trainable = model.num_params(trainable_only=True)
    model.apply_lora(nn.Lora(2, 4.0).with_param_group(lambda path, pid: path.startswith("head")))
    assert all(".lora." in path for path, p in model.named_parameters() if p.is_require_grad())
    model.merge_lora()  # adapted (head.weight) and not adapted (biases, norms) alike
    assert {path: p.is_require_grad() for path, p in model.named_parameters()} == before
    assert model.num_params(trainable_only=True) == n_trainable > 0
    grads = model(IDS).sum().backward()  # the merged model trains again
    assert model.head.weight in grads and model.embedding.weight not in grads
    # a parameter unfrozen while the adapters are on stays trainable after the merge
    model.apply_lora(nn.Lora(2, 4.0))
    model.embedding.unfreeze()
    model.merge_lora()
    assert {path: p.is_require_grad() for path, p in model.named_parameters()} == dict.fromkeys(before, True)
