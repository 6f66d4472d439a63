"""Small terminal line charts drawn with braille characters, for the dashboard.

A braille character (U+2800..U+28FF) is a 2 x 4 grid of dots, so a chart of `width` x
`height` characters has ``2 * width`` x ``4 * height`` dots. Each series is averaged per
dot column (a noisy per-batch loss becomes a readable line, not a solid band) and
consecutive columns are joined with straight segments.

`Series` keeps a whole training's history in bounded memory: when it holds more than
`max_points` points it halves itself by averaging neighbours, so old epochs stay visible
at a coarser resolution.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from rich.text import Text

from .base import format_number

__all__ = ["Series", "braille_chart"]

# Bit of each dot in a braille cell, indexed [dot row 0..3][dot column 0..1].
_DOT_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
_BRAILLE_BASE = 0x2800


class Series:
    """A bounded history of ``(x, y)`` points; non-finite values are dropped.

    Args:
        max_points: the most points kept; beyond it neighbouring points are averaged.

    Raises:
        ValueError: `max_points` is below 2.
    """

    def __init__(self, max_points: int = 1024) -> None:
        if max_points < 2:
            raise ValueError(f"Series: max_points must be >= 2, got {max_points}")
        self._max = max_points
        self._points: list[tuple[float, float]] = []
        # Points waiting to be averaged into one, once the series has been halved.
        self._stride = 1
        self._acc: list[tuple[float, float]] = []
        self._last: float | None = None  # raw, not averaged

    def append(self, x: float, y: float) -> None:
        """Add a point (ignored when `y` is NaN or infinite).

        Args:
            x: the abscissa (the dashboard uses fractional epochs).
            y: the value.
        """
        if not math.isfinite(y) or not math.isfinite(x):
            return
        self._last = y
        self._acc.append((x, y))
        if len(self._acc) < self._stride:
            return
        self._points.append(_mean(self._acc))
        self._acc = []
        if len(self._points) > self._max:
            pairs = zip(self._points[0::2], self._points[1::2])
            merged = [_mean(pair) for pair in pairs]
            if len(self._points) % 2:
                merged.append(self._points[-1])
            self._points = merged
            self._stride *= 2

    def points(self) -> list[tuple[float, float]]:
        """Every kept point, the partly accumulated last one included."""
        return self._points + ([_mean(self._acc)] if self._acc else [])

    @property
    def last(self) -> float | None:
        """The most recent value appended, or None."""
        return self._last

    def __len__(self) -> int:
        return len(self._points) + (1 if self._acc else 0)


def _mean(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    n = len(points)
    return (sum(p[0] for p in points) / n, sum(p[1] for p in points) / n)


def _segment(c0: int, r0: int, c1: int, r1: int) -> list[tuple[int, int]]:
    """The dots of a straight segment between two dots (Bresenham), both ends included."""
    dots = []
    dc, dr = abs(c1 - c0), -abs(r1 - r0)
    sc, sr = (1 if c1 > c0 else -1), (1 if r1 > r0 else -1)
    err = dc + dr
    while True:
        dots.append((c0, r0))
        if c0 == c1 and r0 == r1:
            return dots
        twice = 2 * err
        if twice >= dr:
            err += dr
            c0 += sc
        if twice <= dc:
            err += dc
            r0 += sr


def _y_bounds(values: list[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    if high - low < 1e-12 * max(1.0, abs(high)):  # a flat line: centre it
        pad = abs(high) * 0.05 or 0.5
        return low - pad, high + pad
    return low, high


def braille_chart(
    series: Sequence[tuple[Sequence[tuple[float, float]], str]],
    width: int,
    height: int,
    x_range: tuple[float, float] | None = None,
) -> Text:
    """Draw line charts of several series on one braille canvas, with a y axis.

    Args:
        series: ``(points, style)`` pairs; later series are drawn over earlier ones.
        width: the chart's width in characters, the y-axis labels included.
        height: the chart's height in lines (at least 2).
        x_range: the x span to draw; the span of the points when None.

    Returns:
        A `rich.text.Text` of `height` lines (a single dim line when no series has a point).
    """
    finite = [(pts, style) for pts, style in series if pts]
    if not finite:
        return Text("(no data yet)", style="dim")
    height = max(2, height)
    ys = [y for pts, _ in finite for _, y in pts]
    y_low, y_high = _y_bounds(ys)
    labels = [format_number(y_high), format_number(y_low)]
    label_w = max(len(label) for label in labels)
    cols = max(2, width - label_w - 2)
    dot_w, dot_h = 2 * cols, 4 * height
    if x_range is None:
        xs = [x for pts, _ in finite for x, _ in pts]
        x_range = (min(xs), max(xs))
    x_low, x_high = x_range
    x_span = x_high - x_low if x_high > x_low else 1.0
    y_span = y_high - y_low

    cells = [[0] * cols for _ in range(height)]
    owner: list[list[str | None]] = [[None] * cols for _ in range(height)]
    x_scale = (dot_w - 1) / x_span
    y_scale = (dot_h - 1) / y_span
    for pts, style in finite:
        # Average the points falling on each dot column, then join the columns.
        # numpy: a chart holds up to a few thousand points, redrawn several times a second.
        xy = np.asarray(pts, dtype=np.float64)
        cols_of = np.clip(np.rint((xy[:, 0] - x_low) * x_scale), 0, dot_w - 1).astype(np.intp)
        counts = np.bincount(cols_of, minlength=dot_w)
        sums = np.bincount(cols_of, weights=xy[:, 1], minlength=dot_w)
        used = np.nonzero(counts)[0]
        rows = np.clip(np.rint((y_high - sums[used] / counts[used]) * y_scale), 0, dot_h - 1)
        path = list(zip(used.tolist(), rows.astype(np.intp).tolist()))
        dots = path[:1]
        for (c0, r0), (c1, r1) in zip(path, path[1:]):
            if c1 == c0 + 1:  # neighbouring columns: split the vertical jump between them
                mid = (r0 + r1) // 2
                step = 1 if r1 >= r0 else -1
                dots.extend((c0, r) for r in range(r0, mid + step, step))
                dots.extend((c1, r) for r in range(mid, r1 + step, step))
            else:
                dots.extend(_segment(c0, r0, c1, r1))
        for col, row in dots:
            cells[row >> 2][col >> 1] |= _DOT_BITS[row & 3][col & 1]
            owner[row >> 2][col >> 1] = style

    text = Text(no_wrap=True, overflow="crop")
    for line in range(height):
        if line == 0:
            label = labels[0]
        elif line == height - 1:
            label = labels[1]
        else:
            label = ""
        text.append(f"{label:>{label_w}} " + ("┤" if label else "│"), style="dim")
        # One append per run of same-styled cells: Text.append is the costly part.
        run: list[str] = []
        run_style: str | None = None
        for bits, style in zip(cells[line], owner[line]):
            style = style if bits else None
            if style != run_style and run:
                text.append("".join(run), style=run_style)
                run = []
            run_style = style
            # An empty cell is a plain space, so exported text stays clean.
            run.append(chr(_BRAILLE_BASE + bits) if bits else " ")
        if run:
            text.append("".join(run), style=run_style)
        if line < height - 1:
            text.append("\n")
    return text
