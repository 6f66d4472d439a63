"""Fused multi-tensor optimizer updates vs plain NumPy transcriptions of Burn's optimizers
and, where the formulas agree, vs torch.optim.

The NumPy references below are written like Burn's code (explicit first-step branch, state
created on first use) so they also check that the kernels' zero-initialised buffers give
the same first step.

Burn / PyTorch differences (only agreeing configurations are compared with torch):
* SGD: PyTorch rejects Nesterov with non-zero dampening; Burn allows it (default dampening
  0.1). Tested against NumPy only.
* Adam: Burn's step m·√(1−β2ᵗ)/(1−β1ᵗ)/(√v + ε√(1−β2ᵗ)) equals PyTorch's
  m̂/(√v̂ + ε) exactly in real arithmetic (ε enters after the bias correction in both).
* AdamW: cautious weight decay (Burn) does not exist in PyTorch. Tested against NumPy only.
* RMSprop, Adagrad: identical formulas; only the defaults differ (ε, RMSprop momentum).
* Lion: in neither framework; tested against the paper's algorithm in NumPy.
* Burn stores β, ε and momentum as f32 and computes the bias corrections in f32; ember
  computes scalars in float64.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from ember.kernels.cpu import optim_clipping as clip
from ember.kernels.cpu.optim_tables import pack_arrays
from ember.kernels.cpu.optimizer_ops import CpuOptimizerOps
from ember.kernels.families.declare import DECLINED
from ember.kernels.families.optimizer_args import (
    AdagradArgs,
    AdagradState,
    AdamArgs,
    AdamState,
    LionArgs,
    LionState,
    RmspropArgs,
    RmspropState,
    SgdArgs,
    SgdState,
)
from ember.tensor.device import as_device

STEPS = 20
CPU = as_device("cpu").backend


def _kernel(name):
    """The cpu backend's fused update itself, without the fallback to the composed default:
    a kernel that declined would leave the arrays unchanged and fail the comparisons."""
    return functools.partial(getattr(CpuOptimizerOps, name).kernel, CPU)


sgd, adam, rmsprop, adagrad, lion = map(
    _kernel, ("sgd_update", "adam_update", "rmsprop_update", "adagrad_update", "lion_update")
)
SHAPES = [(3, 5), (40_000,), (7,), (0,), (2, 3, 4), ()]  # 40k spans several work items


def make_group(seed: int, dtype=np.float64, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s).astype(dtype) for s in shapes]
    return params, rng


def reference_group(seed: int):
    """A group from ``seed`` with its generator, a copy of it for the NumPy reference, and the
    reference's per-parameter state (created on first use, as in Burn)."""
    params, rng = make_group(seed)
    return params, rng, [p.copy() for p in params], [{} for _ in params]


def grads_for(rng, params):
    return [rng.standard_normal(p.shape).astype(p.dtype) for p in params]


def zeros_like_each(arrays):
    """A zero array shaped like each of ``arrays``: a fresh state buffer per parameter."""
    return [np.zeros_like(a) for a in arrays]


def close(actual, expected, tol=1e-12):
    for i, (a, e) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol, err_msg=f"tensor {i}")


# --- NumPy transcriptions of Burn's per-parameter updates ---------------------------------


def ref_sgd(p, g, state, lr, wd, mu, damp, nesterov, use_momentum):
    g = g + wd * p
    if use_momentum:
        vel = g.copy() if state.get("v") is None else g * (1 - damp) + state["v"] * mu
        state["v"] = vel
        g = vel * mu + g if nesterov else vel
    return p - lr * g


def _adam_moments(g, state, b1, b2, amsgrad):
    """Burn's Adam moment update (state created on the first step); returns the step number
    and the second moment the update divides by (the running maximum under AMSGrad)."""
    if "t" not in state:
        state.update(t=1, m=g * (1 - b1), v=g * g * (1 - b2))
        if amsgrad:
            state["vmax"] = state["v"].copy()
    else:
        state["m"] = state["m"] * b1 + g * (1 - b1)
        state["v"] = state["v"] * b2 + g * g * (1 - b2)
        if amsgrad:
            state["vmax"] = np.maximum(state["vmax"], state["v"])
        state["t"] += 1
    return state["t"], state["vmax"] if amsgrad else state["v"]


