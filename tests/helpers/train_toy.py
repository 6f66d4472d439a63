"""A small classifier on generated blobs, trained through ember.train by the training tests
(in-process and as a subprocess: ``python -m helpers.train_toy DIR [options]``)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import numpy as np

import ember
from ember import nn
from ember.data import DataLoaderBuilder, InMemDataset
from ember.optim import AdamConfig
from ember.train import ClassificationOutput, Learner, SupervisedTraining
from ember.train.metric import AccuracyMetric, LearningRateMetric, LossMetric
from helpers.train_steps import ClassificationSteps, FeatureBatcher

N_FEATURES, N_CLASSES = 8, 3


class ToyClassifier(ClassificationSteps, nn.Module):
    def __init__(self, hidden: int = 16, dropout: float = 0.1, device=None):
        self.l1 = nn.LinearConfig(N_FEATURES, hidden).init(device)
        self.drop = nn.DropoutConfig(dropout).init()
        self.l2 = nn.LinearConfig(hidden, N_CLASSES).init(device)
        self.loss = nn.CrossEntropyLossConfig().init()

    def forward(self, x):
        return self.l2(self.drop(ember.relu(self.l1(x))))

    def forward_classification(self, batch) -> ClassificationOutput:
        x, y = batch
        logits = self(x)
        return ClassificationOutput(self.loss(logits, y), logits, y)


def blobs(n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    centers = np.random.default_rng(1234).normal(0, 2.0, size=(N_CLASSES, N_FEATURES))
    labels = rng.integers(0, N_CLASSES, size=n)
    x = centers[labels] + rng.normal(0, 1.5, size=(n, N_FEATURES))
    return [(x[i].astype(np.float32), int(labels[i])) for i in range(n)]


def loaders(n_train: int = 96, n_valid: int = 48, batch_size: int = 16, shuffle: int | None = 7):
    builder = DataLoaderBuilder(FeatureBatcher()).batch_size(batch_size)
    if shuffle is not None:
        builder = builder.shuffle(shuffle)
    valid_builder = DataLoaderBuilder(FeatureBatcher()).batch_size(batch_size)
    return builder.build(InMemDataset(blobs(n_train, 0))), valid_builder.build(
        InMemDataset(blobs(n_valid, 1))
    )


def training(
    directory, epochs: int = 3, batch_size: int = 16, renderer=None, **loader_kw
) -> SupervisedTraining:
    train, valid = loaders(batch_size=batch_size, **loader_kw)
    out = (
        SupervisedTraining(directory, train, valid)
        .metrics(AccuracyMetric(), LossMetric())
        .metric_train_numeric(LearningRateMetric())
        .with_default_checkpointers()
        .num_epochs(epochs)
        .summary()
    )
    if renderer is not None:
        out = out.renderer(renderer)
    return out


def learner(seed: int = 0, lr=1e-2, dropout: float = 0.1) -> Learner:
    ember.seed(seed)
    return Learner(ToyClassifier(dropout=dropout), AdamConfig().init(), lr)


class _AtTrainStep:
    """Progress logger that acts once training reaches (epoch, iteration)."""

    def __init__(self, epoch: int, iteration: int):
        self.at = (epoch, iteration)

    def log_progress(self, progress) -> None:
        if progress.split == "train" and (progress.epoch, progress.iteration) == self.at:
            self.act()

    def act(self) -> None:
        raise NotImplementedError


class _SignalAt(_AtTrainStep):
    """Sends ``signum`` to its own process: SIGKILL is a hard crash, SIGINT is Ctrl-C."""

    def __init__(self, epoch: int, iteration: int, signum: int):
        super().__init__(epoch, iteration)
        self.signum = signum

    def act(self) -> None:
        os.kill(os.getpid(), self.signum)


class _WaitForStopAt(_AtTrainStep):
    """Creates ``marker`` and waits (a minute at most) until the run is asked to stop: the test
    sends its signal from outside then."""

    def __init__(self, epoch: int, iteration: int, marker: str, interrupter):
        super().__init__(epoch, iteration)
        self.marker, self.interrupter = marker, interrupter

    def act(self) -> None:
        open(self.marker, "w").close()
        deadline = time.monotonic() + 60
        while not self.interrupter.should_stop() and time.monotonic() < deadline:
            time.sleep(0.01)


class _SlowCheckpoint:
    """Makes every checkpoint write take long enough to be killed in the middle of it."""

    def __init__(self, marker: str):
        self.marker = marker

    def install(self) -> None:
        import ember.train.checkpoint.file_checkpointer as fc
        from ember.record.atomic import atomic_writer

        marker = self.marker

        def slow_write(path, data):
            with atomic_writer(path) as handle:
                handle.write(data[: len(data) // 2])
                handle.flush()
                open(marker, "w").close()
                time.sleep(30)
                handle.write(data[len(data) // 2 :])

        fc.atomic_write_bytes = slow_write


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--resume", type=int)
    parser.add_argument("--kill-at", type=int, nargs=2)
    parser.add_argument("--sigint-at", type=int, nargs=2)
    parser.add_argument("--slow-checkpoint-marker")
    parser.add_argument("--wait-for-signal-at", nargs=3, metavar=("EPOCH", "ITERATION", "MARKER"))
    args = parser.parse_args(argv)
    t = training(args.directory, epochs=args.epochs)
    if args.resume:
        t = t.checkpoint(args.resume)
    if args.kill_at:
        t = t.with_progress_logger(_SignalAt(*args.kill_at, signal.SIGKILL))
    if args.sigint_at:
        t = t.with_progress_logger(_SignalAt(*args.sigint_at, signal.SIGINT))
    if args.wait_for_signal_at:
        epoch, iteration, marker = args.wait_for_signal_at
        t = t.with_progress_logger(_WaitForStopAt(int(epoch), int(iteration), marker, t.interrupter()))
    if args.slow_checkpoint_marker:
        _SlowCheckpoint(args.slow_checkpoint_marker).install()
    result = t.launch(learner())
    if result.interrupted:
        print(f"interrupted after epoch {result.epochs_trained}")
        return
    result.model.save_file(os.path.join(args.directory, "model"))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
