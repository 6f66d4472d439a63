"""The example's fastText-style classifier: hashed n-gram features (stable across processes,
laid out and bounded as documented), the model, batchers and artifacts, a tiny run through
``SupervisedTraining`` on the synthetic corpus, and inference after reload. No network."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from text_classification.dataset import AgNewsDataset, DbPediaDataset, TextClassificationItem
from text_classification.fasttext import (
    FastTextExperimentConfig,
    evaluate_fasttext,
    fasttext_experiment,
    fasttext_model_config,
    load_fasttext,
    predict_fasttext,
    train_fasttext,
)
from text_classification.fasttext_data import (
    FastTextBatcher,
    FastTextInferenceBatcher,
    TokenizedDataset,
    TokenizedItem,
)
from text_classification.fasttext_model import FastTextBatch, FastTextConfig
from text_classification.ngrams import HASH_VERSION, NGramHasher, hash_ngrams
from text_classification.recipes import FASTTEXT_RECIPE
from text_classification.tokenizer import BertCasedTokenizer

import ember

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TEXTS = [
    "IBM, Boeing team up for defense work",
    "Ouch! Yankees hit new low",
    "",
    "Zürich café ##s [SEP] x",
    "Title: Plant - Content: A small flowering plant of the genus Viola.",
]
TOKEN_LISTS = [[101, 5, 6, 7, 102], [], [9], [101, 10, 11, 12, 13, 14, 15, 102], [3, 3, 3, 3]]

# A subprocess that prints what this process computes: the features must not depend on the process
# (Python's str hash is salted per process; the n-gram hash must not be).
_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from text_classification.ngrams import NGramHasher
from text_classification.tokenizer import BertCasedTokenizer
texts, lists = json.loads(sys.stdin.read())
tok = BertCasedTokenizer.shipped()
hasher = NGramHasher(tok.vocab_size(), 2 ** 19, 3, 512, head_tokens=4, drop_ids=[101, 102, 0])
a = hasher.features(tok.encode_batch(texts))
b = NGramHasher(200, 1000, 3, 6, drop_ids=[101, 102]).features(lists)
print(json.dumps([a.indices.tolist(), a.offsets.tolist(), b.indices.tolist(), b.offsets.tolist()]))
"""


@pytest.fixture(scope="module")
def tokenizer():
    return BertCasedTokenizer.shipped()


@pytest.fixture(autouse=True)
def _ember_seed():
    ember.seed(0)


def _quiet():
    from ember.train.renderer import CliMetricsRenderer

    return CliMetricsRenderer(stream=io.StringIO())


# ------------------------------------------------------------------------------ features
def test_hash_is_pinned():
    """The hash is part of every saved model: these values must never change (HASH_VERSION)."""
    tokens = np.array([5, 6, 7, 1000, 28995], dtype=np.int64)
    assert HASH_VERSION == "splitmix64-v1"
    assert hash_ngrams(tokens, np.array([0, 1]), 2).tolist() == [13826977866371032723, 3215544432023713880]
    assert hash_ngrams(tokens, np.array([0]), 3).tolist() == [5971244598820063688]
    bigram, head = hash_ngrams(tokens, np.array([3]), 2), hash_ngrams(tokens, np.array([3]), 1, kind=1)
    assert bigram.dtype == np.uint64 and bigram[0] != head[0]
    # order-sensitive, and each n has its own seed
    assert hash_ngrams(np.array([6, 5]), np.array([0]), 2)[0] != hash_ngrams(tokens, np.array([0]), 2)[0]
    assert hash_ngrams(tokens, np.array([0]), 1)[0] != hash_ngrams(tokens, np.array([0]), 1, kind=1)[0]


def test_features_are_stable_across_processes(tokenizer):
    hasher = NGramHasher(tokenizer.vocab_size(), 2**19, 3, 512, head_tokens=4, drop_ids=[101, 102, 0])
    here_a = hasher.features(tokenizer.encode_batch(TEXTS))
    here_b = NGramHasher(200, 1000, 3, 6, drop_ids=[101, 102]).features(TOKEN_LISTS)
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # another salt for str hashes than this process's
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(EXAMPLES)],
        input=json.dumps([TEXTS, TOKEN_LISTS]),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    there = json.loads(out.stdout.strip().splitlines()[-1])
    assert there == [
        here_a.indices.tolist(),
        here_a.offsets.tolist(),
        here_b.indices.tolist(),
        here_b.offsets.tolist(),
    ]


