"""The guide's model (Burn book, "Model" and the first half of "Training").

A small convolutional classifier: two 3×3 convolutions, each followed by batch norm, then an
adaptive average pool to 8×8, so the head has the same size whatever the input resolution
(28×28 MNIST or the 8×8 scikit-learn digits), then two linear layers with ReLU and dropout::

    images [B, H, W] -> [B, 1, H, W]
      conv1 (1 -> 8, 3x3) -> norm1 -> ReLU -> dropout       [B, 8, H-2, W-2]
      conv2 (8 -> 16, 3x3) -> norm2 -> ReLU -> dropout      [B, 16, H-4, W-4]
      pool (adaptive average to 8x8) -> flatten             [B, 1024]
      linear1 (1024 -> hidden) -> dropout -> ReLU           [B, hidden]
      linear2 (hidden -> num_classes)                       [B, num_classes]

The book's model has no batch norm; ember's guide adds one after each convolution, as
Burn's MNIST example does (conv -> norm -> activation).

``forward_classification``, ``train_step`` and ``inference_step`` are what
``ember.train.SupervisedTraining`` calls (Burn's ``TrainStep`` and ``InferenceStep``).
They import ``ember.train`` when first called, so the model itself, and the hand-written
loop of ``examples/custom_training_loop.py``, need nothing beyond ``ember.nn``.
"""

from __future__ import annotations

import ember
from ember import nn

__all__ = ["Model", "ModelConfig"]

POOLED = (8, 8)  # output of the adaptive pool: the head sees 16 * 8 * 8 features
CHANNELS = (8, 16)


class ModelConfig(ember.Config):
    """The model's hyper-parameters (Burn book: ``ModelConfig::new(num_classes, hidden_size)``).

    Args:
        num_classes: number of classes (10 digits).
        hidden_size: width of the hidden linear layer (the book uses 512).
        dropout: dropout probability (0.5).
    """

    num_classes: int
    hidden_size: int
    dropout: float = 0.5

    def init(self, device=None) -> "Model":
        """Build the model with freshly initialised parameters on ``device``.

        Args:
            device: an ``ember.Device`` or a name (``"cpu"``, ``"reference"``, ``"cuda:0"``);
                None means ``ember.default_device()``.
        """
        c1, c2 = CHANNELS
        return Model(
            conv1=nn.Conv2dConfig((1, c1), (3, 3)).init(device),
            norm1=nn.BatchNormConfig(c1).init_2d(device),
            conv2=nn.Conv2dConfig((c1, c2), (3, 3)).init(device),
            norm2=nn.BatchNormConfig(c2).init_2d(device),
            pool=nn.AdaptiveAvgPool2dConfig(POOLED).init(),
            dropout=nn.DropoutConfig(self.dropout).init(),
            linear1=nn.LinearConfig(c2 * POOLED[0] * POOLED[1], self.hidden_size).init(device),
            linear2=nn.LinearConfig(self.hidden_size, self.num_classes).init(device),
        )


class Model(nn.Module):
    """The guide's image classifier (see the module docstring for the layers).

    Args:
        conv1, conv2: the convolutions.
        norm1, norm2: batch norms after them.
        pool: the adaptive average pool.
        dropout: the dropout layer (used four times, as in the book).
        linear1, linear2: the head.
    """

    def __init__(
        self,
        conv1: nn.Conv2d,
        norm1: nn.BatchNorm2d,
        conv2: nn.Conv2d,
        norm2: nn.BatchNorm2d,
        pool: nn.AdaptiveAvgPool2d,
        dropout: nn.Dropout,
        linear1: nn.Linear,
        linear2: nn.Linear,
    ):
        self.conv1 = conv1
        self.norm1 = norm1
        self.conv2 = conv2
        self.norm2 = norm2
        self.pool = pool
        self.dropout = dropout
        self.linear1 = linear1
        self.linear2 = linear2
        self.activation = nn.Relu()

    def forward(self, images: ember.Tensor) -> ember.Tensor:
        """Logits of a batch of images.

        Args:
            images: float ``[batch_size, height, width]`` (normalised by the batcher).

        Returns:
            ``[batch_size, num_classes]`` logits.
        """
        if not isinstance(images, ember.Tensor) or images.ndim != 3:
            got = list(images.shape) if isinstance(images, ember.Tensor) else type(images).__name__
            raise ValueError(f"Model.forward: expected images [batch_size, height, width], got {got}")
        batch_size, height, width = images.shape
        x = images.reshape(batch_size, 1, height, width)  # a channel dimension

        x = self.dropout(self.activation(self.norm1(self.conv1(x))))  # [B, 8, H-2, W-2]
        x = self.dropout(self.activation(self.norm2(self.conv2(x))))  # [B, 16, H-4, W-4]

        x = self.pool(x)  # [B, 16, 8, 8]
        x = x.reshape(batch_size, -1)
        x = self.linear1(x)
        x = self.dropout(x)
        x = self.activation(x)
        return self.linear2(x)  # [B, num_classes]

    # ---- Burn book, "Training": what the learner calls --------------------------------------
    def forward_classification(self, images: ember.Tensor, targets: ember.Tensor):
        """Forward pass plus cross-entropy loss, packed for the metrics.

        Args:
            images: ``[batch_size, height, width]``.
            targets: int ``[batch_size]`` class indices.

        Returns:
            ``ember.train.ClassificationOutput(loss, output, targets)``.
        """
        from ember.train import ClassificationOutput

        output = self.forward(images)
        loss = nn.CrossEntropyLossConfig().init(output.device)(output, targets)
        return ClassificationOutput(loss, output, targets)

    def train_step(self, batch):
        """One training step (Burn's ``TrainStep::step``): forward, loss, ``backward()``.

        Args:
            batch: an ``MnistBatch`` (``images``, ``targets``).

        Returns:
            ``TrainOutput(self, gradients, item)``; it re-keys the gradients by parameter.
        """
        from ember.train import TrainOutput

        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, item.loss.backward(), item)

    def inference_step(self, batch):
        """One validation step (Burn's ``InferenceStep::step``), run on ``model.valid()``.

        Args:
            batch: an ``MnistBatch``.

        Returns:
            The ``ClassificationOutput`` of the batch.
        """
        return self.forward_classification(batch.images, batch.targets)
