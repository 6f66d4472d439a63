"""bench/run.py's table: per-implementation medians over repeated runs, and the speed-ups."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_RUN = Path(__file__).resolve().parent.parent / "bench" / "run.py"


@pytest.fixture(scope="module")
def run_module():
    spec = importlib.util.spec_from_file_location("bench_run", _RUN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _raw(**medians_s):
    return {
        "benchmarks": [
            {
                "group": "gelu",
                "name": f"bench_gelu[{impl}]",
                "extra_info": {"impl": impl},
                "stats": {"median": t},
            }
            for impl, t in medians_s.items()
        ]
    }


def test_one_run_gives_its_medians_and_speedups(run_module):
    (row,) = run_module.table([_raw(**{"ember-cpu": 0.001, "torch": 0.002, "numpy": 0.004})])
    assert row["ember_impl"] == "ember-cpu"
    assert row["medians_ms"] == pytest.approx({"ember-cpu": 1.0, "torch": 2.0, "numpy": 4.0})
    assert row["speedup_vs_torch"] == pytest.approx(2.0)
    assert row["speedup_vs_numpy"] == pytest.approx(4.0)
    assert "runs_ms" not in row


def test_repeated_runs_take_each_implementations_median(run_module):
    # a slow spell in the second run hits ember only; the median of three runs outvotes it
    raws = [
        _raw(**{"ember-cpu": 0.001, "torch": 0.002}),
        _raw(**{"ember-cpu": 0.009, "torch": 0.002}),
        _raw(**{"ember-cpu": 0.0012, "torch": 0.0018}),
    ]
    (row,) = run_module.table(raws)
    assert row["medians_ms"] == pytest.approx({"ember-cpu": 1.2, "torch": 2.0})
    assert row["speedup_vs_torch"] == pytest.approx(2.0 / 1.2)
    assert row["runs_ms"]["ember-cpu"] == pytest.approx([1.0, 9.0, 1.2])
