"""``RecallMetric`` (Burn's ``metric/recall.rs``): TP / (TP + FN)."""
from __future__ import annotations

import numpy as np

from .classification import ClassificationMetricConfig, ClassReduction, DecisionRule
from .confusion_stats import ConfusionCounts, ConfusionMetric, safe_ratio

__all__ = ["RecallMetric"]


class RecallMetric(ConfusionMetric):
    """``Recall @ {rule} [{reduction}]`` in %; a class never present scores 0 (Burn).

    Build it with :meth:`binary`, :meth:`multiclass` or :meth:`multilabel`.

    Args:
        config: decision rule and class reduction (default ``Threshold(0.5)``, Macro).
    """

    def __init__(self, config: ClassificationMetricConfig | None = None) -> None:
        super().__init__(config or ClassificationMetricConfig())

    @classmethod
    def binary(cls, threshold: float = 0.5) -> "RecallMetric":
        """One score per sample (``[B, 1]``); positive when above ``threshold``.

        Args:
            threshold: the decision threshold.
        """
        return cls(ClassificationMetricConfig(DecisionRule.Threshold(threshold)))

    @classmethod
    def multiclass(cls, top_k: int = 1, class_reduction: ClassReduction = ClassReduction.Macro) -> "RecallMetric":
        """One class per sample; the ``top_k`` highest scores are its predictions.

        Args:
            top_k: predictions per sample (>= 1).
            class_reduction: Macro (default) or Micro.
        """
        return cls(ClassificationMetricConfig(DecisionRule.TopK(top_k), ClassReduction(class_reduction)))

    @classmethod
    def multilabel(cls, threshold: float = 0.5,
                   class_reduction: ClassReduction = ClassReduction.Macro) -> "RecallMetric":
        """Any number of labels per sample; each score above ``threshold`` is a prediction.

        Args:
            threshold: the decision threshold.
            class_reduction: Macro (default) or Micro.
        """
        return cls(ClassificationMetricConfig(DecisionRule.Threshold(threshold), ClassReduction(class_reduction)))

    @property
    def name(self) -> str:
        return f"Recall @ {self.decision_rule} [{self.class_reduction}]"

    def _score(self, counts: ConfusionCounts) -> np.ndarray:
        return safe_ratio(counts.tp, counts.tp + counts.fn, empty=0.0)
