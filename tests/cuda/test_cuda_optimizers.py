"""Multi-tensor SGD and Adam updates on the cuda backend against NumPy, over a few steps, and
against the composed default (``ember.kernels.families.optimizer``) on the same args.

The parameter list mixes tensors smaller than a chunk, one spanning two chunks (4096
elements each), a 0-d tensor and an empty one, so the chunk table is exercised.
"""

from __future__ import annotations

import numpy as np
import pytest

from ember.kernels import cuda as K
from ember.kernels.families.optimizer_args import AdamArgs, AdamState, SgdArgs, SgdState
from ember.kernels.reference import ReferenceBackend

RNG = np.random.default_rng(5)
SHAPES = [(5, 3), (2, 3000), (), (0, 4), (7,)]


def _params(dtype):
    return [RNG.standard_normal(s).astype(dtype) for s in SHAPES]


def _grads(dtype):
    return [RNG.standard_normal(s).astype(dtype) for s in SHAPES]


def _tol(dtype):
    return {np.float64: 1e-12, np.float32: 2e-6, np.float16: 2e-3}[dtype]


def _check(xp, got, want, dtype, what):
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(
            xp.asnumpy(g).astype(np.float64),
            w,
            rtol=_tol(dtype) * 10,
            atol=_tol(dtype),
            err_msg=f"{what}[{i}]",
        )


@pytest.mark.parametrize(
    "dtype,state_dtype", [(np.float32, np.float32), (np.float64, np.float64), (np.float16, np.float32)]
)
@pytest.mark.parametrize(
    "momentum,dampening,nesterov", [(0.0, 0.0, False), (0.9, 0.1, False), (0.8, 0.0, True)]
)
def test_sgd_update_matches_numpy(xp, dtype, state_dtype, momentum, dampening, nesterov):
    wd = 0.01
    lr = [0.1, 0.05, 0.2, 0.1, 0.3]
    host = _params(dtype)
    params = [xp.asarray(p) for p in host]
    bufs = [xp.zeros(p.shape, dtype=state_dtype) for p in host] if momentum else None
    ref_p = [p.astype(np.float64) for p in host]
    ref_b = [np.zeros(p.shape) for p in host]
    for step in range(3):
        grads = _grads(dtype)
        args = SgdArgs(lr, wd, momentum, dampening, nesterov, first_step=step == 0)
        K.sgd_update(params, [xp.asarray(g) for g in grads], SgdState(bufs), args)
        for i, g in enumerate(grads):
            d = g.astype(np.float64) + wd * ref_p[i]
            if momentum:
                ref_b[i] = d if step == 0 else momentum * ref_b[i] + (1 - dampening) * d
                d = d + momentum * ref_b[i] if nesterov else ref_b[i]
            ref_p[i] = ref_p[i] - lr[i] * d
            if dtype == np.float16:  # the kernel stores float16 parameters after each step
                ref_p[i] = ref_p[i].astype(np.float16).astype(np.float64)
        _check(xp, params, ref_p, dtype, "params")
        if momentum:
            _check(xp, bufs, ref_b, np.float64 if dtype == np.float64 else np.float32, "momentum")


def _adam_reference(p, g, m, v, vmax, lr, b1, b2, eps, wd, decoupled, cautious, t):
    if not decoupled:
        g = g + wd * p
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    if vmax is not None:
        vmax = np.maximum(vmax, v)
    vu = v if vmax is None else vmax
    update = (m / (1 - b1**t)) / (np.sqrt(vu / (1 - b2**t)) + eps)
    if decoupled and cautious:
        p = np.where((p >= 0) == (m >= 0), p - lr * wd * p, p)
    elif decoupled:
        p = p * (1 - lr * wd)
    return p - lr * update, m, v, vmax


@pytest.mark.parametrize(
    "dtype,state_dtype",
    [(np.float32, np.float32), (np.float64, np.float64), (np.float16, np.float32), (np.float16, np.float16)],
)
@pytest.mark.parametrize("variant", ["adam", "adamw", "cautious", "amsgrad"])
def test_adam_update_matches_numpy(xp, dtype, state_dtype, variant):
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-5, 0.05
    decoupled = variant in ("adamw", "cautious")
    host = _params(dtype)
    params = [xp.asarray(p) for p in host]
    m = [xp.zeros(p.shape, dtype=state_dtype) for p in host]
    v = [xp.zeros(p.shape, dtype=state_dtype) for p in host]
    vmax = [xp.zeros(p.shape, dtype=state_dtype) for p in host] if variant == "amsgrad" else None
    ref = [
        [
            p.astype(np.float64),
            np.zeros(p.shape),
            np.zeros(p.shape),
            np.zeros(p.shape) if vmax is not None else None,
        ]
        for p in host
    ]
    for t in (1, 2, 3):
        grads = _grads(dtype)
        args = AdamArgs(lr, b1, b2, eps, wd, decoupled, cautious=variant == "cautious", steps=t)
        K.adam_update(params, [xp.asarray(g) for g in grads], AdamState(m, v, vmax), args)
        for i, g in enumerate(grads):
            p_ref, m_ref, v_ref, vmax_ref = ref[i]
            ref[i] = list(
                _adam_reference(
                    p_ref,
                    g.astype(np.float64),
                    m_ref,
                    v_ref,
                    vmax_ref,
                    lr,
                    b1,
                    b2,
                    eps,
                    wd,
                    decoupled,
                    variant == "cautious",
                    t,
                )
            )
            # the kernel stores parameters (and states) in their dtype after each step
            ref[i] = [
                None if a is None else a.astype(d).astype(np.float64)
                for a, d in zip(ref[i], (dtype, state_dtype, state_dtype, state_dtype))
            ]
        state_tol = np.float64 if dtype == np.float64 else state_dtype
        _check(xp, params, [r[0] for r in ref], dtype, "params")
        _check(xp, m, [r[1] for r in ref], state_tol, "m")
        _check(xp, v, [r[2] for r in ref], state_tol, "v")
        if vmax is not None:
            _check(xp, vmax, [r[3] for r in ref], state_tol, "vmax")


