"""Adan: trajectories against a float64 NumPy transcription of the paper's algorithm (the
authors' form, which keeps the previous gradient and needs no first-step branch), on every
backend, Burn's defaults, state records in Burn's layout and resume equality, errors."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from optim_cases import (
    LRS,
    Tiny,
    assert_trajectories_close,
    ember_trajectory,
    grads_for,
    initial_values,
    model_values,
    ref_trajectory,
)

import ember
from ember.optim import Adan, AdanConfig, GradientClippingConfig, OptimizerRecord

STEPS = 20


def ref_adan(
    p, g, st, lr, t, beta_1=0.98, beta_2=0.92, beta_3=0.99, eps=1e-8, weight_decay=0.0, no_prox=False
):
    """Adan (Xie et al. 2022, Alg. 1) as the authors' code runs it: the previous gradient
    starts as the first gradient, so the first difference is zero."""
    prev = st.get("prev", g)
    diff = g - prev
    st["m"] = beta_1 * st.get("m", 0.0) + (1 - beta_1) * g
    st["v"] = beta_2 * st.get("v", 0.0) + (1 - beta_2) * diff
    st["n"] = beta_3 * st.get("n", 0.0) + (1 - beta_3) * (g + beta_2 * diff) ** 2
    st["prev"] = g
    denom = np.sqrt(st["n"]) / np.sqrt(1 - beta_3**t) + eps
    update = (st["m"] / (1 - beta_1**t) + beta_2 * st["v"] / (1 - beta_2**t)) / denom
    if no_prox:
        return p * (1 - lr * weight_decay) - lr * update
    return (p - lr * update) / (1 + lr * weight_decay)


CASES = {
    "defaults": ({}, {}),
    "proximal-decay": ({"weight_decay": 0.3}, {"weight_decay": 0.3}),
    "decoupled-decay": ({"weight_decay": 0.3, "no_prox": True}, {"weight_decay": 0.3, "no_prox": True}),
    "betas-eps": (
        {"beta_1": 0.9, "beta_2": 0.5, "beta_3": 0.95, "epsilon": 1e-3},
        {"beta_1": 0.9, "beta_2": 0.5, "beta_3": 0.95, "eps": 1e-3},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_trajectory_matches_numpy_formula(device, name):
    config_kw, ref_kw = CASES[name]
    got, _ = ember_trajectory(AdanConfig(**config_kw).init(), STEPS, LRS, device)
    want = ref_trajectory(functools.partial(ref_adan, **ref_kw), STEPS, LRS)
    assert_trajectories_close(got, want)


def test_float32_matches_float64_formula_closely(device):
    got, _ = ember_trajectory(AdanConfig(weight_decay=0.1).init(), STEPS, LRS, device, dtype=ember.float32)
    want = ref_trajectory(functools.partial(ref_adan, weight_decay=0.1), STEPS, LRS)
    assert_trajectories_close(got, want, rtol=1e-4, atol=1e-5)


def test_clipping_applies_before_the_update(device):
    clip = GradientClippingConfig.Value(0.5)
    got, _ = ember_trajectory(AdanConfig(grad_clipping=clip).init(), 5, LRS, device)
    want = ref_trajectory(
        ref_adan, 5, LRS, clip=lambda grads: {k: np.clip(g, -0.5, 0.5) for k, g in grads.items()}
    )
    assert_trajectories_close(got, want)


def test_defaults_are_burns(tmp_path):
    config = AdanConfig()
    assert (config.beta_1, config.beta_2, config.beta_3) == (0.98, 0.92, 0.99)
    assert (config.epsilon, config.weight_decay, config.no_prox, config.grad_clipping) == (
        1e-8,
        0.0,
        False,
        None,
    )
    config.with_no_prox(True).save(tmp_path / "adan.json")
    assert AdanConfig.load(tmp_path / "adan.json") == AdanConfig(no_prox=True)


def test_record_layout_and_resume(device, tmp_path):
    model = Tiny(initial_values(), device, ember.float64)
    optim = AdanConfig(weight_decay=0.05).init()
    model = _run(model, optim, 0, 3)
    last = grads_for(model)
    head_grad = last.get(model.head.id).numpy().copy()
    model = optim.step(LRS[3], model, last)
    rec = optim.to_record()
    hid = int(model.head.id)
    leaves = {"momentum.exp_avg", "momentum.exp_avg_sq", "momentum.exp_avg_diff", "momentum.neg_pre_grad"}
    assert {name.partition(".")[2] for name in rec.tensors if name.startswith(f"{hid}.")} == leaves
    assert rec.scalars[f"{hid}.momentum.time"] == 4 and rec.scalars[f"{hid}.__rank"] == 1
    np.testing.assert_array_equal(rec.tensors[f"{hid}.momentum.neg_pre_grad"], -head_grad)

    model.save_file(tmp_path / "model")
    optim.save(tmp_path / "adan")
    straight = model_values(_run(model, optim, 4, 8))

    resumed = Tiny({k: np.zeros_like(v) for k, v in initial_values().items()}, device, ember.float64)
    resumed.load_file(tmp_path / "model.bpk")
    loaded = AdanConfig(weight_decay=0.05).init().load(tmp_path / "adan.bpk")
    assert len(loaded) == len(optim) and loaded.state_of(hid)["steps"] == 4
    after = model_values(_run(resumed, loaded, 4, 8))
    for path in straight:
        np.testing.assert_array_equal(after[path], straight[path], err_msg=path)


def _run(model, optim, start, stop):
    for k in range(start, stop):
        model = optim.step(LRS[k], model, grads_for(model))
    return model


def test_record_without_a_required_leaf_restarts_that_parameter():
    model = Tiny(initial_values(), "reference", ember.float64)
    optim = AdanConfig().init()
    model = optim.step(0.01, model, grads_for(model))
    rec = OptimizerRecord.from_bytes(optim.to_bytes())
    hid = int(model.head.id)
    del rec.tensors[f"{hid}.momentum.neg_pre_grad"]
    loaded = AdanConfig().init().load_record(rec)
    assert loaded.state_of(hid) is None
    assert loaded.state_of(model.conv.weight.id)["steps"] == 1


def test_empty_and_scalar_parameters(device):
    model = Tiny(initial_values(), device, ember.float64)
    model.head = ember.nn.Param(ember.tensor(np.zeros((0,)), device=device))
    model.conv.bias = ember.nn.Param(ember.tensor(np.array(0.5), device=device))
    grads = grads_for(model, skip=("head", "conv.bias"))
    grads.register(model.head.id, ember.tensor(np.zeros((0,)), device=device))
    grads.register(model.conv.bias.id, ember.tensor(np.array(2.0), device=device))
    AdanConfig().init().step(0.1, model, grads)
    assert model.head.value.shape == (0,)
    want = ref_adan(np.array(0.5), np.array(2.0), {}, 0.1, 1)
    np.testing.assert_allclose(model.conv.bias.value.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"beta_1": 1.0}, "beta_1"),
        ({"beta_3": -0.1}, "beta_3"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"weight_decay": float("nan")}, "weight_decay"),
    ],
)
def test_bad_hyper_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AdanConfig(**kwargs).init()
    with pytest.raises(ValueError, match=message):
        Adan(**{("epsilon" if k == "epsilon" else k): v for k, v in kwargs.items()})
