"""from_pretrained against transformers on random BERT, DistilBERT and RoBERTa checkpoints:
the last hidden state and the classification logits, with and without an attention mask."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.pretrained import from_pretrained

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.torch

FAMILIES = ["bert", "distilbert", "roberta"]
F32_TOL = 1e-5  # the bound, float32
# float16 ember against float32 transformers: hidden states after LayerNorm reach ~4, where
# float16's spacing is 2^-9 ≈ 2e-3; a few roundings per layer give up to ~4.4e-3 measured here
F16_TOL = 1e-2


def _inputs(family: str, masked: bool):
    rng = np.random.default_rng(7)
    ids = rng.integers(5, 64, size=(3, 9)).astype(np.int64)
    mask = np.ones_like(ids)
    if masked:
        mask[1, 6:] = 0
        mask[2, 3:] = 0
        ids[mask == 0] = 1 if family == "roberta" else 0  # the pad id
    return ids, mask


def _torch_outputs(model, ids, mask, masked):
    kwargs = {"attention_mask": torch.tensor(mask)} if masked else {}
    with torch.no_grad():
        return model(torch.tensor(ids), **kwargs)


def _ember_args(ids, mask, masked, device):
    args = [ember.tensor(ids, dtype=ember.int64, device=device)]
    if masked:
        args.append(ember.tensor(mask, dtype=ember.int64, device=device))
    return args


def _ember_outputs(model, ids, mask, masked, device):
    return model(*_ember_args(ids, mask, masked, device)).to(ember.float32).numpy()


def _assert_matches_transformers(hf, directory, family, masked=True, device=None, head=True):
    """``from_pretrained(directory)`` against the transformers model ``hf`` on the same batch, to
    ``F32_TOL``: the 3-class logits with ``head``, else the last hidden state. Returns the model
    (in inference mode) and ember's output."""
    ids, mask = _inputs(family, masked)
    want = _torch_outputs(hf, ids, mask, masked)
    want = (want.logits if head else want.last_hidden_state).numpy()
    model = from_pretrained(directory, num_classes=3 if head else None, device=device).valid()
    got = _ember_outputs(model, ids, mask, masked, device)
    np.testing.assert_allclose(got, want, atol=F32_TOL, rtol=0)
    return model, got


@pytest.mark.parametrize("masked", [False, True], ids=["nomask", "mask"])
@pytest.mark.parametrize("family", FAMILIES)
def test_last_hidden_state_matches_transformers(checkpoint, family, masked, device):
    directory, hf = checkpoint(family, head=False)
    # padded positions too: both attend them to the real keys only
    _, got = _assert_matches_transformers(hf, directory, family, masked, device, head=False)
    assert got.shape == (3, 9, 32)


@pytest.mark.parametrize("masked", [False, True], ids=["nomask", "mask"])
@pytest.mark.parametrize("family", FAMILIES)
def test_classification_logits_match_transformers(checkpoint, family, masked, device):
    directory, hf = checkpoint(family)
    model, got = _assert_matches_transformers(hf, directory, family, masked, device)
    assert model.fresh_parameters == [] and got.shape == (3, 3)


@pytest.mark.parametrize("masked", [False, True], ids=["nomask", "mask"])
@pytest.mark.parametrize("family", FAMILIES)
def test_float16_matches_transformers_float32(checkpoint, family, masked, device):
    directory, hf = checkpoint(family)
    ids, mask = _inputs(family, masked)
    want_logits = _torch_outputs(hf, ids, mask, masked).logits.numpy()
    want_hidden = _torch_outputs(hf.base_model, ids, mask, masked).last_hidden_state.numpy()
    model = from_pretrained(directory, num_classes=3, dtype=ember.float16, device=device).valid()
    assert model.embeddings.word.weight.dtype is ember.float16
    args = _ember_args(ids, mask, masked, device)
    hidden = model.hidden_state(*args)
    assert hidden.dtype is ember.float16
    np.testing.assert_allclose(hidden.to(ember.float32).numpy(), want_hidden, atol=F16_TOL, rtol=0)
    np.testing.assert_allclose(model(*args).to(ember.float32).numpy(), want_logits, atol=F16_TOL, rtol=0)


def test_bert_token_type_ids_match_transformers(checkpoint):
    directory, hf = checkpoint("bert", head=False)
    ids, mask = _inputs("bert", True)
    types = np.zeros_like(ids)
    types[:, 4:] = 1
    with torch.no_grad():
        want = hf(torch.tensor(ids), attention_mask=torch.tensor(mask), token_type_ids=torch.tensor(types))
    model = from_pretrained(directory).valid()
    got = model(ember.tensor(ids), ember.tensor(mask), ember.tensor(types)).numpy()
    np.testing.assert_allclose(got, want.last_hidden_state.numpy(), atol=F32_TOL, rtol=0)


def test_bool_attention_mask_is_the_int_mask(checkpoint):
    directory, _ = checkpoint("distilbert", head=False)
    ids, mask = _inputs("distilbert", True)
    model = from_pretrained(directory).valid()
    a = model(ember.tensor(ids), ember.tensor(mask)).numpy()
    b = model(ember.tensor(ids), ember.tensor(mask.astype(bool))).numpy()
    np.testing.assert_array_equal(a, b)


