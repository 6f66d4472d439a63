"""Mixed-precision training: float16 compute, float32 master weights and optimizer state, and
dynamic loss scaling that skips the steps whose gradients overflowed.

    master = build_model()                           # float32: what the optimizer updates
    mp = MixedPrecision(AdamConfig().init(), master) # mp.model: the float16 compute copy
    for x, y in batches:
        loss = loss_fn(mp.model(x), y)
        master = mp.step(lr, loss)                   # scaled backward, unscale, skip or step
    mp.skipped_steps                                 # how many steps overflow skipped
"""

from __future__ import annotations

import math

import numpy as np

from ember.optim.grads_params import GradientsParams
from ember.record.config import Config
from ember.tensor import dtypes as dt
from ember.tensor.grad_mode import no_grad


class DynamicLossScalerConfig(Config):
    """Dynamic loss scaling (the scheme of mixed-precision training papers and PyTorch's
    GradScaler): the loss is multiplied by ``scale`` before backward so small float16
    gradients do not flush to zero; a step whose gradients contain Inf/NaN is skipped and the
    scale multiplied by ``backoff_factor``; after ``growth_interval`` good steps in a row the
    scale is multiplied by ``growth_factor``."""

    init_scale: float = 2.0**16
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 2000

    def init(self) -> "DynamicLossScaler":
        if not (math.isfinite(self.init_scale) and self.init_scale > 0):
            raise ValueError(
                f"DynamicLossScalerConfig: init_scale must be finite and > 0, got {self.init_scale}"
            )
        if not self.growth_factor > 1.0:
            raise ValueError(f"DynamicLossScalerConfig: growth_factor must be > 1, got {self.growth_factor}")
        if not 0.0 < self.backoff_factor < 1.0:
            raise ValueError(
                f"DynamicLossScalerConfig: backoff_factor must be in (0, 1), got {self.backoff_factor}"
            )
        if self.growth_interval < 1:
            raise ValueError(
                f"DynamicLossScalerConfig: growth_interval must be >= 1, got {self.growth_interval}"
            )
        return DynamicLossScaler(self)


class DynamicLossScaler:
    """The running state of :class:`DynamicLossScalerConfig`."""

    def __init__(self, config: DynamicLossScalerConfig):
        self.config = config
        self.scale = float(config.init_scale)
        self.skipped_steps = 0
        self._good_steps = 0

    def update(self, finite: bool) -> None:
        """Account for one step whose unscaled gradients were ``finite`` (or not)."""
        if not finite:
            self.skipped_steps += 1
            self._good_steps = 0
            self.scale *= self.config.backoff_factor
            return
        self._good_steps += 1
        if self._good_steps % self.config.growth_interval == 0:
            self.scale *= self.config.growth_factor

    def state(self) -> dict:
        return {"scale": self.scale, "skipped_steps": self.skipped_steps, "good_steps": self._good_steps}

    def load_state(self, state: dict) -> None:
        self.scale = float(state["scale"])
        self.skipped_steps = int(state["skipped_steps"])
        self._good_steps = int(state["good_steps"])


class MixedPrecision:
    """Trains a float32 ``master`` module through a float16 compute copy (``self.model``).

    Args:
        optim: the ModuleOptimizer that updates the master weights (its state stays float32).
        master: the float32 module.
        scaler: a :class:`DynamicLossScaler` (default: ``DynamicLossScalerConfig().init()``).
        compute_dtype: the dtype of the compute copy (float16).
    """

    def __init__(self, optim, master, scaler: DynamicLossScaler | None = None, compute_dtype=dt.float16):
        for path, p in master.named_parameters():
            if p.dtype.is_float and p.dtype is not dt.float32:
                raise TypeError(f"MixedPrecision: master parameter {path} is {p.dtype}, expected float32")
        self.optim = optim
        self.master = master
        self.scaler = scaler if scaler is not None else DynamicLossScalerConfig().init()
        self.compute_dtype = dt.dtype(compute_dtype)
        self.model = master.clone().to(self.compute_dtype)  # same ParamIds as the master

    @property
    def skipped_steps(self) -> int:
        return self.scaler.skipped_steps

    def step(self, lr, loss):
        """Backward of ``loss`` (computed with ``self.model``) with loss scaling, then one
        optimizer step on the master weights unless the gradients overflowed. Returns the master.
        """
        scale = self.scaler.scale
        # float16 overflow is expected here (it is what the scaler detects): no NumPy warnings
        with np.errstate(over="ignore", invalid="ignore"):
            grads = GradientsParams.from_grads((loss.float() * scale).backward(), self.model)
        unscaled = GradientsParams()
        finite = True
        with no_grad():
            for pid, g in grads.items():
                g32 = g.float() * (1.0 / scale)
                finite = finite and bool(g32.isfinite().all())
                unscaled.register(pid, g32)
        self.scaler.update(finite)
        if finite:
            self.master = self.optim.step(lr, self.master, unscaled)
            self._refresh_compute_copy()
        return self.master

    def _refresh_compute_copy(self) -> None:
        values = {path: p.val() for path, p in self.master.named_parameters()}
        with no_grad():
            self.model.map_parameters(lambda path, t: values[path].detach().to(t.dtype))
