"""The Markdown tables the benchmark scripts print (the README quotes them as printed)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def markdown_row(cells: Sequence[str]) -> str:
    """``| a | b |``."""
    return "| " + " | ".join(cells) + " |"


def markdown_head(header: Sequence[str]) -> list[str]:
    """The header row and the rule under it."""
    return [markdown_row(header), "|" + "---|" * len(header)]


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A whole table, one line per row."""
    return "\n".join(markdown_head(header) + [markdown_row(row) for row in rows])
