"""``AccuracyMetric`` (Burn's ``metric/acc.rs``): share of argmax predictions equal to the target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ._array import argmax_rows, shape_of, to_numpy
from .base import MetricEntry, MetricMetadata, WeightedMetric

__all__ = ["AccuracyInput", "AccuracyMetric", "check_scores_and_targets"]


@dataclass
class AccuracyInput:
    """What :class:`AccuracyMetric` needs.

    Args:
        outputs: ``[B, C]`` scores (logits or probabilities).
        targets: ``[B]`` class indices.
    """

    outputs: Any
    targets: Any


def check_scores_and_targets(metric: str, outputs: Any, targets: Any) -> tuple[int, int]:
    """Check ``outputs [B, C]`` against ``targets [B]`` and return ``(B, C)``.

    Raises:
        ValueError: wrong ranks or batch sizes; the message names the metric and the shapes.
    """
    out_shape, tgt_shape = shape_of(outputs), shape_of(targets)
    if len(out_shape) != 2 or len(tgt_shape) != 1 or out_shape[0] != tgt_shape[0]:
        raise ValueError(
            f"{metric}: expected outputs [B, C] and targets [B], got outputs "
            f"{list(out_shape)} and targets {list(tgt_shape)}"
        )
    return out_shape[0], out_shape[1]


def count_valid(targets: np.ndarray, pad_token: int | None) -> np.ndarray:
    """Mask of the samples that count: every one, or those whose target is not ``pad_token``."""
    if pad_token is None:
        return np.ones(targets.shape, dtype=bool)
    return targets != pad_token


class PaddedTargetMetric(WeightedMetric):
    """Base of the metrics of ``outputs [B, C]`` against ``targets [B]`` class indices that
    leave out the samples whose target is the pad token (accuracy, top-k, perplexity).

    Subclasses implement :meth:`_measure`; :meth:`_add_hits` adds a batch as a hit rate.
    """

    def __init__(self) -> None:
        super().__init__()
        self.pad_token: int | None = None

    def with_pad_token(self: _P, index: int) -> _P:
        """Ignore the samples (tokens) whose target is ``index``.

        Args:
            index: the padding token / class index.
        """
        self.pad_token = int(index)
        return self

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Add one batch.

        Args:
            item: an output adaptable to the metric's ``input_type``.
            metadata: unused.
        """
        inp = self.adapt_input(item)
        check_scores_and_targets(type(self).__name__, inp.outputs, inp.targets)
        targets = to_numpy(inp.targets).astype(np.int64)
        return self._measure(inp, targets, count_valid(targets, self.pad_token))

    def _measure(self, inp: Any, targets: np.ndarray, valid: np.ndarray) -> MetricEntry:
        """Add the checked batch ``inp``, its ``targets`` as int64 and the mask of those that count."""
        raise NotImplementedError

    def _add_hits(self, hits: np.ndarray, valid: np.ndarray) -> MetricEntry:
        """Add a batch as ``100 · #(hits & valid) / #valid``, weighted by ``#valid``."""
        correct, weight = int(np.count_nonzero(hits & valid)), int(np.count_nonzero(valid))
        value = 100.0 * correct / weight if weight else 0.0
        self._state.update(value, weight, weighted_sum=100.0 * correct)
        return self._entry()


_P = TypeVar("_P", bound=PaddedTargetMetric)


class AccuracyMetric(PaddedTargetMetric):
    """``Accuracy`` in %, higher is better.

    Padded samples (target == pad token) count neither as right nor in the batch weight:
    a batch's weight is ``B - num_pad`` (Burn #5577), and a batch made only of padding
    reports 0 with weight 0, leaving the split aggregate untouched.
    """

    name = "Accuracy"
    input_type = AccuracyInput
    unit = "%"
    higher_is_better = True

    def _measure(self, inp: AccuracyInput, targets: np.ndarray, valid: np.ndarray) -> MetricEntry:
        return self._add_hits(argmax_rows(inp.outputs) == targets, valid)
