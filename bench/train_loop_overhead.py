"""The cost of ``SupervisedTraining`` over a hand-written loop: the same model, data, optimizer
and schedule, trained one epoch at a time by each, alternating, in one process.

    python bench/train_loop_overhead.py [--rounds 5] [--batches 40] [--seq 128] [--d-model 64]

The model is the text classifier of bench_train_step.py at a smaller size (so one epoch is a
few seconds). The hand-written loop does what a careful user writes: schedule step, forward,
backward, ``GradientsParams``, optimizer step, and reads the loss and accuracy of each batch.
``SupervisedTraining`` runs with Loss and Accuracy metrics, its log files, the plain renderer
(to /dev/null) and no checkpointers or validation. Prints medians of steps/s and the overhead.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conftest  # noqa: F401   (ember's thread settings, as in the other benchmarks)
import numpy as np
from markdown_table import markdown_table

import ember
from ember import nn
from ember.data import DataLoaderBuilder, InMemDataset
from ember.optim import AdamConfig, GradientsParams
from ember.optim.lr_scheduler import NoamLrSchedulerConfig
from ember.train import ClassificationOutput, Learner, SupervisedTraining, TrainOutput
from ember.train.metric import AccuracyMetric, LossMetric
from ember.train.renderer import CliMetricsRenderer


class Classifier(nn.Module):
    def __init__(self, vocab, seq, d_model, layers, classes):
        self.tok = nn.EmbeddingConfig(vocab, d_model).init()
        self.pos = nn.EmbeddingConfig(seq, d_model).init()
        self.encoder = nn.TransformerEncoderConfig(
            d_model, 4 * d_model, 4, layers, norm_first=True, quiet_softmax=True
        ).init()
        self.head = nn.LinearConfig(d_model, classes).init()
        self.loss = nn.CrossEntropyLossConfig().init()

    def forward_classification(self, batch):
        tokens, mask, labels = batch
        b, s = tokens.shape
        pos = ember.arange(s).unsqueeze(0).expand(b, s)
        x = (self.pos(pos) + self.tok(tokens)) / 2
        x = self.encoder(nn.TransformerEncoderInput(x).mask_pad(mask))
        logits = self.head(x[:, 0])
        return ClassificationOutput(self.loss(logits, labels), logits, labels)

    def train_step(self, batch):
        out = self.forward_classification(batch)
        return TrainOutput(self, out.loss.backward(), out)

    def inference_step(self, batch):
        return self.forward_classification(batch)


class Batcher:
    def batch(self, items, device):
        tokens = np.stack([i[0] for i in items])
        mask = tokens == 0
        labels = np.array([i[1] for i in items], dtype=np.int64)
        return (
            ember.from_numpy(tokens, device=device),
            ember.from_numpy(mask, device=device),
            ember.from_numpy(labels, device=device),
        )


def make_items(n, seq, vocab, classes, seed=0):
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(n):
        length = int(rng.integers(seq // 4, seq + 1))
        tokens = np.zeros(seq, dtype=np.int64)
        tokens[:length] = rng.integers(1, vocab, length)
        items.append((tokens, int(rng.integers(0, classes))))
    return items


def hand_epoch(model, optim, scheduler, loader):
    for batch in loader:
        lr = scheduler.step()
        out = model.forward_classification(batch)
        grads = GradientsParams.from_grads(out.loss.backward(), model)
        model = optim.step(lr, model, grads)
        loss = out.loss.item()  # what a hand loop prints or averages
        accuracy = float((out.output.argmax(1) == out.targets).float().mean().item())
        del loss, accuracy
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    vocab, classes = 5000, 4
    ember.seed(0)
    items = make_items(args.batches * args.batch_size, args.seq, vocab, classes)
    loader = DataLoaderBuilder(Batcher()).batch_size(args.batch_size).shuffle(0).build(InMemDataset(items))

    def fresh():
        ember.seed(0)
        model = Classifier(vocab, args.seq, args.d_model, args.layers, classes)
        return model, AdamConfig().init(), NoamLrSchedulerConfig(1e-2).with_model_size(args.d_model).init()

    hand_times, learner_times = [], []
    with tempfile.TemporaryDirectory() as tmp:
        model, optim, sched = fresh()
        hand_epoch(model, optim, sched, loader)  # warm-up: kernel compilation, allocator
        for r in range(args.rounds):
            model, optim, sched = fresh()
            t0 = time.perf_counter()
            hand_epoch(model, optim, sched, loader)
            hand_times.append(time.perf_counter() - t0)
            model, optim, sched = fresh()
            training = (
                SupervisedTraining(os.path.join(tmp, f"r{r}"), loader, None)
                .metrics(AccuracyMetric(), LossMetric())
                .with_plots(False)
                .with_application_logger(None)
                .renderer(CliMetricsRenderer(stream=io.StringIO()))
            )
            t0 = time.perf_counter()
            training.launch(Learner(model, optim, sched))
            learner_times.append(time.perf_counter() - t0)
    steps = args.batches
    hand, learn = statistics.median(hand_times), statistics.median(learner_times)
    print(
        f"model: d_model {args.d_model}, {args.layers} layers, batch {args.batch_size}, seq {args.seq}; "
        f"{steps} steps per epoch, {args.rounds} rounds (medians)"
    )
    rows = [
        [loop, f"{seconds:.3f}", f"{steps / seconds:.2f}"]
        for loop, seconds in (("hand-written", hand), ("SupervisedTraining", learn))
    ]
    print(markdown_table(["loop", "s / epoch", "steps/s"], rows))
    print(f"overhead of SupervisedTraining: {100 * (learn / hand - 1):+.2f}%")


if __name__ == "__main__":
    main()
