"""The Burn book's custom training loop: the guide's model trained by hand, without ember.train.

For each epoch and each batch: forward, loss, ``loss.backward()`` (gradients are returned,
never stored on tensors), ``GradientsParams.from_grads(grads, model)`` (re-keyed by
parameter), ``optim.step(lr, model, grads)`` (the learning rate is passed at every step).
With ``--grad-accum N`` the gradients of N batches are summed in a ``GradientsAccumulator``
and applied in one step, as Burn's learner does (summed, not averaged: lower the learning rate
accordingly). After each epoch the model is validated through ``model.valid()``, an inference
copy: dropout off, batch norm on its running statistics, no graph recorded.

Data: the guide's sources (``--source digits``, scikit-learn's 8×8 digits, offline; or
``--source mnist`` from the Hugging Face Hub).

Run:
    python examples/custom_training_loop.py                       # 10 epochs on the digits
    python examples/custom_training_loop.py --epochs 2 --grad-accum 4 --lr 2.5e-5
    python examples/custom_training_loop.py --limit 256 --epochs 1 --device reference
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # makes the `guide` package importable

from guide.cli import add_run_flags, exit_when_offline, parse_checked, run_settings
from guide.data import load_loaders
from guide.model import ModelConfig

import ember  # (before NumPy: ember's OpenBLAS setting, see the README)
from ember import nn
from ember.optim import AdamConfig, GradientsAccumulator, GradientsParams

__all__ = [
    "CustomTrainingConfig",
    "EpochStats",
    "History",
    "accuracy",
    "main",
    "run",
    "train_epoch",
    "validate",
]


class CustomTrainingConfig(ember.Config):
    """The loop's settings (the book's ``MnistTrainingConfig``; ``num_workers`` 0 here).

    Args:
        model: the model's config (the book uses ``ModelConfig(10, 1024)``).
        optimizer: the optimizer's config (Adam with Burn's defaults).
        num_epochs: passes over the train split.
        batch_size: items per batch.
        num_workers: data-loader worker processes (0: batches built in this process).
        seed: seeds the parameters, dropout and the shuffling.
        lr: learning rate, passed to every optimizer step.
        grads_accumulation: batches whose gradients are summed into one optimizer step.
    """

    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 0
    seed: int = 42
    lr: float = 1e-4
    grads_accumulation: int = 1


@dataclass
class EpochStats:
    """Sample-weighted mean loss and accuracy (%) of one split over one epoch."""

    loss: float
    accuracy: float
    items: int


@dataclass
class History:
    """What :func:`run` returns: the trained model and every number it printed."""

    model: nn.Module
    train_losses: list[float] = field(default_factory=list)  # one per iteration, all epochs
    train: list[EpochStats] = field(default_factory=list)  # one per epoch
    valid: list[EpochStats] = field(default_factory=list)  # one per epoch
    optimizer_steps: int = 0


def accuracy(output: ember.Tensor, targets: ember.Tensor) -> float:
    """Percentage of rows of ``output`` ([B, C] logits) whose argmax equals ``targets``."""
    with ember.no_grad():
        correct = (output.detach().argmax(1) == targets).int().sum().item()
    return 100.0 * correct / targets.shape[0]


def train_epoch(
    model,
    optim,
    loader,
    lr: float,
    epoch: int,
    grads_accumulation: int = 1,
    log: Callable[[str], None] | None = print,
    history: History | None = None,
):
    """One pass over ``loader``, updating ``model`` (the book's inner training loop).

    Args:
        model: the model (its ``forward(images)`` gives logits).
        optim: a ``ModuleOptimizer`` (``AdamConfig().init()``).
        loader: a ``DataLoader`` of batches with ``images`` and ``targets``.
        lr: the learning rate.
        epoch: 1-based epoch number, for the log lines.
        grads_accumulation: sum the gradients of this many batches per optimizer step; an
            incomplete group at the end of the epoch is applied too.
        log: where lines go (None: nowhere).
        history: per-iteration losses and the step count are appended to it when given.

    Returns:
        ``(model, EpochStats)``.
    """
    if grads_accumulation < 1:
        raise ValueError(f"train_epoch: grads_accumulation must be >= 1, got {grads_accumulation}")
    loss_fn = nn.CrossEntropyLossConfig().init()
    accumulator = GradientsAccumulator()
    total_loss = total_correct = 0.0
    total_items = steps = 0
    for iteration, batch in enumerate(loader, start=1):
        output = model(batch.images)
        loss = loss_fn(output, batch.targets)
        batch_loss, batch_accuracy, n = loss.item(), accuracy(output, batch.targets), batch.targets.shape[0]
        if log is not None:
            log(
                f"[Train - Epoch {epoch} - Iteration {iteration}] "
                f"Loss {batch_loss:.3f} | Accuracy {batch_accuracy:.3f} %"
            )

        grads = loss.backward()  # gradients of this backward pass
        grads = GradientsParams.from_grads(grads, model)  # ... linked to each parameter of the model
        if grads_accumulation == 1:
            model = optim.step(lr, model, grads)  # update the model; the gradients are consumed
            steps += 1
        else:
            accumulator.accumulate(model, grads)
            if accumulator.num_accumulated == grads_accumulation:
                model = optim.step(lr, model, accumulator.grads())  # pops the summed gradients
                steps += 1

        total_loss += batch_loss * n
        total_correct += batch_accuracy * n
        total_items += n
        if history is not None:
            history.train_losses.append(batch_loss)
    if accumulator.num_accumulated:
        model = optim.step(lr, model, accumulator.grads())
        steps += 1
    if history is not None:
        history.optimizer_steps += steps
    return model, EpochStats(
        total_loss / max(total_items, 1), total_correct / max(total_items, 1), total_items
    )


def validate(model_valid, loader, epoch: int, log: Callable[[str], None] | None = print) -> EpochStats:
    """Loss and accuracy of ``model_valid`` (an inference copy, ``model.valid()``) on ``loader``.

    Args:
        model_valid: the model to evaluate.
        loader: a ``DataLoader`` of batches.
        epoch: 1-based epoch number, for the log line.
        log: where the line goes (None: nowhere).
    """
    loss_fn = nn.CrossEntropyLossConfig().init()
    total_loss = total_correct = 0.0
    total_items = 0
    for batch in loader:
        output = model_valid(batch.images)
        n = batch.targets.shape[0]
        total_loss += loss_fn(output, batch.targets).item() * n
        total_correct += accuracy(output, batch.targets) * n
        total_items += n
    stats = EpochStats(total_loss / max(total_items, 1), total_correct / max(total_items, 1), total_items)
    if log is not None:
        log(f"[Valid - Epoch {epoch}] Loss {stats.loss:.3f} | Accuracy {stats.accuracy:.3f} %")
    return stats


def run(
    config: CustomTrainingConfig,
    device="cpu",
    source: str = "digits",
    limit: int | None = None,
    log: Callable[[str], None] | None = print,
) -> History:
    """Train ``config.model`` by hand for ``config.num_epochs`` epochs, validating after each.

    Args:
        config: the loop's settings.
        device: where the model and batches live (``"cpu"``, ``"reference"``, ``"cuda:0"``).
        source: ``"digits"`` or ``"mnist"`` (see ``guide.data``).
        limit: use only the first ``limit`` train items (None: all).
        log: where lines go (None: nowhere).
    """
    ember.seed(config.seed)
    model = config.model.init(device)
    optim = config.optimizer.init()

    dataloader_train, dataloader_test = load_loaders(source, config, device, limit)

    history = History(model)
    for epoch in range(1, config.num_epochs + 1):
        model, train_stats = train_epoch(
            model, optim, dataloader_train, config.lr, epoch, config.grads_accumulation, log, history
        )
        history.train.append(train_stats)
        model_valid = model.valid()  # no graph, dropout off, batch norm on running statistics
        history.valid.append(validate(model_valid, dataloader_test, epoch, log))
    history.model = model
    return history


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument(
        "--grad-accum",
        type=int,
        default=1,
        metavar="N",
        help="sum the gradients of N batches per optimizer step (default 1)",
    )
    add_run_flags(ap, hidden_size=1024)
    return parse_checked(ap, argv, ("epochs", "batch_size", "grad_accum", "hidden_size"))


def main(argv=None) -> History:
    """Command line entry point; returns the :class:`History` (for tests)."""
    args = parse_args(argv)
    config = CustomTrainingConfig(
        ModelConfig(10, args.hidden_size),
        AdamConfig(),
        lr=args.lr,
        grads_accumulation=args.grad_accum,
        **run_settings(args),
    )
    start = time.perf_counter()
    with exit_when_offline():
        history = run(config, args.device, args.source, args.limit)
    last = history.valid[-1]
    print(
        f"Done: {config.num_epochs} epochs, {history.optimizer_steps} optimizer steps in "
        f"{time.perf_counter() - start:.1f} s on '{args.device}'; "
        f"valid loss {last.loss:.3f}, accuracy {last.accuracy:.3f} %"
    )
    return history


if __name__ == "__main__":  # required with --num-workers > 0: workers re-import the main module
    main()
