"""``RegressionOutput`` (Burn's ``learner/regression.rs``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ember.train.metric import LossInput

from .base import AdaptableOutput, check_rank

__all__ = ["RegressionOutput"]


@dataclass
class RegressionOutput(AdaptableOutput):
    """The output of a regression step; feeds ``LossInput`` only.

    Args:
        loss: the loss.
        output: ``[B, D]`` predictions.
        targets: ``[B, D]`` true values.
    """

    loss: Any
    output: Any
    targets: Any

    _tensor_fields = ("loss", "output", "targets")

    def __post_init__(self) -> None:
        shape = check_rank("RegressionOutput", "output", self.output, 2, "[batch, dims]")
        tshape = check_rank("RegressionOutput", "targets", self.targets, 2, "[batch, dims]")
        if tuple(shape) != tuple(tshape):
            raise ValueError(f"RegressionOutput: output {list(shape)} and targets {list(tshape)} "
                             f"must have the same shape")

    def _adaptors(self) -> dict[type, Callable[[], Any]]:
        return {LossInput: lambda: LossInput(self.loss)}
