"""The text-classification example's library part: datasets and their sources, the tokenizer,
the batchers and the model. No network: every file is written by the test (except the sample
and vocabulary shipped inside the example), and the Hub path is exercised through a
pre-filled SQLite cache and the loader's offline error."""

from __future__ import annotations

import csv
import pickle
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import text_classification
from text_classification import (
    SOURCES,
    AgNewsDataset,
    BertCasedTokenizer,
    DbPediaDataset,
    TextClassificationBatcher,
    TextClassificationDataset,
    TextClassificationInferenceBatch,
    TextClassificationInferenceBatcher,
    TextClassificationItem,
    TextClassificationModel,
    TextClassificationModelConfig,
    TextClassificationTrainingBatch,
    TokenizerUnavailableError,
    load_tokenizer,
)

import ember
from ember import nn
from ember.data import DatasetUnavailableError, HuggingfaceDatasetLoader, SqliteDatasetWriter


def _documented_dbpedia_classes() -> list[str]:
    """The DbPedia class names in order, as the shipped sample's ``data/README.md`` lists them:
    an oracle written apart from ``DbPediaDataset.CLASS_NAMES``."""
    readme = Path(text_classification.__file__).parent / "data" / "README.md"
    text = " ".join(readme.read_text(encoding="utf-8").split())
    return re.search(r"Classes, in order: (.+?) \(`DbPediaDataset`", text).group(1).split(", ")


# A tiny WordPiece vocabulary; [PAD] deliberately not at id 0.
TINY_VOCAB = [
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[PAD]",
    "[MASK]",
    "Hello",
    "world",
    "##s",
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    ".",
    ",",
    "café",
    "a",
    "b",
    "c",
]


# Every test here runs offline: a connection beyond loopback fails it.
pytestmark = pytest.mark.usefixtures("no_network")


@pytest.fixture
def tiny_vocab(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def tiny_tokenizer(tiny_vocab):
    return BertCasedTokenizer.from_file(tiny_vocab)


@pytest.fixture(scope="module")
def shipped_tokenizer():
    return BertCasedTokenizer.shipped()


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, quoting=csv.QUOTE_ALL).writerows(rows)


# ------------------------------------------------------------------------------ datasets


def test_class_names_and_counts():
    assert AgNewsDataset.num_classes() == 4
    assert [AgNewsDataset.class_name(i) for i in range(4)] == ["World", "Sports", "Business", "Technology"]
    assert DbPediaDataset.num_classes() == 14
    assert [DbPediaDataset.class_name(i) for i in range(14)] == _documented_dbpedia_classes()
    with pytest.raises(IndexError, match="outside 0..3"):
        AgNewsDataset.class_name(4)
    assert issubclass(AgNewsDataset, TextClassificationDataset) and SOURCES == (
        "hub",
        "local",
        "sample",
        "synthetic",
    )


@pytest.mark.parametrize("cls", [AgNewsDataset, DbPediaDataset])
def test_synthetic_is_deterministic_balanced_and_learnable(cls):
    from text_classification.synthetic import KEYWORDS as _KEYWORDS

    ds = cls.synthetic("train", n=140)
    again = cls.synthetic("train", n=140)
    assert len(ds) == 140 and [ds[i] for i in range(140)] == [again[i] for i in range(140)]
    assert [x.text for x in cls.synthetic("test", n=140)] != [x.text for x in ds]
    assert [x.text for x in cls.synthetic("train", n=140, seed=1)] != [x.text for x in ds]
    counts = Counter(item.label for item in ds)
    assert (
        sorted(counts) == list(range(cls.num_classes())) and max(counts.values()) - min(counts.values()) <= 1
    )
    per_class = len(_KEYWORDS) // cls.num_classes()
    for item in ds:
        assert isinstance(item, TextClassificationItem) and isinstance(item.text, str)
        words = set(item.text.lower().rstrip(".").split())
        own = set(_KEYWORDS[item.label * per_class : (item.label + 1) * per_class])
        assert words & own and not (words & (set(_KEYWORDS) - own))
    assert len(cls.synthetic("train")) == 512 and len(cls.synthetic("test")) == 128


