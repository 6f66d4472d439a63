"""Optimizer and scheduler state records: Burn's layout, save -> load -> resume equality."""

from __future__ import annotations

import numpy as np
import pytest
from optim_cases import Tiny, grads_for, initial_values, model_values

import ember
from ember import record
from ember.nn import ParamGroup
from ember.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    ComposedLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    LinearLrSchedulerConfig,
    LionConfig,
    ModuleLrScheduler,
    ModuleOptimizer,
    MomentumConfig,
    OptimizerRecord,
    RmsPropConfig,
    SgdConfig,
    load_scheduler_state,
    save_scheduler_state,
    scheduler_state_from_bytes,
    scheduler_state_to_bytes,
)

CONFIGS = {
    "adam-amsgrad": AdamConfig(amsgrad=True),
    "adamw-cautious": AdamWConfig(weight_decay=0.2, cautious_weight_decay=True),
    "sgd-momentum": SgdConfig(momentum=MomentumConfig()),
    "rmsprop-centered": RmsPropConfig(centered=True),
    "adagrad": AdaGradConfig(lr_decay=0.05),
    "lion": LionConfig(weight_decay=0.1),
}


def _optimizer(config) -> ModuleOptimizer:
    return config.init().with_group(
        ParamGroup.from_predicate("conv"), SgdConfig(momentum=MomentumConfig()), None
    )


def _scheduler() -> ModuleLrScheduler:
    base = (
        ComposedLrSchedulerConfig()
        .cosine(CosineAnnealingLrSchedulerConfig(1.0, 30))
        .linear(LinearLrSchedulerConfig(0.01, 0.05, 15))
    )
    return ModuleLrScheduler(base.init()).with_group(
        ParamGroup.from_predicate("conv"), LinearLrSchedulerConfig(0.02, 0.001, 12)
    )


def _run(model, optim, sched, steps):
    for _ in range(steps):
        model = optim.step(sched.step(), model, grads_for(model))
    return model


@pytest.mark.parametrize("name", list(CONFIGS))
def test_resume_after_save_load_equals_uninterrupted_run(device, name, tmp_path):
    config = CONFIGS[name]
    model = Tiny(initial_values(), device, ember.float64)
    optim, sched = _optimizer(config), _scheduler()
    model = _run(model, optim, sched, 10)
    model.save_file(tmp_path / "model")
    optim.save(tmp_path / "optim")
    save_scheduler_state(tmp_path / "scheduler", sched)
    straight = model_values(_run(model, optim, sched, 10))

    resumed = Tiny({k: np.zeros_like(v) for k, v in initial_values().items()}, device, ember.float64)
    resumed.load_file(tmp_path / "model.bpk")
    optim2 = _optimizer(config).load(tmp_path / "optim.bpk")
    sched2 = load_scheduler_state(tmp_path / "scheduler.bpk", _scheduler())
    assert len(optim2) == len(optim)
    after = model_values(_run(resumed, optim2, sched2, 10))
    for path in straight:
        np.testing.assert_array_equal(after[path], straight[path], err_msg=path)


def test_record_layout_is_burns(tmp_path):
    model = Tiny(initial_values(), "cpu", ember.float32)
    optim = AdamConfig(amsgrad=True).init().with_group(ParamGroup.from_path("head"), SgdConfig(), None)
    for _ in range(3):
        model = optim.step(1e-2, model, grads_for(model))
    rec = optim.to_record()
    wid, hid = int(model.enc.lin.weight.id), int(model.head.id)
    assert {f"{wid}.momentum.moment_1", f"{wid}.momentum.moment_2", f"{wid}.momentum.max_moment_2"} <= set(
        rec.tensors
    )
    assert not any(name.startswith(f"{hid}.") for name in rec.tensors)  # plain SGD: no tensors
    assert rec.scalars[f"{hid}.__rank"] == 1 and f"{hid}.momentum.time" not in rec.scalars
    assert rec.scalars[f"{wid}.__rank"] == 2 and rec.scalars[f"{wid}.momentum.time"] == 3
    assert rec.paths[str(wid)] == "enc.lin.weight" and rec.paths[str(hid)] == "head"
    assert len(rec) == 4 * 3

    with record.load(optim.save(tmp_path / "optim")) as raw:
        view = raw[f"{wid}.momentum.moment_1"]
        assert view.param_id == wid and view.shape == (4, 3) and view.dtype == np.float32
        assert isinstance(raw.scalars[f"{wid}.__rank"], record.UInt)
        assert isinstance(raw.scalars[f"{wid}.momentum.time"], record.UInt)
        assert raw.metadata[str(hid)] == "head"
        np.testing.assert_array_equal(view.numpy(), optim.state_of(wid)["momentum.moment_1"])


