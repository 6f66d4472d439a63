"""``SequenceOutput`` (Burn's ``learner/sequence.rs``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ember.train.metric import AccuracyInput, LossInput, PerplexityInput, TopKAccuracyInput
from ember.train.metric._array import is_tensor, reshape

from .base import AdaptableOutput, check_rank

__all__ = ["SequenceOutput"]


@dataclass
class SequenceOutput(AdaptableOutput):
    """The output of a sequence-prediction step.

    Feeds ``LossInput`` and, with the ``[B·S, V]`` logits and ``[B·S]`` targets flattened,
    ``AccuracyInput``, ``TopKAccuracyInput`` and ``PerplexityInput`` (give those metrics the
    pad token so padded positions do not count).

    Args:
        loss: the loss.
        logits: ``[B, S, V]`` scores over the vocabulary.
        targets: ``[B, S]`` int token indices.
        predictions: optional ``[B, S]`` decoded tokens; the argmax of the logits if None.
    """

    loss: Any
    logits: Any
    targets: Any
    predictions: Any = None

    _tensor_fields = ("loss", "logits", "targets", "predictions")

    def __post_init__(self) -> None:
        b, s, _ = check_rank("SequenceOutput", "logits", self.logits, 3, "[batch, seq, vocab]")
        tshape = check_rank("SequenceOutput", "targets", self.targets, 2, "[batch, seq] token indices")
        if tuple(tshape) != (b, s):
            raise ValueError(
                f"SequenceOutput: targets {list(tshape)} must be [batch, seq] = {[b, s]} like the logits"
            )
        if self.predictions is not None:
            pshape = check_rank("SequenceOutput", "predictions", self.predictions, 2, "[batch, seq]")
            if tuple(pshape) != (b, s):
                raise ValueError(f"SequenceOutput: predictions {list(pshape)} must be {[b, s]}")

    def predicted_tokens(self) -> Any:
        """``[B, S]`` predicted tokens: :attr:`predictions`, else the argmax of the logits."""
        if self.predictions is not None:
            return self.predictions
        if is_tensor(self.logits):
            return self.logits.detach().argmax(-1)
        import numpy as np

        return np.argmax(np.asarray(self.logits), axis=-1)

    def flat_logits(self) -> Any:
        """``[B·S, V]`` logits."""
        b, s, v = self.logits.shape
        return reshape(self.logits, (b * s, v))

    def flat_targets(self) -> Any:
        """``[B·S]`` targets."""
        b, s = self.targets.shape
        return reshape(self.targets, (b * s,))

    def _adaptors(self) -> dict[type, Callable[[], Any]]:
        return {
            LossInput: lambda: LossInput(self.loss),
            AccuracyInput: lambda: AccuracyInput(self.flat_logits(), self.flat_targets()),
            TopKAccuracyInput: lambda: TopKAccuracyInput(self.flat_logits(), self.flat_targets()),
            PerplexityInput: lambda: PerplexityInput(self.flat_logits(), self.flat_targets()),
        }
