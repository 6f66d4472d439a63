"""What the example's two classifiers (the Transformer's
:class:`~text_classification.model.TextClassificationModel` and the fastText-style
:class:`~text_classification.fasttext_model.FastTextModel`) do alike once a batch has logits:
the loss, the training and validation steps ``ember.train`` calls, inference's class
probabilities and the accuracy over a dataset (:func:`accuracy`). Each model says how a batch
becomes logits (:meth:`ClassifierModule.batch_logits`).

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.classifier import ClassifierModule``.
"""

from __future__ import annotations

import ember
from ember import nn


class ClassifierModule(nn.Module):
    """A text classifier: a subclass defines :meth:`batch_logits` and sets ``label_smoothing``."""

    def batch_logits(self, batch) -> ember.Tensor:
        """Class logits ``[B, n_classes]`` of a training or inference batch."""
        raise NotImplementedError(f"{type(self).__name__} does not define batch_logits()")

    def loss(self, logits: ember.Tensor, labels: ember.Tensor) -> ember.Tensor:
        """Mean cross-entropy of ``logits`` ``[B, C]`` against ``labels`` ``[B]`` (label-smoothed
        when ``label_smoothing`` > 0)."""
        smoothing = self.label_smoothing or None
        return nn.CrossEntropyLossConfig(smoothing=smoothing).init()(logits, on_device(labels, logits.device))

    def forward(self, batch):
        """Logits, loss and targets of a training batch, as ``ember.train.ClassificationOutput``."""
        from ember.train import ClassificationOutput

        logits = self.batch_logits(batch)
        labels = on_device(batch.labels, logits.device)
        return ClassificationOutput(self.loss(logits, labels), logits, labels)

    def infer(self, batch) -> ember.Tensor:
        """Class probabilities ``[B, n_classes]`` (softmax of the logits; rows sum to 1)."""
        return ember.softmax(self.batch_logits(batch), dim=1)

    # ---- ember.train steps ----------------------------------------------------------------------
    def train_step(self, batch):
        """``TrainOutput(model, loss.backward(), ClassificationOutput)`` for ``SupervisedTraining``."""
        from ember.train import TrainOutput

        item = self.forward(batch)
        return TrainOutput(self, item.loss.backward(), item)

    def inference_step(self, batch):
        """The validation output (called on ``model.valid()``): a ``ClassificationOutput``."""
        return self.forward(batch)


def accuracy(model: ClassifierModule, batcher, dataset, device, batch_size: int) -> float:
    """Accuracy (%) of ``model`` over every item of ``dataset``, in order, batched by ``batcher``
    (whose batches carry ``labels``) ``batch_size`` items at a time."""
    correct = 0
    with ember.no_grad():
        for start in range(0, len(dataset), batch_size):
            items = [dataset[i] for i in range(start, min(start + batch_size, len(dataset)))]
            batch = batcher.batch(items, device)
            predicted = model.batch_logits(batch).numpy().argmax(1)
            correct += int((predicted == batch.labels.numpy()).sum())
    return 100.0 * correct / max(len(dataset), 1)


def on_device(tensor: ember.Tensor, device) -> ember.Tensor:
    """``tensor`` on ``device``, copied only when it is elsewhere."""
    return tensor if tensor.device == device else tensor.to(device)
