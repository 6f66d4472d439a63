"""``Learner``: the model, its optimizer and its learning-rate schedule, trained together
(Burn's ``Learner``, ``learner/base.rs``)."""

from __future__ import annotations

import numbers
from typing import Any

from ember.optim.lr_scheduler.module_lr_scheduler import ModuleLrScheduler
from ember.optim.lr_scheduler.spec import as_scheduler
from ember.optim.module_optimizer import ModuleOptimizer
from ember.train.steps import TrainOutput

__all__ = ["Learner"]


def _as_module_optimizer(optimizer):
    if isinstance(optimizer, ModuleOptimizer):
        return optimizer
    init = getattr(optimizer, "init", None)
    if callable(init):  # an optimizer config: Burn users write config.optimizer.init()
        built = init()
        if isinstance(built, ModuleOptimizer):
            return built
    raise TypeError(
        "Learner: `optimizer` must be a ModuleOptimizer (e.g. AdamConfig().init()), "
        f"got {type(optimizer).__name__}"
    )


def _as_scheduler(lr_scheduler):
    if isinstance(lr_scheduler, ModuleLrScheduler):
        return lr_scheduler
    try:
        return as_scheduler(lr_scheduler)
    except TypeError:
        raise TypeError(
            "Learner: `lr_scheduler` must be a float (a constant rate), an "
            "ember.optim.lr_scheduler scheduler or its config, got "
            f"{type(lr_scheduler).__name__} ({lr_scheduler!r})"
        ) from None


def base_lr(lr) -> float:
    """The rate of the default group: a float as is, a ``ModuleLearningRate``'s ``base()``."""
    if isinstance(lr, numbers.Real):
        return float(lr)
    return float(lr.base())


class Learner:
    """What ``SupervisedTraining.launch`` trains.

    Args:
        model: an ``ember.nn.Module`` implementing ``train_step`` (and ``inference_step``
            for validation), see :mod:`ember.train.steps`.
        optimizer: a ``ModuleOptimizer`` (``AdamConfig().init()``).
        lr_scheduler: a float (constant rate), a scheduler, or a scheduler config.
    """

    def __init__(self, model, optimizer, lr_scheduler):
        if not callable(getattr(model, "train_step", None)):
            raise TypeError(
                f"Learner: the model ({type(model).__name__}) must define "
                "train_step(batch) -> TrainOutput (see ember.train.TrainStep)"
            )
        if not callable(getattr(model, "named_parameters", None)):
            raise TypeError(f"Learner: the model must be an ember.nn.Module, got {type(model).__name__}")
        self.model = model
        self.optimizer = _as_module_optimizer(optimizer)
        self.lr_scheduler = _as_scheduler(lr_scheduler)
        self._lr: Any = None

    # ---- the steps of one iteration, in the loop's order --------------------------------------
    def lr_step(self):
        """Advance the schedule (before every iteration, as Burn) and return the rate."""
        self._lr = self.lr_scheduler.step()
        return self._lr

    def lr_current(self) -> float | None:
        """The default group's rate of the current iteration (None before the first)."""
        return None if self._lr is None else base_lr(self._lr)

    def train_step(self, batch):
        """``model.train_step(batch)``; checks it returned a ``TrainOutput``."""
        out = self.model.train_step(batch)
        if not isinstance(out, TrainOutput):
            raise TypeError(
                f"{type(self.model).__name__}.train_step must return "
                f"ember.train.TrainOutput(model, grads, item), got {type(out).__name__}"
            )
        return out

    def optimizer_step(self, grads) -> None:
        """Apply ``grads`` (``GradientsParams``) at the current rate, through the model's own
        ``optimize`` when it defines one."""
        lr = self._lr if self._lr is not None else self.lr_step()
        optimize = getattr(self.model, "optimize", None)
        if callable(optimize):
            model = optimize(self.optimizer, lr, grads)
        else:
            model = self.optimizer.step(lr, self.model, grads)
        if model is not None:
            self.model = model

    def fork(self, device) -> "Learner":
        """The model moved to ``device`` (optimizer state follows on the next step)."""
        self.model = self.model.fork(device)
        return self

    def __repr__(self) -> str:
        return (
            f"Learner(model={type(self.model).__name__}, optimizer={self.optimizer!r}, "
            f"lr_scheduler={type(self.lr_scheduler).__name__})"
        )
