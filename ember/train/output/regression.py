"""``RegressionOutput`` (Burn's ``learner/regression.rs``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ember.train.metric import LossInput

from .base import LossOutputTargets

__all__ = ["RegressionOutput"]


@dataclass
class RegressionOutput(LossOutputTargets):
    """The output of a regression step; feeds ``LossInput`` only.

    Args:
        loss: the loss.
        output: ``[B, D]`` predictions.
        targets: ``[B, D]`` true values.
    """

    def __post_init__(self) -> None:
        self._check_same_shape("[batch, dims]", "[batch, dims]")

    def _adaptors(self) -> dict[type, Callable[[], Any]]:
        return {LossInput: lambda: LossInput(self.loss)}
