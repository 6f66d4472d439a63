"""Data loader throughput on the text-classification batching path: tokenize (WordPiece),
pad/truncate to 256 with the pad id, build the padding mask (True = pad) and int64 labels, at
batch 32, with 0, 1 and 2 worker processes.

Each round takes one batch from a running pass, so the median is the time per batch once the
workers are up (their start-up is reported separately as `extra_info["startup_s"]`), and
`extra_info["batches_per_s"]` is the sustained rate. The tokenizer is trained on the fly on a
synthetic corpus (no download). Run with:

    pytest bench/bench_dataloader.py            # or: python bench/run.py bench/bench_dataloader.py
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from sizes import BATCH, SEQ

from ember.data import DataLoaderBuilder, InMemDataset

tokenizers = pytest.importorskip("tokenizers")

ROUNDS = 150
WARMUP = 5
NUM_CLASSES = 4
GROUP = f"dataloader text-classification b={BATCH} seq={SEQ}"


def _synthetic_corpus(count: int, seed: int = 0) -> list[tuple[str, int]]:
    """News-like (text, label) items: 20-60 words (AG News averages ~40) drawn from a
    Zipf-distributed vocabulary of made-up words, capitalised titles and numbers."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocabulary = ["".join(rng.choice(letters, size=rng.integers(2, 11))) for _ in range(6000)]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    weights /= weights.sum()
    items = []
    for _ in range(count):
        words = [vocabulary[i] for i in rng.choice(len(vocabulary), size=rng.integers(20, 61), p=weights)]
        words[0] = words[0].capitalize()
        if rng.random() < 0.3:
            words.insert(int(rng.integers(1, len(words))), str(int(rng.integers(1, 2030))))
        items.append((" ".join(words) + ".", int(rng.integers(0, NUM_CLASSES))))
    return items


def _train_tokenizer(texts: list[str]) -> "tokenizers.Tokenizer":
    """A BERT-style WordPiece tokenizer with [CLS] text [SEP], trained on `texts`."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=False)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=4000, special_tokens=specials))
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)]
    )
    return tokenizer


class TextClassificationBatcher:
    """The example's batching: tokens [B, seq] int64 (padded with the pad id), mask [B, seq]
    bool (True = pad), labels [B] int64; as NumPy arrays or ember tensors on `device`."""

    def __init__(self, tokenizer: "tokenizers.Tokenizer", seq_len: int, output: str) -> None:
        self.tokenizer = tokenizer
        self.seq_len = seq_len
        self.pad_id = tokenizer.token_to_id("[PAD]")
        self.output = output

    def batch(self, items: list[tuple[str, int]], device):
        encodings = self.tokenizer.encode_batch([text for text, _ in items])
        tokens = np.full((len(items), self.seq_len), self.pad_id, dtype=np.int64)
        lengths = np.empty(len(items), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids = encoding.ids[: self.seq_len]
            tokens[row, : len(ids)] = ids
            lengths[row] = len(ids)
        mask = np.arange(self.seq_len)[None, :] >= lengths[:, None]
        labels = np.fromiter((label for _, label in items), dtype=np.int64, count=len(items))
        if self.output == "numpy":
            return tokens, mask, labels
        import ember

        return (
            ember.from_numpy(tokens, device=device),
            ember.from_numpy(mask, device=device),
            ember.from_numpy(labels, device=device),
        )


@pytest.fixture(scope="module")
def corpus() -> list[tuple[str, int]]:
    return _synthetic_corpus((ROUNDS + WARMUP + 2) * BATCH)


@pytest.fixture(scope="module")
def tokenizer(corpus):
    return _train_tokenizer([text for text, _ in corpus])


@pytest.mark.parametrize("output", ["numpy", "ember"])
@pytest.mark.parametrize("num_workers", [0, 1, 2])
def test_textcls_batches(benchmark, corpus, tokenizer, num_workers, output):
    if output == "ember":
        ember = pytest.importorskip("ember")
        try:
            ember.from_numpy(np.zeros(1, np.int64), device=ember.Device("cpu"))
        except Exception as error:  # the cpu backend may be missing here
            pytest.skip(f"ember cpu tensors unavailable: {error}")
    batcher = TextClassificationBatcher(tokenizer, SEQ, output)
    loader = (
        DataLoaderBuilder(batcher)
        .batch_size(BATCH)
        .shuffle(0)
        .num_workers(num_workers)
        .build(InMemDataset(corpus))
    )
    start = time.perf_counter()
    iterator = iter(loader)
    tokens, mask, labels = next(iterator)
    startup = time.perf_counter() - start
    assert tuple(tokens.shape) == (BATCH, SEQ) and tuple(mask.shape) == (BATCH, SEQ)
    assert tuple(labels.shape) == (BATCH,)

    benchmark.group = GROUP
    benchmark.extra_info["impl"] = f"ember-{num_workers}w-{output}"
    benchmark.extra_info["num_workers"] = num_workers
    benchmark.extra_info["output"] = output
    try:
        benchmark.pedantic(lambda: next(iterator), rounds=ROUNDS, iterations=1, warmup_rounds=WARMUP)
    finally:
        iterator.close()
    benchmark.extra_info["startup_s"] = round(startup, 4)
    benchmark.extra_info["batches_per_s"] = round(1.0 / benchmark.stats.stats.mean, 1)
