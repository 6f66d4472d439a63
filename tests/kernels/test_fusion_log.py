"""The fusion log (``[fusion] logger`` / ``EMBER_FUSION_LOG``): each level writes its events and
no others, one JSON object a line; each flush names its cause; the setting's errors name the
file and the key; a log that cannot be written warns once and the computation goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import ember
from ember import config
from ember.config import ConfigError
from ember.config.__main__ import main as config_main
from ember.kernels.fusion import engine, log
from ember.kernels.fusion.lazy import Lazy
from ember.optim import GradientsParams, SgdConfig

fusion_on = pytest.mark.skipif(not engine.settings.enabled, reason="EMBER_FUSION=0")

_VARIABLES = [config.CONFIG_VARIABLE, "EMBER_FUSION_LOG", "EMBER_FUSION_LOG_LEVEL"]

EVENTS = {
    "disabled": set(),
    "basic": {"compile"},
    "medium": {"compile", "hit", "miss", "flush"},
    "full": {"compile", "hit", "miss", "flush", "record", "eager"},
}

FIELDS = {
    "compile": {
        "event", "backend", "kernel", "signature", "ops", "dtypes", "inputs", "outputs", "rank",
        "compile_s", "disk_cache",
    },
    "hit": {"event", "signature", "ops", "kernel"},
    "miss": {"event", "signature", "ops", "seen"},
    "flush": {"event", "cause", "pending", "shape", "dtype"},
    "record": {"event", "op", "shape", "dtype", "depth"},
    "eager": {"event", "op", "reason"},
}  # fmt: skip


@pytest.fixture
def clean(tmp_path, monkeypatch):
    """No configuration file or log variable in effect (a working directory of its own); the
    log is read afresh from the configuration, and again once the test is over."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    config.reload()
    log.reset()
    yield tmp_path
    log.reset()
    monkeypatch.undo()
    config.reload()
    log.reset()


def use_file(directory, text: str) -> None:
    """Write ``ember.toml`` in ``directory`` (the working directory) and read it."""
    (directory / "ember.toml").write_text(text, encoding="utf-8")
    config.reload()
    log.reset()


