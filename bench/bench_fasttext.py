"""One training epoch of the fastText-style classifier (the example's ``fasttext`` model) over
the same precomputed batches: ember ``cpu`` (``nn.EmbeddingBag(sparse=True)``, lazy Adam on the
table, dense Adam on the head) against PyTorch (``nn.EmbeddingBag(sparse=True)`` +
``SparseAdam``, ``Adam`` on the head). 4,000 DbPedia sample texts, batches of 64, word pieces +
hashed bigrams, table 553,284 x 64. Samples/s = 4,000 / the median. See
``fasttext_throughput.py`` for the standalone version with options.
"""

from __future__ import annotations

import pytest
from fasttext_throughput import ember_trainer, initial_weights, make_batches, torch_trainer

try:
    import torch
except ImportError:  # the torch row is simply absent
    torch = None

ROWS, BATCH, D_MODEL, BUCKETS = 4000, 64, 64, 2**19
IMPLS = ["ember-cpu"] + (["torch"] if torch is not None else [])
_DATA: dict = {}


def _data():
    if not _DATA:
        batches, vocab, classes = make_batches(ROWS, BATCH, BUCKETS)
        _DATA.update(batches=batches, weights=initial_weights(vocab + BUCKETS, D_MODEL, classes))
    return _DATA["batches"], _DATA["weights"]


@pytest.mark.parametrize("impl", IMPLS)
def bench_fasttext_epoch(benchmark, impl):
    batches, (table, weight, bias) = _data()
    benchmark.group = f"fasttext train epoch, {ROWS} texts, batch {BATCH}, {table.shape[0]}x{D_MODEL} table"
    benchmark.extra_info["impl"] = impl
    benchmark.extra_info["samples"] = ROWS
    epoch = (ember_trainer if impl == "ember-cpu" else torch_trainer)(batches, table, weight, bias)
    epoch()  # warm-up: kernel compilation, optimizer state
    benchmark.pedantic(epoch, rounds=5, iterations=1, warmup_rounds=0)
