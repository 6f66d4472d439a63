"""Training throughput of the fastText-style classifier: ember `cpu` against the same model in
PyTorch, side by side in one process, over the same batches.

    python bench/fasttext_throughput.py [--rows 4000] [--batch-size 64] [--d-model 64]
                                        [--buckets 524288] [--rounds 5]

The model is the example's ``text_classification.fasttext`` model: the mean of the embeddings
of a text's word pieces and hashed bigrams (``nn.EmbeddingBag(vocab + buckets, d, mode="mean",
sparse=True)``), a linear head, cross-entropy; ember steps it with lazy Adam (row-sparse
gradient of the table) and dense Adam on the head, PyTorch with ``nn.EmbeddingBag(sparse=True)``
+ ``torch.optim.SparseAdam`` for the table and ``torch.optim.Adam`` for the head. Both start
from the same weights and train on the same precomputed batches (flat indices + offsets from the
example's batcher, on the shipped DbPedia sample), so only forward, backward and the optimizer
steps are timed. Prints samples/s (median over rounds; the first round of each warms up).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

# ember's cpu default, set before PyTorch's OpenMP runtime loads (as bench/conftest.py does)
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "10")

import numpy as np
from markdown_table import markdown_table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

LR = 0.05


def make_batches(rows: int = 4000, batch_size: int = 64, buckets: int = 2**19, ngrams: int = 2):
    """``(batches, vocab_size, n_classes)``: the first ``rows`` texts of the shipped DbPedia
    sample as fastText batches ``(indices int64 [N], offsets int64 [B], labels int64 [B])``."""
    from text_classification.dataset import DbPediaDataset
    from text_classification.fasttext import FastTextConfig, TokenizedDataset
    from text_classification.tokenizer import BertCasedTokenizer

    tokenizer = BertCasedTokenizer.shipped()
    dataset = DbPediaDataset.sample("train")
    rows = min(rows, len(dataset))
    tokenized = TokenizedDataset(_Head(dataset, rows), tokenizer)
    config = FastTextConfig(
        tokenizer.vocab_size(), DbPediaDataset.num_classes(), buckets=buckets, ngrams=ngrams
    )
    special = [tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]")]
    hasher = config.hasher(special)
    order = np.random.default_rng(0).permutation(rows)
    batches = []
    for start in range(0, rows, batch_size):
        items = [tokenized[int(i)] for i in order[start : start + batch_size]]
        tokens = np.concatenate([item.ids for item in items]).astype(np.int64)
        lengths = np.array([item.ids.shape[0] for item in items], dtype=np.int64)
        features = hasher.features_flat(tokens, lengths)
        labels = np.array([item.label for item in items], dtype=np.int64)
        batches.append((features.indices, features.offsets, labels))
    return batches, tokenizer.vocab_size(), DbPediaDataset.num_classes()


class _Head:
    """The first ``n`` items of a dataset."""

    def __init__(self, dataset, n):
        self.dataset, self.n = dataset, n

    def __len__(self):
        return self.n

    def get_many(self, indices):
        return self.dataset.get_many(list(indices))


def initial_weights(num_rows: int, d_model: int, n_classes: int, seed: int = 0):
    """The shared starting point: table U(±1/d), head weight [d, C] and bias zero."""
    rng = np.random.default_rng(seed)
    table = rng.uniform(-1.0 / d_model, 1.0 / d_model, size=(num_rows, d_model)).astype(np.float32)
    return table, np.zeros((d_model, n_classes), np.float32), np.zeros(n_classes, np.float32)


def ember_trainer(batches, table, weight, bias):
    """A function that trains one epoch over ``batches`` in ember (cpu); returns the last loss."""
    from text_classification.fasttext import FastTextModel

    import ember
    from ember import nn
    from ember.optim import AdamConfig

    embedding = nn.EmbeddingBag(nn.Param(ember.tensor(table.copy(), device="cpu")), "mean", sparse=True)
    output = nn.Linear(
        nn.Param(ember.tensor(weight.copy(), device="cpu")), nn.Param(ember.tensor(bias.copy(), device="cpu"))
    )
    state = {"model": FastTextModel(embedding, output, weight.shape[1])}
    optim = AdamConfig(epsilon=1e-8).init()
    device_batches = [
        (
            ember.from_numpy(i, device="cpu"),
            ember.from_numpy(o, device="cpu"),
            ember.from_numpy(y, device="cpu"),
        )
        for i, o, y in batches
    ]

    def epoch() -> float:
        from text_classification.fasttext import FastTextBatch

        model = state["model"]
        loss = None
        for indices, offsets, labels in device_batches:
            out = model.train_step(FastTextBatch(indices, offsets, labels))
            model = optim.step(LR, model, out.grads)
            loss = out.item.loss
        state["model"] = model
        return float(loss.item())

    return epoch


def torch_trainer(batches, table, weight, bias):
    """The same epoch in PyTorch: EmbeddingBag(sparse=True) + SparseAdam, Linear + Adam."""
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    num_rows, d_model = table.shape
    bag = torch.nn.EmbeddingBag(num_rows, d_model, mode="mean", sparse=True)
    head = torch.nn.Linear(d_model, weight.shape[1])
    with torch.no_grad():
        bag.weight.copy_(torch.from_numpy(table))
        head.weight.copy_(torch.from_numpy(weight.T.copy()))
        head.bias.copy_(torch.from_numpy(bias))
    sparse_opt = torch.optim.SparseAdam(list(bag.parameters()), lr=LR, eps=1e-8)
    dense_opt = torch.optim.Adam(list(head.parameters()), lr=LR, eps=1e-8)
    device_batches = [(torch.from_numpy(i), torch.from_numpy(o), torch.from_numpy(y)) for i, o, y in batches]

    def epoch() -> float:
        loss = None
        for indices, offsets, labels in device_batches:
            logits = head(bag(indices, offsets))
            loss = torch.nn.functional.cross_entropy(logits, labels)
            sparse_opt.zero_grad()
            dense_opt.zero_grad()
            loss.backward()
            sparse_opt.step()
            dense_opt.step()
        return float(loss.item())

    return epoch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--buckets", type=int, default=2**19)
    parser.add_argument("--ngrams", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    batches, vocab, classes = make_batches(args.rows, args.batch_size, args.buckets, args.ngrams)
    samples = sum(len(o) for _, o, _ in batches)
    indices = sum(len(i) for i, _, _ in batches)
    table, weight, bias = initial_weights(vocab + args.buckets, args.d_model, classes)
    trainers = {"ember-cpu": ember_trainer(batches, table, weight, bias)}
    try:
        trainers["torch"] = torch_trainer(batches, table, weight, bias)
    except ImportError:
        print("PyTorch is not installed: ember only")
    times: dict[str, list[float]] = {name: [] for name in trainers}
    losses: dict[str, float] = {}
    for round_ in range(args.rounds + 1):  # round 0 warms up (kernel compilation, state allocation)
        for name, epoch in trainers.items():  # interleaved, so both see the same machine state
            start = time.perf_counter()
            loss = epoch()
            if round_:
                times[name].append(time.perf_counter() - start)
            else:  # the same start, data and update rules: the first epoch's last loss agrees
                losses[name] = loss
    print(
        f"fastText-style training epoch: {samples} DbPedia texts in {len(batches)} batches of {args.batch_size}, "
        f"{indices / samples:.0f} ids per text; table {vocab + args.buckets} x {args.d_model}, {classes} classes; "
        f"median of {args.rounds} epochs, {os.cpu_count()} cores"
    )
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    rows = [
        [name, f"{seconds:.3f}", f"{samples / seconds:,.0f}", f"{losses[name]:.4f}"]
        for name, seconds in medians.items()
    ]
    print(markdown_table(["impl", "s / epoch", "samples/s", "last batch's loss, epoch 1"], rows))
    if len(medians) == 2:
        print(f"ember throughput / PyTorch throughput: {medians['torch'] / medians['ember-cpu']:.2f}")


if __name__ == "__main__":
    main()