def ref_adam(p, g, state, lr, b1, b2, eps, wd, amsgrad):
    g = g + wd * p
    t, v = _adam_moments(g, state, b1, b2, amsgrad)
    bc2 = np.sqrt(1 - b2**t)
    return p - lr * (state["m"] * (bc2 / (1 - b1**t)) / (np.sqrt(v) + eps * bc2))


def ref_adamw(p, g, state, lr, b1, b2, eps, wd, amsgrad, cautious):
    t, v = _adam_moments(g, state, b1, b2, amsgrad)
    delta = (state["m"] / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    rate = lr * wd
    if cautious:
        differ = (p >= 0) != (state["m"] >= 0)
        decayed = p - np.where(differ, 0.0, p * rate)
    else:
        decayed = p * (1 - rate)
    return decayed - lr * delta


def ref_rmsprop(p, g, state, lr, alpha, eps, wd, mu, centered):
    g = g + wd * p
    fresh = "s" not in state
    state["s"] = g * g * (1 - alpha) if fresh else state["s"] * alpha + g * g * (1 - alpha)
    avg = state["s"]
    if centered:
        state["ga"] = g * (1 - alpha) if fresh else state["ga"] * alpha + g * (1 - alpha)
        avg = state["s"] - state["ga"] ** 2
    d = g / (np.sqrt(avg) + eps)
    if mu > 0:
        state["b"] = d if "b" not in state else state["b"] * mu + d
        d = state["b"]
    return p - lr * d


def ref_adagrad(p, g, state, lr, lr_decay, eps, wd):
    g = g + wd * p
    if "t" not in state:
        state.update(t=1, sum=g * g)
    else:
        state["sum"] = state["sum"] + g * g
        state["t"] += 1
    new_lr = lr / (1 + (state["t"] - 1) * lr_decay)
    return p - g / (np.sqrt(state["sum"]) + eps) * new_lr


def ref_lion(p, g, state, lr, b1, b2, wd):
    m = state.get("m", np.zeros_like(p))
    direction = np.sign(b1 * m + (1 - b1) * g)
    state["m"] = b2 * m + (1 - b2) * g
    return p * (1 - lr * wd) - lr * direction


# --- kernels vs NumPy, 20 steps, float64 --------------------------------------------------


def lr_at(k):
    return 0.05 / (1 + 0.1 * k)  # a changing rate, like a scheduler would give


@pytest.mark.parametrize(
    "mu,damp,nesterov,wd",
    [
        (0.0, 0.0, False, 0.0),
        (0.0, 0.0, False, 0.01),
        (0.9, 0.1, False, 0.01),
        (0.9, 0.1, True, 0.0),
        (0.8, 0.0, True, 0.05),
    ],
)
def test_sgd_matches_numpy(mu, damp, nesterov, wd):
    params, rng, ref, states = reference_group(1)
    use_momentum = mu > 0
    bufs = zeros_like_each(params) if use_momentum else None
    for k in range(STEPS):
        grads = grads_for(rng, params)
        sgd(params, grads, SgdState(bufs), SgdArgs(lr_at(k), wd, mu, damp, nesterov, first_step=(k == 0)))
        ref = [
            ref_sgd(p, g, s, lr_at(k), wd, mu, damp, nesterov, use_momentum)
            for p, g, s in zip(ref, grads, states)
        ]
    close(params, ref)


@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("wd", [0.0, 0.02])
def test_adam_matches_numpy(amsgrad, wd):
    params, rng, ref, states = reference_group(2)
    m, v = zeros_like_each(params), zeros_like_each(params)
    vmax = zeros_like_each(params) if amsgrad else None
    for k in range(STEPS):
        grads = grads_for(rng, params)
        adam(params, grads, AdamState(m, v, vmax), AdamArgs(lr_at(k), 0.9, 0.999, 1e-5, wd, steps=k + 1))
        ref = [
            ref_adam(p, g, s, lr_at(k), 0.9, 0.999, 1e-5, wd, amsgrad) for p, g, s in zip(ref, grads, states)
        ]
    close(params, ref)
    close(m, [s["m"] for s in states])


@pytest.mark.parametrize("amsgrad,cautious", [(False, False), (True, False), (False, True), (True, True)])
def test_adamw_matches_numpy(amsgrad, cautious):
    params, rng, ref, states = reference_group(3)
    m, v = zeros_like_each(params), zeros_like_each(params)
    vmax = zeros_like_each(params) if amsgrad else None
    wd = 0.5  # large so that the decay (and the cautious mask) matters at 1e-12
    for k in range(STEPS):
        grads = grads_for(rng, params)
        args = AdamArgs(lr_at(k), 0.9, 0.99, 1e-5, wd, decoupled=True, cautious=cautious, steps=k + 1)
        adam(params, grads, AdamState(m, v, vmax), args)
        ref = [
            ref_adamw(p, g, s, lr_at(k), 0.9, 0.99, 1e-5, wd, amsgrad, cautious)
            for p, g, s in zip(ref, grads, states)
        ]
    close(params, ref)


def test_cautious_decay_skips_disagreeing_signs():
    # One step, zero gradient except where noted: m = (1-b1) g, so the mask is sign(theta)
    # vs sign(g); lr*update is identical in both runs, only the decay differs.
    p = np.array([1.0, 1.0, -1.0, -1.0])
    g = np.array([0.5, -0.5, 0.5, -0.5])
    outs = {}
    for cautious in (False, True):
        q = p.copy()
        args = AdamArgs(0.1, weight_decay=0.5, decoupled=True, cautious=cautious)
        adam([q], [g], AdamState([np.zeros(4)], [np.zeros(4)]), args)
        outs[cautious] = q
    decay = 0.1 * 0.5 * p  # lr * wd * theta, skipped by cautious where signs differ
    np.testing.assert_allclose(outs[False] - outs[True], -decay * np.array([0, 1, 1, 0]), atol=1e-15)


@pytest.mark.parametrize(
    "centered,mu,wd", [(False, 0.0, 0.0), (True, 0.0, 0.01), (False, 0.9, 0.0), (True, 0.9, 0.01)]
)
def test_rmsprop_matches_numpy(centered, mu, wd):
    params, rng, ref, states = reference_group(4)
    s = zeros_like_each(params)
    ga = zeros_like_each(params) if centered else None
    bufs = zeros_like_each(params) if mu > 0 else None
    for k in range(STEPS):
        grads = grads_for(rng, params)
        rmsprop(
            params, grads, RmspropState(s, ga, bufs), RmspropArgs(lr_at(k) / 10, 0.99, 1e-5, wd, mu, centered)
        )
        ref = [
            ref_rmsprop(p, g, st, lr_at(k) / 10, 0.99, 1e-5, wd, mu, centered)
            for p, g, st in zip(ref, grads, states)
        ]
    close(params, ref)


@pytest.mark.parametrize("lr_decay,wd", [(0.0, 0.0), (0.1, 0.01)])
def test_adagrad_matches_numpy(lr_decay, wd):
    params, rng, ref, states = reference_group(5)
    sums = zeros_like_each(params)
    for k in range(STEPS):
        grads = grads_for(rng, params)
        adagrad(params, grads, AdagradState(sums), AdagradArgs(lr_at(k), lr_decay, 1e-5, wd, steps=k + 1))
        ref = [ref_adagrad(p, g, st, lr_at(k), lr_decay, 1e-5, wd) for p, g, st in zip(ref, grads, states)]
    close(params, ref)


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_lion_matches_numpy(wd):
    params, rng, ref, states = reference_group(6)
    m = zeros_like_each(params)
    for k in range(STEPS):
        grads = grads_for(rng, params)
        lion(params, grads, LionState(m), LionArgs(lr_at(k) / 10, 0.9, 0.99, wd))
        ref = [ref_lion(p, g, st, lr_at(k) / 10, 0.9, 0.99, wd) for p, g, st in zip(ref, grads, states)]
    close(params, ref)
    close(m, [st["m"] for st in states])


def test_lion_first_step_is_signed_gradient():
    p = np.array([1.0, 2.0, 3.0])
    g = np.array([0.3, -2.0, 0.0])
    lion([p], [g], LionState([np.zeros(3)]), LionArgs(0.1, weight_decay=0.0))
    np.testing.assert_array_equal(p, [0.9, 2.1, 3.0])


def test_per_tensor_lr_and_steps():
    # Tensor 1 joins the optimizer two steps late: its own step count starts at 1.
    params, rng = make_group(7, shapes=[(50,), (20_000,)])
    ref = [p.copy() for p in params]
    states = [{}, {}]
    m, v = zeros_like_each(params), zeros_like_each(params)
    for k in range(6):
        grads = grads_for(rng, params)
        if k < 2:
            grads[1] = np.zeros_like(grads[1])
            adam(params[:1], grads[:1], AdamState(m[:1], v[:1]), AdamArgs(0.01, steps=k + 1))
            ref[0] = ref_adam(ref[0], grads[0], states[0], 0.01, 0.9, 0.999, 1e-5, 0.0, False)
            continue
        adam(params, grads, AdamState(m, v), AdamArgs([0.01, 0.002], steps=[k + 1, k - 1]))
        ref = [
            ref_adam(ref[0], grads[0], states[0], 0.01, 0.9, 0.999, 1e-5, 0.0, False),
            ref_adam(ref[1], grads[1], states[1], 0.002, 0.9, 0.999, 1e-5, 0.0, False),
        ]
    close(params, ref)


def test_packed_tables_equal_lists():
    params, rng = make_group(8)
    twin = [p.copy() for p in params]
    m1, v1 = zeros_like_each(params), zeros_like_each(params)
    m2, v2 = zeros_like_each(params), zeros_like_each(params)
    tp, tm, tv = pack_arrays(twin), pack_arrays(m2), pack_arrays(v2)
    for k in range(3):
        grads = grads_for(rng, params)
        adam(params, grads, AdamState(m1, v1), AdamArgs(0.01, steps=k + 1))
        adam(tp, pack_arrays(grads, writeable=False), AdamState(tm, tv), AdamArgs(0.01, steps=k + 1))
    close(twin, params, tol=0)


def test_non_contiguous_gradient_is_read_correctly():
    p = np.ones((4, 6))
    g = np.arange(24.0).reshape(6, 4).T  # Fortran-ordered view
    sgd([p], [g], SgdState(), SgdArgs(0.5))
    np.testing.assert_array_equal(p, 1 - 0.5 * g)


def test_float32_kernels_track_float64():
    params64, rng = make_group(9)
    params32 = [p.astype(np.float32) for p in params64]
    state = {
        dt: ([np.zeros_like(p) for p in ps], [np.zeros_like(p) for p in ps])
        for dt, ps in ((32, params32), (64, params64))
    }
    for k in range(STEPS):
        grads = grads_for(rng, params64)
        for dt, ps in ((32, params32), (64, params64)):
            gs = [g.astype(ps[0].dtype) for g in grads]
            adam(
                ps, gs, AdamState(*state[dt]), AdamArgs(1e-3, weight_decay=1e-2, decoupled=True, steps=k + 1)
            )
    assert all(p.dtype == np.float32 for p in params32)
    close(params32, params64, tol=2e-5)


def test_empty_group_is_a_no_op():
    adam([], [], AdamState([], []), AdamArgs(0.1))
    sgd([], [], SgdState(), SgdArgs(0.1))
    assert clip.global_norm([]) == 0.0
    assert clip.clip_by_global_norm([], 1.0) == 0.0


# --- validation ----------------------------------------------------------------------------


def test_rejects_mismatched_inputs():
    p = [np.zeros((2, 3)), np.zeros(4)]
    z = [np.zeros((2, 3)), np.zeros(4)]
    with pytest.raises(ValueError, match=r"grads\[1\]` has shape \(5,\) but `params\[1\]` has shape \(4,\)"):
        sgd(p, [np.zeros((2, 3)), np.zeros(5)], SgdState(), SgdArgs(0.1))
    with pytest.raises(ValueError, match="`grads` has 1 arrays but `params` has 2"):
        sgd(p, z[:1], SgdState(), SgdArgs(0.1))
    with pytest.raises(TypeError, match="`grads` has dtype float32 but `params` has float64"):
        sgd(p, [a.astype(np.float32) for a in z], SgdState(), SgdArgs(0.1))
    with pytest.raises(TypeError, match=r"`params\[1\]` has dtype float32"):
        sgd([p[0], p[1].astype(np.float32)], z, SgdState(), SgdArgs(0.1))
    # other dtypes decline to the composed default; the tables refuse them
    assert sgd([np.zeros(3, np.int64)], [np.zeros(3, np.int64)], SgdState(), SgdArgs(0.1)) is DECLINED
    with pytest.raises(TypeError, match="float32 or float64"):
        pack_arrays([np.zeros(3, np.int64)])
    with pytest.raises(TypeError, match="must be a NumPy array"):
        pack_arrays([np.zeros(2), [1.0, 2.0]])


def test_rejects_unwritable_or_strided_state():
    with pytest.raises(ValueError, match=r"must be C-contiguous"):
        sgd([np.zeros((4, 4)).T[:, :2]], [np.zeros((4, 2))], SgdState(), SgdArgs(0.1))
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"`m\[0\]` \(shape \(3,\)\) is read-only"):
        adam([np.zeros(3)], [np.zeros(3)], AdamState([frozen], [np.zeros(3)]), AdamArgs(0.1))


