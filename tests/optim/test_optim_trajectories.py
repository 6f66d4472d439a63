"""Each optimizer's 20-step parameter trajectory against a NumPy transcription of its formula
(float64) and, where the formulas agree, against torch.optim; on every backend."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from optim_cases import (
    LRS,
    assert_trajectories_close,
    ember_trajectory,
    gradient,
    initial_values,
    ref_adagrad,
    ref_adam,
    ref_lion,
    ref_rmsprop,
    ref_sgd,
    ref_trajectory,
)

import ember
from ember.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    LionConfig,
    MomentumConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)

STEPS = 20

# (id, config, NumPy reference, torch factory or None where Burn's formula has no torch twin)
CASES = [
    ("sgd", SgdConfig(), functools.partial(ref_sgd), lambda ps: __import__("torch").optim.SGD(ps, lr=0.1)),
    (
        "sgd-wd-momentum",
        SgdConfig(WeightDecayConfig(0.05), MomentumConfig()),
        functools.partial(ref_sgd, weight_decay=0.05, momentum=0.9, dampening=0.1),
        lambda ps: __import__("torch").optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.05),
    ),
    # PyTorch rejects Nesterov with dampening; compare Burn's default dampening to NumPy only
    (
        "sgd-nesterov-damp",
        SgdConfig(momentum=MomentumConfig(0.8, 0.1, True)),
        functools.partial(ref_sgd, momentum=0.8, dampening=0.1, nesterov=True),
        None,
    ),
    (
        "sgd-nesterov",
        SgdConfig(momentum=MomentumConfig(0.8, 0.0, True)),
        functools.partial(ref_sgd, momentum=0.8, dampening=0.0, nesterov=True),
        lambda ps: __import__("torch").optim.SGD(ps, lr=0.1, momentum=0.8, nesterov=True),
    ),
    (
        "adam",
        AdamConfig(),
        functools.partial(ref_adam),
        lambda ps: __import__("torch").optim.Adam(ps, lr=0.1, eps=1e-5),
    ),
    (
        "adam-amsgrad-l2",
        AdamConfig(beta_1=0.8, beta_2=0.95, amsgrad=True, weight_decay=WeightDecayConfig(0.1)),
        functools.partial(ref_adam, beta_1=0.8, beta_2=0.95, amsgrad=True, weight_decay=0.1),
        lambda ps: __import__("torch").optim.Adam(
            ps, lr=0.1, betas=(0.8, 0.95), eps=1e-5, weight_decay=0.1, amsgrad=True
        ),
    ),
    (
        "adamw",
        AdamWConfig(weight_decay=0.3),
        functools.partial(ref_adam, weight_decay=0.3, decoupled=True),
        lambda ps: __import__("torch").optim.AdamW(ps, lr=0.1, eps=1e-5, weight_decay=0.3),
    ),
    (
        "adamw-amsgrad",
        AdamWConfig(weight_decay=0.3, amsgrad=True),
        functools.partial(ref_adam, weight_decay=0.3, decoupled=True, amsgrad=True),
        lambda ps: __import__("torch").optim.AdamW(ps, lr=0.1, eps=1e-5, weight_decay=0.3, amsgrad=True),
    ),
    # cautious weight decay (arXiv:2510.12402) has no PyTorch twin
    (
        "adamw-cautious",
        AdamWConfig(weight_decay=0.5, cautious_weight_decay=True),
        functools.partial(ref_adam, weight_decay=0.5, decoupled=True, cautious=True),
        None,
    ),
    (
        "rmsprop",
        RmsPropConfig(),
        functools.partial(ref_rmsprop),
        lambda ps: __import__("torch").optim.RMSprop(ps, lr=0.1, alpha=0.99, eps=1e-5, momentum=0.9),
    ),
    (
        "rmsprop-centered-wd",
        RmsPropConfig(alpha=0.9, momentum=0.0, centered=True, weight_decay=WeightDecayConfig(0.1)),
        functools.partial(ref_rmsprop, alpha=0.9, momentum=0.0, centered=True, weight_decay=0.1),
        lambda ps: __import__("torch").optim.RMSprop(
            ps, lr=0.1, alpha=0.9, eps=1e-5, centered=True, weight_decay=0.1
        ),
    ),
    (
        "adagrad",
        AdaGradConfig(),
        functools.partial(ref_adagrad),
        lambda ps: __import__("torch").optim.Adagrad(ps, lr=0.1, eps=1e-5),
    ),
    (
        "adagrad-decay-wd",
        AdaGradConfig(lr_decay=0.1, weight_decay=WeightDecayConfig(0.2)),
        functools.partial(ref_adagrad, lr_decay=0.1, weight_decay=0.2),
        lambda ps: __import__("torch").optim.Adagrad(ps, lr=0.1, lr_decay=0.1, eps=1e-5, weight_decay=0.2),
    ),
    # Lion is in neither Burn nor PyTorch: checked against the paper's formula only
    ("lion", LionConfig(), functools.partial(ref_lion), None),
    (
        "lion-wd",
        LionConfig(beta_1=0.95, beta_2=0.98, weight_decay=0.5),
        functools.partial(ref_lion, beta_1=0.95, beta_2=0.98, weight_decay=0.5),
        None,
    ),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name, config, reference, _", CASES, ids=IDS)
def test_trajectory_matches_numpy_formula(device, name, config, reference, _):
    lrs = [lr * (0.1 if name.startswith("lion") else 1.0) for lr in LRS]
    got, _model = ember_trajectory(config.init(), STEPS, lrs, device)
    want = ref_trajectory(reference, STEPS, lrs)
    assert_trajectories_close(got, want)


@pytest.mark.parametrize(
    "name, config, reference, make_torch",
    [c for c in CASES if c[3] is not None],
    ids=[c[0] for c in CASES if c[3] is not None],
)
def test_trajectory_matches_torch(name, config, reference, make_torch):
    torch = pytest.importorskip("torch")
    values = initial_values()
    tparams = {path: torch.tensor(v, dtype=torch.float64, requires_grad=True) for path, v in values.items()}
    opt = make_torch(list(tparams.values()))
    want = []
    for k in range(STEPS):
        for path, t in tparams.items():
            t.grad = torch.from_numpy(gradient(path, t.detach().numpy()))
        for group in opt.param_groups:
            group["lr"] = LRS[k]
        opt.step()
        want.append({path: t.detach().numpy().copy() for path, t in tparams.items()})
    got, _model = ember_trajectory(config.init(), STEPS, LRS, "cpu")
    assert_trajectories_close(got, want, rtol=1e-9, atol=1e-11)


def test_float32_cpu_matches_reference_backend():
    got, _ = ember_trajectory(AdamWConfig(weight_decay=0.1).init(), STEPS, LRS, "cpu", dtype=ember.float32)
    want, _ = ember_trajectory(
        AdamWConfig(weight_decay=0.1).init(), STEPS, LRS, "reference", dtype=ember.float32
    )
    for g, w in zip(got, want):
        for path in w:
            assert g[path].dtype == np.float64  # model_values widens; the params themselves are float32
            np.testing.assert_allclose(g[path], w[path], rtol=2e-5, atol=2e-6, err_msg=path)


def test_lr_passed_at_each_step_is_used(device):
    """Replaying with the rate of step k changed changes exactly step k's update."""
    lrs = list(LRS)
    base, _ = ember_trajectory(SgdConfig().init(), 3, lrs, device)
    lrs[1] = 0.5
    changed, _ = ember_trajectory(SgdConfig().init(), 3, lrs, device)
    np.testing.assert_array_equal(base[0]["head"], changed[0]["head"])
    theta0 = base[0]["head"]
    np.testing.assert_allclose(changed[1]["head"], theta0 - 0.5 * gradient("head", theta0), rtol=1e-12)


def test_parameters_stay_leaves_with_their_ids_and_arrays(device):
    from optim_cases import Tiny, grads_for

    model = Tiny(initial_values(), device, ember.float32)
    before = {path: (p.id, p.value, p.value._data) for path, p in model.named_parameters()}
    optim = AdamConfig().init()
    for _ in range(2):
        model = optim.step(1e-2, model, grads_for(model))
    for path, p in model.named_parameters():
        pid, tensor, array = before[path]
        assert p.id == pid and p.value is tensor
        assert p.value.is_require_grad() and p.is_require_grad()
        if device == "cpu":
            assert p.value._data is array  # updated in place by the fused kernel
    assert not np.allclose(model.head.value.numpy(), initial_values()["head"])
