"""ModuleOptimizer routing: parameter groups (last match wins), per-group optimizers and learning
rates, frozen parameters, state reset by with_group, errors; and ParamGroup matching rules."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from optim_cases import (
    LRS,
    Tiny,
    assert_trajectories_close,
    gradient,
    grads_for,
    initial_values,
    model_values,
    ref_adam,
    ref_sgd,
)

import ember
from ember.nn import ParamGroup, ParamGroupError
from ember.optim import (
    AdamConfig,
    GradientsParams,
    LinearLrSchedulerConfig,
    ModuleLearningRate,
    ModuleLrScheduler,
    SgdConfig,
)

STEPS = 8


def _mixed_reference(routes: dict, lrs_of, steps=STEPS):
    """NumPy trajectory where each path has its own update function and rate schedule."""
    values = initial_values()
    states = {k: {} for k in values}
    out = []
    for k in range(steps):
        for path in values:
            g = gradient(path, values[path])
            values[path] = routes[path](values[path], g, states[path], lrs_of(path, k), k + 1)
        out.append({p: v.copy() for p, v in values.items()})
    return out


# ---- ParamGroup ---------------------------------------------------------------------------


def test_param_group_matching_rules():
    pid = ember.nn.ParamId(7)
    assert ParamGroup.all().matches("anything", pid) and ParamGroup.all().matches(None, None)
    assert ParamGroup.from_ids([pid]).matches(None, pid) and not ParamGroup.from_ids([pid]).matches("x", 8)
    assert ParamGroup.from_path("enc.lin.weight").matches("enc.lin.weight", pid)
    assert not ParamGroup.from_path("enc.lin").matches("enc.lin.weight", pid)
    assert not ParamGroup.from_path("enc.lin.weight").matches(None, pid)
    both = ParamGroup.from_predicates(["enc", "bias"])
    assert both.matches("enc.lin.bias", pid) and not both.matches("enc.lin.weight", pid)
    either = ParamGroup.from_any_predicates(["conv", "head"])
    assert (
        either.matches("conv.bias", pid) and either.matches("head", pid) and not either.matches("enc.x", pid)
    )
    assert not ParamGroup.from_any_predicates([]).matches("enc", pid)
    rx = ParamGroup.from_regexes([r"^enc\.", r"weight$"])
    assert rx.matches("enc.lin.weight", pid) and not rx.matches("xenc.lin.weight", pid)
    anyrx = ParamGroup.from_any_regexes([r"^conv", r"^head$"])
    assert (
        anyrx.matches("head", pid) and anyrx.matches("conv.weight", pid) and not anyrx.matches("heads", pid)
    )
    fused = ParamGroup.from_path("head").fuse(ParamGroup.from_ids([pid]))
    assert fused.matches("head", 1) and fused.matches("other", pid) and not fused.matches("other", 1)
    enc_no_bias = ParamGroup.from_predicate("enc").exclude(ParamGroup.from_predicate("bias"))
    assert enc_no_bias.matches("enc.lin.weight", pid) and not enc_no_bias.matches("enc.lin.bias", pid)
    twice = enc_no_bias.exclude(ParamGroup.from_predicate("weight"))
    assert not twice.matches("enc.lin.weight", pid) and twice.matches("enc.lin.scale", pid)
    # fuse drops exclusions (Burn)
    assert enc_no_bias.fuse(ParamGroup.from_path("head")).matches("enc.lin.bias", pid)
    assert ParamGroup.from_predicate("enc").fuse(ParamGroup.all()).matches("zzz", pid)


def test_param_group_errors_and_module_ids():
    with pytest.raises(ParamGroupError, match="invalid regex"):
        ParamGroup.from_regex("(")
    with pytest.raises(TypeError, match="order is matches"):
        ParamGroup.all().matches(ember.nn.ParamId(3), "path")
    with pytest.raises(TypeError, match="list of predicate"):
        ParamGroup.from_predicates("enc")
    model = Tiny(initial_values(), "reference", ember.float64)
    group = ParamGroup.ids_from_module(model)
    assert all(group.matches(None, p.id) for p in model.parameters())
    assert not group.matches("enc.lin.weight", ember.nn.ParamId(12345))
    # nn's freeze accepts a group
    model.freeze(ParamGroup.from_predicate("conv"))
    assert [p for p, q in model.named_parameters() if not q.is_require_grad()] == ["conv.weight", "conv.bias"]


# ---- routing ------------------------------------------------------------------------------


def test_last_matching_group_wins_per_group_optimizer(device):
    optim = (
        AdamConfig()
        .init()
        .with_group(ParamGroup.from_predicate("enc"), SgdConfig(), None)
        .with_group(ParamGroup.from_path("enc.lin.bias"), AdamConfig(beta_1=0.5), None)
    )
    model = Tiny(initial_values(), device, ember.float64)
    got = []
    for k in range(STEPS):
        model = optim.step(LRS[k], model, grads_for(model))
        got.append(model_values(model))
    routes = dict.fromkeys(initial_values(), ref_adam)
    routes["enc.lin.weight"] = ref_sgd
    routes["enc.lin.bias"] = functools.partial(ref_adam, beta_1=0.5)
    assert_trajectories_close(got, _mixed_reference(routes, lambda path, k: LRS[k]))
    assert optim.state_of(model.enc.lin.weight.id)["steps"] == STEPS
    assert "momentum.moment_1" in optim.state_of(model.head.id)
    assert optim.state_of(model.enc.lin.weight.id).keys() == {"steps", "path"}  # plain SGD has no tensors


def test_per_group_learning_rate_from_module_scheduler(device):
    sched = ModuleLrScheduler(LinearLrSchedulerConfig(0.1, 0.01, 5)).with_group(
        ParamGroup.from_predicate("conv"), 0.02
    )
    optim = SgdConfig().init()
    model = Tiny(initial_values(), device, ember.float64)
    got, rates = [], []
    for _ in range(STEPS):
        lrs = sched.step()
        rates.append(lrs)
        model = optim.step(lrs, model, grads_for(model))
        got.append(model_values(model))
    base = [r.base() for r in rates]
    assert base[0] == pytest.approx(0.1) and base[-1] == pytest.approx(0.01)
    want = _mixed_reference(
        dict.fromkeys(initial_values(), ref_sgd), lambda path, k: 0.02 if "conv" in path else base[k]
    )
    assert_trajectories_close(got, want)


def test_frozen_and_gradless_parameters_are_untouched(device):
    model = Tiny(initial_values(), device, ember.float64)
    model.conv.weight.set_require_grad(False)
    optim = AdamConfig().init()
    for _step in range(3):
        grads = grads_for(model, skip=("head",))  # no gradient for head
        grads.register(model.conv.weight.id, ember.ones(2, 3, dtype=ember.float64, device=device))
        model = optim.step(0.1, model, grads)
        assert model.conv.weight.id in grads  # the frozen parameter's gradient was not consumed
        assert len(grads) == 1
    init = initial_values()
    np.testing.assert_array_equal(model.conv.weight.numpy(), init["conv.weight"])
    np.testing.assert_array_equal(model.head.numpy(), init["head"])
    assert optim.state_of(model.conv.weight.id) is None and optim.state_of(model.head.id) is None
    assert len(optim) == 3
    assert not model.conv.weight.value.is_require_grad()


def test_with_group_resets_state_of_matched_parameters():
    model = Tiny(initial_values(), "reference", ember.float64)
    optim = AdamConfig().init()
    for _ in range(3):
        model = optim.step(0.1, model, grads_for(model))
    optim.with_group(ParamGroup.from_predicate("conv"), AdamConfig(), None)
    assert optim.state_of(model.conv.weight.id) is None and optim.state_of(model.conv.bias.id) is None
    assert optim.state_of(model.head.id)["steps"] == 3
    model = optim.step(0.1, model, grads_for(model))
    assert optim.state_of(model.conv.weight.id)["steps"] == 1
    assert optim.state_of(model.head.id)["steps"] == 4


def test_gradient_of_other_dtype_and_device_is_converted():
    model = Tiny(initial_values(), "cpu", ember.float32)
    grads = GradientsParams()
    for path, p in model.named_parameters():
        g = gradient(path, p.numpy().astype(np.float64))
        grads.register(p.id, ember.tensor(g, dtype=ember.float64, device="reference"))
    before = model.head.numpy().copy()
    SgdConfig().init().step(0.5, model, grads)
    assert model.head.value.dtype == ember.float32 and model.head.device == ember.Device("cpu")
    np.testing.assert_allclose(
        model.head.numpy(), before - 0.5 * gradient("head", before.astype(np.float64)), rtol=1e-6
    )


def test_step_errors():
    model = Tiny(initial_values(), "reference", ember.float64)
    optim = AdamConfig().init()
    with pytest.raises(TypeError, match="GradientsParams"):
        optim.step(0.1, model, {})
    with pytest.raises(TypeError, match="ModuleLearningRate"):
        optim.step("fast", model, grads_for(model))
    with pytest.raises(ValueError, match="finite"):
        optim.step(float("nan"), model, grads_for(model))
    bad = GradientsParams()
    bad.register(model.head.id, ember.ones(4, dtype=ember.float64, device="reference"))
    with pytest.raises(
        ValueError, match=r"gradient of 'head' has shape \[4\] but the parameter has shape \[5\]"
    ):
        optim.step(0.1, model, bad)
    with pytest.raises(TypeError, match="optimizer config"):
        optim.with_group(ParamGroup.all(), "adam")
    with pytest.raises(TypeError, match="matches"):
        optim.with_group("conv", SgdConfig())
    with pytest.raises(ValueError, match="beta_1"):
        AdamConfig(beta_1=1.0).init()


def test_module_learning_rate_constant_and_groups():
    lrs = ModuleLearningRate([(ParamGroup.all(), 0.1), (ParamGroup.from_predicate("head"), 0.3)])
    model = Tiny(initial_values(), "reference", ember.float64)
    before = model_values(model)
    SgdConfig().init().step(lrs, model, grads_for(model))
    after = model_values(model)
    for path in before:
        rate = 0.3 if path == "head" else 0.1
        np.testing.assert_allclose(
            after[path], before[path] - rate * gradient(path, before[path]), rtol=1e-13
        )


def test_cpu_runs_one_fused_kernel_per_group_and_reuses_packed_arrays(monkeypatch):
    from ember.kernels.cpu import optim_updates

    # the kernel's first arguments are the data addresses of the params, grads, m and v tables:
    # the same address arrays step after step means the tables packed at step 1 are reused
    calls = []
    real = optim_updates.adam_kernel

    def spy(p, g, m, v, *args):
        calls.append((p, m, v))
        return real(p, g, m, v, *args)

    monkeypatch.setattr(optim_updates, "adam_kernel", spy)
    model = Tiny(initial_values(), "cpu", ember.float32)
    optim = AdamConfig().init().with_group(ParamGroup.from_predicate("conv"), AdamConfig(beta_1=0.5), None)
    for _ in range(3):
        model = optim.step(0.01, model, grads_for(model))
    assert len(calls) == 6  # two groups, one kernel call each, per step
    assert {len(p) for p, _, _ in calls} == {2, 3}
    # steps 2 and 3 reuse the tables packed at step 1 (same arrays, nothing re-validated)
    assert calls[0][0] is calls[2][0] is calls[4][0] and calls[1][1] is calls[3][1] is calls[5][1]
    # a parameter whose array changes gets its group repacked
    model.head.set_value(ember.zeros(5, device="cpu"))
    model = optim.step(0.01, model, grads_for(model))
    assert calls[6][0] is not calls[4][0] and calls[7][0] is calls[5][0]


def test_parameters_sharing_one_tensor_are_rejected():
    model = Tiny(initial_values(), "reference", ember.float64)
    model.conv.bias = ember.nn.Param(model.enc.lin.bias.value)
    grads = GradientsParams()
    for p in model.parameters():
        grads.register(p.id, ember.ones(*p.shape, dtype=ember.float64, device="reference"))
    with pytest.raises(ValueError, match="share one tensor"):
        SgdConfig().init().step(0.1, model, grads)


def test_lora_adapters_are_trained_and_frozen_base_is_not(device):
    ember.seed(0)
    model = ember.nn.LinearConfig(4, 3).init(device=device).apply_lora(ember.nn.Lora(2, 4.0))
    paths = [path for path, p in model.named_parameters() if p.is_require_grad()]
    assert paths == ["weight.lora.a", "weight.lora.b"]
    base = {path: p.numpy().copy() for path, p in model.named_parameters()}
    x = ember.randn(5, 4, device=device)
    optim = AdamConfig().init()
    for _ in range(2):
        loss = (model(x) ** 2).sum()
        model = optim.step(1e-2, model, GradientsParams.from_grads(loss.backward(), model))
    after = {path: p.numpy() for path, p in model.named_parameters()}
    np.testing.assert_array_equal(after["weight"], base["weight"])
    np.testing.assert_array_equal(after["bias"], base["bias"])
    assert not np.array_equal(after["weight.lora.b"], base["weight.lora.b"])
    assert len(optim) == 2
