"""Differential test against PyTorch: every op of ember's op table and of ``ember.nn``'s
functional composites, at every dtype, on edge values (±0, ±inf, NaN, 1e-38, ±3e38,
ordinary values, empty dims, broadcasting), forward and gradients, on every backend.

The op map lives in ``tests/helpers/torch_ops.py`` (one row per op, or a reason why it has
no counterpart, and the documented differences: ``BY_DESIGN``, ``DTYPE_RULES``,
``UNDEFINED``); the inputs and the comparison rules in ``tests/helpers/torch_compare.py``.

A mismatch found here and not fixed yet goes in :data:`KNOWN_MISMATCHES` (empty now), strictly
expected to fail, so a fix that lands shows up as XPASS and its entry must go.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from helpers.differential_values import DTYPES  # noqa: E402
from helpers.torch_compare import FAMILIES, MACHINE_DEPENDENT_MODES, UNDEFINED_MODES, check  # noqa: E402
from helpers.torch_ops import BY_DESIGN, DTYPE_RULES, NO_TORCH, REEXPORTED, TORCH_OPS, UNDEFINED, policy  # noqa: E402

import ember.nn.functional as EF  # noqa: E402
from ember.tensor import op_table  # noqa: E402

# NumPy's overflow and invalid-value warnings on the ±inf, NaN and 3e38 inputs are expected here
pytestmark = [pytest.mark.torch, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

KNOWN_MISMATCHES: dict = {}
"""``op[dtype]`` (every backend) or ``op[dtype]@device`` -> what is wrong, and where it is tracked."""


CASES = [f"{name}[{dtype}]" for name, case in TORCH_OPS.items() for dtype in DTYPES if dtype in case.dtypes]


@pytest.fixture(autouse=True)
def _expected_failures(request):
    """Mark the cases of KNOWN_MISMATCHES as strictly expected to fail."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or "case" not in callspec.params:
        return
    case_id, device = callspec.params["case"], callspec.params.get("device")
    reason = KNOWN_MISMATCHES.get(f"{case_id}@{device}") or KNOWN_MISMATCHES.get(case_id)
    if reason:
        request.node.add_marker(pytest.mark.xfail(reason=reason, strict=True))


@pytest.mark.parametrize("case", CASES)
def test_matches_torch(device, case):
    name = case.split("[")[0]
    problems = check(TORCH_OPS[name], case.split("[")[1][:-1], device, **policy(case))
    if case in BY_DESIGN:
        # ember refuses (or accepts) this input by design: that may differ, nothing else
        problems = [p for p in problems if p[0] not in ("refuses", "accepts")]
    assert not problems, f"{case} on {device} differs from PyTorch:\n  " + "\n  ".join(m for _, m in problems)


def _has_its_own_oracle(op: str) -> bool:
    """A fused op's own test module runs it against PyTorch (``test_pytorch_oracle``): the
    op-per-file way docs/adding-a-fused-op.md adds ops."""
    path = Path(__file__).with_name(f"test_{op}.py")
    return path.is_file() and "def test_pytorch_oracle(" in path.read_text(encoding="utf-8")


def test_every_op_has_a_torch_counterpart_or_a_reason():
    ops = {op.name for op in op_table.OPS if not _has_its_own_oracle(op.name)}
    missing = sorted(ops - set(TORCH_OPS) - set(NO_TORCH))
    assert not missing, (
        f"ops of the op table not in helpers/torch_ops.py (map them or say why not): {missing}"
    )
    functional = sorted(set(EF.__all__) - REEXPORTED - set(TORCH_OPS))
    assert not functional, f"ember.nn.functional names not in helpers/torch_ops.py: {functional}"
    assert all(NO_TORCH.values()), "every op without a counterpart needs its reason"


def test_documented_differences_name_real_cases():
    keyed = list(KNOWN_MISMATCHES) + list(BY_DESIGN) + list(DTYPE_RULES)
    stale = [k for k in keyed if k.split("@")[0] not in CASES]
    stale += [k for k in UNDEFINED if k not in TORCH_OPS and k not in CASES]
    assert not stale, f"entries that name no case: {stale}"
    assert all(set(modes) <= set(UNDEFINED_MODES) and why for modes, why in UNDEFINED.values())
    assert all(case.inputs in FAMILIES for case in TORCH_OPS.values())


def test_by_design_differences_are_real_and_clear(device):
    """Each BY_DESIGN entry still differs (else it is stale), and ember's refusals there are
    its own clear errors (an ``unclear`` problem fails test_matches_torch)."""
    stale = []
    for case in BY_DESIGN:
        name, dtype = case.split("[")[0], case.split("[")[1][:-1]
        kinds = {k for k, _ in check(TORCH_OPS[name], dtype, device, **policy(case))}
        if not kinds & {"refuses", "accepts"}:
            stale.append(case)
    assert not stale, f"BY_DESIGN entries where ember and PyTorch now agree: {stale}"


def test_undefined_entries_still_leave_something_out(device):
    """Each mode of each UNDEFINED entry still hides a difference somewhere (else it is stale
    and would hide a regression): without it, some case has more problems."""
    stale = []
    for key, (modes, _) in UNDEFINED.items():
        name = key.split("[")[0]
        cases = [key] if "[" in key else [c for c in CASES if c.split("[")[0] == name]
        for mode in modes - MACHINE_DEPENDENT_MODES:
            needed = False
            for case in cases:
                dtype, kwargs = case.split("[")[1][:-1], policy(case)
                with_mode = len(check(TORCH_OPS[name], dtype, device, **kwargs))
                kwargs["undefined"] = kwargs["undefined"] - {mode}
                needed |= len(check(TORCH_OPS[name], dtype, device, **kwargs)) > with_mode
            if not needed:
                stale.append(f"{key}: {mode}")
    assert not stale, f"UNDEFINED modes that leave nothing out any more: {stale}"
