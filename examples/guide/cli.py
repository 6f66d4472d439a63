"""The command-line flags that the guide's script (``guide/main.py``) and the custom training
loop (``custom_training_loop.py``) share, their checks, the config fields they set, and the
scripts' exit when the Hub cannot be reached."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Sequence

from ember.data import DatasetUnavailableError
from guide.data import SOURCES


def add_run_flags(ap: argparse.ArgumentParser, hidden_size: int) -> None:
    """The data, model-size, loop and device flags of both scripts (their defaults are the book's,
    but for ``--hidden-size``, whose default each script gives)."""
    ap.add_argument(
        "--source",
        choices=SOURCES,
        default="digits",
        help="digits: scikit-learn's 8x8 digits (offline, default); mnist: from the Hugging Face Hub",
    )
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--hidden-size", type=int, default=hidden_size)
    ap.add_argument("--num-workers", type=int, default=0)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--limit", type=int, default=None, metavar="N", help="use only N train items")
    ap.add_argument("--device", default="cpu", help="cpu (Numba kernels), reference (NumPy) or cuda:N")


def parse_checked(ap: argparse.ArgumentParser, argv, positive: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv``; the flags named in ``positive`` (and ``--limit`` when given) must be >= 1."""
    args = ap.parse_args(argv)
    for name in positive:
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.limit is not None and args.limit < 1:
        ap.error("--limit must be >= 1")
    return args


def run_settings(args: argparse.Namespace) -> dict:
    """The config fields both scripts' configs share, from :func:`add_run_flags`'s flags."""
    return dict(
        num_epochs=args.epochs, batch_size=args.batch_size, num_workers=args.num_workers, seed=args.seed
    )


@contextlib.contextmanager
def exit_when_offline() -> Iterator[None]:
    """Ends the script with the loader's message and the offline source to use when the Hub cannot
    be reached and nothing is cached (``DatasetUnavailableError``)."""
    try:
        yield
    except DatasetUnavailableError as exc:
        raise SystemExit(f"{exc}\n\nThe offline source needs no network: --source digits") from None
