"""Metric entries as TensorBoard scalars, written with tensorboardX (the ``interop`` extra).

    training.with_metric_logger(FileMetricLogger(artifact_dir))   # keep Burn's .log files
            .with_metric_logger(TensorBoardLogger(f"{artifact_dir}/tensorboard"))

Layout: one event-file folder per split, ``<directory>/train`` and ``<directory>/valid``, so
TensorBoard draws the two splits of a metric on one chart. Tags, with spaces in the metric's
name replaced by ``_`` as in the ``.log`` file names:

- ``step/<Metric_Name>``: one point per batch, the batch value; its step counts the batches
  this logger received for that metric in that split (1, 2, ... across epochs). A resumed run
  (``.checkpoint(e)``) counts from 1 again: give it its own directory (``tensorboard/resumed``)
  and TensorBoard shows it as a run of its own.
- ``epoch/<Metric_Name>``: the split's aggregate of an epoch (the ``final`` line); step = epoch.

Text metrics have no scalar and are not written. Adding a metric logger replaces the default
file logs (as Burn's builder does), so add a :class:`FileMetricLogger` as well to keep them.
"""

from __future__ import annotations

import os
from pathlib import Path

from ember.train.logger.metric_logger import OpenWriters
from ember.train.metric.base import NumericEntry

__all__ = ["TensorBoardLogger"]


def _summary_writer_class():
    # tensorboardX is an optional dependency (and pulls in PyTorch): loaded only when a
    # TensorBoardLogger is made, never by `import ember`.
    try:
        from tensorboardX import SummaryWriter
    except ImportError as err:
        raise ImportError(
            'TensorBoardLogger needs the tensorboardX package: pip install "ember[interop]"'
        ) from err
    return SummaryWriter


def tag_name(metric_name: str) -> str:
    """The metric's name as it appears in tags (spaces become ``_``, as in the log files)."""
    return metric_name.replace(" ", "_")


class TensorBoardLogger(OpenWriters):
    """A metric logger (``SupervisedTraining.with_metric_logger``) writing TensorBoard event
    files: per-batch and per-epoch scalars of every numeric metric, per split.

    Args:
        directory: where the event files go (``<directory>/<split>/events.out.tfevents.*``).
        flush_secs: how often tensorboardX writes pending events to disk; every split's end
            flushes too, so an epoch's points are on disk once it ends.

    Raises:
        ImportError: tensorboardX is not installed (``pip install "ember[interop]"``).
    """

    def __init__(self, directory: str | os.PathLike, *, flush_secs: float = 10.0):
        self._writer_class = _summary_writer_class()
        self.directory = Path(directory)
        self.flush_secs = flush_secs
        self._writers: dict = {}
        self._steps: dict[tuple[str, str], int] = {}
        self._finals: dict[tuple[str, str, int], float] = {}

    def _writer(self, split: str):
        writer = self._writers.get(split)
        if writer is None:
            writer = self._writer_class(str(self.directory / split), flush_secs=self.flush_secs)
            self._writers[split] = writer
        return writer

    def log(self, split: str, epoch: int, name: str, line: str) -> None:
        """Write one metric entry: a batch value (``v`` or ``v,count``) as a ``step/`` point,
        an epoch aggregate (``v,final``) as an ``epoch/`` point; text entries are skipped."""
        try:
            entry = NumericEntry.deserialize(line)
        except ValueError:
            return  # a text metric: TensorBoard scalars carry numbers only
        if isinstance(entry, NumericEntry.Final):
            self._finals[(split, name, epoch)] = entry.current()
            self._writer(split).add_scalar(f"epoch/{tag_name(name)}", entry.current(), epoch)
            return
        step = self._steps.get((split, name), 0) + 1
        self._steps[(split, name)] = step
        self._writer(split).add_scalar(f"step/{tag_name(name)}", entry.current(), step)

    def end_split(self, split: str, epoch: int) -> None:
        """Flush the split's event file, so the epoch is readable by TensorBoard now."""
        writer = self._writers.get(split)
        if writer is not None:
            writer.flush()

    def read_numeric(self, split: str, name: str, epoch: int) -> float | None:
        """An epoch's aggregate written by this logger (None for one it did not see: event
        files are not read back, the file logs serve resumed runs)."""
        return self._finals.get((split, name, epoch))
