"""What a model implements to be trained by ``SupervisedTraining`` (Burn's ``TrainStep`` and
``InferenceStep`` traits, ``learner/train_val.rs``).

They are protocols: a model needs only the methods, no base class. ``TrainStepMixin`` gives
the default ``optimize`` for models that want to override it with work around the step.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ember.optim.grads_params import GradientsParams

__all__ = ["InferenceStep", "TrainOutput", "TrainStep", "TrainStepMixin"]


class TrainOutput:
    """The result of one training step: the gradients keyed by ``ParamId`` and the item
    that metrics read (e.g. a ``ClassificationOutput``).

    Args:
        model: the module the gradients belong to (used to re-key them by ``ParamId``).
        grads: what ``loss.backward()`` returned (``ember.Gradients``), or ready
            ``GradientsParams``.
        item: the output handed to the metrics.
    """

    __slots__ = ("grads", "item")

    def __init__(self, model, grads, item):
        if isinstance(grads, GradientsParams):
            self.grads = grads
        else:
            if not hasattr(grads, "get"):
                raise TypeError(
                    "TrainOutput: `grads` must be what loss.backward() returns "
                    f"(ember.Gradients) or GradientsParams, got {type(grads).__name__}"
                )
            self.grads = GradientsParams.from_grads(grads, model)
        self.item = item

    def __repr__(self) -> str:
        return f"TrainOutput(grads={len(self.grads)} tensors, item={type(self.item).__name__})"


@runtime_checkable
class TrainStep(Protocol):
    """A model that can be trained: ``train_step(batch) -> TrainOutput``.

    It may also define ``optimize(optimizer, lr, grads) -> model`` to run code before or
    after the optimizer step (the default is ``optimizer.step(lr, model, grads)``).
    """

    def train_step(self, batch: Any) -> TrainOutput: ...


@runtime_checkable
class InferenceStep(Protocol):
    """A model that can be validated: ``inference_step(batch) -> output`` (called on
    ``model.valid()``, so dropout is off and no graph is recorded)."""

    def inference_step(self, batch: Any) -> Any: ...


class TrainStepMixin:
    """Optional base giving Burn's default ``optimize``; override it to wrap the step."""

    def optimize(self, optimizer, lr, grads):
        """Apply ``grads`` with ``optimizer`` at learning rate ``lr``; return the model.

        Args:
            optimizer: the ``ModuleOptimizer``.
            lr: a float or a ``ModuleLearningRate``.
            grads: ``GradientsParams``.
        """
        return optimizer.step(lr, self, grads)
