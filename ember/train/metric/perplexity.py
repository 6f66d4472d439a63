"""``PerplexityMetric`` (Burn's ``metric/perplexity.rs``): exp of the mean token NLL."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._array import target_log_probs
from .accuracy import PaddedTargetMetric
from .base import MetricEntry, NumericEntry, format_entry

__all__ = ["PerplexityInput", "PerplexityMetric"]


@dataclass
class PerplexityInput:
    """What :class:`PerplexityMetric` needs.

    Args:
        outputs: ``[N, V]`` logits (one row per token).
        targets: ``[N]`` token indices.
    """

    outputs: Any
    targets: Any


class PerplexityMetric(PaddedTargetMetric):
    """``Perplexity``: ``exp(-Σ log p(target) / Σ tokens)``, lower is better.

    The split aggregate accumulates the summed log-likelihood and the token count, so it is
    the perplexity of all the split's tokens, not a mean of batch perplexities. Padded
    tokens are left out; a batch of padding only reports 0 with weight 0.
    """

    name = "Perplexity"
    input_type = PerplexityInput
    unit = None
    higher_is_better = False

    def __init__(self) -> None:
        super().__init__()
        self._sum_nll = 0.0

    def clear(self) -> None:
        super().clear()
        self._sum_nll = 0.0

    def _running(self) -> float:
        tokens = self._state.count
        if tokens:
            return math.exp(self._sum_nll / tokens)
        return 0.0 if self._state.updates else math.nan

    def running_value(self) -> NumericEntry:
        return NumericEntry.Final(self._running())

    def _measure(self, inp: PerplexityInput, targets: np.ndarray, valid: np.ndarray) -> MetricEntry:
        if self.pad_token is not None:
            # the pad token may lie outside the vocabulary (e.g. -100): gather a valid index
            safe = np.where(valid, targets, 0)
            logp = target_log_probs(inp.outputs, safe)
        else:
            logp = target_log_probs(inp.outputs, inp.targets)
        nll = -float(np.sum(logp[valid]))
        tokens = int(np.count_nonzero(valid))
        self._sum_nll += nll
        value = math.exp(nll / tokens) if tokens else 0.0
        self._state.update(value, tokens)
        return self._entry()

    def _entry(self) -> MetricEntry:
        state = self._state
        return MetricEntry(
            self.name, format_entry(self._running(), state.current, self.unit), self.value().serialize()
        )
