"""The Burn book's guide with ember (Burn book, "Backend"): train, then infer.

Trains the guide's image classifier with ``ember.train.SupervisedTraining`` (accuracy and loss
on both splits, default checkpointers, the summary table at the end), saves ``config.json``
and ``model.bpk`` in the artifact directory, then reloads them and predicts a few test images.

Run:
    python examples/guide/main.py                          # 10 epochs on the offline 8x8 digits
    python examples/guide/main.py --source mnist           # MNIST from the Hugging Face Hub
    python examples/guide/main.py --epochs 1 --limit 256 --artifact-dir /tmp/guide-small
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # examples/: makes `guide` importable

import ember  # noqa: F401   (before NumPy: ember's OpenBLAS setting, see the README)
from ember.optim import AdamConfig
from guide.cli import add_run_flags, exit_when_offline, parse_checked, run_settings
from guide.data import load_datasets
from guide.inference import evaluate, infer
from guide.model import ModelConfig
from guide.training import TrainingConfig, train

INFER_INDICES = tuple(range(42, 50))  # the book infers test image 42; a few more here


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--artifact-dir", default="/tmp/guide", help="where the artifacts go (default /tmp/guide)"
    )
    ap.add_argument("--learning-rate", type=float, default=1e-4)
    add_run_flags(ap, hidden_size=512)
    return parse_checked(ap, argv, ("epochs", "batch_size", "hidden_size"))


def main(argv=None) -> dict:
    """Train, then infer; returns ``{"result", "predictions", "test_accuracy", "seconds"}`` (for tests)."""
    args = parse_args(argv)
    config = TrainingConfig(
        ModelConfig(num_classes=10, hidden_size=args.hidden_size),
        AdamConfig(),
        learning_rate=args.learning_rate,
        source=args.source,
        **run_settings(args),
    )
    start = time.perf_counter()
    with exit_when_offline():
        result = train(args.artifact_dir, config, args.device, limit=args.limit)
    seconds = time.perf_counter() - start

    _, test_set = load_datasets(args.source)
    items = [test_set[i % len(test_set)] for i in INFER_INDICES]
    predictions = infer(args.artifact_dir, args.device, items)
    accuracy = evaluate(args.artifact_dir, args.device, test_set)
    print(
        f"Trained in {seconds:.1f} s on '{args.device}'; the reloaded model classifies "
        f"{accuracy:.2f} % of the {len(test_set)} test images correctly. Artifacts: {args.artifact_dir}"
    )
    return {"result": result, "predictions": predictions, "test_accuracy": accuracy, "seconds": seconds}


if __name__ == "__main__":  # required with --num-workers > 0: workers re-import the main module
    main()