def test_rejects_bad_hyperparameters():
    p, g = [np.zeros(3)], [np.zeros(3)]
    with pytest.raises(ValueError, match="need `momentum_bufs`"):
        sgd(p, g, SgdState(), SgdArgs(0.1, momentum=0.9))
    with pytest.raises(ValueError, match="cautious weight decay applies to decoupled"):
        AdamArgs(0.1, cautious=True)
    with pytest.raises(ValueError, match=r"`beta1` must be in \[0, 1\), got 1.0"):
        AdamArgs(0.1, beta1=1.0)
    with pytest.raises(ValueError, match="`steps` must be integers >= 1"):
        AdamArgs(0.1, steps=0)
    with pytest.raises(ValueError, match=r"`lr` must be a scalar or hold one value per tensor \(1\)"):
        sgd(p, g, SgdState(), SgdArgs([0.1, 0.2]))
    with pytest.raises(ValueError, match="`lr` must be finite"):
        SgdArgs(float("nan"))
    with pytest.raises(ValueError, match="`grad_avg` is required"):
        rmsprop(p, g, RmspropState([np.zeros(3)]), RmspropArgs(0.1, momentum=0.0, centered=True))
    with pytest.raises(ValueError, match="`max_norm` must be >= 0"):
        clip.clip_by_global_norm(g, -1.0)


