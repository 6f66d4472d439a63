"""Checkpoints ember cannot load: each a PretrainedError naming the file and the thing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ember.pretrained import PretrainedError, from_pretrained, load_tokenizer
from ember.pretrained.hub import resolve_checkpoint

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.torch


def _rewrite_weights(directory, change):
    from safetensors.numpy import load_file, save_file

    path = directory / "model.safetensors"
    tensors = load_file(str(path))
    change(tensors)
    save_file(tensors, str(path))
    return path


def test_unknown_architecture_names_the_config(checkpoint):
    directory, _ = checkpoint("bert")
    config = json.loads((directory / "config.json").read_text())
    config.update(model_type="gpt2", architectures=["GPT2LMHeadModel"])
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        PretrainedError, match=r"config\.json.*'gpt2'.*GPT2LMHeadModel.*bert, roberta, distilbert"
    ):
        from_pretrained(directory)


def test_unsupported_activation_names_the_field(checkpoint):
    directory, _ = checkpoint("bert", hidden_act="relu")
    with pytest.raises(PretrainedError, match=r"config\.json: hidden_act 'relu'"):
        from_pretrained(directory)


def test_missing_tensor_names_the_file_and_key(checkpoint):
    directory, _ = checkpoint("roberta")
    path = _rewrite_weights(directory, lambda t: t.pop("roberta.encoder.layer.1.output.dense.weight"))
    with pytest.raises(PretrainedError) as info:
        from_pretrained(directory, num_classes=3)
    message = str(info.value)
    assert str(path) in message
    assert "missing tensor 'roberta.encoder.layer.1.output.dense.weight' (expected [32, 64])" in message


def test_wrong_shape_names_the_file_key_and_both_shapes(checkpoint):
    directory, _ = checkpoint("distilbert")
    key = "distilbert.transformer.layer.0.ffn.lin1.weight"
    path = _rewrite_weights(directory, lambda t: t.update({key: np.zeros((48, 32), np.float32)}))
    with pytest.raises(PretrainedError) as info:
        from_pretrained(directory)
    assert str(path) in str(info.value)
    assert f"tensor '{key}' has shape [48, 32], expected [64, 32]" in str(info.value)


def test_every_problem_is_listed_at_once(checkpoint):
    directory, _ = checkpoint("bert")

    def drop(tensors):
        for key in [k for k in tensors if ".layer.1." in k]:
            del tensors[key]

    _rewrite_weights(directory, drop)
    with pytest.raises(PretrainedError) as info:
        from_pretrained(directory)
    assert str(info.value).count("missing tensor") == 12  # 16 rows per layer: 12 shown, the rest counted
    assert "... and 4 more" in str(info.value)


def test_wrong_head_shape_for_the_saved_classes_is_an_error(checkpoint):
    directory, _ = checkpoint("bert")
    _rewrite_weights(
        directory, lambda t: t.update({"bert.pooler.dense.weight": np.zeros((32, 16), np.float32)})
    )
    with pytest.raises(
        PretrainedError, match=r"'bert\.pooler\.dense\.weight' has shape \[32, 16\], expected \[32, 32\]"
    ):
        from_pretrained(directory, num_classes=3)


def test_other_class_count_or_bare_encoder_gets_a_fresh_head(checkpoint):
    directory, _ = checkpoint("bert")
    model = from_pretrained(directory, num_classes=5)
    assert model.fresh_parameters == ["head.output.weight", "head.output.bias"]  # pooler kept
    bare, _ = checkpoint("distilbert", head=False)
    model = from_pretrained(bare, num_classes=2)
    assert sorted(model.fresh_parameters) == sorted(p for p, _ in model.head.named_parameters("head"))


def test_pickled_weights_only_is_refused(checkpoint):
    directory, _ = checkpoint("bert")
    (directory / "model.safetensors").rename(directory / "pytorch_model.bin")
    with pytest.raises(
        PretrainedError, match=r"no model\.safetensors.*pytorch_model\.bin: ember does not read pickled"
    ):
        from_pretrained(directory)


def test_truncated_safetensors_names_the_file(checkpoint):
    directory, _ = checkpoint("bert")
    path = directory / "model.safetensors"
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(PretrainedError, match=rf"{path}: cannot read the weights"):
        from_pretrained(directory)


def test_tokenizer_larger_than_the_vocabulary_is_refused(checkpoint):
    directory, _ = checkpoint("bert", vocab_size=40)  # the tokenizer holds 64 tokens
    with pytest.raises(
        PretrainedError, match=r"tokenizer\.json: the tokenizer has 64 tokens .*vocab_size 40"
    ):
        load_tokenizer(directory)


def test_checkpoint_tokenizer_encodes_within_the_vocabulary(checkpoint):
    directory, _ = checkpoint("bert")
    tokenizer = load_tokenizer(directory)
    ids = tokenizer.encode("the market won").ids
    assert ids[0] == tokenizer.token_to_id("[CLS]") and ids[-1] == tokenizer.token_to_id("[SEP]")
    assert max(ids) < 64


def test_missing_tokenizer_names_the_file(checkpoint):
    directory, _ = checkpoint("bert")
    (directory / "tokenizer.json").unlink()
    with pytest.raises(PretrainedError, match=r"tokenizer\.json: the checkpoint has no tokenizer\.json"):
        load_tokenizer(directory)


def test_hub_name_offline_names_the_cache(tmp_path, monkeypatch):
    pytest.importorskip("huggingface_hub")
    cache = tmp_path / "hub-cache"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    with pytest.raises(PretrainedError) as info:
        from_pretrained("ember-tests/no-such-model")
    message = str(info.value)
    assert "'ember-tests/no-such-model'" in message and str(cache) in message
    assert "HF_HUB_OFFLINE is set" in message


def test_not_a_directory_path(tmp_path):
    with pytest.raises(PretrainedError, match="is not a checkpoint directory"):
        resolve_checkpoint(tmp_path / "nowhere")


def test_hub_name_offline_resolves_from_the_cache(checkpoint, tmp_path, monkeypatch):
    pytest.importorskip("huggingface_hub")
    directory, _ = checkpoint("distilbert")
    cache = tmp_path / "hub-cache"
    repo = cache / "models--ember-tests--tiny-distilbert"
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    for file in directory.iterdir():
        (snapshot / file.name).write_bytes(file.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert resolve_checkpoint("ember-tests/tiny-distilbert") == snapshot
    assert from_pretrained("ember-tests/tiny-distilbert", num_classes=3).fresh_parameters == []
    assert load_tokenizer("ember-tests/tiny-distilbert").get_vocab_size() == 64


def test_importing_the_package_imports_no_optional_dependency():
    import subprocess
    import sys

    code = (
        "import sys, ember, ember.pretrained; "
        "print([m for m in ('torch', 'transformers', 'tokenizers', 'huggingface_hub') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
