"""Classification settings shared by the confusion-based metrics (Burn's ``metric/classification.rs``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .format import format_f64_debug

__all__ = ["ClassReduction", "ClassificationMetricConfig", "DecisionRule"]


class ClassReduction(enum.Enum):
    """How per-class results become one number.

    ``Micro`` pools the counts of every class; ``Macro`` (the default) averages the
    per-class results.
    """

    Micro = "Micro"
    Macro = "Macro"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class DecisionRule:
    """Which scores count as a positive prediction.

    ``DecisionRule.Threshold(t)``: a score above ``t`` (the default, 0.5).
    ``DecisionRule.TopK(k)``: the ``k`` highest scores of each sample.

    Args:
        kind: ``"threshold"`` or ``"top_k"``; use the constructors instead.
        value: the threshold or k.
    """

    kind: str = "threshold"
    value: float = 0.5

    def __post_init__(self) -> None:
        if self.kind not in ("threshold", "top_k"):
            raise ValueError(f"DecisionRule: kind must be 'threshold' or 'top_k', got {self.kind!r}")
        if self.kind == "top_k" and (int(self.value) != self.value or self.value < 1):
            raise ValueError(f"DecisionRule.TopK: k must be a positive integer, got {self.value}")

    @classmethod
    def Threshold(cls, threshold: float = 0.5) -> "DecisionRule":  # (Burn's variant name)
        """A score strictly above ``threshold`` is a positive prediction.

        Args:
            threshold: the cut-off.
        """
        return cls("threshold", float(threshold))

    @classmethod
    def TopK(cls, k: int) -> "DecisionRule":  # (Burn's variant name)
        """The ``k`` highest scores of each sample are positive predictions.

        Args:
            k: a positive integer.
        """
        return cls("top_k", int(k))

    def __str__(self) -> str:
        # Rust's Debug of the enum, as it appears in Burn's metric names.
        if self.kind == "threshold":
            return f"Threshold({format_f64_debug(self.value)})"
        return f"TopK({int(self.value)})"


@dataclass(frozen=True)
class ClassificationMetricConfig:
    """A decision rule and a class reduction.

    Args:
        decision_rule: defaults to ``Threshold(0.5)``.
        class_reduction: defaults to ``Macro``.
    """

    decision_rule: DecisionRule = field(default_factory=DecisionRule)
    class_reduction: ClassReduction = ClassReduction.Macro
