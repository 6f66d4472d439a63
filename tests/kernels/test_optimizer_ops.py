"""The optimizer op family of the backend contract (``ember.kernels.families.optimizer``).

* it is one mixin that :class:`Backend` inherits, defined nowhere else in the contract;
* every backend refuses a malformed per-tensor argument with the same error, the composed
  default (reference) as the fused kernels (cpu, cuda), since they share one check;
* each update rule is written once, in its optimizer's docstring: the kernels point to it.
"""

from __future__ import annotations

import inspect
import pathlib

import numpy as np
import pytest

from ember.kernels.backend import Backend
from ember.kernels.families.optimizer import OptimizerOps

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
            lambda b, p: b.sgd_update(p, p, None, [0.1, 0.2, 0.3]),
            r"sgd_update: `lr` must be a scalar or hold one value per tensor \(2\), got shape \(3,\)",
        ),
        (lambda b, p: b.sgd_update(p, p, None, float("nan")), r"sgd_update: `lr` must be finite"),
        (
            lambda b, p: b.adam_update(p, p, p, p, None, 0.1, steps=[1, 0]),
            r"adam_update: `steps` must be integers >= 1",
        ),
        (
            lambda b, p: b.adagrad_update(p, p, p, 0.1, steps=1.5),
            r"adagrad_update: `steps` must be integers >= 1",
        ),
        (lambda b, p: b.lion_update(p, p, p, [0.1]), r"lion_update: `lr` must be a scalar or hold one value"),
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
