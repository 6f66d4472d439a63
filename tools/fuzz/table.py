"""The fuzz run's result table: one row per probe (target), one column per outcome."""

from __future__ import annotations

from .runner import Tally

__all__ = ["format_table"]

_HEADERS = (
    "probe",
    "inputs tried",
    "clean errors",
    "accepted and correct",
    "crashes",
    "hangs",
    "silent wrong answers",
    "unclear errors",
    "over memory",
)
_KEYS = (None, None, "clean", "correct", "crash", "hang", "silent", "unclear", "memory")


def format_table(tallies: dict[str, Tally], elapsed: float | None = None) -> str:
    """A Markdown table of `tallies` (plus a total row and, with `elapsed`, the rate)."""
    rows = []
    for name, tally in tallies.items():
        rows.append([name, tally.inputs] + [tally.counts[key] for key in _KEYS[2:]])
    if len(rows) > 1:
        rows.append(["all"] + [sum(row[column] for row in rows) for column in range(1, len(_HEADERS))])
    cells = [list(_HEADERS)] + [
        [f"{value:,}" if isinstance(value, int) else value for value in row] for row in rows
    ]
    widths = [max(len(str(row[column])) for row in cells) for column in range(len(_HEADERS))]
    lines = [
        "| " + " | ".join(str(v).ljust(w) for v, w in zip(cells[0], widths)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    for row in cells[1:]:
        lines.append(
            "| "
            + " | ".join(
                str(v).rjust(w) if i else str(v).ljust(w) for i, (v, w) in enumerate(zip(row, widths))
            )
            + " |"
        )
    if elapsed is not None:
        total = sum(t.inputs for t in tallies.values())
        lines.append(f"{total:,} inputs in {elapsed:.0f} s ({total / max(elapsed, 1e-9):,.0f} inputs/s)")
    return "\n".join(lines)