def test_shipped_sample_is_stratified_4000_1000():
    train, test = DbPediaDataset.sample("train"), DbPediaDataset.sample("test")
    assert (len(train), len(test)) == (4000, 1000)
    train_counts, test_counts = Counter(train.labels()), Counter(test.labels())
    assert sorted(train_counts) == sorted(test_counts) == list(range(14))
    for label in range(14):
        total = train_counts[label] + test_counts[label]
        assert abs(test_counts[label] - total / 5) <= 1  # 1,000 of 5,000 held out per class
    assert not {x.text for x in train} & {x.text for x in test}
    assert all(x.text.startswith("Title: ") and " - Content: " in x.text for x in test)
    assert train[-1] == train[3999] and train.get_many([0, 1]) == [train[0], train[1]]
    with pytest.raises(IndexError):
        train[4000]


def test_agnews_has_no_sample():
    with pytest.raises(ValueError, match="licence.*--source local --data-dir"):
        AgNewsDataset.sample("train")
    with pytest.raises(ValueError, match="licence"):
        AgNewsDataset.from_source("sample", "train")


def test_local_csv_sources(tmp_path):
    write_csv(
        tmp_path / "train.csv",
        [
            ["3", "Wall St. Bears", 'Short-sellers,\\band of "ultra"-cynics'],
            ["1", "Title two", "Description two"],
        ],
    )
    write_csv(tmp_path / "test.csv", [["4", "T", "D"]])
    ds = AgNewsDataset.from_source("local", "train", data_dir=tmp_path)
    assert len(ds) == 2
    assert ds[0] == TextClassificationItem('Wall St. Bears Short-sellers, band of "ultra"-cynics', 2)
    assert ds[1] == TextClassificationItem("Title two Description two", 0)
    assert AgNewsDataset.local(tmp_path, "test")[0] == TextClassificationItem("T D", 3)

    db_dir = tmp_path / "db"
    db_dir.mkdir()
    # the classic DbPedia style: class unquoted, content with a leading space
    (db_dir / "train.csv").write_text('14,"Zia (novel)"," Zia is a novel."\n1,"Crossbeam"," A company."\n')
    db = DbPediaDataset.local(db_dir, "train")
    assert db[0] == TextClassificationItem("Title: Zia (novel) - Content: Zia is a novel.", 13)
    assert db[1].label == 0

    write_csv(db_dir / "test.csv", [["15", "x", "y"]])
    with pytest.raises(ValueError, match=r"test.csv:1: class 15 is outside 1..14"):
        DbPediaDataset.local(db_dir, "test")
    write_csv(db_dir / "test.csv", [["class", "title", "content"]])
    with pytest.raises(ValueError, match="not an integer"):
        DbPediaDataset.local(db_dir, "test")
    write_csv(db_dir / "test.csv", [["1", "only two"]])
    with pytest.raises(ValueError, match="expected 3 fields"):
        DbPediaDataset.local(db_dir, "test")


