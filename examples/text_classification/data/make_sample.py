"""Make the embedded DbPedia sample: ``dbpedia_sample/train.csv`` (4,000 rows) and
``dbpedia_sample/test.csv`` (1,000 held-out rows) from one 5,000-row DbPedia CSV file.

This script documents how the shipped files were made; the example never runs it. The
shipped files were made with::

    python examples/text_classification/data/make_sample.py /path/to/dbpedia/train.csv

from the 5,000-row ``train.csv`` described in ``README.md`` beside this script.

Procedure (deterministic, standard library only):

1. Read the source file line by line. Each line is one row ``class,"title"," content"``
   (header-less, classes 1..14, no newline inside a field); every line is checked to parse
   as exactly 3 CSV fields with a class in 1..14.
2. Stratify by class: class ``c`` with ``n_c`` rows gets ``floor(n_c * 1000 / N)`` held-out
   rows, and the rows still missing to reach exactly 1,000 go to the classes with the largest
   fractional parts (ties: lower class first).
3. In each class, shuffle the row positions with ``random.Random(0)`` (one generator, classes
   visited in order 1..14) and hold out the first ones.
4. Write the selected source lines byte for byte, in source order: held-out rows to
   ``test.csv``, the others to ``train.csv``.

Args (command line):
    source: the 5,000-row DbPedia CSV file (required).
    --out DIR: output directory (default: ``dbpedia_sample`` beside this script).
    --test-rows N: held-out rows (default 1000).
    --seed S: shuffle seed (default 0).
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
from collections import defaultdict
from pathlib import Path

NUM_CLASSES = 14


def read_rows(source: Path) -> list[tuple[int, bytes]]:
    """(class, raw line) for every line of ``source``, each line checked to be one row."""
    rows = []
    with open(source, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            fields = next(csv.reader([raw.decode("utf-8")]))
            if len(fields) != 3 or not fields[0].strip().isdigit():
                raise SystemExit(f"{source}:{number}: expected class,title,content, got {fields!r:.120}")
            label = int(fields[0])
            if not 1 <= label <= NUM_CLASSES:
                raise SystemExit(f"{source}:{number}: class {label} is outside 1..{NUM_CLASSES}")
            rows.append((label, raw if raw.endswith(b"\n") else raw + b"\n"))
    return rows


def held_out_counts(per_class: dict[int, int], total_test: int) -> dict[int, int]:
    """Largest-remainder allocation of ``total_test`` rows proportionally to class sizes."""
    total = sum(per_class.values())
    exact = {c: n * total_test / total for c, n in per_class.items()}
    counts = {c: int(v) for c, v in exact.items()}
    missing = total_test - sum(counts.values())
    for c in sorted(exact, key=lambda c: (-(exact[c] - counts[c]), c))[:missing]:
        counts[c] += 1
    return counts


def split(rows: list[tuple[int, bytes]], total_test: int, seed: int) -> set[int]:
    """Positions (in ``rows``) of the held-out rows."""
    by_class: dict[int, list[int]] = defaultdict(list)
    for position, (label, _) in enumerate(rows):
        by_class[label].append(position)
    counts = held_out_counts({c: len(p) for c, p in by_class.items()}, total_test)
    rng = random.Random(seed)
    held_out: set[int] = set()
    for label in sorted(by_class):
        positions = list(by_class[label])
        rng.shuffle(positions)
        held_out.update(positions[: counts[label]])
    return held_out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="the 5,000-row DbPedia CSV file")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "dbpedia_sample")
    parser.add_argument("--test-rows", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rows = read_rows(args.source)
    if not 0 < args.test_rows < len(rows):
        raise SystemExit(f"--test-rows must be in 1..{len(rows) - 1}, got {args.test_rows}")
    held_out = split(rows, args.test_rows, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "train.csv", "wb") as train, open(args.out / "test.csv", "wb") as test:
        for position, (_, raw) in enumerate(rows):
            (test if position in held_out else train).write(raw)
    print(
        f"{len(rows) - len(held_out)} train rows -> {args.out / 'train.csv'}; "
        f"{len(held_out)} held-out rows -> {args.out / 'test.csv'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