def test_training_mode_drops_out_and_backward_reaches_every_parameter(checkpoint):
    directory, _ = checkpoint("bert")
    ids, mask = _inputs("bert", True)
    ember.seed(0)
    model = from_pretrained(directory, num_classes=3)
    logits = model(ember.tensor(ids), ember.tensor(mask))
    inference = model.valid()(ember.tensor(ids), ember.tensor(mask))
    assert not np.allclose(logits.numpy(), inference.numpy())  # dropout is active while training
    grads = logits.sum().backward()
    for path, param in model.named_parameters():
        if path != "embeddings.token_type.weight":  # only row 0 is used, the rest stays zero
            assert np.abs(grads.get(param.val()).numpy()).max() > 0, path


@pytest.mark.parametrize(
    "family, extra",
    [("bert", {"hidden_act": "gelu_new"}), ("distilbert", {"sinusoidal_pos_embds": True})],
    ids=["bert-gelu_new", "distilbert-sinusoidal"],
)
def test_config_variants_match_transformers(checkpoint, family, extra):
    directory, hf = checkpoint(family, **extra)
    _assert_matches_transformers(hf, directory, family)


def test_sharded_checkpoint_loads_every_shard(checkpoint, tmp_path):
    _, hf = checkpoint("roberta")
    sharded = tmp_path / "sharded"
    hf.save_pretrained(sharded, max_shard_size="20KB")
    assert (sharded / "model.safetensors.index.json").is_file() and not (
        sharded / "model.safetensors"
    ).exists()
    _assert_matches_transformers(hf, sharded, "roberta")


def test_bfloat16_checkpoint_loads_its_values_exactly(checkpoint, tmp_path):
    _, hf = checkpoint("bert")
    halved = tmp_path / "bf16"
    hf.to(torch.bfloat16).save_pretrained(halved)
    from ember.record import load_safetensors

    assert load_safetensors(halved / "model.safetensors")["classifier.weight"].dtype_name == "bfloat16"
    hf = hf.to(torch.float32)  # the bfloat16-rounded weights, computed in float32
    _assert_matches_transformers(hf, halved, "bert")


def test_sequences_past_the_positions_are_refused(checkpoint):
    directory, _ = checkpoint("roberta")  # 40 positions, the first two before RoBERTa's numbering
    model = from_pretrained(directory).valid()
    model(ember.ones(1, 38, dtype=ember.int64) * 5)
    with pytest.raises(ValueError, match=r"39 tokens need 41 positions but the roberta checkpoint has 40"):
        model(ember.ones(1, 39, dtype=ember.int64) * 5)


def test_legacy_layer_norm_gamma_beta_names_load(checkpoint):
    from safetensors.numpy import load_file, save_file

    directory, hf = checkpoint("bert")
    path = directory / "model.safetensors"
    tensors = load_file(str(path))
    renamed = {
        k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
        for k, v in tensors.items()
    }
    assert renamed.keys() != tensors.keys()
    save_file(renamed, str(path))
    _assert_matches_transformers(hf, directory, "bert")


@pytest.mark.parametrize("composed", [False, True], ids=["fused-attention", "composed-attention"])
def test_training_gradients_match_transformers(checkpoint, composed):
    # No dropout anywhere, so both sides compute the same function in training mode. The
    # composed attention (the path taken when attention dropout is on) runs with p = 1e-12:
    # nothing is dropped, and its scaling differs from 1 by 1e-12.
    off = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, classifier_dropout=0.0)
    directory, hf = checkpoint("bert", **off)
    ids, mask = _inputs("bert", True)
    labels = np.array([0, 2, 1])
    hf.train()
    loss = torch.nn.functional.cross_entropy(
        hf(torch.tensor(ids), attention_mask=torch.tensor(mask)).logits, torch.tensor(labels)
    )
    loss.backward()
    model = from_pretrained(directory, num_classes=3)
    if composed:
        for layer in model.layers:
            layer.attention.dropout.prob = 1e-12
    logits = model(ember.tensor(ids), ember.tensor(mask))
    ours = ember.nn.CrossEntropyLossConfig().init()(logits, ember.tensor(labels))
    assert abs(float(ours.numpy()) - loss.item()) < 1e-6
    grads = ours.backward()
    params = dict(model.named_parameters())
    pairs = {
        "embeddings.word.weight": hf.bert.embeddings.word_embeddings.weight,
        "layers.0.attention.query.weight": hf.bert.encoder.layer[0].attention.self.query.weight,
        "layers.1.attention.key.bias": hf.bert.encoder.layer[1].attention.self.key.bias,
        "layers.0.ffn_in.weight": hf.bert.encoder.layer[0].intermediate.dense.weight,
        "layers.1.output_norm.gamma": hf.bert.encoder.layer[1].output.LayerNorm.weight,
        "head.dense.weight": hf.bert.pooler.dense.weight,
        "head.output.bias": hf.classifier.bias,
    }
    for path, tparam in pairs.items():
        want = tparam.grad.numpy()
        got = grads.get(params[path].val()).numpy()
        if path.endswith("weight") and "embeddings" not in path:
            got = got.T  # ember's Linear holds [in, out]
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=1e-4, err_msg=path)