def test_local_parquet_sources(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    ag = tmp_path / "ag" / "data"
    ag.mkdir(parents=True)
    pq.write_table(
        pa.table({"text": ["first news", "second\\news"], "label": [0, 3]}),
        ag / "train-00000-of-00002.parquet",
    )
    pq.write_table(pa.table({"text": ["third"], "label": [1]}), ag / "train-00001-of-00002.parquet")
    pq.write_table(pa.table({"text": ["held out"], "label": [2]}), ag / "test-00000-of-00001.parquet")
    ds = AgNewsDataset.local(tmp_path / "ag", "train")
    assert [(x.text, x.label) for x in ds] == [("first news", 0), ("second news", 3), ("third", 1)]
    assert AgNewsDataset.local(tmp_path / "ag", "test")[0].label == 2

    db = tmp_path / "db" / "dbpedia_14"
    db.mkdir(parents=True)
    pq.write_table(
        pa.table({"label": [9], "title": ["Owl"], "content": [" A bird."]}),
        db / "train-00000-of-00001.parquet",
    )
    assert DbPediaDataset.local(tmp_path / "db", "train")[0] == TextClassificationItem(
        "Title: Owl - Content: A bird.", 9
    )
    pq.write_table(pa.table({"label": [1], "text": ["wrong columns"]}), db / "test.parquet")
    with pytest.raises(ValueError, match="lacks the columns"):
        DbPediaDataset.local(tmp_path / "db", "test")
    pq.write_table(pa.table({"label": [14], "title": ["t"], "content": ["c"]}), db / "test.parquet")
    with pytest.raises(ValueError, match="label 14 is outside 0..13"):
        DbPediaDataset.local(tmp_path / "db", "test")


def test_source_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown source 'web'.*hub, local, sample, synthetic"):
        AgNewsDataset.from_source("web", "train")
    with pytest.raises(ValueError, match="needs a data directory.*train.csv"):
        AgNewsDataset.from_source("local", "train")
    with pytest.raises(FileNotFoundError, match="does not exist.*train.csv.*parquet"):
        AgNewsDataset.from_source("local", "train", data_dir=tmp_path / "missing")
    with pytest.raises(
        FileNotFoundError, match=r"no 'test' data in .*test.csv \(header-less rows class,title,text"
    ):
        DbPediaDataset.from_source("local", "test", data_dir=tmp_path)
    with pytest.raises(ValueError, match="only used with source 'local'"):
        DbPediaDataset.from_source("sample", "train", data_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown split 'valid'"):
        DbPediaDataset.from_source("sample", "valid")


def test_hub_source_reads_the_sqlite_cache(tmp_path):
    """The hub path through HuggingfaceDatasetLoader, with its SQLite file already in the cache
    (as a previous online run leaves it): no `datasets`, no network."""
    for cls, rows in [
        (AgNewsDataset, [{"text": "Jays win\\again", "label": 1}]),
        (DbPediaDataset, [{"label": 2, "title": "Magnus", "content": " A painter."}]),
    ]:
        db_file = HuggingfaceDatasetLoader(cls.HUB_NAME).with_base_dir(tmp_path).db_file_path()
        with SqliteDatasetWriter(db_file) as writer:
            writer.write_split("train", rows)
            writer.write_split("test", rows * 3)
        train = cls.from_source("hub", "train", cache_dir=tmp_path)
        assert len(train) == 1 and len(cls.hub("test", cache_dir=tmp_path)) == 3
        item = pickle.loads(pickle.dumps(train))[0]  # picklable for data-loader workers
        assert item == train[0]
        if cls is AgNewsDataset:
            assert item == TextClassificationItem("Jays win again", 1)
        else:
            assert item == TextClassificationItem("Title: Magnus - Content: A painter.", 2)


def test_hub_source_offline_fails_fast(tmp_path, monkeypatch):
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DatasetUnavailableError, match="offline mode is on"):
        AgNewsDataset.hub("train", cache_dir=tmp_path / "ember", hf_cache_dir=tmp_path / "hf")


# ------------------------------------------------------------------------------ tokenizer


def test_tokenizer_from_vocab_file(tiny_vocab, tmp_path):
    tok = BertCasedTokenizer.from_file(tiny_vocab)
    ids = {t: i for i, t in enumerate(TINY_VOCAB)}
    assert tok.pad_token() == 3 and tok.vocab_size() == len(TINY_VOCAB)
    assert tok.encode("Hello worlds.") == [
        ids["[CLS]"],
        ids["Hello"],
        ids["world"],
        ids["##s"],
        ids["."],
        ids["[SEP]"],
    ]
    # cased (no lowercasing), accents kept, unknown words -> [UNK]
    assert tok.encode("hello café dog") == [1, ids["[UNK]"], ids["café"], ids["[UNK]"], 2]
    assert tok.encode_batch(["the cat", "sat on the mat"]) == [
        tok.encode("the cat"),
        tok.encode("sat on the mat"),
    ]
    assert tok.decode(tok.encode("the cat sat")) == "the cat sat"
    # a directory holding vocab.txt, and a tokenizer.json saved from it, give the same tokenizer
    assert BertCasedTokenizer.from_file(tmp_path).encode("Hello worlds") == tok.encode("Hello worlds")
    tok.tokenizer.save(str(tmp_path / "tokenizer.json"))
    assert BertCasedTokenizer.from_file(tmp_path / "tokenizer.json").encode("the cats") == tok.encode(
        "the cats"
    )
    again = pickle.loads(pickle.dumps(tok))
    assert again.encode("Hello worlds.") == tok.encode("Hello worlds.") and again.pad_token() == 3


def test_tokenizer_errors(tmp_path, monkeypatch):
    with pytest.raises(TokenizerUnavailableError, match="does not exist"):
        BertCasedTokenizer.from_file(tmp_path / "nope.txt")
    with pytest.raises(TokenizerUnavailableError, match="neither tokenizer.json nor vocab.txt"):
        BertCasedTokenizer.from_file(tmp_path)
    (tmp_path / "vocab.txt").write_text("a\nb\n")
    with pytest.raises(TokenizerUnavailableError, match=r"lacks the special tokens"):
        BertCasedTokenizer.from_file(tmp_path / "vocab.txt")
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    with pytest.raises(TokenizerUnavailableError, match="(?s)offline mode is on.*--tokenizer PATH"):
        BertCasedTokenizer.from_pretrained(cache_dir=tmp_path / "hf")


def test_from_pretrained_uses_the_hf_cache_offline(tiny_tokenizer, tmp_path, monkeypatch):
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    repo = tmp_path / "hf" / "models--bert-base-cased"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
    tiny_tokenizer.tokenizer.save(str(repo / "snapshots" / ("0" * 40) / "tokenizer.json"))
    tok = BertCasedTokenizer.from_pretrained(cache_dir=tmp_path / "hf")
    assert tok.encode("Hello worlds") == tiny_tokenizer.encode("Hello worlds") and tok.pad_token() == 3


def test_shipped_tokenizer(shipped_tokenizer):
    tok = shipped_tokenizer
    assert tok.vocab_size() == 28996 and tok.pad_token() == 0
    assert tok.token_to_id("[UNK]") == 100 and tok.encode("Hello") == [101, 8667, 102]
    texts = ["The Jays won at the SkyDome.", "Title: Zia - Content: a novel"]
    again = pickle.loads(pickle.dumps(tok))
    assert again.encode_batch(texts) == tok.encode_batch(texts) == [tok.encode(t) for t in texts]
    assert isinstance(load_tokenizer(None), BertCasedTokenizer)


# ------------------------------------------------------------------------------ batchers


def test_training_batcher_pads_truncates_and_masks(tiny_tokenizer):
    items = [
        TextClassificationItem("the cat sat on the mat the cat sat", 2),  # 11 tokens with [CLS]/[SEP]
        TextClassificationItem("Hello", 0),
        TextClassificationItem("", 1),
    ]
    batcher = TextClassificationBatcher(tiny_tokenizer, max_seq_length=6)
    batch = batcher.batch(items, ember.Device("cpu"))
    assert isinstance(batch, TextClassificationTrainingBatch)
    assert batch.tokens.shape == (3, 6) and batch.mask_pad.shape == (3, 6) and batch.labels.shape == (3,)
    assert (batch.tokens.dtype, batch.labels.dtype, batch.mask_pad.dtype) == (
        ember.int64,
        ember.int64,
        ember.bool,
    )
    tokens, mask = batch.tokens.numpy(), batch.mask_pad.numpy()
    assert tokens[0].tolist() == tiny_tokenizer.encode(items[0].text)[:6]  # the first S tokens, as Burn
    assert tokens[1].tolist() == [1, 5, 2, 3, 3, 3] and tokens[2].tolist() == [1, 2, 3, 3, 3, 3]
    np.testing.assert_array_equal(mask, tokens == 3)
    assert mask.tolist()[1] == [False, False, False, True, True, True] and not mask[0].any()
    assert batch.labels.tolist() == [2, 0, 1]
    # picklable, and the device defaults to the batcher's
    again = pickle.loads(pickle.dumps(batcher)).batch(items)
    np.testing.assert_array_equal(again.tokens.numpy(), tokens)
    with pytest.raises(ValueError, match="no items"):
        batcher.batch([])
    with pytest.raises(ValueError, match="max_seq_length"):
        TextClassificationBatcher(tiny_tokenizer, 0)


def test_token_dropout_replaces_word_pieces_with_unk(shipped_tokenizer):
    items = [
        TextClassificationItem(t.text, t.label) for t in DbPediaDataset.sample("train").get_many(range(64))
    ]
    plain = TextClassificationBatcher(shipped_tokenizer, 64).batch(items).tokens.numpy()
    batcher = TextClassificationBatcher(shipped_tokenizer, 64, token_dropout=0.25, seed=3)
    tokens = batcher.batch(items).tokens.numpy()
    unk, cls, sep, pad = (shipped_tokenizer.token_to_id(t) for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]"))
    changed = tokens != plain
    assert (tokens[changed] == unk).all()
    assert not changed[np.isin(plain, [cls, sep, pad])].any()  # specials and padding untouched
    droppable = ~np.isin(plain, [cls, sep, pad, unk])
    assert 0.2 < changed.sum() / droppable.sum() < 0.3
    # the same batch is augmented the same way (any worker, after a resume); another batch differs
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(batcher)).batch(items).tokens.numpy(), tokens)
    other = batcher.batch(items[1:] + items[:1]).tokens.numpy()
    assert (
        (other != np.roll(plain, -1, axis=0)) != (np.roll(tokens, -1, axis=0) != np.roll(plain, -1, axis=0))
    ).any()
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(ValueError, match="token_dropout"):
            TextClassificationBatcher(shipped_tokenizer, 8, token_dropout=bad)


