"""A PNG per numeric metric with its train and valid epoch curves, redrawn after every epoch
(beyond Burn). matplotlib is an optional extra: without it the plots are skipped with one
log line."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ember.record.atomic import atomic_write_bytes
from ember.train.store import MetricsStore

__all__ = ["MetricPlotter"]

_log = logging.getLogger("ember.train")


class MetricPlotter:
    """Writes ``<directory>/<Metric_Name>.png``.

    Args:
        directory: where the images go (the run's ``plots/`` folder).
    """

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self._pyplot = None
        self._unavailable = False

    def _plt(self):
        if self._pyplot is None and not self._unavailable:
            try:
                import matplotlib

                matplotlib.use("Agg", force=False)
                import matplotlib.pyplot as plt

                self._pyplot = plt
            except ImportError:
                self._unavailable = True
                _log.info("metric plots skipped: matplotlib is not installed (pip install matplotlib)")
        return self._pyplot

    def draw(self, store: MetricsStore, names: dict[str, list[str]], last_epoch: int) -> list[Path]:
        """Redraw every numeric metric of ``names`` (split -> metric names); returns the files."""
        plt = self._plt()
        if plt is None:
            return []
        import io

        written = []
        self.directory.mkdir(parents=True, exist_ok=True)
        for name in sorted(set(names.get("train", ())) | set(names.get("valid", ()))):
            fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
            for split, style in (("train", "-o"), ("valid", "-s")):
                if name in names.get(split, ()):
                    points = store.epochs(name, split, last_epoch)
                    if points:
                        ax.plot([e for e, _ in points], [v for _, v in points], style, label=split)
            ax.set_xlabel("epoch")
            ax.set_ylabel(name)
            ax.set_title(name)
            ax.grid(True, alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend()
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png")
            plt.close(fig)
            path = self.directory / (name.replace(" ", "_").replace("/", "_") + ".png")
            atomic_write_bytes(path, buffer.getvalue())
            written.append(path)
        return written
