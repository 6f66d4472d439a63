"""A small classifier trained by SupervisedTraining, alone or as one rank of a distributed run
(the distributed tests start it with ``mpiexec -n N`` or the launcher)::

    python tests/distributed/ddp_toy.py DIR --batch-size 32                    # one process
    mpiexec -n 2 python tests/distributed/ddp_toy.py DIR --ddp --batch-size 16  # two ranks

It writes the final parameters of its rank to ``DIR/weights-rank<r>.npz`` (beside the run's
artifacts, which rank 0 writes), so a test can compare runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from helpers.train_steps import FeatureBatcher
from helpers.train_toy import ToyClassifier, blobs

import ember
from ember.data import DataLoaderBuilder, InMemDataset
from ember.optim import AdamConfig
from ember.train import (
    DistributedDataParallel,
    Learner,
    SingleDevice,
    SupervisedTraining,
)
from ember.train.metric import AccuracyMetric, LearningRateMetric, LossMetric

# The run's interrupter, for the model's "stop" (a module attribute would be deep-copied with it).
_RUN: dict = {}


class FailingClassifier(ToyClassifier):
    """The toy classifier, made to SIGKILL its process, raise, hang, or stop the run (as Ctrl-C
    would) at its ``at``-th training step."""

    def __init__(self, how: str | None = None, at: int = 0):
        super().__init__(dropout=0.0)
        self._how, self._at, self._steps = how, at, 0

    def train_step(self, batch):
        self._steps += 1
        if self._how is not None and self._steps == self._at:
            if self._how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self._how == "hang":  # alive but never reaching the next collective
                time.sleep(3600)
            if self._how == "stop":
                _RUN["interrupter"].stop("test stop")
                return super().train_step(batch)
            raise RuntimeError(f"deliberate failure at training step {self._at}")
        return super().train_step(batch)


def _args(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("--ddp", action="store_true")
    parser.add_argument("--backend", default="reference")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--n-train", type=int, default=100)
    parser.add_argument("--n-valid", type=int, default=37)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--resume", type=int, default=None)
    parser.add_argument(
        "--fail", default=None, help="RANK:kill|raise|hang|stop:STEP (the STEP-th training step)"
    )
    parser.add_argument("--seed", type=int, default=0, help="model init seed (ranks may differ)")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = _args(argv)
    ember.set_default_device(args.backend)
    strategy = DistributedDataParallel() if args.ddp else SingleDevice()
    rank = strategy.communicator.rank if args.ddp else 0
    world = strategy.communicator.world_size if args.ddp else 1
    # Each rank starts from other weights on purpose: rank 0's must be broadcast.
    ember.seed(args.seed + rank)
    how, at = None, 0
    if args.fail:
        who, fail_how, step = args.fail.split(":")
        if int(who) == rank:
            how, at = fail_how, int(step)
    model = FailingClassifier(how, at)
    learner = Learner(model, AdamConfig().init(), 1e-2)
    train = (
        DataLoaderBuilder(FeatureBatcher())
        .batch_size(args.batch_size)
        .shuffle(7)
        .build(InMemDataset(blobs(args.n_train, 0)))
    )
    valid = (
        DataLoaderBuilder(FeatureBatcher())
        .batch_size(args.batch_size)
        .build(InMemDataset(blobs(args.n_valid, 1)))
    )
    training = (
        SupervisedTraining(args.directory, train, valid)
        .metrics(AccuracyMetric(), LossMetric())
        .metric_train_numeric(LearningRateMetric())
        .with_default_checkpointers()
        .with_plots(False)
        .num_epochs(args.epochs)
        .with_training_strategy(strategy)
    )
    if args.accumulate > 1:
        training = training.grads_accumulation(args.accumulate)
    if args.resume is not None:
        training = training.checkpoint(args.resume)
    _RUN["interrupter"] = training.interrupter()
    result = training.launch(learner)
    weights = {path: p.value.numpy() for path, p in result.model.named_parameters()}
    np.savez(os.path.join(args.directory, f"weights-rank{rank}.npz"), **weights)
    print(f"rank {rank} of {world}: trained {result.epochs_trained} epochs, interrupted={result.interrupted}")


if __name__ == "__main__":
    main()
