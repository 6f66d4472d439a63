"""The structure-aware file fuzzer, CI-sized: over 10,000 mutated `.bpk`, safetensors and
SQLite dataset files, each loaded in a child process, with no crash, hang, memory blow-up,
unclear error or silent wrong answer (see `tools/fuzz`). The long run is
`python -m tools.fuzz --inputs 1000000 --target all`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `tools` lives in the repository, not in the installed package

from tools.fuzz import format_table, run  # noqa: E402

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the runner uses POSIX resource limits")

# SQLite inputs cost about five times the others: this mix keeps the run near 10 s of CPU.
CI_INPUTS = {"bpk": 4500, "safetensors": 4500, "sqlite": 1500}
BAD = ("crash", "hang", "silent", "unclear", "memory")


def test_the_harness_tells_every_outcome_apart(tmp_path):
    # One input of each behaviour (see CanaryTarget): if the runner missed any of them, the
    # zeros asserted below would prove nothing.
    work = tmp_path / "work"
    work.mkdir()
    tallies = run(
        {"canary": 7},
        jobs=1,
        batch=7,
        timeout=6.0,
        memory_constant=16 << 20,
        workdir=str(work),
        findings_dir=tmp_path,
    )
    counts = tallies["canary"].counts
    # The memory canary is judged by the child's peak RSS, which in some environments an earlier
    # transient peak hides (it then counts as correct): that outcome is not asserted here.
    told = ("clean",) + tuple(name for name in BAD if name != "memory")
    assert {name: counts[name] for name in told} == dict.fromkeys(told, 1), format_table(tallies)
    assert counts["correct"] + counts["memory"] == 2, format_table(tallies)
    found = {f.outcome: f.index for f in tallies["canary"].findings if f.outcome != "memory"}
    assert found == {"silent": 2, "unclear": 3, "crash": 4, "hang": 5}
    assert (tmp_path / "canary-seed0-4-crash.bin").read_bytes() == b"crash"  # reproducible
    assert list(work.iterdir()) == []  # the killed and crashed children's inputs are gone too


def test_ten_thousand_mutated_files_load_correctly_or_fail_cleanly():
    tallies = run(CI_INPUTS, seed=0, jobs=2)
    table = format_table(tallies)
    print(table)
    assert sum(t.inputs for t in tallies.values()) >= 10_000
    for name, tally in tallies.items():
        assert tally.inputs == CI_INPUTS[name], table
        assert {key: tally.counts[key] for key in BAD} == dict.fromkeys(BAD, 0), f"{name}: " + "; ".join(
            f"#{f.index} {f.outcome}: {f.detail} [{f.note}]" for f in tally.findings[:10]
        )
        # The mutations reach both sides: some files are refused, some still load.
        assert tally.counts["clean"] > 0 and tally.counts["correct"] > 0, table
