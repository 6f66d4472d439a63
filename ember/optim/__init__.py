"""Optimizers, gradient handling and learning-rate schedulers, modelled on Burn's ``burn-optim``.

    from ember.optim import AdamConfig, GradientsParams

    optim = AdamConfig().init()                       # a ModuleOptimizer
    grads = GradientsParams.from_grads(loss.backward(), model)
    model = optim.step(1e-3, model, grads)

- Gradients: :class:`GradientsParams` (keyed by ``ParamId``), :class:`GradientsAccumulator`.
- Optimizers (``XxxConfig().init()`` / ``.build()``): SGD (+ momentum), Adam, AdamW
  (+ cautious weight decay), RMSprop, AdaGrad, Lion, Adan, Muon (2-D weights);
  :class:`GradientClippingConfig`. :class:`Lbfgs` (closure-based, its own ``step``).
- :class:`ModuleOptimizer` with per-:class:`~ember.nn.ParamGroup` optimizers, Burn-layout
  state records (:class:`OptimizerRecord`).
- Mixed precision: :class:`MixedPrecision` (float16 compute, float32 master weights and
  state, :class:`DynamicLossScalerConfig` loss scaling that skips overflowing steps).
- Schedulers: :mod:`ember.optim.lr_scheduler` (re-exported here), and
  :func:`save_scheduler_state` / :func:`load_scheduler_state` for their ``.bpk`` records.

Row-sparse gradients (:class:`ember.RowSparse`, from ``nn.EmbeddingBag(sparse=True)``) are
accepted everywhere: SGD is exact or lazy, Adam/AdamW lazy (``torch.optim.SparseAdam``), the
other optimizers densify (see each docstring).

Each optimizer's docstring states its update rule, once; the backends compute it through the
optimizer composites of the backend contract (:class:`ember.kernels.families.optimizer.OptimizerOps`),
each called with one state and one args object the optimizer builds
(:mod:`ember.kernels.families.optimizer_args`), whose fused kernels live with the backends
(``ember/kernels/cpu/optim_updates.py``, ``ember/kernels/cuda/optimizers.py``) and know only arrays.
"""

from ember._deprecation import renamed_globals, renames_of
from ember.nn.param_group import ParamGroup, ParamGroupError
from ember.optim import lbfgs, lr_scheduler
from ember.optim.adagrad import AdaGrad, AdaGradConfig
from ember.optim.adam import Adam, AdamConfig
from ember.optim.adamw import AdamW, AdamWConfig
from ember.optim.adan import Adan, AdanConfig
from ember.optim.clipping import GradientClipping, GradientClippingConfig
from ember.optim.grad_accum import GradientsAccumulator
from ember.optim.grads_params import GradientsParams
from ember.optim.lbfgs import Lbfgs, LbfgsConfig, LbfgsRecord, LineSearchFn
from ember.optim.lion import Lion, LionConfig
from ember.optim.lr_scheduler import (
    ComposedLrScheduler,
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrScheduler,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrScheduler,
    ExponentialLrSchedulerConfig,
    LinearLrScheduler,
    LinearLrSchedulerConfig,
    LrScheduler,
    LrSchedulerConfig,
    ModuleLearningRate,
    ModuleLrScheduler,
    ModuleLrSchedulerConfig,
    NoamLrScheduler,
    NoamLrSchedulerConfig,
    SchedulerReduction,
    SequentialLrScheduler,
    SequentialLrSchedulerConfig,
    StepLrScheduler,
    StepLrSchedulerConfig,
    as_module_scheduler,
    as_scheduler,
)
from ember.optim.mixed_precision import DynamicLossScaler, DynamicLossScalerConfig, MixedPrecision
from ember.optim.module_optimizer import ModuleOptimizer
from ember.optim.muon import AdjustLrFn, Muon, MuonConfig
from ember.optim.optimizer import Optimizer, OptimizerConfig, WeightDecayConfig
from ember.optim.optimizer_record import OptimizerRecord
from ember.optim.rmsprop import RmsProp, RmsPropConfig
from ember.optim.scheduler_record import load_state as load_scheduler_state
from ember.optim.scheduler_record import save_state as save_scheduler_state
from ember.optim.scheduler_record import state_from_bytes as scheduler_state_from_bytes
from ember.optim.scheduler_record import state_to_bytes as scheduler_state_to_bytes
from ember.optim.sgd import MomentumConfig, Sgd, SgdConfig

__all__ = [
    "AdaGrad",
    "AdaGradConfig",
    "Adam",
    "AdamConfig",
    "AdamW",
    "AdamWConfig",
    "Adan",
    "AdanConfig",
    "AdjustLrFn",
    "ComposedLrScheduler",
    "ComposedLrSchedulerConfig",
    "ConstantLr",
    "CosineAnnealingLrScheduler",
    "CosineAnnealingLrSchedulerConfig",
    "DynamicLossScaler",
    "DynamicLossScalerConfig",
    "ExponentialLrScheduler",
    "ExponentialLrSchedulerConfig",
    "GradientClipping",
    "GradientClippingConfig",
    "GradientsAccumulator",
    "GradientsParams",
    "Lbfgs",
    "LbfgsConfig",
    "LbfgsRecord",
    "LineSearchFn",
    "LinearLrScheduler",
    "LinearLrSchedulerConfig",
    "Lion",
    "LionConfig",
    "LrScheduler",
    "LrSchedulerConfig",
    "MixedPrecision",
    "ModuleLearningRate",
    "ModuleLrScheduler",
    "ModuleLrSchedulerConfig",
    "ModuleOptimizer",
    "MomentumConfig",
    "Muon",
    "MuonConfig",
    "NoamLrScheduler",
    "NoamLrSchedulerConfig",
    "Optimizer",
    "OptimizerConfig",
    "OptimizerRecord",
    "ParamGroup",
    "ParamGroupError",
    "RmsProp",
    "RmsPropConfig",
    "SchedulerReduction",
    "SequentialLrScheduler",
    "SequentialLrSchedulerConfig",
    "Sgd",
    "SgdConfig",
    "StepLrScheduler",
    "StepLrSchedulerConfig",
    "WeightDecayConfig",
    "as_module_scheduler",
    "as_scheduler",
    "load_scheduler_state",
    "lr_scheduler",
    "save_scheduler_state",
    "scheduler_state_from_bytes",
    "scheduler_state_to_bytes",
]

# The names before the acronym rule (README, "Names"), kept one release: each use warns.
__getattr__ = renamed_globals(__name__, renames_of(lbfgs))