def test_feature_layout_and_ranges():
    vocab, buckets = 200, 1000
    hasher = NGramHasher(vocab, buckets, ngrams=3, max_tokens=6, head_tokens=2, drop_ids=[101, 102])
    features = hasher.features(TOKEN_LISTS)
    assert features.indices.dtype == np.int64 and features.offsets.dtype == np.int64
    assert features.offsets.tolist()[0] == 0 and len(features) == len(TOKEN_LISTS)
    for b, ids in enumerate(TOKEN_LISTS):
        kept = [t for t in ids if t not in (101, 102)][:6]  # special tokens dropped, then the first 6 kept
        n = len(kept)
        bag = features.bag(b)
        assert len(bag) == n + max(n - 1, 0) + max(n - 2, 0) + min(n, 2)
        assert bag[:n].tolist() == kept  # unigrams first, as ids of the vocabulary
        hashed = bag[n:]
        assert ((hashed >= vocab) & (hashed < vocab + buckets)).all()  # the n-gram/head rows
    # bigrams of a text are the hashes of its consecutive pairs, in order
    kept = [5, 6, 7]
    bigrams = features.bag(0)[3:5]
    expected = hash_ngrams(np.array(kept), np.array([0, 1]), 2) % np.uint64(buckets)
    assert bigrams.tolist() == (expected.astype(np.int64) + vocab).tolist()
    # repeated n-grams hash alike; the empty text gives an empty bag
    bag = features.bag(4)
    assert len(set(bag[4:7].tolist())) == 1 and len(features.bag(1)) == 0
    # unigrams only: no hashed rows at all
    assert NGramHasher(vocab, 0, ngrams=1).features([[1, 2, 3]]).indices.tolist() == [1, 2, 3]
    assert hasher.num_rows == vocab + buckets


def test_bad_feature_settings_and_token_ids():
    with pytest.raises(ValueError, match="buckets >= 1"):
        NGramHasher(10, 0, ngrams=2)
    with pytest.raises(ValueError, match="ngrams must be an int >= 1"):
        NGramHasher(10, 8, ngrams=0)
    with pytest.raises(IndexError, match="token id 10 is outside the vocabulary of 10 ids"):
        NGramHasher(10, 8).features([[1, 10]])


