"""The optimizer op family of the backend contract (``ember.kernels.families.optimizer``).

* it is one mixin that :class:`Backend` inherits, defined nowhere else in the contract;
* every backend refuses a malformed per-tensor argument with the same error, the composed
  default (reference) as the fused kernels (cpu, cuda), since they share one check;
* every fused kernel computes what the composed default (the formula, written once) computes
  on the same state and args, for every optimizer and option, in float32 and float64 (the
  cuda kernels also on the host emulator: ``tests/cuda/test_cuda_optimizers.py``);
* each update rule is written once, in its optimizer's docstring: the kernels point to it.
"""

from __future__ import annotations

import inspect
import pathlib

import numpy as np
import pytest

from ember.kernels.backend import Backend
from ember.kernels.families.optimizer import OptimizerOps
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
from ember.kernels.reference import ReferenceBackend
from ember.tensor.device import as_device

PACKAGE_ROOT = pathlib.Path(__file__).resolve().parents[2] / "ember"

FAMILY = (
    "optim_own",
    "optim_pack",
    "sgd_update",
    "adam_update",
    "rmsprop_update",
    "adagrad_update",
    "lion_update",
    "sparse_sgd_update",
    "sparse_adam_update",
    "clip_by_value",
    "clip_by_norm",
    "grads_norm",
    "scale_grads",
)


def test_backend_inherits_the_family_from_one_mixin():
    assert issubclass(Backend, OptimizerOps)
    for name in FAMILY:
        assert name in vars(OptimizerOps), name
        assert name not in vars(Backend), f"Backend redefines {name}: the family lives in OptimizerOps"


def _group(backend, dtype=np.float32):
    return [backend.from_host(np.ones(3, dtype)), backend.from_host(np.ones((2, 2), dtype))]


@pytest.mark.parametrize(
    "call,message",
    [
        (
            lambda b, p: b.sgd_update(p, p, SgdState(), SgdArgs([0.1, 0.2, 0.3])),
            r"sgd_update: `lr` must be a scalar or hold one value per tensor \(2\), got shape \(3,\)",
        ),
        (
            lambda b, p: b.sgd_update(p, p, SgdState(), SgdArgs(float("nan"))),
            r"sgd_update: `lr` must be finite",
        ),
        (
            lambda b, p: b.adam_update(p, p, AdamState(p, p), AdamArgs(0.1, steps=[1, 0])),
            r"adam_update: `steps` must be integers >= 1",
        ),
        (
            lambda b, p: b.adagrad_update(p, p, AdagradState(p), AdagradArgs(0.1, steps=1.5)),
            r"adagrad_update: `steps` must be integers >= 1",
        ),
        (
            lambda b, p: b.lion_update(p, p, LionState(p), LionArgs([0.1])),
            r"lion_update: `lr` must be a scalar or hold one value",
        ),
        (
            lambda b, p: b.sgd_update(p, p, SgdState(), SgdArgs(0.1, momentum=0.9)),
            r"sgd_update: momentum=0.9, nesterov=False need `momentum_bufs`",
        ),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])  # float16: the composed default on every backend
def test_every_backend_refuses_bad_per_tensor_values_alike(backend, dtype, call, message):
    with pytest.raises(ValueError, match=message):
        call(backend, _group(backend, dtype))


def _docstring_of(cls) -> str:
    return inspect.getdoc(cls) or ""


def test_each_update_rule_is_written_once_in_its_optimizer():
    import ember.optim as optim

    for cls in (optim.Sgd, optim.Adam, optim.AdamW, optim.RmsProp, optim.AdaGrad, optim.Lion):
        assert "θ ←" in _docstring_of(cls), f"{cls.__name__}'s docstring states no update rule"
    # the kernels and the composed defaults name the rule instead of writing it again
    restated = [
        str(path.relative_to(PACKAGE_ROOT))
        for path in sorted((PACKAGE_ROOT / "kernels").rglob("*"))
        if path.suffix in (".py", ".cu") and "θ ←" in path.read_text(encoding="utf-8")
    ]
    assert not restated, f"update rules restated under ember/kernels: {restated}"
    for name in (
        "cpu/optim_updates.py",
        "cpu/optim_sparse_updates.py",
        "cuda/optimizers.py",
        "cuda/kernels/optim.cu",
        "families/optimizer.py",
    ):
        text = (PACKAGE_ROOT / "kernels" / name).read_text(encoding="utf-8")
        assert "ember.optim" in text or "ember/optim" in text, f"{name} does not point to the rules"


