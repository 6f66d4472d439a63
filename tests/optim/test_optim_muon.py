"""Muon: trajectories against a float64 NumPy transcription of Burn's rule (momentum,
Newton–Schulz orthogonalisation of 2-D updates, shape-adjusted lr, decoupled decay) on every
backend; the iteration keeps the singular vectors and pushes the singular values towards 1;
Burn's learning-rate adjustments and defaults; 2-D parameters only (others routed to another
group); records and resume."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import ParamGroup
from ember.optim import (
    AdamWConfig,
    AdjustLrFn,
    GradientClippingConfig,
    GradientsParams,
    ModuleOptimizer,
    MomentumConfig,
    Muon,
    MuonConfig,
    WeightDecayConfig,
)

SHAPES = {"tall": (6, 3), "wide": (2, 5), "square": (4, 4)}
STEPS = 8


def lr_at(k: int) -> float:
    return 0.02 * (1.0 + 0.5 * np.sin(1.3 * k))


class Mats(nn.Module):
    def __init__(self, device, dtype, bias: bool = False):
        rng = np.random.default_rng(0)
        for name, shape in SHAPES.items():
            setattr(self, name, nn.Param(ember.tensor(rng.uniform(-1, 1, shape), dtype=dtype, device=device)))
        self.bias = (
            nn.Param(ember.tensor(rng.uniform(-1, 1, (3,)), dtype=dtype, device=device)) if bias else None
        )


def gradient(name: str, theta: np.ndarray) -> np.ndarray:
    """A smooth non-linear gradient field, different for each matrix."""
    c = np.random.default_rng(len(name)).uniform(-1, 1, theta.shape)
    return 1.5 * theta + c + 0.3 * np.tanh(3.0 * theta)


def grads_for(model) -> GradientsParams:
    out = GradientsParams()
    for path, p in model.named_parameters():
        g = gradient(path, np.asarray(p.value.numpy(), dtype=np.float64))
        out.register(p.id, ember.tensor(g, dtype=p.value.dtype, device=p.value.device))
    return out


def ref_newton_schulz(g, coefficients=(3.4445, -4.775, 2.0315), steps=5, eps=1e-7):
    a, b, c = coefficients
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / max(np.sqrt((x * x).sum()), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if g.shape[0] > g.shape[1] else x


def ref_muon(
    p, g, st, lr, momentum=0.95, dampening=0.0, nesterov=True, penalty=None, adjust="Original", **ns
):
    v = g if "v" not in st else (1 - dampening) * g + momentum * st["v"]
    st["v"] = v
    u = g + momentum * v if nesterov else v
    o = ref_newton_schulz(u, **ns)
    rows, cols = p.shape
    ratio = max(1.0, rows / cols) ** 0.5 if adjust == "Original" else 0.2 * max(rows, cols) ** 0.5
    if penalty is not None:
        p = p * (1 - lr * penalty)
    return p - lr * ratio * o


def trajectories(config, device, dtype=ember.float64, ref_kw=None, steps=STEPS):
    model = Mats(device, dtype)
    values = {n: np.asarray(p.value.numpy(), dtype=np.float64) for n, p in model.named_parameters()}
    optim, states = config.init(), {n: {} for n in values}
    for k in range(steps):
        grads = {n: gradient(n, v) for n, v in values.items()}
        values = {n: ref_muon(values[n], grads[n], states[n], lr_at(k), **(ref_kw or {})) for n in values}
        model = optim.step(lr_at(k), model, grads_for(model))
        for name, p in model.named_parameters():
            np.testing.assert_allclose(
                p.value.numpy(),
                values[name],
                rtol=1e-10 if dtype is ember.float64 else 2e-4,
                atol=1e-12 if dtype is ember.float64 else 2e-5,
                err_msg=f"step {k + 1}, {name}",
            )
    return model, optim


CASES = {
    "defaults": (MuonConfig(), {}),
    "weight-decay": (MuonConfig(weight_decay=WeightDecayConfig(0.1)), {"penalty": 0.1}),
    "match-rms-adamw": (MuonConfig(adjust_lr_fn=AdjustLrFn.MatchRmsAdamW), {"adjust": "MatchRmsAdamW"}),
    "plain-momentum-ns": (
        MuonConfig(momentum=MomentumConfig(0.9, 0.1, False), ns_steps=3, ns_coefficients=(2.0, -1.5, 0.5)),
        {"momentum": 0.9, "dampening": 0.1, "nesterov": False, "steps": 3, "coefficients": (2.0, -1.5, 0.5)},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_trajectory_matches_numpy_formula(device, name):
    config, ref_kw = CASES[name]
    trajectories(config, device, ref_kw=ref_kw)


def test_float32(device):
    trajectories(MuonConfig(), device, ember.float32, steps=3)


@pytest.mark.parametrize("shape", [(7, 3), (3, 7), (5, 5), (1, 4)])
def test_newton_schulz_keeps_singular_vectors_and_flattens_singular_values(shape):
    g = np.random.default_rng(3).standard_normal(shape)
    backend = ember.tensor(g, device="reference").device.backend
    o = np.asarray(Muon().orthogonalize(backend, g))
    np.testing.assert_allclose(o, ref_newton_schulz(g), rtol=1e-12, atol=1e-14)
    u, s, vt = np.linalg.svd(g, full_matrices=False)
    core = u.T @ o @ vt.T  # diagonal: a matrix polynomial of G·Gᵀ times G keeps U and V
    np.testing.assert_allclose(core - np.diag(np.diag(core)), 0.0, atol=1e-10)
    assert np.all((np.diag(core) > 0.6) & (np.diag(core) < 1.25)), np.diag(core)


def test_zero_gradient_leaves_weights_and_decay_only_shrinks(device):
    model = Mats(device, ember.float64)
    before = {n: p.value.numpy().copy() for n, p in model.named_parameters()}

    def zero():  # a step consumes its gradients
        grads = GradientsParams()
        for _, p in model.named_parameters():
            grads.register(p.id, ember.zeros(*p.value.shape, dtype=ember.float64, device=device))
        return grads

    MuonConfig().init().step(0.01, model, zero())
    for n, p in model.named_parameters():
        np.testing.assert_array_equal(p.value.numpy(), before[n])
    decayed = MuonConfig(weight_decay=WeightDecayConfig(0.5)).init()
    decayed.step(0.1, model, zero())
    for n, p in model.named_parameters():
        np.testing.assert_allclose(p.value.numpy(), before[n] * 0.95, rtol=1e-15)


def test_adjust_lr_ratios_are_burns():
    assert AdjustLrFn.Original.ratio((512, 512)) == 1.0
    assert AdjustLrFn.Original.ratio((1024, 512)) == pytest.approx(2**0.5, rel=1e-15)
    assert AdjustLrFn.Original.ratio((512, 1024)) == 1.0
    assert AdjustLrFn.MatchRmsAdamW.ratio((1024, 512)) == pytest.approx(6.4, rel=1e-15)
    assert AdjustLrFn.MatchRmsAdamW.ratio((512, 512)) == pytest.approx(0.2 * 512**0.5, rel=1e-15)
    assert AdjustLrFn.Original.ratio((7,)) == 1.0


def test_defaults_are_burns(tmp_path):
    config = MuonConfig()
    assert config.momentum == MomentumConfig(momentum=0.95, dampening=0.0, nesterov=True)
    assert config.ns_coefficients == (3.4445, -4.775, 2.0315)
    assert (config.epsilon, config.ns_steps, config.adjust_lr_fn, config.weight_decay) == (
        1e-7,
        5,
        AdjustLrFn.Original,
        None,
    )
    config.with_adjust_lr_fn(AdjustLrFn.MatchRmsAdamW).save(tmp_path / "muon.json")
    assert MuonConfig.load(tmp_path / "muon.json") == MuonConfig(adjust_lr_fn=AdjustLrFn.MatchRmsAdamW)
    assert config.clipping() is None
    with pytest.raises(TypeError, match="no gradient clipping"):
        config.with_grad_clipping(GradientClippingConfig.Norm(1.0))


def test_non_matrix_parameters_are_refused_or_routed_to_another_group(device):
    model = Mats(device, ember.float64, bias=True)
    with pytest.raises(ValueError, match=r"2-D parameters, got shape \[3\]"):
        MuonConfig().init().step(0.01, model, grads_for(model))
    optim = ModuleOptimizer(MuonConfig()).with_group(ParamGroup.from_path("bias"), AdamWConfig())
    bias_before = model.bias.value.numpy().copy()
    for k in range(3):
        model = optim.step(lr_at(k), model, grads_for(model))
    assert not np.allclose(model.bias.value.numpy(), bias_before)
    assert set(optim.state_of(model.bias.id)) >= {"momentum.moment_1", "momentum.moment_2"}
    assert set(optim.state_of(model.tall.id)) == {"momentum.velocity", "steps", "path"}


def test_record_round_trip_and_resume(device, tmp_path):
    model, optim = trajectories(MuonConfig(), device, steps=3)
    rec = optim.to_record()
    tid = int(model.tall.id)
    assert rec.tensors[f"{tid}.momentum.velocity"].shape == (6, 3) and rec.scalars[f"{tid}.__rank"] == 2
    assert not any(key.endswith("momentum.time") for key in rec.scalars)  # Burn's MuonState has no counter
    model.save_file(tmp_path / "model")
    optim.save(tmp_path / "muon")
    straight = model
    for k in range(3, 6):
        straight = optim.step(lr_at(k), straight, grads_for(straight))
    resumed = Mats(device, ember.float64)
    resumed.load_file(tmp_path / "model.bpk")
    loaded = MuonConfig().init().load(tmp_path / "muon.bpk")
    for k in range(3, 6):
        resumed = loaded.step(lr_at(k), resumed, grads_for(resumed))
    for (name, a), (_, b) in zip(resumed.named_parameters(), straight.named_parameters()):
        np.testing.assert_array_equal(a.value.numpy(), b.value.numpy(), err_msg=name)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"ns_steps": -1}, ValueError, "ns_steps"),
        ({"ns_coefficients": (1.0, 2.0)}, ValueError, "ns_coefficients"),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"adjust_lr_fn": "Original"}, TypeError, "adjust_lr_fn"),
    ],
)
def test_bad_hyper_parameters_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        MuonConfig(**kwargs).build()