def test_optimizer_updates_reject_bad_lists(xp):
    p = [xp.asarray(np.zeros((3,), np.float32))]
    with pytest.raises(ValueError, match=r"sgd_update: `grads` has 2 arrays but `params` has 1"):
        K.sgd_update(p, [xp.asarray(np.zeros(3, np.float32))] * 2, SgdState(), SgdArgs(0.1))
    with pytest.raises(ValueError, match=r"adam_update: `m\[0\]` has shape \(4,\)"):
        K.adam_update(p, p, AdamState([xp.asarray(np.zeros(4, np.float32))], p), AdamArgs(0.1))
    with pytest.raises(ValueError, match="need `momentum_bufs`"):
        K.sgd_update(p, p, SgdState(), SgdArgs(0.1, momentum=0.9))
    with pytest.raises(TypeError, match=r"`m` has dtype float64; with float32 parameters"):
        state = AdamState([xp.asarray(np.zeros(3, np.float64))], [xp.asarray(np.zeros(3, np.float64))])
        K.adam_update(p, p, state, AdamArgs(0.1))
    with pytest.raises(ValueError, match="`steps` must be integers >= 1"):
        AdamArgs(0.1, steps=0)
    strided = xp.asarray(np.zeros((3, 2), np.float32))[:, 0]
    with pytest.raises(ValueError, match=r"`params\[0\]` is updated in place and must be C-contiguous"):
        K.sgd_update([strided], [strided], SgdState(), SgdArgs(0.1))


# every option of the cuda kernels against the composed default (the formula, written once),
# on the same state and args, float32 and float64, over three steps
CASES = {
    "sgd": (SgdState, (), lambda k: SgdArgs([0.1, 0.05, 0.2, 0.1, 0.3], weight_decay=0.01)),
    "sgd-momentum": (
        SgdState,
        ("momentum_bufs",),
        lambda k: SgdArgs(0.1, 0.01, 0.9, 0.1, first_step=[k == 0, k == 1, k == 0, k == 2, k == 0]),
    ),
    "sgd-nesterov": (
        SgdState,
        ("momentum_bufs",),
        lambda k: SgdArgs(0.1, momentum=0.8, nesterov=True, first_step=k == 0),
    ),
    "adam-l2": (AdamState, ("m", "v"), lambda k: AdamArgs(0.01, weight_decay=0.05, steps=k + 1)),
    "amsgrad": (
        AdamState,
        ("m", "v", "vmax"),
        lambda k: AdamArgs(0.01, 0.8, 0.9, steps=[k + 1, k + 2, k + 1, k + 3, k + 1]),
    ),
    "adamw": (
        AdamState,
        ("m", "v"),
        lambda k: AdamArgs([0.01, 0.02, 0.01, 0.03, 0.01], weight_decay=0.5, decoupled=True, steps=k + 1),
    ),
    "adamw-cautious": (
        AdamState,
        ("m", "v", "vmax"),
        lambda k: AdamArgs(0.01, weight_decay=0.5, decoupled=True, cautious=True, steps=k + 1),
    ),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(CASES))
def test_kernels_compute_the_composed_default(xp, case, dtype):
    state_cls, buffers, args_at = CASES[case]
    update = K.sgd_update if state_cls is SgdState else K.adam_update
    reference = getattr(ReferenceBackend(), update.__name__)
    host = _params(dtype)
    params = [xp.asarray(p) for p in host]

    def state_of(make):
        return state_cls(**{name: [make(p) for p in host] for name in buffers}) if buffers else state_cls()

    state = state_of(lambda p: xp.zeros(p.shape, dtype=dtype))
    ref_params, ref_state = host, state_of(np.zeros_like)
    for k in range(3):
        grads = _grads(dtype)
        update(params, [xp.asarray(g) for g in grads], state, args_at(k))
        ref_params, ref_state = reference(ref_params, grads, ref_state, args_at(k))
        _check(xp, params, ref_params, dtype, f"{case}: params")
        for name in buffers:
            _check(xp, getattr(state, name), getattr(ref_state, name), dtype, f"{case}: {name}")


def test_layouts_and_dtypes_the_kernels_lack_decline_to_the_default():
    from ember.kernels.cuda.optimizers import CudaOptimizerOps
    from ember.kernels.families.declare import DECLINED

    grad = RNG.standard_normal((4, 3)).astype(np.float32)
    strided = RNG.standard_normal((4, 6)).astype(np.float32)[:, ::2]  # not C-contiguous
    zeros = np.zeros((4, 3), np.float32)
    adam = CudaOptimizerOps.adam_update.kernel
    assert adam(None, [strided], [grad], AdamState([zeros], [zeros]), AdamArgs(0.1)) is DECLINED
    momentum64 = np.zeros((4, 3), np.float64)  # a state dtype the kernel does not pair with float32
    sgd = CudaOptimizerOps.sgd_update.kernel
    assert sgd(None, [grad], [grad], SgdState([momentum64]), SgdArgs(0.1, momentum=0.9)) is DECLINED
