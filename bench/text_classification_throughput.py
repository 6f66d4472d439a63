"""Training throughput of the whole text-classification loop — tokenize, batch, step, metrics —
ember `cpu` (the example's batcher and model through SupervisedTraining) against the same
pipeline written in PyTorch, each in its own process, on the shipped DbPedia sample.

    python bench/text_classification_throughput.py [--batches 30] [--seq 256] [--d-model 128]

The model is Burn's AG News classifier (d_model 128, 4 heads, feed-forward 512, 4 pre-norm
layers, dropout 0.1, batch 32, sequence 256, vocabulary 28,996; ember adds Burn's quiet
softmax, PyTorch has none) trained with Adam; both read the same rows in the same order and
tokenize them with the same `tokenizers` vocabulary inside the timed loop. Prints samples/s
(medians over rounds) and the ratio of times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from markdown_table import markdown_table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SAMPLE = EXAMPLES / "text_classification" / "data" / "dbpedia_sample" / "train.csv"
VOCAB = EXAMPLES / "text_classification" / "data" / "bert-base-cased" / "vocab.txt"


def rows(n: int) -> list[tuple[str, int]]:
    import csv

    out = []
    with open(SAMPLE, newline="", encoding="utf-8") as f:
        for cls, title, content in csv.reader(f):
            out.append((f"Title: {title.strip()} - Content: {content.strip()}", int(cls) - 1))
            if len(out) == n:
                break
    return out


def run_ember(args) -> list[float]:
    sys.path.insert(0, str(EXAMPLES))
    import io

    from text_classification.batcher import TextClassificationBatcher
    from text_classification.dataset import TextClassificationItem
    from text_classification.model import TextClassificationModelConfig
    from text_classification.tokenizer import BertCasedTokenizer

    import ember
    from ember import nn
    from ember.data import DataLoaderBuilder, InMemDataset
    from ember.optim import AdamConfig, WeightDecayConfig
    from ember.train import Learner, SupervisedTraining
    from ember.train.metric import AccuracyMetric, LossMetric
    from ember.train.renderer import CliMetricsRenderer

    tokenizer = BertCasedTokenizer.from_file(VOCAB)
    items = [TextClassificationItem(t, y) for t, y in rows(args.batches * args.batch_size)]
    loader = (
        DataLoaderBuilder(TextClassificationBatcher(tokenizer, args.seq))
        .batch_size(args.batch_size)
        .build(InMemDataset(items))
    )
    config = TextClassificationModelConfig(
        nn.TransformerEncoderConfig(
            args.d_model, 4 * args.d_model, 4, 4, norm_first=True, quiet_softmax=True
        ),
        14,
        tokenizer.vocab_size(),
        args.seq,
    )
    times = []
    for r in range(args.rounds + 1):  # round 0 warms up: kernel compilation, allocator
        ember.seed(0)
        model = config.init()
        training = (
            SupervisedTraining(f"/tmp/ember-throughput/{r}", loader, None)
            .metrics(AccuracyMetric(), LossMetric())
            .with_plots(False)
            .with_application_logger(None)
            .renderer(CliMetricsRenderer(stream=io.StringIO()))
        )
        start = time.perf_counter()
        training.launch(Learner(model, AdamConfig().with_weight_decay(WeightDecayConfig(5e-5)).init(), 1e-4))
        times.append(time.perf_counter() - start)
    return times[1:]


def run_torch(args) -> list[float]:
    import torch
    from tokenizers import Tokenizer
    from tokenizers.models import WordPiece
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer
    from tokenizers.processors import TemplateProcessing

    torch.set_num_threads(os.cpu_count() or 1)

    tok = Tokenizer(WordPiece.from_file(str(VOCAB), unk_token="[UNK]"))
    tok.normalizer = BertNormalizer(lowercase=False, strip_accents=False)
    tok.pre_tokenizer = BertPreTokenizer()
    tok.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 101), ("[SEP]", 102)]
    )
    vocab = tok.get_vocab_size()

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            d = args.d_model
            self.tok = torch.nn.Embedding(vocab, d)
            self.pos = torch.nn.Embedding(args.seq, d)
            layer = torch.nn.TransformerEncoderLayer(
                d, 4, 4 * d, 0.1, activation="gelu", batch_first=True, norm_first=True
            )
            self.encoder = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
            self.head = torch.nn.Linear(d, 14)

        def forward(self, tokens, mask):
            pos = torch.arange(tokens.shape[1]).unsqueeze(0).expand_as(tokens)
            x = (self.tok(tokens) + self.pos(pos)) / 2
            return self.head(self.encoder(x, src_key_padding_mask=mask)[:, 0])

    data = rows(args.batches * args.batch_size)
    times = []
    for _round in range(args.rounds + 1):
        torch.manual_seed(0)
        model = Model()
        optim = torch.optim.Adam(model.parameters(), lr=1e-4, eps=1e-5, weight_decay=5e-5)
        start = time.perf_counter()
        losses, correct = [], 0
        for b in range(args.batches):
            chunk = data[b * args.batch_size : (b + 1) * args.batch_size]
            encoded = tok.encode_batch([t for t, _ in chunk])
            tokens = torch.zeros(len(chunk), args.seq, dtype=torch.long)
            for i, e in enumerate(encoded):
                ids = e.ids[: args.seq]
                tokens[i, : len(ids)] = torch.tensor(ids)
            mask = tokens == 0
            labels = torch.tensor([y for _, y in chunk])
            logits = model(tokens, mask)
            loss = torch.nn.functional.cross_entropy(logits, labels)
            optim.zero_grad()
            loss.backward()
            optim.step()
            losses.append(loss.item())
            correct += int((logits.argmax(1) == labels).sum())
        times.append(time.perf_counter() - start)
    return times[1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=["ember", "torch"])
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.impl:
        times = run_ember(args) if args.impl == "ember" else run_torch(args)
        print(json.dumps(times))
        return
    results = {}
    for impl in ("ember", "torch"):
        cmd = [sys.executable, __file__, "--impl", impl] + sys.argv[1:]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if out.returncode != 0:
            print(f"{impl} failed:\n{out.stderr[-2000:]}")
            continue
        results[impl] = statistics.median(json.loads(out.stdout.strip().splitlines()[-1]))
    samples = args.batches * args.batch_size
    print(
        f"text-classification loop: {args.batches} batches of {args.batch_size}, seq {args.seq}, "
        f"d_model {args.d_model}, 4 layers; medians of {args.rounds} rounds, each framework in its own process"
    )
    rows = [[impl, f"{seconds:.2f}", f"{samples / seconds:.1f}"] for impl, seconds in results.items()]
    print(markdown_table(["pipeline", "s", "samples/s"], rows))
    if len(results) == 2:
        print(f"ember time / PyTorch time: {results['ember'] / results['torch']:.2f}")


if __name__ == "__main__":
    main()
