"""The sequence-classification heads of ``AutoModelForSequenceClassification``, on token 0.

* BERT: ``output(dropout(tanh(pooler(h0))))`` (the pooler is the head's dense layer);
* RoBERTa: ``output(dropout(tanh(dense(dropout(h0)))))``;
* DistilBERT: ``output(dropout(relu(pre_classifier(h0))))``.
"""

from __future__ import annotations

from ember import nn
from ember.tensor.tensor import Tensor

__all__ = ["ACTIVATIONS", "ClassificationHead"]

ACTIVATIONS = {"bert": "tanh", "roberta": "tanh", "distilbert": "relu"}


class ClassificationHead(nn.Module):
    """``output(dropout(act(dense([dropout](x)))))`` on the first token's hidden state.

    Args:
        dense: ``Linear(D, D)``.
        output: ``Linear(D, num_classes)``.
        dropout: the head's dropout.
        activation: ``"tanh"`` or ``"relu"``.
        dropout_first: also drop out the input (RoBERTa).
    """

    def __init__(self, dense, output, dropout, activation: str, dropout_first: bool = False):
        if activation not in ("tanh", "relu"):
            raise ValueError(f"ClassificationHead: activation must be 'tanh' or 'relu', got {activation!r}")
        self.dense = dense
        self.output = output
        self.dropout = dropout
        self.activation = activation
        self.dropout_first = bool(dropout_first)

    @property
    def num_classes(self) -> int:
        return self.output.weight.shape[1]

    def forward(self, x: Tensor) -> Tensor:
        """``x`` ``[B, D]`` -> logits ``[B, num_classes]``."""
        if self.dropout_first:
            x = self.dropout(x)
        x = self.dense(x)
        x = x.tanh() if self.activation == "tanh" else x.relu()
        return self.output(self.dropout(x))

    def extra_repr(self) -> dict:
        return {"num_classes": self.num_classes, "activation": self.activation}
