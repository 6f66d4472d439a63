"""``RecallMetric`` (Burn's ``metric/recall.rs``): TP / (TP + FN)."""

from __future__ import annotations

import numpy as np

from .confusion_stats import ConfusionCounts, ConfusionRatioMetric, safe_ratio

__all__ = ["RecallMetric"]


class RecallMetric(ConfusionRatioMetric):
    """``Recall @ {rule} [{reduction}]`` in %; a class never present scores 0 (Burn).

    Build it with :meth:`binary`, :meth:`multiclass` or :meth:`multilabel`.

    Args:
        config: decision rule and class reduction (default ``Threshold(0.5)``, Macro).
    """

    _label = "Recall"

    def _score(self, counts: ConfusionCounts) -> np.ndarray:
        return safe_ratio(counts.tp, counts.tp + counts.fn, empty=0.0)
