"""Step outputs (Burn's ``ClassificationOutput`` & co.): what ``train_step`` / ``inference_step``
return as the item, with ``sync()`` (detach) and ``adapt(InputType)`` for the metrics."""

from .base import AdaptableOutput
from .classification import ClassificationOutput, MultiLabelClassificationOutput
from .regression import RegressionOutput
from .sequence import SequenceOutput

__all__ = [
    "AdaptableOutput",
    "ClassificationOutput",
    "MultiLabelClassificationOutput",
    "RegressionOutput",
    "SequenceOutput",
]