def test_batches_from_a_worker_process(shipped_tokenizer):
    """The data loader pickles the dataset and the batcher into a worker process."""
    from ember.data import DataLoaderBuilder

    dataset = DbPediaDataset.sample("test")
    loader = (
        DataLoaderBuilder(TextClassificationBatcher(shipped_tokenizer, 32))
        .batch_size(16)
        .num_workers(1)
        .build(dataset)
    )
    batches = list(loader)
    assert sum(b.labels.shape[0] for b in batches) == 1000
    first = TextClassificationBatcher(shipped_tokenizer, 32).batch(dataset.get_many(range(16)))
    np.testing.assert_array_equal(batches[0].tokens.numpy(), first.tokens.numpy())
    np.testing.assert_array_equal(batches[0].mask_pad.numpy(), first.mask_pad.numpy())


def test_inference_batcher(tiny_tokenizer):
    batch = TextClassificationInferenceBatcher(tiny_tokenizer, 4).batch(
        ["Hello world", "the cat sat on the mat"]
    )
    assert isinstance(batch, TextClassificationInferenceBatch)
    assert batch.tokens.numpy().tolist() == [[1, 5, 6, 2], [1, 8, 9, 10]]
    assert batch.mask_pad.numpy().tolist() == [[False] * 4, [False] * 4]