# --- clipping -------------------------------------------------------------------------------


def test_clip_by_value_matches_burn_and_keeps_nan():
    rng = np.random.default_rng(10)
    grads = [rng.standard_normal(s) * 3 for s in [(5, 7), (50_000,)]]
    grads[0][0, 0] = np.nan
    expected = [np.where(g > 1.5, 1.5, np.where(g < -1.5, -1.5, g)) for g in grads]
    clip.clip_by_value(grads, 1.5)
    for got, want in zip(grads, expected):
        np.testing.assert_array_equal(got, want)
    assert np.isnan(grads[0][0, 0])


def test_clip_by_norm_per_tensor_is_burns_rule():
    rng = np.random.default_rng(11)
    grads = [rng.standard_normal(s) for s in [(10,), (30_000,), (2, 2)]]
    grads[2] *= 1e-3  # below the bound: untouched
    before = [g.copy() for g in grads]
    norms = clip.clip_by_norm_per_tensor(grads, 2.0)
    tiny = np.finfo(np.float64).tiny
    for got, g, n in zip(grads, before, norms):
        assert n == pytest.approx(np.linalg.norm(g), rel=1e-12)
        np.testing.assert_allclose(got, g * min(1.0, 2.0 / (np.linalg.norm(g) + tiny)), rtol=1e-12)
    np.testing.assert_array_equal(grads[2], before[2])


