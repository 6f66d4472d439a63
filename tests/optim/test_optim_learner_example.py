"""The parameter-group example of Burn's learner documentation (burn-book/src/building-blocks/
learner.md), transcribed to ember's Python API and run on a small model with a ``conv`` part."""

from __future__ import annotations

import math

import numpy as np
from optim_cases import ref_adam

import ember
from ember import nn
from ember.nn import ParamGroup
from ember.optim import (
    AdamWConfig,
    ComposedLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    GradientsParams,
    LinearLrSchedulerConfig,
    ModuleLrScheduler,
)


class ConvNet(nn.Module):
    def __init__(self, device):
        self.conv = nn.Conv2dConfig((1, 2), (3, 3)).init(device=device)
        self.head = nn.LinearConfig(2 * 4 * 4, 3).init(device=device)

    def forward(self, x):
        return self.head(ember.flatten(ember.relu(self.conv(x)), 1))


def burn_example():
    """The example, line for line (Rust's ``new(..)`` becomes the constructor and
    ``.unwrap()`` disappears: invalid arguments raise instead)."""
    lr_scheduler = (
        ComposedLrSchedulerConfig()
        .cosine(CosineAnnealingLrSchedulerConfig(1.0, 2000))
        .linear(LinearLrSchedulerConfig(1e-8, 1.0, 2000))
        .linear(LinearLrSchedulerConfig(1e-2, 1e-6, 10000))
        .init()
        .with_group(ParamGroup.from_predicate("conv"), LinearLrSchedulerConfig(1e-6, 1e-3, 14000).init())
    )
    assert isinstance(lr_scheduler, ModuleLrScheduler)
    optim = AdamWConfig().with_cautious_weight_decay(True).with_weight_decay(5e-5).init()
    return lr_scheduler, optim


def _base_lr(k: int) -> float:
    cosine = 0.5 * (1.0 + math.cos(math.pi * (k - 1) / 2000))
    warmup = 1.0 - (1.0 - 1e-8) / 2000 * max(2000 + 1 - k, 0)
    decay = 1e-6 - (1e-6 - 1e-2) / 10000 * max(10000 + 1 - k, 0)
    return cosine * warmup * decay


def _conv_lr(k: int) -> float:
    return 1e-3 - (1e-3 - 1e-6) / 14000 * max(14000 + 1 - k, 0)


def test_burn_learner_example_runs_with_group_rates_and_cautious_adamw():
    ember.seed(0)
    model = ConvNet("cpu").to(ember.float64)
    lr_scheduler, optim = burn_example()
    adamw = optim.groups[0][1]
    assert adamw.cautious_weight_decay and adamw.weight_decay == 5e-5 and adamw.epsilon == 1e-5
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.normal(size=(4, 1, 6, 6)), dtype=ember.float64)
    y = ember.tensor(rng.integers(0, 3, size=4))
    values = {path: p.numpy().copy() for path, p in model.named_parameters()}
    states = {path: {} for path in values}
    for k in range(1, 6):
        lrs = lr_scheduler.step()  # before every iteration, as the Learner does
        assert math.isclose(lrs.base(), _base_lr(k), rel_tol=1e-12)
        assert math.isclose(lrs.lr_for("conv.weight"), _conv_lr(k), rel_tol=1e-12)
        loss = ember.cross_entropy_per_sample(model(x), y).mean()
        grads = GradientsParams.from_grads(loss.backward(), model)
        seen = {path: grads.get(p.id).numpy().copy() for path, p in model.named_parameters()}
        model = optim.step(lrs, model, grads)
        for path, p in model.named_parameters():
            rate = _conv_lr(k) if "conv" in path else _base_lr(k)
            values[path] = ref_adam(
                values[path],
                seen[path],
                states[path],
                rate,
                k,
                weight_decay=5e-5,
                decoupled=True,
                cautious=True,
            )
            np.testing.assert_allclose(
                p.numpy(), values[path], rtol=1e-12, atol=1e-15, err_msg=f"{path} @ {k}"
            )
    # the two groups' rates differ by more than 10x here, so a routing mistake would show above
    assert _base_lr(5) / _conv_lr(5) > 10