# ---- every fused kernel against the composed default, on the same args -------------------

SHAPES = [(3, 5), (20_000,), (7,), (0,), (2, 3, 4), ()]  # 20k spans two cpu work items
N = len(SHAPES)
PER_LR = [0.05, 0.01, 0.02, 0.03, 0.04, 0.005]
PER_STEPS = (1, 3, 2, 1, 5, 4)  # tensors that joined the optimizer at different steps


def _steps(k):
    return [k + s for s in PER_STEPS]


# (update, state class, its buffers in use, args at step k): every option of every optimizer
DENSE_CASES = {
    "sgd": ("sgd_update", SgdState, (), lambda k: SgdArgs(0.1)),
    "sgd-decay": ("sgd_update", SgdState, (), lambda k: SgdArgs(0.1, weight_decay=0.01)),
    "sgd-momentum": (
        "sgd_update",
        SgdState,
        ("momentum_bufs",),
        lambda k: SgdArgs(0.1, 0.01, momentum=0.9, dampening=0.1, first_step=k == 0),
    ),
    "sgd-nesterov": (
        "sgd_update",
        SgdState,
        ("momentum_bufs",),
        lambda k: SgdArgs(0.1, 0.01, momentum=0.8, nesterov=True, first_step=k == 0),
    ),
    "sgd-per-tensor": (
        "sgd_update",
        SgdState,
        ("momentum_bufs",),
        lambda k: SgdArgs(PER_LR, momentum=0.9, first_step=[k == 0, k == 1] * (N // 2)),
    ),
    "adam": ("adam_update", AdamState, ("m", "v"), lambda k: AdamArgs(0.01, steps=k + 1)),
    "adam-l2": (
        "adam_update",
        AdamState,
        ("m", "v"),
        lambda k: AdamArgs(0.01, weight_decay=0.05, steps=k + 1),
    ),
    "amsgrad": (
        "adam_update",
        AdamState,
        ("m", "v", "vmax"),
        lambda k: AdamArgs(0.01, 0.8, 0.9, steps=k + 1),
    ),
    "adamw": (
        "adam_update",
        AdamState,
        ("m", "v"),
        lambda k: AdamArgs(0.01, weight_decay=0.5, decoupled=True, steps=k + 1),
    ),
    "adamw-cautious-amsgrad": (
        "adam_update",
        AdamState,
        ("m", "v", "vmax"),
        lambda k: AdamArgs(0.01, 0.9, 0.99, weight_decay=0.5, decoupled=True, cautious=True, steps=k + 1),
    ),
    "adam-per-tensor": ("adam_update", AdamState, ("m", "v"), lambda k: AdamArgs(PER_LR, steps=_steps(k))),
    "rmsprop": ("rmsprop_update", RmspropState, ("square_avg",), lambda k: RmspropArgs(0.01, momentum=0.0)),
    "rmsprop-momentum": (
        "rmsprop_update",
        RmspropState,
        ("square_avg", "momentum_bufs"),
        lambda k: RmspropArgs(0.01, weight_decay=0.01),
    ),
    "rmsprop-centered": (
        "rmsprop_update",
        RmspropState,
        ("square_avg", "grad_avg"),
        lambda k: RmspropArgs(0.01, 0.9, momentum=0.0, centered=True),
    ),
    "rmsprop-centered-momentum": (
        "rmsprop_update",
        RmspropState,
        ("square_avg", "grad_avg", "momentum_bufs"),
        lambda k: RmspropArgs(PER_LR, weight_decay=0.01, centered=True),
    ),
    "adagrad": ("adagrad_update", AdagradState, ("sums",), lambda k: AdagradArgs(0.05, steps=k + 1)),
    "adagrad-decay": (
        "adagrad_update",
        AdagradState,
        ("sums",),
        lambda k: AdagradArgs(PER_LR, lr_decay=0.1, weight_decay=0.01, steps=_steps(k)),
    ),
    "lion": ("lion_update", LionState, ("exp_avg",), lambda k: LionArgs(0.01)),
    "lion-decay": (
        "lion_update",
        LionState,
        ("exp_avg",),
        lambda k: LionArgs(PER_LR, 0.8, 0.95, weight_decay=0.1),
    ),
}

# the row-sparse updates (SGD and Adam/AdamW, lazy) on the dense cases of the options they take
SPARSE_CASES = {
    f"sparse-{case}": (f"sparse_{name}", *rest)
    for case, (name, *rest) in DENSE_CASES.items()
    if case in ("sgd-decay", "sgd-nesterov", "adam-l2", "adamw-cautious-amsgrad")
}

STEPS = 3


def _fused_kernel(backend, name):
    """``backend``'s fused override of ``name`` itself (no fallback to the default), or skip."""
    kernel = getattr(getattr(type(backend), name), "kernel", None)
    if kernel is None:
        pytest.skip(f"{backend.name} has no fused {name}")
    return lambda *args: kernel(backend, *args)


def _fused_and_default(device, name, case):
    """``device``'s backend, its fused ``name`` (or skip), the composed default of ``name``, and
    a generator seeded by the case's name."""
    backend = as_device(device).backend
    rng = np.random.default_rng(sum(map(ord, case)))
    return backend, _fused_kernel(backend, name), getattr(ReferenceBackend(), name), rng


def _state(cls, buffers, make):
    return cls(**{name: make() for name in buffers}) if buffers else cls()


def _close(backend, got, want, dtype, what):
    tol = 1e-12 if dtype == np.float64 else 2e-5
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(backend.to_host(g), w, rtol=tol, atol=tol, err_msg=f"{what}[{i}]")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(DENSE_CASES))
def test_fused_updates_compute_the_composed_default(other_device, case, dtype):
    name, state_cls, buffers, args_at = DENSE_CASES[case]
    backend, fused, reference, rng = _fused_and_default(other_device, name, case)
    host = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    params = [backend.from_host(p.copy()) for p in host]
    state = _state(state_cls, buffers, lambda: [backend.from_host(np.zeros(s, dtype)) for s in SHAPES])
    ref_params, ref_state = host, _state(state_cls, buffers, lambda: [np.zeros(s, dtype) for s in SHAPES])
    for k in range(STEPS):
        grads = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
        params, state = fused(params, [backend.from_host(g) for g in grads], state, args_at(k))
        ref_params, ref_state = reference(ref_params, grads, ref_state, args_at(k))
        _close(backend, params, ref_params, dtype, f"{case} step {k}: params")
        for field in buffers:
            _close(
                backend, getattr(state, field), getattr(ref_state, field), dtype, f"{case} step {k}: {field}"
            )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(SPARSE_CASES))
def test_fused_row_sparse_updates_compute_the_composed_default(other_device, case, dtype):
    name, state_cls, buffers, args_at = SPARSE_CASES[case]
    backend, fused, reference, rng = _fused_and_default(other_device, name, case)
    shape = (20, 6)
    table = rng.standard_normal(shape).astype(dtype)
    param = backend.from_host(table.copy())
    state = _state(state_cls, buffers, lambda: backend.from_host(np.zeros(shape, dtype)))
    ref_param, ref_state = table, _state(state_cls, buffers, lambda: np.zeros(shape, dtype))
    for k in range(STEPS):
        rows = np.sort(rng.choice(shape[0], size=7, replace=False)).astype(np.int64)
        values = rng.standard_normal((7, shape[1])).astype(dtype)
        param, state = fused(param, backend.from_host(rows), backend.from_host(values), state, args_at(k))
        ref_param, ref_state = reference(ref_param, rows, values, ref_state, args_at(k))
        _close(backend, [param], [ref_param], dtype, f"{case} step {k}: param")
        for field in buffers:
            _close(
                backend,
                [getattr(state, field)],
                [getattr(ref_state, field)],
                dtype,
                f"{case} step {k}: {field}",
            )
