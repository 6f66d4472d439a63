"""Learning-rate schedulers, mirroring Burn's ``burn_optim::lr_scheduler``.

Each ``*Config`` is a dataclass whose ``init()`` validates its arguments and returns a
scheduler; ``scheduler.step()`` is called once per iteration, before the optimizer step,
and returns that iteration's rate. ``state()`` / ``load_state()`` save and resume progress
as flat scalar mappings compatible with Burn's ``LrSchedulerRecord``. A plain float is a
constant schedule wherever a scheduler is accepted (``as_scheduler``).
"""

from ember.optim.lr_scheduler.base import (
    LrScheduler,
    LrSchedulerConfig,
    LrSchedulerLike,
    Scalar,
    SchedulerSpec,
)
from ember.optim.lr_scheduler.composed import (
    ComposedLrScheduler,
    ComposedLrSchedulerConfig,
    SchedulerReduction,
)
from ember.optim.lr_scheduler.constant import ConstantLr
from ember.optim.lr_scheduler.cosine import (
    CosineAnnealingLrScheduler,
    CosineAnnealingLrSchedulerConfig,
)
from ember.optim.lr_scheduler.exponential import (
    ExponentialLrScheduler,
    ExponentialLrSchedulerConfig,
)
from ember.optim.lr_scheduler.linear import LinearLrScheduler, LinearLrSchedulerConfig
from ember.optim.lr_scheduler.module_lr_scheduler import (
    GroupLike,
    ModuleLearningRate,
    ModuleLrScheduler,
    ModuleLrSchedulerConfig,
    as_module_scheduler,
)
from ember.optim.lr_scheduler.noam import NoamLrScheduler, NoamLrSchedulerConfig
from ember.optim.lr_scheduler.sequential import (
    SequentialLrScheduler,
    SequentialLrSchedulerConfig,
)
from ember.optim.lr_scheduler.spec import as_scheduler
from ember.optim.lr_scheduler.step import StepLrScheduler, StepLrSchedulerConfig

__all__ = [
    "ComposedLrScheduler",
    "ComposedLrSchedulerConfig",
    "ConstantLr",
    "CosineAnnealingLrScheduler",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrScheduler",
    "ExponentialLrSchedulerConfig",
    "GroupLike",
    "LinearLrScheduler",
    "LinearLrSchedulerConfig",
    "LrScheduler",
    "LrSchedulerConfig",
    "LrSchedulerLike",
    "ModuleLearningRate",
    "ModuleLrScheduler",
    "ModuleLrSchedulerConfig",
    "NoamLrScheduler",
    "NoamLrSchedulerConfig",
    "Scalar",
    "SchedulerReduction",
    "SchedulerSpec",
    "SequentialLrScheduler",
    "SequentialLrSchedulerConfig",
    "StepLrScheduler",
    "StepLrSchedulerConfig",
    "as_module_scheduler",
    "as_scheduler",
]