def events(path) -> list[dict]:
    """Every line of the log, each parsed as JSON (a line that is not fails the test)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _sines(k: int):
    """A chain of ``2 k`` ops no other test builds, so its kernel is compiled (or loaded from
    disk) in this process for the first time when the test runs it."""

    def chain(x):
        for _ in range(k):
            x = (x * 0.5).sin()
        return x

    return chain


def workload(chain) -> None:
    x = ember.tensor(np.linspace(-1, 1, 24).reshape(4, 6), dtype=ember.float32)
    for _ in range(2):  # the second run is a plan-cache hit
        chain(x).numpy()
    ember.ones(3, dtype=ember.int64) * 2  # an op the engine runs at once


# ---- levels ---------------------------------------------------------------------------------------
@fusion_on
@pytest.mark.parametrize("level", list(EVENTS))
def test_each_level_writes_exactly_its_events(clean, fuse_all, level):
    path = clean / "fusion.log"
    use_file(clean, f'[fusion]\nlogger = {{ file = "fusion.log", level = "{level}" }}\n')
    workload(_sines(7 + list(EVENTS).index(level)))
    written = events(path)
    assert {e["event"] for e in written} == EVENTS[level], written
    for event in written:
        assert set(event) == FIELDS[event["event"]], event
    if level == "disabled":
        assert not path.exists()
        return
    (compiled,) = [e for e in written if e["event"] == "compile"]
    ops = ["binary:mul", "unary:sin"] * (7 + list(EVENTS).index(level))
    assert compiled["ops"] == ops and compiled["dtypes"] == ["float32"] * len(ops)
    assert compiled["backend"] == "cpu" and compiled["kernel"].startswith("ember_chain_")
    # x and each multiplication's scalar; the flat [4, 6] array is one loop
    assert compiled["inputs"] == 1 + len(ops) // 2 and compiled["outputs"] == 1 and compiled["rank"] == 1
    assert compiled["compile_s"] >= 0 and isinstance(compiled["disk_cache"], bool)
    if level in ("medium", "full"):
        looked = [e for e in written if e["event"] in ("hit", "miss")]
        assert [e["event"] for e in looked] == ["miss", "hit"]
        assert {e["signature"] for e in looked} == {compiled["signature"]}
        assert looked[1]["kernel"] == compiled["kernel"] and looked[0]["ops"] == len(ops)
        flushes = [e for e in written if e["event"] == "flush"]
        flush = {"event": "flush", "cause": "Tensor.numpy", "pending": len(ops), "shape": [4, 6]}
        assert flushes == [{**flush, "dtype": "float32"}] * 2
    if level == "full":
        records = [e for e in written if e["event"] == "record"]
        assert [e["op"] for e in records] == ops * 2
        assert [e["depth"] for e in records[: len(ops)]] == list(range(1, len(ops) + 1))
        assert [e for e in written if e["event"] == "eager"] == [
            {"event": "eager", "op": "binary:mul", "reason": "dtype int64 not fused"}
        ]


@fusion_on
def test_stderr_and_the_default_level(clean, fuse_all, capsys):
    use_file(clean, "[fusion]\nlogger = { stderr = true }\n")
    assert log.LOG.level == "basic"
    workload(_sines(13))
    lines = capsys.readouterr().err.splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["compile"]


# ---- causes ---------------------------------------------------------------------------------------
@pytest.fixture
def flushes(clean, fuse_all):
    """The causes of the flushes the test makes, in order (the log at ``medium``)."""
    path = clean / "causes.log"
    log.configure("medium", path)
    return lambda: [e["cause"] for e in events(path) if e["event"] == "flush"]


def _pending(x):
    return (ember.tensor(np.arange(1.0, 7.0).reshape(2, 3), dtype=ember.float32) * x).exp()


@fusion_on
@pytest.mark.parametrize(
    ("sync", "cause"),
    [
        (lambda y: y.numpy(), "Tensor.numpy"),
        (lambda y: y.tolist(), "Tensor.tolist"),
        (lambda y: print(y), "Tensor.__repr__"),
        (lambda y: repr(y), "Tensor.__repr__"),
        (lambda y: float(y[0, 0]), "basic_index"),
        (lambda y: y @ ember.ones(3, 2), "matmul"),
        (lambda y: y.sum(), "sum"),
        (lambda y: y // 2.0, "floordiv"),  # an element-wise op the kernels do not compute
    ],
    ids=["numpy", "tolist", "print", "repr", "index", "matmul", "sum", "floordiv"],
)
def test_a_flush_names_what_needed_the_value(flushes, sync, cause, capsys):
    sync(_pending(0.5))
    assert flushes()[:1] == [cause]


@fusion_on
def test_item_of_a_pending_value_is_named_item(flushes):
    (ember.tensor(2.0) * 3.0 + 1.0).item()
    assert flushes() == ["Tensor.item"]


@fusion_on
def test_backward_and_an_optimizer_step_are_causes(flushes):
    class Model(ember.nn.Module):
        def __init__(self):
            self.w = ember.nn.Param(ember.ones(3, 4))

    model = Model()
    x = ember.ones(2, 3)
    # the gradient reaching the product is a pending chain: the product's backward reads it
    loss = ((x @ model.w.value) * 2.0).tanh().sum()
    grads = GradientsParams.from_grads(loss.backward(), model)
    assert "backward" in flushes()
    before = len(flushes())
    pending = model.w.value * 3.0
    assert type(pending._arr) is Lazy
    SgdConfig().init().step(0.1, model, grads)
    assert "optimizer step" in flushes()[before:]


@fusion_on
def test_the_gradients_computed_together_are_one_flush(clean, fuse_all):
    path = clean / "group.log"
    log.configure("medium", path)
    x = ember.tensor(np.linspace(-2, 2, 48).reshape(6, 8), dtype=ember.float32).require_grad()
    w = ember.ones(8).require_grad()
    y = x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * w  # a composed RMSNorm
    y.backward(ember.ones(6, 8))
    flushes = [e for e in events(path) if e["event"] == "flush"]
    assert [(e["cause"], e.get("roots")) for e in flushes] == [("backward", 2)]


@fusion_on
def test_a_reduction_a_chain_reads_is_part_of_the_chains_flush(flushes):
    y = (ember.ones(4, 8) * 2.0).exp()
    total = y.sum(-1, keepdim=True)  # reads y as it goes, computed when the division is
    assert type(total._arr) is Lazy and total._arr.value is None
    z = y / total
    np.testing.assert_allclose(z.numpy(), np.full((4, 8), 1 / 8), rtol=1e-6)
    assert flushes() == ["Tensor.numpy"]


@fusion_on
def test_the_depth_limit_is_a_cause(flushes, monkeypatch):
    monkeypatch.setattr(engine.settings, "max_depth", 3)
    y = ember.ones(5)
    for _ in range(4):
        y = y + 1.0
    assert flushes() == ["depth limit"]


@fusion_on
def test_eager_ops_say_why_the_chain_was_cut(clean, monkeypatch):
    path = clean / "eager.log"
    log.configure("full", path)
    monkeypatch.setattr(engine.settings, "min_elements", 100)
    ember.ones(10) * 2.0
    ember.ones(10, dtype=ember.float16) * 2.0
    ember.ones(200) // 2.0
    ember.ones(200).to(ember.int32)
    ember.tensor([1.0, 2.0], device="reference") * 2.0
    (ember.ones(200) * 2.0).sum()
    ember.ones(200).sum(0)
    monkeypatch.setattr(engine.settings, "enabled", False)
    ember.ones(200) * 2.0
    reasons = [(e["op"], e["reason"]) for e in events(path) if e["event"] == "eager"]
    assert reasons == [
        ("binary:mul", "below min_elements"),
        ("binary:mul", "dtype float16 not fused"),
        ("binary:floordiv", "op not fused"),
        ("cast:int32", "op not fused"),
        ("binary:mul", "backend has no chain runner"),
        ("reduce:sum", "axes not fused (the last axis, or leading axes, are)"),
        ("reduce:sum", "input already computed"),
        ("binary:mul", "fusion disabled"),
    ]


# ---- cost and safety ------------------------------------------------------------------------------
@fusion_on
def test_off_the_log_computes_no_cause_and_writes_nothing(clean, fuse_all, monkeypatch):
    def never(*args):
        raise AssertionError("an event was built with the log off")

    for name in ("write", "flush", "record", "eager", "lookup", "built"):
        monkeypatch.setattr(log.FusionLog, name, never)
    assert log.LOG.level == "disabled"
    ((ember.ones(8, 8) * 2.0).exp() + 1.0).numpy()
    ember.ones(3, dtype=ember.int64) * 2


def test_the_log_is_read_on_first_use_not_at_import(tmp_path):
    (tmp_path / "ember.toml").write_text("[fusion]\nlogger = { level = 'full' }\n")
    code = (
        "import ember\nfrom ember.kernels.fusion import log\nprint('level' in vars(log.LOG))\n"
        "try:\n    (ember.ones(1 << 16) * 2.0).numpy()\nexcept Exception as error:\n"
        "    print(type(error).__name__)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in _VARIABLES}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "ConfigError"]


@fusion_on
def test_an_unwritable_file_warns_once_and_computation_goes_on(clean, fuse_all):
    (clean / "not_a_directory").write_text("")
    use_file(clean, "[fusion]\nlogger = { file = 'not_a_directory/fusion.log', level = 'full' }\n")
    with pytest.warns(RuntimeWarning, match=r"fusion log: cannot write to .*not_a_directory") as caught:
        for _ in range(3):
            y = ((ember.ones(4, 4) * 2.0).exp() + 1.0).numpy()
    assert len([w for w in caught if issubclass(w.category, RuntimeWarning)]) == 1
    np.testing.assert_allclose(y, np.exp(2.0) + 1.0, rtol=1e-6)
    assert log.LOG.level == "disabled"


@fusion_on
def test_a_failing_write_warns_once_and_turns_the_log_off(clean, fuse_all):
    path = clean / "fusion.log"
    log.configure("full", path)
    log.LOG._stream.close()  # as if the file system went away under the log
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            y = ((ember.ones(4, 4) * 3.0).exp() - 1.0).numpy()
    assert len([w for w in caught if "fusion log" in str(w.message)]) == 1
    np.testing.assert_allclose(y, np.exp(3.0) - 1.0, rtol=1e-6)
    assert not log.LOG.full


@fusion_on
def test_threads_write_whole_lines(clean, fuse_all):
    path = clean / "threads.log"
    log.configure("full", path)

    def work(seed):
        x = ember.tensor(np.random.default_rng(seed).standard_normal((16, 16)), dtype=ember.float32)
        for _ in range(20):
            ((x * 2.0).tanh() + x).numpy()

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    written = events(path)  # every line parses
    assert sum(e["event"] == "flush" for e in written) == 80


# ---- configuration ---------------------------------------------------------------------------------
def test_the_setting_from_a_file(clean, monkeypatch):
    (clean / "conf").mkdir()
    path = clean / "conf" / "ember.toml"
    monkeypatch.setenv(config.CONFIG_VARIABLE, str(path))
    for text, value in [
        (
            "{ file = 'logs/fusion.log', level = 'FULL' }",
            {"file": str(clean / "conf/logs/fusion.log"), "level": "full"},
        ),
        ("{ file = '/tmp/f.log' }", {"file": "/tmp/f.log", "level": "basic"}),
        ("{ stderr = true, level = 'medium' }", {"stderr": True, "level": "medium"}),
        ("{ stderr = true, level = 'disabled' }", {"stderr": True, "level": "disabled"}),
    ]:
        path.write_text(f"[fusion]\nlogger = {text}\n")
        config.reload()
        assert config.resolve("fusion.logger") == config.Resolved(
            config.SETTINGS_BY_NAME["fusion.logger"], value, str(path)
        ), text
    path.write_text("[fusion.logger]\nfile = 'table.log'\n")  # the same as a table of its own
    config.reload()
    assert config.get("fusion.logger") == {"file": str(clean / "conf/table.log"), "level": "basic"}


@pytest.mark.parametrize(
    "entry",
    [
        "logger = { file = 'f.log', level = 'loud' }",
        "logger = { file = 'f.log', stderr = true }",
        "logger = { levle = 'full', file = 'f.log' }",
        "logger = { level = 'full' }",
        "logger = { stderr = false }",
        "logger = { file = 3 }",
        "logger = { file = '' }",
        "logger = 'stderr'",
    ],
)
def test_a_bad_logger_names_the_file_the_key_and_what_is_accepted(clean, entry):
    path = clean / "ember.toml"
    path.write_text(f"[fusion]\n{entry}\n")
    with pytest.raises(ConfigError) as caught:
        config.reload()
    message = str(caught.value)
    assert str(path) in message and "fusion.logger = " in message, message
    assert "exactly one of file" in message and "'basic', 'medium' or 'full'" in message, message


def test_the_environment_overrides_the_file(clean, monkeypatch):
    use_file(clean, "[fusion]\nlogger = { file = 'file.log', level = 'full' }\n")
    monkeypatch.setenv("EMBER_FUSION_LOG", "stderr")
    assert config.get("fusion.logger") == {"stderr": True, "level": "medium"}
    monkeypatch.setenv("EMBER_FUSION_LOG", "env.log")
    monkeypatch.setenv("EMBER_FUSION_LOG_LEVEL", "Full")
    resolved = config.resolve("fusion.logger")
    assert resolved.value == {"file": str(clean / "env.log"), "level": "full"}
    assert resolved.source == "EMBER_FUSION_LOG"
    monkeypatch.setenv("EMBER_FUSION_LOG_LEVEL", "everything")
    with pytest.raises(ConfigError, match="EMBER_FUSION_LOG_LEVEL='everything'.*'disabled', 'basic'"):
        config.get("fusion.logger")


@fusion_on
def test_the_environment_turns_the_log_on(clean, fuse_all, monkeypatch):
    monkeypatch.setenv("EMBER_FUSION_LOG", "env.log")
    log.reset()
    workload(_sines(14))
    assert {e["event"] for e in events(clean / "env.log")} == EVENTS["medium"]


def test_python_m_ember_config_prints_the_logger(clean, monkeypatch, capsys):
    assert config_main([]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("fusion.logger"))
    assert row.split() == ["fusion.logger", "unset", "default", "EMBER_FUSION_LOG"]
    monkeypatch.setenv("EMBER_FUSION_LOG", "stderr")
    assert config_main(["--json"]) == 0
    rows = {r["setting"]: r for r in json.loads(capsys.readouterr().out)["settings"]}
    assert rows["fusion.logger"]["value"] == {"stderr": True, "level": "medium"}
    assert rows["fusion.logger"]["source"] == "EMBER_FUSION_LOG"
