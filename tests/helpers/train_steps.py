"""The training and validation steps of the tests' small classifiers, written once: a model
defines ``forward_classification(batch) -> ClassificationOutput`` and inherits the rest."""

from __future__ import annotations

import numpy as np

import ember
from ember.train import ClassificationOutput, TrainOutput


class ClassificationSteps:
    """``train_step`` (backward of the output's loss) and ``inference_step`` of a classifier."""

    def forward_classification(self, batch) -> ClassificationOutput:
        raise NotImplementedError

    def train_step(self, batch) -> TrainOutput:
        out = self.forward_classification(batch)
        return TrainOutput(self, out.loss.backward(), out)

    def inference_step(self, batch) -> ClassificationOutput:
        return self.forward_classification(batch)


class FeatureBatcher:
    """Items ``(features, class)`` -> a float32 features tensor and an int64 class tensor."""

    def batch(self, items, device):
        x = np.stack([item[0] for item in items]).astype(np.float32)
        y = np.array([item[1] for item in items], dtype=np.int64)
        return ember.from_numpy(x, device=device), ember.from_numpy(y, device=device)
