"""No benchmark figures in ember's docstrings and comments.

A timing written beside a kernel ("1.70 -> 1.21 ms on a Xeon", "runs at 144 GFLOP/s", "~45%
slower") is true of one machine on one day and goes stale the day the kernel changes; the
figures live in ``bench/`` output and the README's benchmark tables. A comment keeps the
*reason* a design was chosen ("fused so each row is read once"), not the measurement.

Only comments and string literals that stand as statements (docstrings) are read, so error
messages and settings ("every 200 ms", Burn's refresh interval) are not figures.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ember"

_NUMBER = r"\d+(?:\.\d+)?"
FIGURE = re.compile(
    "|".join(
        [
            r"GFLOP",
            r"GB/s",
            rf"{_NUMBER} ?% (?:slower|faster|more|less)",
            rf"{_NUMBER} ?[x×] (?:faster|slower)",
            rf"-> ?{_NUMBER} ?(?:s|ms|us|µs|ns)\b",
            rf"\b(?:took|cost|costs|ran|runs at|ran at) (?:about |~)?{_NUMBER} ?(?:s|ms|us|µs|ns|%)?\b",
            rf"~{_NUMBER} ?(?:s|ms|us|µs|ns|%)",
            rf"\babout {_NUMBER} ?(?:s|ms|us|µs|ns)\b",
        ]
    )
)


def prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring-like string statement of ``source``."""
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                found.append((node.lineno, node.value.value))
    return found


def figures(source: str) -> list[tuple[int, str]]:
    """(line, match) of each benchmark figure in the prose of ``source``."""
    hits = []
    for line, text in prose(source):
        flat = " ".join(text.split())  # a figure may wrap across lines
        hits += [(line, m.group(0)) for m in FIGURE.finditer(flat)]
    return hits


def test_no_benchmark_figures_in_the_docstrings_and_comments_of_ember():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        hits = figures(path.read_text(encoding="utf-8"))
        if hits:
            found[str(path.relative_to(PACKAGE.parent))] = hits
    assert found == {}, "benchmark figures in prose (keep the reason, drop the number)"


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ('"""Forward\n1.70 -> 1.21 ms on a Xeon."""\n', True),
        ("x = 1  # a float64 sum made this loop ~45% slower\n", True),
        ('"""[64, 32] x [32, 256] runs at 144 GFLOP/s on one core."""\n', True),
        ("# the AG News step took 1.2 s instead of 0.7 s\n", True),
        ('"""The first step would wait about 20 s for Numba."""\n', True),
        ('"""A batch padded to 3x its text runs 3x faster."""\n', True),
        ('"""Read again at most every 200 ms, as Burn."""\n', False),
        ('raise ValueError("took 5 s")\n', False),
        ("# fused so each row is read once\n", False),
        ('"""Texts that fill 60% of the sequence length do 60% of the work."""\n', False),
    ],
)
def test_the_check_tells_a_figure_from_a_reason(source, caught):
    assert bool(figures(source)) is caught