# ------------------------------------------------------------------------------ model and batches
def test_batchers_and_model_shapes(tokenizer):
    config = FastTextConfig(tokenizer.vocab_size(), 4, d_model=8, buckets=4096, ngrams=2, head_tokens=3)
    model = config.init("cpu")
    assert model.embedding.weight.shape == (tokenizer.vocab_size() + 4096, 8)
    assert [p for p, _ in model.named_parameters()] == ["embedding.weight", "output.weight", "output.bias"]
    items = [TextClassificationItem(t, i % 4) for i, t in enumerate(TEXTS)]
    batch = FastTextBatcher(tokenizer, config).batch(items)
    assert isinstance(batch, FastTextBatch) and batch.offsets.shape == (len(TEXTS),)
    assert batch.labels.numpy().tolist() == [0, 1, 2, 3, 0]
    # pre-tokenized items give the very same batch, and so does the inference batcher on the texts
    tokenized = TokenizedDataset(_List(items), tokenizer)
    again = FastTextBatcher(tokenizer, config).batch([tokenized[i] for i in range(len(items))])
    assert np.array_equal(again.indices.numpy(), batch.indices.numpy())
    assert np.array_equal(again.offsets.numpy(), batch.offsets.numpy())
    infer = FastTextInferenceBatcher(tokenizer, config).batch(TEXTS)
    assert np.array_equal(infer.indices.numpy(), batch.indices.numpy())
    # [CLS]/[SEP] never reach the bags
    special = {tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")}
    assert not special & set(batch.indices.numpy().tolist())
    with ember.no_grad():
        probabilities = model.infer(infer).numpy()
    assert probabilities.shape == (len(TEXTS), 4) and np.allclose(probabilities.sum(1), 1.0, atol=1e-5)
    with pytest.raises(TypeError, match="mixes TokenizedItem and text items"):
        FastTextBatcher(tokenizer, config).batch([tokenized[0], items[1]])
    # the batcher pickles (data-loader workers) and still gives the same features
    clone = pickle.loads(pickle.dumps(FastTextBatcher(tokenizer, config)))
    assert np.array_equal(clone.batch(items).indices.numpy(), batch.indices.numpy())


class _List:
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def test_index_out_of_range_names_the_table_size():
    config = FastTextConfig(50, 3, d_model=4, buckets=14, ngrams=2)
    model = config.init("cpu")
    indices = ember.tensor(np.array([1, 2, 64], dtype=np.int64))
    offsets = ember.tensor(np.array([0, 2], dtype=np.int64))
    with pytest.raises(IndexError, match=r"index 64 is out of range for the embedding table of 64 rows"):
        model.logits(indices, offsets)
    with pytest.raises(IndexError, match="64 rows"):
        model.train_step(FastTextBatch(indices, offsets, ember.tensor(np.array([0, 1], dtype=np.int64))))


def test_configs_and_recipes():
    assert set(FASTTEXT_RECIPE) == {"ag_news", "dbpedia"}
    ag = fasttext_experiment(AgNewsDataset)
    assert (ag.d_model, ag.buckets, ag.head_tokens, ag.lr) == (16, 2**21, 24, 0.005)
    assert fasttext_experiment("dbpedia", num_epochs=2).num_epochs == 2
    assert fasttext_experiment(DbPediaDataset, optimizer="sgd").optimizer.__class__.__name__ == "SgdConfig"
    with pytest.raises(ValueError, match="no recipe"):
        fasttext_experiment("imdb")
    with pytest.raises(ValueError, match="lr_schedule"):
        FastTextExperimentConfig(lr_schedule="cosine").validate()
    with pytest.raises(ValueError, match="hashed its n-grams with"):
        FastTextExperimentConfig(hash="python-hash").validate()
    with pytest.raises(ValueError, match="d_model must be an int >= 1"):
        FastTextConfig(10, 2, d_model=0).init()


# ------------------------------------------------------------------------------ training
def test_tiny_training_run_then_inference_after_reload(tmp_path, tokenizer):
    train, test = DbPediaDataset.synthetic("train"), DbPediaDataset.synthetic("test")
    config = fasttext_experiment(
        "dbpedia", d_model=16, buckets=2**12, head_tokens=2, num_epochs=4, lr=0.05, batch_size=32, seed=3
    )
    result = train_fasttext(tmp_path, train, test, config, tokenizer=tokenizer, renderer=_quiet())
    assert result.epochs_trained == 4
    for name in (
        "config.json",
        "model.bpk",
        "experiment.log",
        "checkpoint/model-4.bpk",
        "checkpoint/optim-4.bpk",
        "train/epoch-4/Accuracy.log",
        "train/epoch-4/Loss.log",
        "train/epoch-4/Learning_Rate.log",
        "valid/epoch-4/Accuracy.log",
        "valid/epoch-4/Loss.log",
    ):
        assert (tmp_path / name).is_file(), name
    final = (tmp_path / "valid/epoch-4/Accuracy.log").read_text().strip().splitlines()[-1]
    assert final.endswith(",final") and float(final.split(",")[0]) >= 95.0

    model = result.model
    saved = FastTextExperimentConfig.load(tmp_path / "config.json")
    assert saved == config and saved.model == "fasttext" and saved.hash == HASH_VERSION
    loaded_config, _, reloaded = load_fasttext(tmp_path, DbPediaDataset, tokenizer=tokenizer)
    assert loaded_config == config
    batcher = FastTextBatcher(
        tokenizer, FastTextConfig(tokenizer.vocab_size(), 14, d_model=16, buckets=2**12, head_tokens=2)
    )
    accuracy = evaluate_fasttext(reloaded, batcher, test)
    assert accuracy >= 95.0
    texts = [test[i].text for i in range(16)]
    infer_batch = FastTextInferenceBatcher(tokenizer, batcher.config).batch(texts)
    with ember.no_grad():
        before = model.infer(infer_batch).numpy()
    after = predict_fasttext(
        reloaded, tokenizer, fasttext_model_config(loaded_config, 14, tokenizer.vocab_size()), texts
    )
    np.testing.assert_array_equal(before, after)
    assert np.allclose(after.sum(1), 1.0, atol=1e-5)
    assert (after.argmax(1) == np.array([test[i].label for i in range(16)])).mean() >= 0.9


def test_tokenized_dataset(tokenizer):
    dataset = AgNewsDataset.synthetic("test", n=10)
    tokenized = TokenizedDataset(dataset, tokenizer, chunk=3)
    assert len(tokenized) == 10
    item = tokenized[7]
    assert isinstance(item, TokenizedItem) and item.label == dataset[7].label
    assert item.ids.tolist() == tokenizer.encode(dataset[7].text)
    with pytest.raises(IndexError):
        tokenized[10]
    assert pickle.loads(pickle.dumps(tokenized))[7].ids.tolist() == item.ids.tolist()


def test_resume_from_a_checkpoint_is_exact(tmp_path, tokenizer):
    train, test = DbPediaDataset.synthetic("train", n=256), DbPediaDataset.synthetic("test", n=64)
    config = fasttext_experiment("dbpedia", d_model=8, buckets=2**10, num_epochs=3, batch_size=32, seed=5)
    full = train_fasttext(tmp_path, train, test, config, tokenizer=tokenizer, renderer=_quiet())
    resumed = train_fasttext(
        tmp_path, train, test, config, tokenizer=tokenizer, renderer=_quiet(), checkpoint=2
    )
    assert resumed.epochs_trained == 3
    for path, param in full.model.named_parameters():
        np.testing.assert_array_equal(
            param.val().numpy(), dict(resumed.model.named_parameters())[path].val().numpy()
        )


def test_load_refuses_other_runs(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"transformer": {}, "optimizer": {}}))
    with pytest.raises(ValueError, match="is not the config of a fastText run"):
        load_fasttext(tmp_path, DbPediaDataset)
    with pytest.raises(FileNotFoundError, match="no training config"):
        load_fasttext(tmp_path / "nothing", DbPediaDataset)