# ------------------------------------------------------------------------------ model


def tiny_config(vocab_size=len(TINY_VOCAB), n_classes=3, max_seq_length=8):
    return TextClassificationModelConfig(
        nn.TransformerEncoderConfig(16, 32, 2, 1, norm_first=True),
        n_classes=n_classes,
        vocab_size=vocab_size,
        max_seq_length=max_seq_length,
    )


@pytest.fixture
def tiny_batch(tiny_tokenizer):
    items = [
        TextClassificationItem("the cat sat", 0),
        TextClassificationItem("Hello worlds", 1),
        TextClassificationItem("a b c a b c a b c", 2),
        TextClassificationItem("mat", 1),
    ]
    return TextClassificationBatcher(tiny_tokenizer, 8).batch(items)


def test_model_forward_backward(tiny_batch, tmp_path):
    ember.seed(0)
    config = tiny_config()
    config.save(tmp_path / "config.json")
    assert TextClassificationModelConfig.load(tmp_path / "config.json") == config
    model = config.init()
    assert isinstance(model, TextClassificationModel)
    paths = [path for path, _ in model.named_parameters()]
    assert {"embedding_token.weight", "embedding_pos.weight", "output.weight", "output.bias"} <= set(paths)
    assert any(p.startswith("transformer.layers.0.") for p in paths)
    assert model.embedding_token.weight.shape == (len(TINY_VOCAB), 16)
    assert model.embedding_pos.weight.shape == (8, 16)
    logits = model.logits(tiny_batch.tokens, tiny_batch.mask_pad)
    assert logits.shape == (4, 3)
    loss = model.loss(logits, tiny_batch.labels)
    assert loss.shape == () and np.isfinite(loss.item())
    from ember.optim import GradientsParams

    grads = GradientsParams.from_grads(loss.backward(), model)
    assert len(grads) == len(paths)  # every parameter gets a gradient
    # padding is masked: other ids in the padded positions leave the logits unchanged
    valid = model.valid()
    a = valid.logits(tiny_batch.tokens, tiny_batch.mask_pad).numpy()
    changed = tiny_batch.tokens.numpy().copy()
    changed[tiny_batch.mask_pad.numpy()] = 8
    b = valid.logits(ember.from_numpy(changed), tiny_batch.mask_pad).numpy()
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="exceed max_seq_length 4"):
        tiny_config(max_seq_length=4).init().logits(tiny_batch.tokens, tiny_batch.mask_pad)


