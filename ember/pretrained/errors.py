"""The error every problem with a pretrained checkpoint raises."""

from __future__ import annotations

__all__ = ["PretrainedError"]


class PretrainedError(ValueError):
    """A checkpoint ember cannot load: an unknown architecture, a missing or misshapen tensor,
    a tokenizer that does not fit the model, or a name the Hub cache does not hold. The message
    names the file and the thing."""
