"""docs/adding-a-fused-op.md: its worked example (``ember.swiglu``) holds — the six files it
names exist and carry the op, and each step is in place on every backend."""

from __future__ import annotations

import re
from pathlib import Path

from ember.core import op_table
from ember.kernels import backend as contract
from ember.kernels.cpu.backend import CpuBackend
from ember.kernels.cuda import modules
from ember.kernels.cuda.backend import CudaBackend
from ember.tensor.vjp import VJP

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "adding-a-fused-op.md"


def _guide_files() -> list[str]:
    text = GUIDE.read_text(encoding="utf-8")
    block = text.split("<!-- guide-files")[1].split("<!-- /guide-files -->")[0]
    return re.findall(r"^\d+\. `([^`]+)`", block, flags=re.M)


def test_the_example_touches_at_most_six_files_and_each_carries_the_op():
    files = _guide_files()
    assert 1 <= len(files) <= 6, files
    for name in files:
        path = ROOT / name
        assert path.is_file(), f"the guide names {name}, which does not exist"
        assert "swiglu" in path.read_text(encoding="utf-8"), f"{name} does not carry the example"


def test_each_step_of_the_example_is_in_place():
    row = op_table.BY_NAME["swiglu"]
    assert row.kind == op_table.POINTWISE and row.saves == ("a", "b")
    assert "swiglu" in VJP
    for name in ("swiglu", "swiglu_backward"):
        assert name in contract.COMPOSITE_NAMES
        for backend in (CpuBackend, CudaBackend):
            assert getattr(backend, name).contract_role == "fused", (backend, name)
    assert "swiglu_fwd" in modules.source_text("activations.cu")
