"""``FBetaScoreMetric`` (Burn's ``metric/fbetascore.rs``): (1+β²)TP / ((1+β²)TP + β²FN + FP)."""

from __future__ import annotations

import numpy as np

from .classification import ClassificationMetricConfig, ClassReduction, DecisionRule
from .confusion_stats import ConfusionCounts, ConfusionMetric, safe_ratio
from .format import format_f64

__all__ = ["FBetaScoreMetric"]


class FBetaScoreMetric(ConfusionMetric):
    """``FBetaScore ({β}) @ {rule} [{reduction}]`` in %.

    A class with no true positive, false positive nor false negative has no F-score; a
    Macro average leaves it out (Burn), and a value with no defined class is 0.
    Build it with :meth:`binary`, :meth:`multiclass` or :meth:`multilabel`.

    Args:
        beta: weight of recall against precision (1 gives F1).
        config: decision rule and class reduction (default ``Threshold(0.5)``, Macro).
    """

    def __init__(self, beta: float = 1.0, config: ClassificationMetricConfig | None = None) -> None:
        if not float(beta) >= 0:
            raise ValueError(f"FBetaScoreMetric: beta must be >= 0, got {beta}")
        self.beta = float(beta)
        super().__init__(config or ClassificationMetricConfig())

    @classmethod
    def binary(cls, beta: float = 1.0, threshold: float = 0.5) -> "FBetaScoreMetric":
        """One score per sample (``[B, 1]``); positive when above ``threshold``.

        Args:
            beta: recall weight.
            threshold: the decision threshold.
        """
        return cls(beta, ClassificationMetricConfig(DecisionRule.Threshold(threshold)))

    @classmethod
    def multiclass(
        cls, beta: float = 1.0, top_k: int = 1, class_reduction: ClassReduction = ClassReduction.Macro
    ) -> "FBetaScoreMetric":
        """One class per sample; the ``top_k`` highest scores are its predictions.

        Args:
            beta: recall weight.
            top_k: predictions per sample (>= 1).
            class_reduction: Macro (default) or Micro.
        """
        return cls(
            beta, ClassificationMetricConfig(DecisionRule.TopK(top_k), ClassReduction(class_reduction))
        )

    @classmethod
    def multilabel(
        cls, beta: float = 1.0, threshold: float = 0.5, class_reduction: ClassReduction = ClassReduction.Macro
    ) -> "FBetaScoreMetric":
        """Any number of labels per sample; each score above ``threshold`` is a prediction.

        Args:
            beta: recall weight.
            threshold: the decision threshold.
            class_reduction: Macro (default) or Micro.
        """
        return cls(
            beta,
            ClassificationMetricConfig(DecisionRule.Threshold(threshold), ClassReduction(class_reduction)),
        )

    @property
    def name(self) -> str:
        return f"FBetaScore ({format_f64(self.beta)}) @ {self.decision_rule} [{self.class_reduction}]"

    def _score(self, counts: ConfusionCounts) -> np.ndarray:
        beta_sq = self.beta**2
        scaled_tp = (1.0 + beta_sq) * counts.tp.astype(np.float64)
        denominator = scaled_tp + beta_sq * counts.fn + counts.fp
        return safe_ratio(scaled_tp, denominator, empty=np.nan)
