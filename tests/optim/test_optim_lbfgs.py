"""Lbfgs: parameter trajectories of a small MLP against ``torch.optim.LBFGS`` with a closure
(fixed steps and strong-Wolfe line search, a short history that drops old pairs), float64
on every backend; the line search alone; Burn's closure-call count and stopping rules;
frozen and gradient-less parameters; records in Burn's layout and resume equality."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.optim import GradientsParams, Lbfgs, LbfgsConfig, LbfgsRecord, LineSearchFn
from ember.optim.line_search import cubic_interpolate, strong_wolfe

RNG = np.random.default_rng(0)
X = RNG.standard_normal((16, 3))
Y = np.sin(X.sum(1, keepdims=True)) + 0.1 * X[:, :1]
W1, B1 = RNG.uniform(-0.8, 0.8, (3, 5)), RNG.uniform(-0.5, 0.5, (5,))
W2, B2 = RNG.uniform(-0.8, 0.8, (5, 1)), RNG.uniform(-0.5, 0.5, (1,))


class Mlp(nn.Module):
    def __init__(self, device):
        def param(v):
            return nn.Param(ember.tensor(v, dtype=ember.float64, device=device))

        self.w1, self.b1, self.w2, self.b2 = param(W1), param(B1), param(W2), param(B2)

    def forward(self, x):
        return (x @ self.w1 + self.b1).tanh() @ self.w2 + self.b2


def make_closure(device, counter=None):
    x = ember.tensor(X, device=device)
    y = ember.tensor(Y, device=device)

    def closure(model):
        if counter is not None:
            counter.append(1)
        loss = ((model.forward(x) - y) ** 2).mean()
        return loss, GradientsParams.from_grads(loss.backward(), model)

    return closure


def values(model) -> list[np.ndarray]:
    return [p.value.numpy().copy() for _, p in model.named_parameters()]


def torch_trajectory(torch, steps, lr, **kw):
    params = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (W1, B1, W2, B2)]
    x, y = torch.from_numpy(X), torch.from_numpy(Y)
    opt = torch.optim.LBFGS(params, lr=lr, **kw)

    def closure():
        opt.zero_grad()
        loss = (((x @ params[0] + params[1]).tanh() @ params[2] + params[3] - y) ** 2).mean()
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        opt.step(closure)
        out.append([p.detach().numpy().copy() for p in params])
    return out


CASES = {
    "fixed-step": (0.4, dict(max_iter=7, history_size=3), None),
    "strong-wolfe": (1.0, dict(max_iter=6, history_size=4), "strong_wolfe"),
    "strong-wolfe-long-history": (1.0, dict(max_iter=10), "strong_wolfe"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_trajectory_matches_torch(device, name):
    torch = pytest.importorskip("torch")
    lr, kw, line_search = CASES[name]
    want = torch_trajectory(torch, 3, lr, line_search_fn=line_search, **kw)
    config = LbfgsConfig(
        max_iter=kw["max_iter"], history_size=kw.get("history_size", 100), line_search_fn=line_search
    )
    optim, model, closure = config.init(), Mlp(device), make_closure(device)
    for step, expected in enumerate(want):
        model, loss = optim.step(lr, model, closure)
        assert np.isfinite(loss)
        for k, (got, exp) in enumerate(zip(values(model), expected)):
            np.testing.assert_allclose(got, exp, rtol=1e-8, atol=1e-10, err_msg=f"step {step + 1}, param {k}")


def test_loss_decreases_and_returns_the_last_evaluated_loss(device):
    optim = LbfgsConfig(line_search_fn=LineSearchFn.StrongWolfe).init()
    model, closure = Mlp(device), make_closure(device)
    first = float(closure(model)[0].item())
    model, loss = optim.step(1.0, model, closure)
    assert loss == pytest.approx(float(closure(model)[0].item()), rel=1e-12)
    assert loss < 0.5 * first


def test_fixed_step_calls_the_closure_once_per_iteration_plus_one(device):
    calls = []
    optim = LbfgsConfig(max_iter=4, tolerance_grad=0.0, tolerance_change=0.0).init()
    model = Mlp(device)
    optim.step(0.1, model, make_closure(device, calls))
    assert len(calls) == 5  # Burn re-evaluates after every iteration (PyTorch skips the last)
    assert optim.g_iter == 4 and len(optim.history_s) == 3


def test_max_eval_bounds_the_line_search(device):
    calls = []
    optim = LbfgsConfig(max_iter=50, max_eval=6, line_search_fn="strong_wolfe").init()
    optim.step(1.0, Mlp(device), make_closure(device, calls))
    assert len(calls) <= 7  # the first evaluation, then at most max_eval - 1 more (+1 inside a search)


def test_already_optimal_module_is_left_alone(device):
    class Flat(nn.Module):
        def __init__(self):
            self.w = nn.Param(ember.tensor(np.ones((2, 2)), device=device))

    model, calls = Flat(), []

    def closure(m):
        calls.append(1)
        loss = (m.w * 0.0).sum()
        return loss, GradientsParams.from_grads(loss.backward(), m)

    before = values(model)
    optim = LbfgsConfig().init()
    model, loss = optim.step(1.0, model, closure)
    assert loss == 0.0 and len(calls) == 1 and optim.g_iter == 0
    np.testing.assert_array_equal(values(model)[0], before[0])


def test_frozen_and_gradient_less_parameters_do_not_move(device):
    model = Mlp(device)
    model.b2.set_require_grad(False)
    closure = make_closure(device)

    def without_b1(m):
        loss, grads = closure(m)
        grads.remove(m.b1.id)  # a trainable parameter without a gradient counts as zero
        return loss, grads

    ids = [p.id for _, p in model.named_parameters()]
    model, _ = LbfgsConfig(max_iter=5).init().step(0.3, model, without_b1)
    np.testing.assert_array_equal(model.b2.value.numpy(), B2)
    np.testing.assert_array_equal(model.b1.value.numpy(), B1)
    assert not np.allclose(model.w1.value.numpy(), W1)
    assert [p.id for _, p in model.named_parameters()] == ids and model.w1.value.is_require_grad()


def test_record_layout_is_burns_and_resume_equals_uninterrupted(device, tmp_path):
    config = LbfgsConfig(max_iter=4, history_size=3, line_search_fn=LineSearchFn.StrongWolfe)
    optim, model, closure = config.init(), Mlp(device), make_closure(device)
    for _ in range(2):
        model, _ = optim.step(1.0, model, closure)
    rec = optim.to_record()
    n = len(optim.history_s)
    assert n == 3 and rec.scalars["history_s.len"] == n and rec.scalars["history_y.len"] == n
    assert set(rec.tensors) == {f"history_{v}.{i}" for v in "sy" for i in range(n)} | {"d", "prev_flat_grad"}
    g_iter = rec.scalars["g_iter"]
    assert g_iter == optim.g_iter and 5 <= g_iter <= 8 and isinstance(rec.scalars["t"], float)
    assert rec.tensors["d"].shape == (3 * 5 + 5 + 5 + 1,)
    with ember.record.load(optim.save(tmp_path / "lbfgs")) as raw:
        assert all(view.param_id is None for view in raw.tensors.values())
        assert isinstance(raw.scalars["g_iter"], ember.record.UInt)
    model.save_file(tmp_path / "model")

    for _ in range(2):
        model, _ = optim.step(1.0, model, closure)
    resumed = Mlp(device)
    resumed.load_file(tmp_path / "model.bpk")
    loaded = config.init().load(tmp_path / "lbfgs.bpk")
    assert loaded.g_iter == g_iter and len(loaded.history_y) == 3
    for _ in range(2):
        resumed, _ = loaded.step(1.0, resumed, closure)
    for got, want in zip(values(resumed), values(model)):
        np.testing.assert_array_equal(got, want)


def test_incomplete_record_keeps_the_state():
    optim = LbfgsConfig().init()
    optim.load_record(LbfgsRecord({"d": np.ones(3)}, {"history_s.len": ember.record.UInt(1), "g_iter": 2}))
    assert optim.g_iter == 0 and optim.d is None
    restored = Lbfgs().from_bytes(
        LbfgsRecord({}, {"history_s.len": 0, "history_y.len": 0, "g_iter": 5}).to_bytes()
    )
    assert restored.g_iter == 5 and restored.t is None and restored.history_s == []


def test_cubic_interpolate_finds_a_cubic_minimum():
    def f(x):
        return (x - 1.0) ** 3 - 3.0 * (x - 1.0)  # local minimum at x = 2

    def df(x):
        return 3.0 * (x - 1.0) ** 2 - 3.0

    assert cubic_interpolate(1.5, f(1.5), df(1.5), 3.0, f(3.0), df(3.0)) == pytest.approx(2.0, rel=1e-12)
    assert cubic_interpolate(3.0, f(3.0), df(3.0), 1.5, f(1.5), df(1.5)) == pytest.approx(2.0, rel=1e-12)
    assert cubic_interpolate(1.5, f(1.5), df(1.5), 3.0, f(3.0), df(3.0), (2.5, 4.0)) == 2.5
    # no real minimum: the middle of the bounds
    assert cubic_interpolate(0.0, 0.0, 2.0, 1.0, 1.0, 2.0) == 0.5


def test_strong_wolfe_step_meets_both_conditions():
    def objective_at(t):
        x = ember.tensor(np.array([2.0 + t * -1.0, -1.0 + t * 0.5]))
        loss = float((x**4).sum().item()) + float((x * x).sum().item())
        return loss, 4.0 * x**3 + 2.0 * x

    f0, g0 = objective_at(0.0)
    d = ember.tensor(np.array([-1.0, 0.5]))
    gtd = float((g0 * d).sum().item())
    f, g, t, evals = strong_wolfe(objective_at, 0.01, d, f0, g0, gtd)
    assert f <= f0 + 1e-4 * t * gtd
    assert abs(float((g * d).sum().item())) <= -0.9 * gtd
    assert evals >= 2 and t > 0.01  # the first, tiny step had to be extrapolated


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_iter": 0}, "max_iter"),
        ({"history_size": -1}, "history_size"),
        ({"tolerance_grad": -1.0}, "tolerance_grad"),
        ({"max_eval": 0}, "max_eval"),
        ({"line_search_fn": "backtracking"}, "line_search_fn"),
    ],
)
def test_bad_config_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LbfgsConfig(**kwargs).init()


def test_closure_errors_are_clear(device):
    optim = LbfgsConfig().init()
    with pytest.raises(TypeError, match=r"\(loss, GradientsParams\)"):
        optim.step(1.0, Mlp(device), lambda m: 1.0)
    with pytest.raises(TypeError, match="GradientsParams"):
        optim.step(1.0, Mlp(device), lambda m: (1.0, {}))
    with pytest.raises(ValueError, match="lr"):
        optim.step(float("nan"), Mlp(device), make_closure(device))
