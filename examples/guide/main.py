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
from ember.data import DatasetUnavailableError
from ember.optim import AdamConfig
from guide.data import SOURCES, load_datasets
from guide.inference import evaluate, infer
from guide.model import ModelConfig
from guide.training import TrainingConfig, train

INFER_INDICES = tuple(range(42, 50))  # the book infers test image 42; a few more here


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--artifact-dir", default="/tmp/guide", help="where the artifacts go (default /tmp/guide)"
    )
    ap.add_argument(
        "--source",
        choices=SOURCES,
        default="digits",
        help="digits: scikit-learn's 8x8 digits (offline, default); mnist: from the Hugging Face Hub",
    )
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--learning-rate", type=float, default=1e-4)
    ap.add_argument("--hidden-size", type=int, default=512)
    ap.add_argument("--num-workers", type=int, default=0)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--limit", type=int, default=None, metavar="N", help="use only N train items")
    ap.add_argument("--device", default="cpu", help="cpu (Numba kernels), reference (NumPy) or cuda:N")
    args = ap.parse_args(argv)
    for name in ("epochs", "batch_size", "hidden_size"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.limit is not None and args.limit < 1:
        ap.error("--limit must be >= 1")
    return args


def main(argv=None) -> dict:
    """Train, then infer; returns ``{"result", "predictions", "test_accuracy", "seconds"}`` (for tests)."""
    args = parse_args(argv)
    config = TrainingConfig(
        ModelConfig(num_classes=10, hidden_size=args.hidden_size),
        AdamConfig(),
        num_epochs=args.epochs,
        batch_size=args.batch_size,
        num_workers=args.num_workers,
        seed=args.seed,
        learning_rate=args.learning_rate,
        source=args.source,
    )
    start = time.perf_counter()
    try:
        result = train(args.artifact_dir, config, args.device, limit=args.limit)
    except DatasetUnavailableError as exc:
        raise SystemExit(f"{exc}\n\nThe offline source needs no network: --source digits") from None
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
