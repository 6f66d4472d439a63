"""Plain `rich.text.Text` building blocks of the dashboard: bars, a table, boxes.

rich's `Table`, `Panel` and `ProgressBar` measure and lay out their content on every
render, which is costly for a whole dashboard; redrawn several times a second from
a background thread, that competes with training for the interpreter lock. These helpers
produce lines of `Text` whose layout is computed once, here, in a fraction of that.
Every line returned has exactly the requested width in terminal cells.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text

__all__ = ["bar", "boxed", "fit", "hjoin", "text_table"]


def fit(text: Text | str, width: int) -> Text:
    """`text` cropped or padded with spaces to exactly `width` cells.

    Args:
        text: a `Text` (copied, not modified) or a plain string.
        width: the width in cells.
    """
    line = text.copy() if isinstance(text, Text) else Text(text)
    line.truncate(width, overflow="crop", pad=True)
    return line


def bar(fraction: float, width: int, style: str = "bar.complete") -> Text:
    """A progress bar of `width` cells, filled to `fraction` (clamped to 0..1).

    Args:
        fraction: the completed share.
        width: the bar's width in cells.
        style: the style of the completed part (the rest is dim).
    """
    fraction = min(max(fraction, 0.0), 1.0)
    halves = int(fraction * width * 2)  # half-cell resolution, with a "╸" tip
    full, tip = divmod(halves, 2)
    text = Text("━" * full, style=style)
    if tip:
        text.append("╸", style=style)
    rest = width - full - tip
    if rest > 0:
        text.append("━" * rest, style="bar.back")
    return text


def text_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    header_styles: Sequence[str] | None = None,
    right_align_from: int = 1,
    gap: int = 3,
) -> list[Text]:
    """A borderless table: a header, a rule, then the rows.

    Args:
        header: the column titles.
        rows: the cells, one sequence per row (as many as `header`).
        header_styles: a style per column title (bold when None).
        right_align_from: columns from this index on are right-aligned (numbers).
        gap: spaces between columns.
    """
    widths = [cell_len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], cell_len(cell))
    styles = list(header_styles) if header_styles is not None else ["bold"] * len(header)

    def line(cells: Sequence[str], cell_styles: Sequence[str | None]) -> Text:
        text = Text()
        for i, (cell, style) in enumerate(zip(cells, cell_styles)):
            if i:
                text.append(" " * gap)
            pad = " " * (widths[i] - cell_len(cell))
            text.append(pad + cell if i >= right_align_from else cell + pad, style=style)
        return text

    total = sum(widths) + gap * (len(widths) - 1)
    out = [line(header, styles), Text("─" * total, style="dim")]
    out += [line(row, [None] * len(row)) for row in rows]
    return out


def boxed(title: str, lines: Sequence[Text], width: int, border_style: str = "dim") -> list[Text]:
    """`lines` inside a rounded box of `width` cells, `title` in its top border.

    Args:
        title: shown in the top border (cropped if too long).
        lines: the content; each is cropped or padded to the inner width.
        width: the box's outer width (at least 6).
        border_style: the style of the border.
    """
    inner = max(2, width - 4)
    label = f" {title} "[: max(0, width - 4)]
    top = Text("╭─", style=border_style)
    top.append(label, style="bold")
    top.append("─" * max(0, width - 3 - cell_len(label)) + "╮", style=border_style)
    out = [top]
    for content in lines:
        row = Text("│ ", style=border_style)
        row.append_text(fit(content, inner))
        row.append(" │", style=border_style)
        out.append(row)
    out.append(Text("╰" + "─" * (width - 2) + "╯", style=border_style))
    return out


def hjoin(blocks: Sequence[Sequence[Text]], widths: Sequence[int]) -> list[Text]:
    """Blocks of lines side by side; a shorter block is padded with blank lines.

    Args:
        blocks: the blocks, left to right.
        widths: each block's width in cells (its lines are fitted to it).
    """
    height = max((len(block) for block in blocks), default=0)
    out = []
    for i in range(height):
        line = Text()
        for block, width in zip(blocks, widths):
            line.append_text(fit(block[i], width) if i < len(block) else Text(" " * width))
        out.append(line)
    return out
