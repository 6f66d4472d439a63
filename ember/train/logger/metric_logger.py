"""Metric log files in Burn's layout and format (``logger/metric.rs``, ``metric/base.rs``).

``<dir>/<split>/epoch-<e>/<Metric_Name>.log`` (spaces in the name become ``_``) holds one line
per iteration — ``{batch value},{count}`` for numeric metrics, the raw text for text
metrics — and, when the split ends, ``{epoch aggregate},final``. A file is truncated when an
epoch first writes to it, so a resumed run that repeats an epoch replaces its lines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, TextIO

__all__ = ["FileMetricLogger", "MetricLogger", "read_aggregate"]


class MetricLogger(Protocol):
    """Receives every metric entry of the loop (Burn's ``MetricLogger``)."""

    def log(self, split: str, epoch: int, name: str, line: str) -> None: ...

    def end_split(self, split: str, epoch: int) -> None: ...

    def read_numeric(self, split: str, name: str, epoch: int) -> float | None: ...

    def close(self) -> None: ...


class OpenWriters:
    """Flush and close of a metric logger that keeps its open writers (log files, event
    writers) in ``self._writers``."""

    _writers: dict

    def flush(self) -> None:
        for writer in self._writers.values():
            writer.flush()

    def close(self) -> None:
        """Close every writer and forget them."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()


def file_name(metric_name: str) -> str:
    return metric_name.replace(" ", "_") + ".log"


def read_aggregate(path: str | os.PathLike) -> float | None:
    """An epoch's aggregate from a metric log: its ``final`` line, else the count-weighted
    mean of the iteration lines (``value,count``), else the mean of bare values."""
    try:
        lines = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return None
    if not lines:
        return None
    head, _, tail = lines[-1].rpartition(",")
    if tail == "final":
        return float(head)
    total = weight = 0.0
    for line in lines:
        value, sep, count = line.rpartition(",")
        try:
            if sep:
                total += float(value) * float(count)
                weight += float(count)
            else:
                total += float(count)
                weight += 1.0
        except ValueError:
            return None  # a text metric
    return total / weight if weight else None


class FileMetricLogger(OpenWriters):
    """Writes every metric entry to its log file.

    Args:
        directory: the artifact directory.
        append_epochs: ``{(split, epoch)}`` whose existing files are continued rather than
            truncated (an epoch interrupted and resumed mid-way).
    """

    def __init__(self, directory: str | os.PathLike, append_epochs: set | None = None):
        self.directory = Path(directory)
        self._writers: dict[tuple[str, int, str], TextIO] = {}
        self._append = set(append_epochs or ())

    def continue_epoch(self, split: str, epoch: int) -> None:
        """Append to the split's existing files of ``epoch`` instead of truncating them (an
        epoch interrupted and resumed mid-way)."""
        self._append.add((split, epoch))

    def path(self, split: str, epoch: int, name: str) -> Path:
        return self.directory / split / f"epoch-{epoch}" / file_name(name)

    def _file(self, split: str, epoch: int, name: str) -> TextIO:
        key = (split, epoch, name)
        handle = self._writers.get(key)
        if handle is None:
            path = self.path(split, epoch, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            if (split, epoch) in self._append and path.exists():
                _drop_final_line(path)
                handle = open(path, "a", encoding="utf-8")
            else:
                handle = open(path, "w", encoding="utf-8")
            self._writers[key] = handle
        return handle

    def log(self, split: str, epoch: int, name: str, line: str) -> None:
        """Append one line (no newline inside ``line``)."""
        self._file(split, epoch, name).write(line + "\n")

    def end_split(self, split: str, epoch: int) -> None:
        """Close the split's files (flushing them)."""
        for key in [k for k in self._writers if k[0] == split and k[1] == epoch]:
            self._writers.pop(key).close()
        self._append.discard((split, epoch))

    def read_numeric(self, split: str, name: str, epoch: int) -> float | None:
        return read_aggregate(self.path(split, epoch, name))


def _drop_final_line(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if lines and lines[-1].strip().endswith(",final"):
        path.write_text("".join(lines[:-1]), encoding="utf-8")
