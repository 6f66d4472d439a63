"""Gradient clipping (Value, per-tensor Norm, GlobalNorm), GradientsParams and gradient
accumulation."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from optim_cases import LRS, assert_trajectories_close, ember_trajectory, ref_adam, ref_sgd, ref_trajectory

import ember
from ember import nn
from ember.nn import ParamGroup
from ember.optim import (
    AdamConfig,
    GradientClipping,
    GradientClippingConfig,
    GradientsAccumulator,
    GradientsParams,
    SgdConfig,
)

STEPS = 10
TINY64 = 2.0**-1022


def _clip_value(t, grads):
    return {p: np.clip(g, -t, t) for p, g in grads.items()}


def _clip_norm(m, grads):
    return {p: g * min(1.0, m / (np.linalg.norm(g) + TINY64)) for p, g in grads.items()}


def _clip_global(m, grads, paths=None):
    chosen = [p for p in grads if paths is None or p in paths]
    total = math.sqrt(sum(float(np.sum(grads[p] ** 2)) for p in chosen))
    coef = min(1.0, m / (total + TINY64))
    return {p: g * coef if p in chosen else g for p, g in grads.items()}


CLIP_CASES = [
    ("value", GradientClippingConfig.Value(0.4), functools.partial(_clip_value, 0.4)),
    ("norm", GradientClippingConfig.Norm(0.8), functools.partial(_clip_norm, 0.8)),
    ("global-norm", GradientClippingConfig.GlobalNorm(1.5), functools.partial(_clip_global, 1.5)),
]


@pytest.mark.parametrize("name, clipping, clip", CLIP_CASES, ids=[c[0] for c in CLIP_CASES])
def test_clipped_trajectory_matches_numpy(device, name, clipping, clip):
    optim = SgdConfig(gradient_clipping=clipping).init()
    got, _ = ember_trajectory(optim, STEPS, LRS, device, grad_scale=3.0)
    want = ref_trajectory(ref_sgd, STEPS, LRS, grad_scale=3.0, clip=clip)
    assert_trajectories_close(got, want)
    unclipped = ref_trajectory(ref_sgd, STEPS, LRS, grad_scale=3.0)
    assert not np.allclose(unclipped[-1]["enc.lin.weight"], want[-1]["enc.lin.weight"])  # clipping was active


def test_per_group_clipping_and_config_clipping(device):
    """The all() group clips per tensor (from the config); the conv group clips globally."""
    optim = (
        AdamConfig(grad_clipping=GradientClippingConfig.Norm(0.5))
        .init()
        .with_group(ParamGroup.from_predicate("conv"), AdamConfig(), GradientClippingConfig.GlobalNorm(0.7))
    )
    assert optim.has_gradient_clipping() and optim.grad_clipping() == GradientClipping.Norm(0.5)
    got, _ = ember_trajectory(optim, STEPS, LRS, device, grad_scale=2.0)

    def clip(grads):
        conv = {"conv.weight", "conv.bias"}
        out = _clip_global(0.7, {p: g for p, g in grads.items() if p in conv})
        out.update(_clip_norm(0.5, {p: g for p, g in grads.items() if p not in conv}))
        return out

    want = ref_trajectory(ref_adam, STEPS, LRS, grad_scale=2.0, clip=clip)
    assert_trajectories_close(got, want)


def test_global_norm_agrees_with_torch_clip_grad_norm():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    arrays = [rng.normal(size=s) for s in [(4, 3), (3,), (7,)]]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    for t, a in zip(ts, arrays):
        t.grad = torch.tensor(a)
    torch.nn.utils.clip_grad_norm_(ts, 0.9)
    backend = ember.Device("cpu").backend
    from ember.optim.clipping import clip_buckets

    (out,) = clip_buckets(GradientClipping.GlobalNorm(0.9), [(backend, [a.copy() for a in arrays])])
    for o, t in zip(out, ts):  # PyTorch adds 1e-6 to the norm, ember the smallest normal number
        np.testing.assert_allclose(o, t.grad.numpy(), rtol=2e-6)


def test_clipping_keeps_nan_and_single_tensor_api(device):
    g = ember.tensor([[1.0, -3.0], [float("nan"), 0.5]], dtype=ember.float32, device=device)
    clipped = GradientClipping.Value(1.0).clip_gradient(g).numpy()
    np.testing.assert_array_equal(clipped[0], [1.0, -1.0])
    assert math.isnan(clipped[1, 0]) and clipped[1, 1] == 0.5
    assert np.all(np.isnan(GradientClipping.Norm(1.0).clip_gradient(g).numpy()))
    ok = ember.tensor([3.0, 4.0], dtype=ember.float64, device=device)
    np.testing.assert_allclose(GradientClipping.Norm(1.0).clip_gradient(ok).numpy(), [0.6, 0.8], rtol=1e-15)
    np.testing.assert_array_equal(GradientClipping.Norm(10.0).clip_gradient(ok).numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(g.numpy()[0], [1.0, -3.0])  # the input gradient is left as it was


def test_clipping_config_validation_and_json(tmp_path):
    with pytest.raises(ValueError, match="threshold"):
        GradientClippingConfig.Value(-1.0)
    with pytest.raises(TypeError, match="construct a variant"):
        GradientClippingConfig()
    with pytest.raises(TypeError, match="GradientClippingConfig"):
        SgdConfig(gradient_clipping=0.5).init()
    config = AdamConfig(amsgrad=True, grad_clipping=GradientClippingConfig.GlobalNorm(2.0))
    path = config.save(tmp_path / "adam.json")
    assert '"GlobalNorm"' in path.read_text()
    assert AdamConfig.load(path) == config
    assert SgdConfig().with_grad_clipping(GradientClippingConfig.Norm(1.0)).gradient_clipping.max_norm == 1.0
    assert AdamConfig().with_grad_clipping(GradientClippingConfig.Value(1.0)).grad_clipping.threshold == 1.0


# ---- GradientsParams ----------------------------------------------------------------------


def _linear_problem(device, seed=0):
    ember.seed(seed)
    model = nn.LinearConfig(3, 2).init(device=device).to(ember.float64)
    rng = np.random.default_rng(seed)
    x = ember.tensor(rng.normal(size=(6, 3)), dtype=ember.float64, device=device)
    y = ember.tensor(rng.normal(size=(6, 2)), dtype=ember.float64, device=device)
    return model, x, y


def test_gradients_params_from_grads_consumes_and_skips_frozen(device):
    model, x, y = _linear_problem(device)
    model.bias.set_require_grad(False)
    grads = ((model(x) - y) ** 2).sum().backward()
    assert grads.get(model.weight.value) is not None
    gp = GradientsParams.from_grads(grads, model)
    assert len(gp) == 1 and gp.len() == 1 and model.weight.id in gp and model.bias.id not in gp
    assert grads.get(model.weight.value) is None  # moved out of the Gradients
    assert list(gp) == [model.weight.id] and gp.ids() == [model.weight.id]
    w = gp.get(model.weight.id)
    assert gp.get(int(model.weight.id)) is w and gp.get(model.weight) is w
    assert w.shape == (3, 2) and not w.is_require_grad()
    gp.to("reference")
    assert gp.get(model.weight.id).device == ember.Device("reference")
    assert gp.remove(model.weight.id) is not None and gp.is_empty() and gp.remove(model.weight.id) is None
    with pytest.raises(TypeError, match="float"):
        gp.register(model.weight.id, ember.tensor([1, 2]))


def test_gradients_params_from_params_filters():
    model, x, y = _linear_problem("reference")
    grads = ((model(x) - y) ** 2).sum().backward()
    gp = GradientsParams.from_params(grads, model, [model.bias.id])
    assert gp.ids() == [model.bias.id]
    rest = GradientsParams.from_module(grads, model)  # the weight's gradient is still there
    assert rest.ids() == [model.weight.id]


# ---- accumulation -------------------------------------------------------------------------


def test_accumulation_equals_one_step_on_the_summed_batch(device):
    model, x, y = _linear_problem(device)
    twin, _, _ = _linear_problem(device)
    acc = GradientsAccumulator()
    for rows in (slice(0, 2), slice(2, 5), slice(5, 6)):
        loss = ((model(x[rows]) - y[rows]) ** 2).sum()
        acc.accumulate(model, GradientsParams.from_grads(loss.backward(), model))
    assert acc.num_accumulated == 3
    summed = acc.grads()
    assert acc.num_accumulated == 0 and len(acc.grads()) == 0
    whole = GradientsParams.from_grads(((twin(x) - y) ** 2).sum().backward(), twin)
    for (_, p), (_, q) in zip(model.named_parameters(), twin.named_parameters()):  # same values, other ids
        np.testing.assert_allclose(summed.get(p.id).numpy(), whole.get(q.id).numpy(), rtol=1e-12)
    a, b = AdamConfig().init(), AdamConfig().init()
    model = a.step(0.1, model, summed)
    twin = b.step(0.1, twin, whole)
    for (_, p), (_, q) in zip(model.named_parameters(), twin.named_parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-12)


def test_accumulator_drops_foreign_ids_and_checks_shapes():
    model, _, _ = _linear_problem("reference")
    acc = GradientsAccumulator()
    gp = GradientsParams()
    gp.register(12345, ember.ones(3))
    gp.register(model.bias.id, ember.ones(2, dtype=ember.float64, device="reference"))
    acc.accumulate(model, gp)
    assert acc.grads().ids() == [model.bias.id]
    acc.accumulate(model, _single(model.bias.id, ember.ones(2, dtype=ember.float64, device="reference")))
    with pytest.raises(ValueError, match="shape"):
        acc.accumulate(model, _single(model.bias.id, ember.ones(3, dtype=ember.float64, device="reference")))


def _single(pid, tensor):
    gp = GradientsParams()
    gp.register(pid, tensor)
    return gp


def test_module_optimizer_end_to_end_with_autodiff_matches_torch():
    """Real backward passes through a Linear model, Adam(amsgrad) with clipping, vs torch."""
    torch = pytest.importorskip("torch")
    model, x, y = _linear_problem("cpu")
    optim = AdamConfig(amsgrad=True, grad_clipping=GradientClippingConfig.GlobalNorm(1.0)).init()
    tw = torch.tensor(model.weight.numpy().copy(), requires_grad=True)
    tb = torch.tensor(model.bias.numpy().copy(), requires_grad=True)
    topt = torch.optim.Adam([tw, tb], lr=0.05, eps=1e-5, amsgrad=True)
    tx, ty = torch.tensor(x.numpy()), torch.tensor(y.numpy())
    for _ in range(10):
        loss = ((model(x) - y) ** 2).mean()
        model = optim.step(0.05, model, GradientsParams.from_grads(loss.backward(), model))
        topt.zero_grad()
        ((tx @ tw + tb - ty) ** 2).mean().backward()
        torch.nn.utils.clip_grad_norm_([tw, tb], 1.0)
        topt.step()
    np.testing.assert_allclose(model.weight.numpy(), tw.detach().numpy(), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(model.bias.numpy(), tb.detach().numpy(), rtol=1e-6, atol=1e-8)
