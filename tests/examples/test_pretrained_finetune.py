"""``--pretrained`` in the text-classification example, on a tiny random BERT checkpoint saved by
``transformers``: full fine-tuning (train -> artifacts -> infer) and LoRA fine-tuning (only the
adapters and the head train), and the errors a user meets. Offline, a few rows, one epoch."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.hf_checkpoints import save_checkpoint
from text_classification import ag_news_finetune, db_pedia_infer, db_pedia_train
from text_classification.dataset import DbPediaDataset
from text_classification.pretrained import classifier_from_checkpoint

import ember
from ember.record import load as load_record

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.torch

SMALL = [
    "--source",
    "synthetic",
    "--epochs",
    "1",
    "--batch-size",
    "8",
    "--train-samples",
    "24",
    "--valid-samples",
    "8",
    "--seq-length",
    "16",
    "--num-workers",
    "0",
]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ckpt") / "tiny-bert"
    save_checkpoint(directory, "bert")
    return directory


def _checkpoint_tensors(directory) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(directory / "model.safetensors"))


def test_full_finetuning_trains_saves_and_infers(bert_dir, tmp_path):
    run = tmp_path / "run"
    result = db_pedia_train.main(SMALL + ["--pretrained", str(bert_dir), "--artifact-dir", str(run)])
    config = json.loads((run / "config.json").read_text())
    assert (
        config["pretrained"] == str(bert_dir)
        and config["lora_rank"] == 0
        and config["recipe"] == "pretrained"
    )
    assert config["transformer"]["d_model"] == 32 and config["lr"] == 3e-5
    for name in ("model.bpk", "pretrained/config.json", "pretrained/tokenizer.json"):
        assert (run / name).is_file(), name
    assert result.model.n_classes == DbPediaDataset.num_classes()

    # every encoder weight moved (full fine-tuning)
    saved = load_record(run / "model.bpk")
    start = _checkpoint_tensors(bert_dir)
    moved = saved["encoder.layers.0.attention.query.weight"].numpy()
    assert not np.allclose(moved, start["bert.encoder.layer.0.attention.self.query.weight"].T)

    # inference from the artifacts alone gives the trained model's probabilities
    texts = ["the market rallied", "the team won the final"]
    predictions = db_pedia_infer.main(["--artifact-dir", str(run), "--text", texts[0], "--text", texts[1]])
    from text_classification.batcher import TextClassificationInferenceBatcher
    from text_classification.pretrained import CheckpointTokenizer

    batch = TextClassificationInferenceBatcher(CheckpointTokenizer.load(bert_dir), 16).batch(texts, "cpu")
    with ember.no_grad():
        want = result.model.infer(batch).numpy()
    got = np.array([p.probabilities for p in predictions])
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_lora_trains_only_the_adapters_and_the_head(bert_dir, tmp_path):
    model, _ = classifier_from_checkpoint(str(bert_dir), 4, tmp_path / "probe", lora_rank=2)
    trainable = [path for path, p in model.named_parameters() if p.is_require_grad()]
    assert trainable and all(
        p.startswith("encoder.head.") or p.endswith((".lora.a", ".lora.b")) for p in trainable
    )
    assert any(p.startswith("encoder.head.") for p in trainable)

    run = tmp_path / "lora"
    ag_news_finetune.main(
        SMALL + ["--pretrained", str(bert_dir), "--lora-rank", "2", "--artifact-dir", str(run)]
    )
    assert json.loads((run / "config.json").read_text())["lora_rank"] == 2
    saved = load_record(run / "model.bpk")  # the adapters merged into the weights
    start = _checkpoint_tensors(bert_dir)
    # frozen without an adapter: biases and LayerNorms are the checkpoint's, bit for bit
    np.testing.assert_array_equal(
        saved["encoder.layers.1.ffn_out.bias"].numpy(), start["bert.encoder.layer.1.output.dense.bias"]
    )
    np.testing.assert_array_equal(
        saved["encoder.embeddings.norm.gamma"].numpy(), start["bert.embeddings.LayerNorm.weight"]
    )
    # an adapted weight moved by a matrix of rank <= 2
    delta = saved["encoder.layers.0.attention.value.weight"].numpy() - start[
        "bert.encoder.layer.0.attention.self.value.weight"
    ].T.astype(np.float32)
    assert np.abs(delta).max() > 0
    assert np.linalg.matrix_rank(delta, tol=1e-6) <= 2
    # the head trained: AG News's 4 classes
    assert saved["encoder.head.output.weight"].shape == (32, 4)

    predictions = ag_news_finetune_infer(run)
    assert len(predictions) == 3


def ag_news_finetune_infer(run):
    from text_classification import ag_news_infer

    return ag_news_infer.main(["--artifact-dir", str(run)])


def test_flags_the_checkpoint_fixes_are_refused(bert_dir, tmp_path, usage_error):
    argv = SMALL + ["--pretrained", str(bert_dir), "--d-model", "64", "--artifact-dir", str(tmp_path / "r")]
    err = usage_error(db_pedia_train.main, argv)
    assert "--d-model" in err and "fixes these" in err
    err = usage_error(
        db_pedia_train.main, SMALL + ["--lora-rank", "2", "--artifact-dir", str(tmp_path / "r")]
    )
    assert "--lora-rank: applies to fine-tuning a --pretrained encoder" in err


def test_sequences_longer_than_the_positions_are_refused(bert_dir, tmp_path, usage_error):
    argv = SMALL[:-6] + [
        "--seq-length",
        "64",
        "--pretrained",
        str(bert_dir),
        "--artifact-dir",
        str(tmp_path / "r"),
    ]
    err = usage_error(db_pedia_train.main, argv)
    assert "--seq-length 64: the bert checkpoint" in err and "positions for 40 tokens" in err


def test_hub_name_offline_names_the_cache(tmp_path, monkeypatch, usage_error):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    argv = SMALL + ["--pretrained", "ember-tests/absent-bert", "--artifact-dir", str(tmp_path / "r")]
    err = usage_error(db_pedia_train.main, argv)
    assert "'ember-tests/absent-bert'" in err and str(tmp_path / "cache") in err