def test_model_infer_probabilities(tiny_tokenizer):
    model = tiny_config().init().valid()
    batch = TextClassificationInferenceBatcher(tiny_tokenizer, 8).batch(["the cat", "Hello world", "mat"])
    probs = model.infer(batch).numpy()
    assert probs.shape == (3, 3) and (probs >= 0).all()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_reset_head_changes_only_the_head(tiny_batch):
    model = tiny_config().init()
    before = {path: p.numpy().copy() for path, p in model.named_parameters()}
    params_before = dict(model.named_parameters())
    model.freeze()  # as LoRA fine-tuning leaves it
    assert model.reset_head(5) is model and model.n_classes == 5
    after = dict(model.named_parameters())
    assert set(after) == set(before)
    for path, param in after.items():
        if path.startswith("output."):
            assert param is not params_before[path] and param.is_require_grad()
        else:
            assert param is params_before[path] and not param.is_require_grad()
            np.testing.assert_array_equal(param.numpy(), before[path])
    assert model.output.weight.shape == (16, 5) and model.output.bias.shape == (5,)
    logits = model.logits(tiny_batch.tokens, tiny_batch.mask_pad)
    assert logits.shape == (4, 5)
    with pytest.raises(ValueError, match="positive int"):
        model.reset_head(0)


def _train_outputs():
    try:
        from ember.train import ClassificationOutput, TrainOutput
    except ImportError as error:
        pytest.skip(f"ember.train is not available yet ({error})")
    return ClassificationOutput, TrainOutput


def test_train_and_inference_steps(tiny_batch):
    ClassificationOutput, TrainOutput = _train_outputs()
    model = tiny_config().init()
    out = model.train_step(tiny_batch)
    assert isinstance(out, TrainOutput) and isinstance(out.item, ClassificationOutput)
    assert len(out.grads) == len(list(model.named_parameters()))
    assert out.item.output.shape == (4, 3) and out.item.targets.tolist() == tiny_batch.labels.tolist()
    item = model.valid().inference_step(tiny_batch)
    assert isinstance(item, ClassificationOutput) and item.output.shape == (4, 3)
