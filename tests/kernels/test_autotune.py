"""Autotune's mechanism: deciding, the cache's format and folders, locking between processes,
corrupt lines, levels, forcing a candidate, the log and the configuration.

Times are not measured here: the candidates advance a fake clock by a fixed amount, so which
one wins is decided by the test, never by the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from ember import config
from ember._version import __version__
from ember.config import ConfigError
from ember.kernels import autotune
from ember.kernels.autotune import cache as cache_module
from ember.kernels.autotune import log as autotune_log
from ember.kernels.autotune import tunable as tunable_module

_VARIABLES = [
    config.CONFIG_VARIABLE,
    "EMBER_AUTOTUNE_LEVEL",
    "EMBER_AUTOTUNE_CACHE",
    "EMBER_AUTOTUNE_LOG",
    "EMBER_AUTOTUNE_LOG_LEVEL",
    "EMBER_AUTOTUNE_FORCE",
]


class FakeClock:
    """``time.perf_counter`` of the tuner: candidates advance it by what they 'cost'."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(tunable_module, "time", fake)
    return fake


@pytest.fixture
def tuning(tmp_path, monkeypatch):
    """A cache folder of the test's own, balanced level, the log at ``full`` into a file; every
    op a test declares is forgotten afterwards."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBER_AUTOTUNE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EMBER_AUTOTUNE_LEVEL", "balanced")
    monkeypatch.setenv("EMBER_AUTOTUNE_LOG", str(tmp_path / "autotune.log"))
    monkeypatch.setenv("EMBER_AUTOTUNE_LOG_LEVEL", "full")
    config.reload()
    autotune.reset()
    autotune_log.LOG.reset()
    before = set(tunable_module._TUNABLES)
    with autotune.paced(False):  # the fake clock's costs would spend the allowance: see the pacing tests
        yield tmp_path
    for op in set(tunable_module._TUNABLES) - before:
        del tunable_module._TUNABLES[op]
    monkeypatch.undo()
    config.reload()
    autotune.reset()
    autotune_log.LOG.reset()


def events(path):
    autotune_log.LOG.reset()  # closes the file: every line written is there
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def costing(clock, calls, name, ms, value=None):
    def run(x):
        calls.append(name)
        clock.now += ms / 1e3
        return (name, x) if value is None else value

    return run


def declare(op, clock, calls, costs, default=None, levels=None):
    levels = levels or {}
    return autotune.Tunable(
        op,
        [
            autotune.Candidate(n, costing(clock, calls, n, ms), levels.get(n, "balanced"))
            for n, ms in costs.items()
        ],
        default=default or next(iter(costs)),
    )


def decisions(folder, op):
    return [json.loads(line) for line in (folder / f"{op}.jsonl").read_text().splitlines()]


# ---- keys ----------------------------------------------------------------------------------
def test_keys_anchor_shapes_to_powers_of_two():
    assert [autotune.anchor(n) for n in (0, 1, 2, 3, 4, 5, 255, 256, 257)] == [
        0,
        1,
        2,
        4,
        4,
        8,
        256,
        256,
        512,
    ]
    assert autotune.key("float32", (8000, 128), (), 2) == "float32|8192x128|scalar|2"
    assert autotune.key("float32", (200, 3)) == autotune.key("float32", (256, 4))


# ---- deciding and the cache ----------------------------------------------------------------
def test_the_fastest_candidate_wins_its_result_is_returned_and_the_decision_is_stored(tuning, clock):
    calls = []
    op = declare("t_matmul", clock, calls, {"rows": 5.0, "cols": 1.0, "blas": 3.0})
    k = autotune.key("float32", (1000, 64))
    assert op(k, 7) == ("cols", 7)
    assert op.choice(k) == "cols"
    assert op(k, 8) == ("cols", 8)  # later calls run the winner only
    assert calls[-1] == "cols" and calls.count("rows") <= 1 + 3

    folder = autotune.cache_folder()
    [entry] = decisions(folder, "t_matmul")
    assert entry["key"] == k and entry["winner"] == "cols" and entry["level"] == "balanced"
    assert entry["source"] == op.source and set(entry["times_ms"]) >= {"cols", "blas"}
    assert entry["times_ms"]["cols"] == pytest.approx(1.0)
    assert json.loads((folder / "machine.json").read_text()) == autotune.fingerprint()

    [tune] = [e for e in events(tuning / "autotune.log") if e["event"] == "tune"]
    assert tune == {"event": "tune", "op": "t_matmul", "key": k, "winner": "cols", "from": "measured",
                    "times_ms": entry["times_ms"]}  # fmt: skip


def test_a_slow_candidate_is_dropped_after_two_samples(tuning, clock):
    calls = []
    op = declare("t_drop", clock, calls, {"fast": 1.0, "slow": 10.0})
    op(autotune.key("float32", (64,)), 0)
    assert calls.count("slow") == 3  # warm-up and two samples, not the third
    assert calls.count("fast") == 4
    dropped = [e for e in events(tuning / "autotune.log") if e["event"] == "samples" and e["dropped"]]
    assert [e["candidate"] for e in dropped] == ["slow"]


def test_a_later_process_reads_the_decision_instead_of_measuring(tuning, clock):
    calls = []
    op = declare("t_reuse", clock, calls, {"a": 2.0, "b": 1.0})
    k = autotune.key("float64", (32, 32))
    op(k, 0)
    autotune.reset()  # as a new process: nothing decided in memory
    calls.clear()
    assert op(k, 1) == ("b", 1)
    assert calls == ["b"]
    tunes = [e for e in events(tuning / "autotune.log") if e["event"] == "tune"]
    assert [e["from"] for e in tunes] == ["measured", "cache"]


def test_a_changed_kernel_does_not_reuse_its_old_decisions(tuning, clock):
    calls = []
    op = declare("t_source", clock, calls, {"a": 2.0, "b": 1.0})
    k = autotune.key("float32", (8,))
    op(k, 0)
    autotune.reset()
    op._source = "another-source-hash"  # as if a candidate's code had been edited
    calls.clear()
    op(k, 0)
    assert "a" in calls  # measured again
    lines = decisions(autotune.cache_folder(), "t_source")
    assert [e["source"] for e in lines] == [
        lines[0]["source"],
        "another-source-hash",
    ]  # appended, never rewritten


def test_only_narrows_the_candidates_and_is_part_of_the_key(tuning, clock):
    calls = []
    op = declare("t_only", clock, calls, {"numba": 2.0, "native": 1.0})
    k = autotune.key("float32", (16,))
    assert op(k, 0, only=("numba",)) == ("numba", 0)
    assert "native" not in calls
    assert op(k, 0, only=("numba", "native")) == ("native", 0)
    assert op.choice(f"{k}|numba") == "numba" and op.choice(f"{k}|numba+native") == "native"


# ---- levels --------------------------------------------------------------------------------
def test_minimal_measures_nothing_and_runs_the_default(tuning, clock, monkeypatch):
    monkeypatch.setenv("EMBER_AUTOTUNE_LEVEL", "minimal")
    calls = []
    op = declare("t_minimal", clock, calls, {"slow": 9.0, "fast": 1.0}, default="slow")
    assert op(autotune.key("float32", (4,)), 0) == ("slow", 0)
    assert calls == ["slow"]
    assert not (autotune.cache_folder() / "t_minimal.jsonl").exists()
    [tune] = events(tuning / "autotune.log")
    assert tune["from"] == "default" and tune["winner"] == "slow"


def test_minimal_still_uses_a_cached_decision(tuning, clock, monkeypatch):
    calls = []
    op = declare("t_minimal_cache", clock, calls, {"slow": 9.0, "fast": 1.0}, default="slow")
    k = autotune.key("float32", (4,))
    op(k, 0)
    autotune.reset()
    monkeypatch.setenv("EMBER_AUTOTUNE_LEVEL", "minimal")
    calls.clear()
    assert op(k, 0) == ("fast", 0) and calls == ["fast"]


def test_a_higher_level_measures_again_and_a_lower_one_accepts_its_decision(tuning, clock, monkeypatch):
    calls = []
    op = declare("t_levels", clock, calls, {"a": 1.0, "b": 2.0, "c": 0.5}, levels={"c": "extensive"})
    k = autotune.key("float32", (4,))
    assert op(k, 0)[0] == "a"  # balanced does not measure the extensive candidate
    assert "c" not in calls
    autotune.reset()
    monkeypatch.setenv("EMBER_AUTOTUNE_LEVEL", "extensive")
    assert op(k, 0)[0] == "c"  # a balanced decision does not serve extensive: measured again
    autotune.reset()
    monkeypatch.setenv("EMBER_AUTOTUNE_LEVEL", "balanced")
    calls.clear()
    assert op(k, 0)[0] == "c" and calls == ["c"]  # an extensive decision serves balanced
    assert [e["level"] for e in decisions(autotune.cache_folder(), "t_levels")] == ["balanced", "extensive"]


def test_full_measures_every_candidate_ten_times(tuning, clock, monkeypatch):
    monkeypatch.setenv("EMBER_AUTOTUNE_LEVEL", "full")
    calls = []
    op = declare("t_full", clock, calls, {"a": 1.0, "b": 50.0}, levels={"b": "full"})
    op(autotune.key("float32", (4,)), 0)
    assert calls.count("b") == 11  # warm-up + 10, never dropped


# ---- forcing a candidate -------------------------------------------------------------------
def test_forced_runs_the_named_candidate(tuning, clock, monkeypatch):
    calls = []
    op = declare("t_forced", clock, calls, {"a": 1.0, "b": 2.0})
    k = autotune.key("float32", (4,))
    with autotune.forced("t_forced", "b"):
        assert op(k, 0) == ("b", 0)
    assert op(k, 0) == ("a", 0)
    with (
        pytest.raises(KeyError, match="no candidate 'zzz' of op 't_forced'"),
        autotune.forced("t_forced", "zzz"),
    ):
        pass


def test_the_force_variable_runs_the_named_candidate(tuning, clock, monkeypatch):
    calls = []
    op = declare("t_force_env", clock, calls, {"a": 1.0, "b": 2.0})
    monkeypatch.setenv("EMBER_AUTOTUNE_FORCE", "other=x, t_force_env=b")
    assert op(autotune.key("float32", (4,)), 0) == ("b", 0) and calls == ["b"]
    autotune.reset()
    monkeypatch.setenv("EMBER_AUTOTUNE_FORCE", "t_force_env=nope")
    with pytest.raises(
        ValueError,
        match="EMBER_AUTOTUNE_FORCE: op 't_force_env' has no candidate 'nope'; its candidates are a, b",
    ):
        op(autotune.key("float32", (4,)), 0)


def test_declarations_are_checked(tuning):
    run = lambda x: x
    with pytest.raises(ValueError, match="the default 'z' must be one of distinct candidates"):
        autotune.Tunable("t_bad", [autotune.Candidate("a", run)], default="z")
    with pytest.raises(ValueError, match="level must be one of"):
        autotune.Candidate("a", run, level="minimal")
    autotune.Tunable("t_twice", [autotune.Candidate("a", run)], default="a")
    with pytest.raises(ValueError, match="op 't_twice' is declared twice"):
        autotune.Tunable("t_twice", [autotune.Candidate("a", run)], default="a")


# ---- the cache's folders -------------------------------------------------------------------
def test_folders_per_version_and_machine(tuning, monkeypatch):
    root = tuning / "cache"
    here = autotune.cache_folder()
    assert here.parent == root / __version__
    other = dict(autotune.fingerprint(), cpu="Some Other CPU 9000", cores=64)
    there = autotune.cache_folder(machine=other)
    assert there.parent == here.parent and there != here
    assert there.name.startswith("some-other-cpu-9000-64c-")
    assert autotune.cache_folder(machine=dict(other, features=["avx2"])) != there  # ISA features count


def test_user_project_off_and_a_path(tuning, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tuning / "kernels"))
    assert autotune.cache_folder("user").parents[1] == tuning / "kernels" / "autotune"
    assert autotune.cache_folder("project").parents[1] == tuning / ".ember" / "autotune"  # no ember.toml: cwd
    project = tuning / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "ember.toml").write_text('[autotune]\ncache = "project"\n')
    monkeypatch.delenv("EMBER_AUTOTUNE_CACHE")
    monkeypatch.chdir(project / "sub")
    config.reload()
    assert autotune.cache_folder().parents[1] == project / ".ember" / "autotune"
    assert autotune.cache_folder("off") is None
    assert autotune.cache_folder(tuning / "mine").parents[1] == tuning / "mine"


def test_off_keeps_decisions_in_this_process_only(tuning, clock, monkeypatch):
    monkeypatch.setenv("EMBER_AUTOTUNE_CACHE", "off")
    calls = []
    op = declare("t_off", clock, calls, {"a": 2.0, "b": 1.0})
    k = autotune.key("float32", (4,))
    assert op(k, 0) == ("b", 0)
    assert autotune.store().folder is None
    assert not (tuning / "cache").exists()
    op._chosen.clear()  # the store still remembers it: not measured again
    op._seen.clear()
    calls.clear()
    assert op(k, 0) == ("b", 0) and calls == ["b"]


# ---- corrupt and truncated lines -----------------------------------------------------------
def test_corrupt_and_truncated_lines_are_skipped_with_one_warning(tuning, clock):
    calls = []
    op = declare("t_corrupt", clock, calls, {"a": 2.0, "b": 1.0})
    good = autotune.key("float32", (4,))
    op(good, 0)
    folder = autotune.cache_folder()
    path = folder / "t_corrupt.jsonl"
    with open(path, "a") as f:
        f.write("not json at all\n")
        f.write('{"key": 3}\n')  # JSON, not a decision
        f.write('{"key": "float32|8", "source": "')  # a write cut short: no newline
    autotune.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert op(good, 0) == ("b", 0)  # the good line still serves
        op(autotune.key("float32", (8,)), 0)  # measured, appended on a line of its own
        op(autotune.key("float32", (16,)), 0)
    messages = [str(w.message) for w in caught if "autotune" in str(w.message)]
    assert len(messages) == 1 and "skipped" in messages[0] and str(path) in messages[0]
    autotune.reset()
    lines = path.read_text().splitlines()
    assert json.loads(lines[-1])["key"] == autotune.key("float32", (16,))
    assert json.loads(lines[-2])["key"] == autotune.key("float32", (8,))
    calls.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        op(autotune.key("float32", (8,)), 0)
    assert calls == ["b"]  # read back from the cache


def test_an_unwritable_cache_warns_and_keeps_the_decision(tuning, clock, monkeypatch):
    blocker = tuning / "blocker"
    blocker.write_text("a file where the cache directory should go")
    monkeypatch.setenv("EMBER_AUTOTUNE_CACHE", str(blocker / "cache"))
    autotune.reset()
    calls = []
    op = declare("t_unwritable", clock, calls, {"a": 2.0, "b": 1.0})
    with pytest.raises(OSError):  # the folder cannot be made: said, not hidden
        op(autotune.key("float32", (4,)), 0)


# ---- processes -----------------------------------------------------------------------------
_CHILD = textwrap.dedent(
    """
    import sys, time
    from ember.kernels import autotune

    def slow(x):
        time.sleep(0.05)
        return x

    def fast(x):
        time.sleep(0.001)
        return x

    op = autotune.Tunable("t_proc", [autotune.Candidate("slow", slow), autotune.Candidate("fast", fast)], "slow")
    if len(sys.argv) > 1:  # start together with the other process
        while time.time() < float(sys.argv[1]):
            time.sleep(0.005)
    print(op(autotune.key("float32", (100,)), 1))
    """
)


def _child_env(tuning):
    env = {k: v for k, v in os.environ.items() if k not in _VARIABLES}
    env.update(
        EMBER_AUTOTUNE_CACHE=str(tuning / "cache"),
        EMBER_AUTOTUNE_LEVEL="balanced",
        EMBER_AUTOTUNE_LOG=str(tuning / "autotune.log"),
        EMBER_AUTOTUNE_LOG_LEVEL="basic",
    )
    return env


def test_a_second_process_measures_nothing(tuning):
    script = tuning / "child.py"
    script.write_text(_CHILD)
    env = _child_env(tuning)
    for _ in range(2):
        subprocess.run([sys.executable, str(script)], env=env, check=True, capture_output=True, timeout=120)
    tunes = [e for e in events(tuning / "autotune.log") if e["event"] == "tune"]
    assert [e["from"] for e in tunes] == ["measured", "cache"]


def test_two_processes_tuning_one_key_at_once_measure_it_once(tuning):
    import time

    script = tuning / "child.py"
    script.write_text(_CHILD)
    env = _child_env(tuning)
    start = str(time.time() + 2.0)
    children = [
        subprocess.Popen(
            [sys.executable, str(script), start], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err.decode()
        assert out.decode().strip() == "1"
    tunes = [e for e in events(tuning / "autotune.log") if e["event"] == "tune"]
    assert sorted(e["from"] for e in tunes) == ["cache", "measured"]
    [folder] = (tuning / "cache" / __version__).iterdir()
    assert len(decisions(folder, "t_proc")) == 1


# ---- configuration -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "variable, value, message",
    [
        (
            "EMBER_AUTOTUNE_LEVEL",
            "fastest",
            "EMBER_AUTOTUNE_LEVEL='fastest'.*'minimal', 'balanced', 'extensive'",
        ),
        (
            "EMBER_AUTOTUNE_LOG_LEVEL",
            "medium",
            "EMBER_AUTOTUNE_LOG_LEVEL='medium'.*'disabled', 'basic' or 'full'.*autotune log",
        ),
    ],
)
def test_bad_variables_name_what_is_accepted(tuning, monkeypatch, variable, value, message):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=message):
        config.get("autotune.level" if variable == "EMBER_AUTOTUNE_LEVEL" else "autotune.logger")


@pytest.mark.parametrize(
    "text, message",
    [
        ('level = "quick"', "autotune.*level"),
        ("level = 3", "autotune.*level"),
        ("cache = 7", "autotune.*cache"),
        ('cache = ""', "autotune.*cache"),
        ('logger = { file = "a.log", stderr = true }', "autotune.*logger"),
        ('logger = { stderr = true, level = "medium" }', "autotune.*logger"),
        ('tune = "yes"', "tune"),
    ],
)
def test_bad_settings_in_the_file_are_errors(tuning, monkeypatch, text, message):
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    (tuning / "ember.toml").write_text(f"[autotune]\n{text}\n")
    with pytest.raises(ConfigError, match=message):
        config.reload()
        config.get("autotune.level")


def test_settings_in_the_file(tuning, monkeypatch):
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    (tuning / "ember.toml").write_text(
        '[autotune]\nlevel = "Extensive"\ncache = "tuned"\nlogger = { file = "tune.log", level = "full" }\n'
    )
    config.reload()
    assert config.get("autotune.level") == "extensive"
    assert config.get("autotune.cache") == tuning / "tuned"
    assert config.get("autotune.logger") == {"file": str(tuning / "tune.log"), "level": "full"}
    assert cache_module.cache_folder().parents[1] == tuning / "tuned"


def test_parts_of_one_class_share_a_decision(tuning, clock):
    calls = []
    op = declare("t_parts", clock, calls, {"a": 2.0, "b": 1.0})
    assert op(("float32", (1000, 64), 2), 0) == ("b", 0)
    calls.clear()
    assert op(("float32", (1001, 60), 2), 1) == ("b", 1)  # same class: no measuring, no second event
    assert op(("float32", (1000, 64), 2), 2) == ("b", 2)
    assert calls == ["b", "b"]
    assert op.choice(autotune.key("float32", (1024, 64), 2)) == "b"
    assert len([e for e in events(tuning / "autotune.log") if e["event"] == "tune"]) == 1


def test_a_call_default_replaces_the_declared_one_under_minimal(tuning, clock, monkeypatch):
    monkeypatch.setenv("EMBER_AUTOTUNE_LEVEL", "minimal")
    calls = []
    op = declare("t_call_default", clock, calls, {"a": 2.0, "b": 1.0})
    assert op(("float32", (4,)), 0, default="b") == ("b", 0)
    assert op(("float32", (64,)), 0) == ("a", 0)


# ---- pacing first-use tuning ------------------------------------------------------------------
def test_pacing_puts_off_a_key_while_the_allowance_is_spent(tuning, clock):
    calls = []
    op = declare("t_paced", clock, calls, {"a": 400.0, "b": 300.0})  # 0.4 s and 0.3 s a call
    with autotune.paced(True):
        assert op("k1", 1) == ("b", 1)  # measured within the first step's grace
        assert autotune.measured_count() == 1
        calls.clear()
        assert op("k2", 2) == ("a", 2)  # allowance spent: the default runs, nothing measured
        assert calls == ["a"] and op.choice("k2") is None and autotune.measured_count() == 1
        assert op("k2", 3) == ("a", 3)  # still waiting: the default again, a cheap path
        clock.now += 10.0  # ten seconds of other work earn the allowance back
        assert op("k2", 4) == ("b", 4)
        assert op.choice("k2") == "b" and autotune.measured_count() == 2
    tunes = [e for e in events(tuning / "autotune.log") if e["event"] == "tune"]
    assert [(e["key"], e["from"]) for e in tunes] == [("k1", "measured"), ("k2", "measured")]


def test_a_waiting_key_found_in_the_cache_is_not_put_off(tuning, clock):
    calls = []
    op = declare("t_paced_cached", clock, calls, {"a": 400.0, "b": 300.0})
    with autotune.paced(True):
        op("k1", 1)
        op("k2", 2)  # waiting
    autotune.store().append(
        "t_paced_cached",
        {"key": "k2", "source": op.source, "winner": "b", "level": "balanced", "times_ms": {}},
    )
    op._waiting.clear()  # as in a new process that finds the decision on its first call
    with autotune.paced(True):
        assert op("k2", 5) == ("b", 5)
    assert autotune.measured_count() == 1


def test_nothing_is_measured_while_kernels_compile(tuning, clock, monkeypatch):
    calls = []
    op = declare("t_deferred", clock, calls, {"a": 400.0, "b": 300.0})
    busy = [True]
    monkeypatch.setattr(tunable_module._PACING, "busy", None)  # restored after the test
    autotune.defer_while(lambda: busy[0])
    with autotune.paced(True):
        clock.now += 100.0  # plenty of allowance: only the compile holds the key back
        assert op("k1", 1) == ("a", 1) and op("k1", 2) == ("a", 2)  # the default, twice
        assert op.choice("k1") is None and autotune.measured_count() == 0
        busy[0] = False
        assert op("k1", 3) == ("b", 3)  # measured once the compile is over
        assert op.choice("k1") == "b" and autotune.measured_count() == 1
    busy[0] = True
    with autotune.paced(False):  # ahead-of-time tuning measures regardless
        assert op("k2", 4) == ("b", 4) and autotune.measured_count() == 2


def test_the_cpu_backend_defers_tuning_to_the_end_of_its_background_compile(monkeypatch):
    from ember.kernels.cpu import background_compile as bg

    assert tunable_module._PACING.busy is bg.compiling
    monkeypatch.setattr(bg, "_PENDING", {"float32"})
    monkeypatch.setattr(bg, "_POLL_S", 0.0)  # look for the marker at every call
    monkeypatch.setattr(bg, "_next_look", [0.0])
    monkeypatch.setattr(bg, "marker_path", lambda dtype: Path("/nonexistent/marker"))
    assert bg.compiling()
    monkeypatch.setattr(bg, "marker_path", lambda dtype: Path(__file__))  # the marker is there
    assert not bg.compiling() and set() == bg._PENDING


def test_without_pacing_every_key_is_measured_as_it_comes(tuning, clock):
    calls = []
    op = declare("t_unpaced", clock, calls, {"a": 400.0, "b": 300.0})
    for k in ("k1", "k2", "k3"):
        assert op(k, 0) == ("b", 0)
    assert autotune.measured_count() == 3


_SOURCE_CHILD = textwrap.dedent(
    """
    import ember.kernels.cpu.attention, ember.kernels.cpu.gemm
    from ember.kernels.autotune import tunables
    print(sorted((op, t.source) for op, t in tunables().items()))
    """
)


def test_a_candidates_source_hash_is_the_same_in_every_process():
    # partials (the attention's tile sizes) and Numba dispatchers hash by code, not by address
    runs = [
        subprocess.run(
            [sys.executable, "-c", _SOURCE_CHILD], check=True, capture_output=True, text=True, timeout=120
        )
        for _ in range(2)
    ]
    assert runs[0].stdout == runs[1].stdout and "cpu.attention" in runs[0].stdout
