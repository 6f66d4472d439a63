"""Tiered execution on an empty kernel cache: a compile process fills the cache while the cpu
backend runs the composed kernels, and the fused kernels take over once it marks the dtype."""

from __future__ import annotations

import importlib
import os
import sys
import time

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import ember  # noqa: E402
from ember import nn  # noqa: E402
from ember.kernels.cpu import backend as cpu_backend_module  # noqa: E402
from ember.kernels.cpu import background_compile as bg  # noqa: E402
from ember.kernels.cpu import optimizer_ops as cpu_optimizer_ops  # noqa: E402
from ember.kernels.registry import get_backend  # noqa: E402
from ember.optim import AdamConfig, GradientsParams  # noqa: E402
from ember.tensor.device import Device  # noqa: E402


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache directory, with tiering switched on."""
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("EMBER_BACKGROUND_COMPILE", "1")
    return tmp_path


def _writer(delay: float, calls=None, rc: int = 0, first_delay: float | None = None):
    """A compile command that writes the marker after ``delay`` seconds (exit ``rc`` instead
    when it is non-zero), appending a line to ``calls`` when it starts; with ``first_delay``,
    the marker of the first stage's attention group after that many seconds, then the marker
    ``delay`` seconds later."""
    script = (
        "import pathlib, sys, time\n"
        "calls, first, first_delay, marker, delay, rc = sys.argv[1:7]\n"
        "if calls != '-': open(calls, 'a').write('started\\n')\n"
        "if float(first_delay) >= 0:\n"
        "    time.sleep(float(first_delay))\n"
        "    pathlib.Path(first).write_text('done')\n"
        "time.sleep(float(delay))\n"
        "if int(rc): sys.exit(int(rc))\n"
        "pathlib.Path(marker).write_text('done')\n"
    )

    def command(dtype):
        return [
            sys.executable,
            "-c",
            script,
            str(calls or "-"),
            str(bg.first_stage_marker_path(dtype, "attention")),
            str(-1.0 if first_delay is None else first_delay),
            str(bg.marker_path(dtype)),
            str(delay),
            str(rc),
        ]

    return command


def _wait(tiers, dtype, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not tiers.ready(dtype):
        assert time.monotonic() < deadline, "the compile process never marked the dtype"
        time.sleep(0.05)


def test_switch_setting(monkeypatch):
    for value, expected in (("1", True), ("on", True), ("0", False), ("off", False)):
        monkeypatch.setenv("EMBER_BACKGROUND_COMPILE", value)
        assert bg.enabled() is expected
    monkeypatch.setenv("EMBER_BACKGROUND_COMPILE", "sometimes")
    with pytest.raises(ValueError, match="EMBER_BACKGROUND_COMPILE"):
        bg.enabled()


def test_marker_names_dtype_and_fingerprint(cache):
    path = bg.marker_path("float32")
    assert path.parent == cache and path.name == f"compiled-float32-{bg.fingerprint()}"
    assert bg.fingerprint() == bg.fingerprint()
    bg.mark_compiled("float64")
    assert bg.marker_path("float64").exists() and not path.exists()


def test_disabled_means_always_ready(cache, monkeypatch):
    monkeypatch.setenv("EMBER_BACKGROUND_COMPILE", "0")
    tiers = bg.BackgroundCompile(command=lambda d: pytest.fail("no compile process when disabled"))
    assert tiers.ready("float32") and tiers.ready_for(np.zeros(3, np.float64))


def test_waits_for_the_marker_then_switches(cache, capfd):
    calls = cache / "calls"
    tiers = bg.BackgroundCompile(command=_writer(0.5, calls), poll_s=0.0)
    assert not tiers.ready("float32")  # empty cache: starts the compile, stand-ins run
    assert "compiling the cpu kernels for float32 in the background" in capfd.readouterr().err
    assert not tiers.ready_for(np.zeros(2, np.float16))  # float16 runs on the float32 kernels
    assert tiers.ready_for(np.zeros(2, np.int64))  # no fused kernel takes ints: never held back
    _wait(tiers, "float32")
    assert calls.read_text().count("started") == 1
    assert tiers.ready_for([np.zeros(2, np.float32)])
    # a later process finds the marker and starts nothing
    later = bg.BackgroundCompile(command=lambda d: pytest.fail("the marker is there"))
    assert later.ready("float32")


def test_each_first_stage_group_switches_at_its_own_marker(cache):
    tiers = bg.BackgroundCompile(command=_writer(30.0, first_delay=0.3), poll_s=0.0)
    assert not tiers.ready("float32", "attention")
    marker = bg.first_stage_marker_path("float32", "attention")
    assert marker.name == f"compiled-first-attention-float32-{bg.fingerprint()}"
    deadline = time.monotonic() + 30
    while not tiers.ready("float32", "attention"):
        assert time.monotonic() < deadline, "the group's marker never switched its kernels"
        time.sleep(0.05)
    for kernel in bg.FIRST_STAGE_GROUPS["attention"]:
        assert tiers.ready_for(np.zeros(2, np.float32), kernel)
    # another group, the second stage's kernels and a call that names none still wait
    assert not tiers.ready("float32", "dropout")
    assert not tiers.ready("float32", "gelu")
    assert not tiers.ready("float32")
    assert not tiers.ready("float64", "attention")  # another dtype: its own markers
    bg.mark_compiled("float32", "layers")
    assert tiers.ready("float32", "rows") and not tiers.ready("float32", "dropout")
    bg.mark_compiled("float32", "dropout")
    assert tiers.ready("float32", "dropout")
    assert not tiers.ready("float32", "gelu")
    tiers._children["float32"].kill()
    bg.mark_compiled("float32")
    assert tiers.ready("float32", "gelu") and tiers.ready("float32")


def test_compile_here_only_some_kernels(cache, monkeypatch):
    monkeypatch.setattr(bg, "_compile_here", False)
    monkeypatch.setattr(bg, "_compile_only", None)
    tiers = bg.BackgroundCompile(command=lambda d: pytest.fail("a compile worker starts nothing"))
    bg.compile_here(only=frozenset({"attention"}))
    assert tiers.ready("float32", "attention") and tiers.ready("float64", "attention")
    assert not tiers.ready("float32", "dropout") and not tiers.ready("float32")
    bg.compile_here()
    assert tiers.ready("float32", "dropout") and tiers.ready("float32")


def test_the_first_stage_groups_are_disjoint_and_keep_the_attention_pair_together():
    groups = list(bg.FIRST_STAGE_GROUPS.values())
    assert sum(len(g) for g in groups) == len(bg.FIRST_STAGE)  # no kernel in two groups
    # the attention backward runs fused only after the fused forward: one group holds both
    assert any({"attention", "attention_backward"} <= g for g in groups)
    assert not bg.FIRST_STAGE & {"gelu", "gelu_backward", "layer_norm"}  # C++ stands in for these
    from ember.precompile import FIRST_STAGE_WORKERS

    workers = [g for groups in FIRST_STAGE_WORKERS for g in groups]
    assert sorted(workers) == sorted(bg.FIRST_STAGE_GROUPS)  # each group compiled by one worker


def test_one_compile_process_for_many_ember_processes(cache):
    calls = cache / "calls"
    first = bg.BackgroundCompile(command=_writer(1.0, calls), poll_s=0.0)
    second = bg.BackgroundCompile(command=_writer(1.0, calls), poll_s=0.0)
    assert not first.ready("float64")
    assert not second.ready("float64")  # the first one's process holds the lock: it waits
    _wait(second, "float64")
    assert first.ready("float64")
    assert calls.read_text().count("started") == 1


def test_a_dead_compile_process_is_taken_over(cache):
    marker = bg.marker_path("float32")
    marker.with_name(marker.name + ".lock").write_text("999999999\n")  # no such process
    calls = cache / "calls"
    tiers = bg.BackgroundCompile(command=_writer(0.1, calls), poll_s=0.0)
    assert not tiers.ready("float32")
    _wait(tiers, "float32")
    assert calls.read_text().count("started") == 1


def test_a_failed_compile_falls_back_to_compiling_here(cache):
    tiers = bg.BackgroundCompile(command=_writer(0.0, rc=3), poll_s=0.0)
    assert not tiers.ready("float32")
    with pytest.warns(RuntimeWarning, match="exited with 3"):
        _wait(tiers, "float32")


class _NeverReady:
    def ready_for(self, array, kernel=None):
        return False


class _NoKernels:
    """Stands in for a Numba kernel module: any use of it fails the test."""

    def __init__(self, name):
        self.name = name

    def __getattr__(self, attr):
        raise AssertionError(f"{self.name}.{attr} ran while the kernels were compiling")

    def __call__(self, *args, **kwargs):
        raise AssertionError(f"{self.name} ran while the kernels were compiling")


# The kernels each family mixin of the cpu backend calls, by module of ember.kernels.cpu.
_FUSED_KERNELS = {
    "activations": ("gelu", "gelu_backward"),
    "attention": ("attention", "attention_backward"),
    "cross_entropy": ("cross_entropy", "cross_entropy_backward"),
    "dropout": ("dropout", "dropout_backward"),
    "embedding": ("embedding", "embedding_backward"),
    "embedding_bag": ("embedding_bag", "embedding_bag_backward", "coalesce_rows", "rows_to_dense"),
    "norms": ("layer_norm", "layer_norm_backward", "rms_norm", "rms_norm_backward"),
    "softmax": ("softmax", "softmax_backward", "log_softmax", "log_softmax_backward"),
}


def test_stand_ins_compile_nothing_and_match_the_kernels(monkeypatch):
    """A training step with the kernels held back runs no Numba kernel and gives the fused
    kernels' results (same dropout masks: one counter-based hash)."""

    class Model(nn.Module):
        def __init__(self):
            self.embedding = nn.EmbeddingConfig(30, 16).init()
            self.encoder = nn.TransformerEncoderConfig(16, 32, 2, 1, norm_first=True).init()
            self.head = nn.LinearConfig(16, 3).init()

        def forward(self, ids, mask):
            h = self.encoder(nn.TransformerEncoderInput(self.embedding(ids)).mask_pad(mask))
            return self.head(h[:, 0])

    ids = ember.tensor(np.arange(24).reshape(2, 12) % 30)
    mask = ember.tensor(np.arange(12)[None, :] >= np.array([[12], [7]]))
    labels = ember.tensor([0, 2])

    def step():
        ember.seed(3)
        model = Model()
        loss = nn.CrossEntropyLossConfig().init()(model(ids, mask), labels)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = AdamConfig().init().step(1e-2, model, grads)
        return float(loss.numpy()), model.head.weight.numpy()

    fused_loss, fused_weight = step()
    backend = get_backend(Device("cpu"))
    monkeypatch.setattr(backend, "_tiers", _NeverReady())
    monkeypatch.setattr(backend, "_native", False)  # the composed code, not the C++ kernels
    for module_name, kernels in _FUSED_KERNELS.items():
        module = importlib.import_module(f"ember.kernels.cpu.{module_name}")
        for kernel in kernels:
            monkeypatch.setattr(module, kernel, _NoKernels(f"{module_name}.{kernel}"))
    for module_name in ("optim_updates", "optim_sparse_updates"):
        monkeypatch.setattr(cpu_optimizer_ops, module_name, _NoKernels(module_name))
    for module_name in ("activations", "embedding"):  # the primitives' own kernels (erf, row gather)
        monkeypatch.setattr(cpu_backend_module, module_name, _NoKernels(module_name))
    standby_loss, standby_weight = step()
    assert standby_loss == pytest.approx(fused_loss, rel=1e-5)
    np.testing.assert_allclose(standby_weight, fused_weight, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_arriving_between_forward_and_backward_keep_the_gradient(monkeypatch, dtype):
    """A forward run composed while the kernels compiled, then a backward once they are ready:
    the backward must differentiate what the forward computed (the fused attention backward
    reads a float64 lse the composed forward does not make)."""
    from ember.kernels.reference import ReferenceBackend

    rng = np.random.default_rng(0)
    q, k, v, dout = (rng.standard_normal((1, 2, 5, 8)).astype(dtype) for _ in range(4))
    mask = np.array([[False, False, False, True, True]])
    args = (mask, 0.35, False, 0.25, 1234)
    backend = get_backend(Device("cpu"))
    monkeypatch.setattr(backend, "_tiers", _NeverReady())
    out, lse = backend.attention(q, k, v, *args)
    monkeypatch.undo()
    grads = backend.attention_backward(dout, q, k, v, out, lse, *args)
    expected = ReferenceBackend(seed=0).attention_backward(dout, q, k, v, out, lse, *args)
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_a_forked_child_waits_on_the_lock_not_on_its_parents_process(cache):
    tiers = bg.BackgroundCompile(command=_writer(1.0), poll_s=0.0)
    assert not tiers.ready("float32")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no warning about a failed compile, it just waits
        try:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("error")
                ok = not tiers.ready("float32")
                _wait(tiers, "float32")
            os.write(write, b"1" if ok else b"0")
        except BaseException:
            os.write(write, b"0")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    assert answer == b"1"
    _wait(tiers, "float32")


def test_an_unwritable_cache_compiles_here(cache, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(bg.os, "open", refuse)
    tiers = bg.BackgroundCompile(command=lambda d: pytest.fail("no process without a lock"))
    with pytest.warns(RuntimeWarning, match="cannot start the background kernel compile"):
        assert tiers.ready("float64")


def test_a_lock_without_its_pid_yet_counts_as_held_while_fresh(cache):
    marker = bg.marker_path("float32")
    lock = marker.with_name(marker.name + ".lock")
    lock.write_text("")  # another process between creating the lock and writing its pid
    tiers = bg.BackgroundCompile(command=lambda d: pytest.fail("the lock is held"), poll_s=0.0)
    assert not tiers.ready("float32")
    os.utime(lock, (time.time() - 60, time.time() - 60))  # ... and never wrote it: stale
    calls = cache / "calls"
    tiers._command = _writer(0.1, calls)
    _wait(tiers, "float32")
    assert calls.read_text().count("started") == 1


def test_compile_here_wins_over_a_backend_made_earlier(cache, monkeypatch):
    # ember.precompile run in a process whose cpu backend already waits on an empty cache
    tiers = bg.BackgroundCompile(command=_writer(30.0), poll_s=0.0)
    assert not tiers.ready("float32")
    monkeypatch.setattr(bg, "_compile_here", False)
    bg.compile_here()
    assert tiers.ready("float32")  # its workloads now compile the kernels
    assert os.environ["EMBER_BACKGROUND_COMPILE"] == "0"
    tiers._children["float32"].kill()


def test_one_process_precompile_runs_each_group_then_everything(cache, monkeypatch):
    """``--jobs 1``: the workers' work in this process, in order: each first-stage group with the
    kernels of the groups so far, marked when done; then a workload compiling every kernel."""
    from ember import precompile

    runs, marks = [], []
    monkeypatch.setattr(bg, "_compile_here", False)
    monkeypatch.setattr(bg, "_compile_only", None)
    monkeypatch.setitem(precompile.WORKLOADS, "fake", lambda dtype: runs.append((dtype, bg._compile_only)))
    monkeypatch.setattr(precompile, "mark_compiled", lambda dtype, group=None: marks.append((dtype, group)))
    timings: dict = {}
    specs = [("a", "fake", ("dropout", "attention")), ("b", "fake", ())]
    precompile._run_jobs(specs, ["float32"], 1, False, timings, 0.0)
    dropout, attention = bg.FIRST_STAGE_GROUPS["dropout"], bg.FIRST_STAGE_GROUPS["attention"]
    assert runs == [("float32", dropout), ("float32", dropout | attention), ("float32", None)]
    assert marks == [("float32", "dropout"), ("float32", "attention")]
    assert set(timings) == {"a", "b"}
