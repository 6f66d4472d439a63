"""Metrics of the training loop (Burn's ``burn_train::metric``).

Every metric names the input it needs (``input_type``); the step's output converts itself
with ``item.adapt(InputType)`` (see ``ember.train.output``). Numeric metrics return their
batch value and the exact aggregate of the split so far as :class:`NumericEntry`; numbers
in ``.log`` lines are written as Rust's ``f64`` Display (:func:`format_f64`).

Examples:
    >>> from ember.train.metric import AccuracyMetric, PrecisionMetric, ClassReduction
    >>> AccuracyMetric().with_pad_token(0).name
    'Accuracy'
    >>> PrecisionMetric.multiclass(1, ClassReduction.Micro).name
    'Precision @ TopK(1) [Micro]'
"""

from .accuracy import AccuracyInput, AccuracyMetric
from .auroc import AurocInput, AurocMetric, roc_auc
from .base import (
    Metric,
    MetricEntry,
    MetricMetadata,
    NumericEntry,
    NumericMetric,
    WeightedMetric,
    WeightedState,
    format_entry,
)
from .classification import ClassificationMetricConfig, ClassReduction, DecisionRule
from .confusion_stats import ConfusionCounts, ConfusionMetric, ConfusionStatsInput
from .fbeta_score import FBetaScoreMetric
from .format import format_f32, format_f64, format_f64_debug, format_float
from .hamming_score import HammingScore, HammingScoreInput
from .iteration_speed import IterationSpeedMetric
from .learning_rate import LearningRateMetric
from .loss import LossInput, LossMetric
from .perplexity import PerplexityInput, PerplexityMetric
from .precision import PrecisionMetric
from .recall import RecallMetric
from .system import CpuMemory, CpuUse, CudaMetric
from .top_k_accuracy import TopKAccuracyInput, TopKAccuracyMetric

__all__ = [
    "AccuracyInput",
    "AccuracyMetric",
    "AurocInput",
    "AurocMetric",
    "ClassReduction",
    "ClassificationMetricConfig",
    "ConfusionCounts",
    "ConfusionMetric",
    "ConfusionStatsInput",
    "CpuMemory",
    "CpuUse",
    "CudaMetric",
    "DecisionRule",
    "FBetaScoreMetric",
    "HammingScore",
    "HammingScoreInput",
    "IterationSpeedMetric",
    "LearningRateMetric",
    "LossInput",
    "LossMetric",
    "Metric",
    "MetricEntry",
    "MetricMetadata",
    "NumericEntry",
    "NumericMetric",
    "PerplexityInput",
    "PerplexityMetric",
    "PrecisionMetric",
    "RecallMetric",
    "TopKAccuracyInput",
    "TopKAccuracyMetric",
    "WeightedMetric",
    "WeightedState",
    "format_entry",
    "format_f32",
    "format_f64",
    "format_f64_debug",
    "format_float",
    "roc_auc",
]