def test_global_norm_and_clip():
    rng = np.random.default_rng(12)
    grads = [rng.standard_normal(s).astype(np.float32) for s in [(100, 300), (70_000,), (3,)]]
    exact = np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads))
    assert clip.global_norm(grads) == pytest.approx(exact, rel=1e-12)
    before = [g.copy() for g in grads]
    total = clip.clip_by_global_norm(grads, 10.0)
    assert total == pytest.approx(exact, rel=1e-12)
    after = np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads))
    assert after == pytest.approx(10.0, rel=1e-6)
    for got, g in zip(grads, before):
        np.testing.assert_allclose(got, g * np.float32(10.0 / exact), rtol=1e-6)


def test_global_clip_with_nan_poisons_everything_like_torch():
    grads = [np.array([1.0, np.nan]), np.array([2.0])]
    assert np.isnan(clip.clip_by_global_norm(grads, 1.0))
    assert np.isnan(grads[1][0])


# --- torch.optim oracle (float64, configurations whose formulas agree) ---------------------


@pytest.fixture
def torch():
    """torch with one intra-op thread: these tensors are tiny, and OpenMP workers spinning
    on a busy 2-core machine would cost seconds per test."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


def run_torch(torch, seed, optimizer, steps=STEPS, **options):
    """``steps`` of ``torch.optim.<optimizer>(**options)`` (its per-tensor loop, foreach=False)
    on a group from ``seed``, the learning rate following lr_at: the initial params, the
    gradients of each step, the final params."""
    params, rng = make_group(seed)
    tparams = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in params]
    opt = getattr(torch.optim, optimizer)(tparams, foreach=False, **options)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: lr_at(k) / lr_at(0))
    grads_seq = []
    for _ in range(steps):
        grads = grads_for(rng, params)
        grads_seq.append(grads)
        for t, g in zip(tparams, grads):
            t.grad = torch.from_numpy(g.copy())
        opt.step()
        sched.step()
    return params, grads_seq, [t.detach().numpy() for t in tparams]


@pytest.mark.torch
@pytest.mark.parametrize("mu,damp,nesterov,wd", [(0.9, 0.1, False, 0.01), (0.9, 0.0, True, 0.01)])
def test_sgd_matches_torch(mu, damp, nesterov, wd, torch):
    params, grads_seq, expected = run_torch(
        torch, 20, "SGD", lr=lr_at(0), momentum=mu, dampening=damp, nesterov=nesterov, weight_decay=wd
    )
    bufs = zeros_like_each(params)
    for k, grads in enumerate(grads_seq):
        sgd(params, grads, SgdState(bufs), SgdArgs(lr_at(k), wd, mu, damp, nesterov, k == 0))
    close(params, expected, tol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize(
    "decoupled,betas,wd,amsgrad,seed",
    [
        (False, (0.9, 0.999), 0.0, False, 21),
        (False, (0.9, 0.999), 0.01, True, 21),
        (True, (0.9, 0.99), 0.3, False, 22),
        (True, (0.9, 0.99), 0.3, True, 22),
    ],
)
def test_adam_and_adamw_match_torch(decoupled, betas, wd, amsgrad, seed, torch):
    params, grads_seq, expected = run_torch(
        torch,
        seed,
        "AdamW" if decoupled else "Adam",
        lr=lr_at(0),
        betas=betas,
        eps=1e-5,
        weight_decay=wd,
        amsgrad=amsgrad,
    )
    m, v = zeros_like_each(params), zeros_like_each(params)
    vmax = zeros_like_each(params) if amsgrad else None
    for k, grads in enumerate(grads_seq):
        args = AdamArgs(lr_at(k), *betas, 1e-5, wd, decoupled=decoupled, steps=k + 1)
        adam(params, grads, AdamState(m, v, vmax), args)
    close(params, expected, tol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("centered,mu", [(True, 0.9), (False, 0.0)])
def test_rmsprop_matches_torch(centered, mu, torch):
    params, grads_seq, expected = run_torch(
        torch,
        23,
        "RMSprop",
        lr=lr_at(0) / 10,
        alpha=0.99,
        eps=1e-5,
        weight_decay=0.01,
        momentum=mu,
        centered=centered,
    )
    s = zeros_like_each(params)
    ga = zeros_like_each(params) if centered else None
    bufs = zeros_like_each(params) if mu else None
    for k, grads in enumerate(grads_seq):
        args = RmspropArgs(lr_at(k) / 10, 0.99, 1e-5, 0.01, mu, centered)
        rmsprop(params, grads, RmspropState(s, ga, bufs), args)
    close(params, expected, tol=1e-6)


@pytest.mark.torch
def test_adagrad_matches_torch(torch):
    params, grads_seq, expected = run_torch(
        torch, 24, "Adagrad", lr=lr_at(0), lr_decay=0.05, weight_decay=0.01, eps=1e-5
    )
    sums = zeros_like_each(params)
    for k, grads in enumerate(grads_seq):
        adagrad(params, grads, AdagradState(sums), AdagradArgs(lr_at(k), 0.05, 1e-5, 0.01, steps=k + 1))
    close(params, expected, tol=1e-6)


@pytest.mark.torch
def test_global_clip_matches_torch(torch):
    rng = np.random.default_rng(25)
    grads = [rng.standard_normal(s) for s in [(40, 50), (30_000,)]]
    tparams = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
    for t, g in zip(tparams, grads):
        t.grad = torch.from_numpy(g.copy())
    expected_norm = torch.nn.utils.clip_grad_norm_(tparams, 3.0)
    norm = clip.clip_by_global_norm(grads, 3.0, eps=1e-6)
    assert norm == pytest.approx(float(expected_norm), rel=1e-12)
    close(grads, [t.grad.numpy() for t in tparams], tol=1e-12)