def test_rmsprop_record_holds_burns_derived_average():
    model = Tiny(initial_values(), "reference", ember.float64)
    optim = RmsPropConfig(centered=True).init()
    model = optim.step(0.01, model, grads_for(model))
    rec = OptimizerRecord.from_bytes(optim.to_bytes())
    hid = int(model.head.id)
    s = rec.tensors[f"{hid}.square_avg.square_avg"]
    ga = rec.tensors[f"{hid}.centered.grad_avg"]
    np.testing.assert_allclose(rec.tensors[f"{hid}.centered.avg"], s - ga**2, rtol=1e-15)
    assert f"{hid}.momentum.buf" in rec.tensors
    # loading ignores the derived leaf and restores the rest
    state = RmsPropConfig(centered=True).init().load_record(rec).state_of(hid)
    assert set(state) == {"square_avg.square_avg", "centered.grad_avg", "momentum.buf", "steps", "path"}


def test_loaded_state_is_routed_by_path_and_incomplete_state_restarts():
    model = Tiny(initial_values(), "reference", ember.float64)
    optim = AdamConfig().init()
    model = optim.step(0.01, model, grads_for(model))
    rec = optim.to_record()
    wid = int(model.enc.lin.weight.id)
    del rec.tensors[f"{wid}.momentum.moment_2"]
    loaded = (
        AdamConfig().init().with_group(ParamGroup.from_predicate("conv"), SgdConfig(), None).load_record(rec)
    )
    assert loaded.state_of(wid) is None  # a required leaf is missing: starts afresh, as Burn
    assert loaded.state_of(model.head.id)["steps"] == 1
    # conv.* are routed to the SGD group by their recorded path: its state has no tensors
    assert set(loaded.state_of(model.conv.weight.id)) == {"steps", "path"}


def test_state_shape_mismatch_is_reported():
    model = Tiny(initial_values(), "reference", ember.float64)
    optim = AdamConfig().init()
    model = optim.step(0.01, model, grads_for(model))
    rec = optim.to_record()
    hid = int(model.head.id)
    rec.tensors[f"{hid}.momentum.moment_1"] = np.zeros(7)
    optim2 = AdamConfig().init().load_record(rec)
    with pytest.raises(ValueError, match=r"state 'momentum.moment_1' of parameter 'head'.*\[7\].*\[5\]"):
        optim2.step(0.01, model, grads_for(model))


def test_state_moves_across_devices_and_dtypes():
    cpu = Tiny(initial_values(), "cpu", ember.float64)
    optim = AdamConfig().init()
    cpu = _run(cpu, optim, _constant(0.01), 3)
    ref = Tiny(model_values(cpu), "reference", ember.float64)
    for (_, p), (_, q) in zip(cpu.named_parameters(), ref.named_parameters()):
        q.id = p.id
    other = optim.clone()
    cpu = _run(cpu, optim, _constant(0.01), 4)
    ref = _run(ref, other, _constant(0.01), 4)
    for path, value in model_values(cpu).items():
        np.testing.assert_allclose(model_values(ref)[path], value, rtol=1e-12)


class _constant:
    def __init__(self, lr):
        self.lr = lr

    def step(self):
        return self.lr


def test_scheduler_state_record_is_scalar_only(tmp_path):
    sched = _scheduler()
    for _ in range(4):
        sched.step()
    path = save_scheduler_state(tmp_path / "scheduler", sched)
    assert path.suffix == ".bpk"
    with record.load(path) as raw:
        assert len(raw) == 0 and raw.scalars
        assert all(isinstance(v, record.UInt) for k, v in raw.scalars.items() if "iter" in k)
    fresh = scheduler_state_from_bytes(scheduler_state_to_bytes(sched), _scheduler())
    assert [fresh.step().rates for _ in range(3)] == [sched.step().rates for _ in range(3)]
    with pytest.raises(TypeError, match="scheduler"):
        save_scheduler_state(tmp_path / "x", object())
