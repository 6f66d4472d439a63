"""``PrecisionMetric`` (Burn's ``metric/precision.rs``): TP / (TP + FP)."""

from __future__ import annotations

import numpy as np

from .confusion_stats import ConfusionCounts, ConfusionRatioMetric, safe_ratio

__all__ = ["PrecisionMetric"]


class PrecisionMetric(ConfusionRatioMetric):
    """``Precision @ {rule} [{reduction}]`` in %; a class never predicted scores 0 (Burn).

    Build it with :meth:`binary`, :meth:`multiclass` or :meth:`multilabel`.

    Args:
        config: decision rule and class reduction (default ``Threshold(0.5)``, Macro).
    """

    _label = "Precision"

    def _score(self, counts: ConfusionCounts) -> np.ndarray:
        return safe_ratio(counts.tp, counts.tp + counts.fp, empty=0.0)
