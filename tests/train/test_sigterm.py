"""SIGTERM (what SLURM and Kubernetes send before they kill) is handled like Ctrl-C: the run
stops at the end of the batch, writes a checkpoint and says how to resume; the handler is
installed only for the run, only from the main thread."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import train_toy as toy

from ember.train.renderer import CliMetricsRenderer

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGTERM to a child is POSIX")

TESTS_DIR = Path(__file__).resolve().parents[1]
N_BATCHES = 96 // 16


def _toy_command(directory, *args):
    return [sys.executable, "-m", "helpers.train_toy", str(directory), *args]


def _env():
    return dict(
        os.environ,
        PYTHONPATH=str(TESTS_DIR) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        EMBER_RENDERER="cli",
    )


def test_sigterm_checkpoints_and_says_how_to_resume(tmp_path):
    marker = tmp_path / "waiting"
    child = subprocess.Popen(
        _toy_command(tmp_path / "run", "--epochs", "3", "--wait-for-signal-at", "2", "4", str(marker)),
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert marker.exists(), child.communicate(timeout=10)
        child.send_signal(signal.SIGTERM)  # from outside, as a scheduler does
        out, err = child.communicate(timeout=180)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    assert "SIGTERM" in out and "checkpoint(2)" in out and "batch 5 of epoch 2" in out, out
    assert "interrupted after epoch 1" in out
    run = tmp_path / "run"
    assert (run / "checkpoint" / "training-2.bpk").exists()
    for split in ("train", "valid"):  # the logs of the finished epoch are complete
        assert (run / split / "epoch-1" / "Loss.log").read_text().splitlines()[-1].endswith(",final")
    assert len((run / "train" / "epoch-2" / "Loss.log").read_text().splitlines()) == 4 + 1  # + `final`
    # Resumed, the run ends where an uninterrupted one does.
    subprocess.run(
        _toy_command(run, "--epochs", "3", "--resume", "2"),
        env=_env(),
        check=True,
        capture_output=True,
        timeout=240,
    )
    subprocess.run(
        _toy_command(tmp_path / "full", "--epochs", "3"),
        env=_env(),
        check=True,
        capture_output=True,
        timeout=240,
    )
    a, b = toy.ToyClassifier(), toy.ToyClassifier()
    a.load_file(run / "model.bpk")
    b.load_file(tmp_path / "full" / "model.bpk")
    for (path, x), (_, y) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(x.value.numpy(), y.value.numpy(), err_msg=path)


class _HandlerProbe:
    def __init__(self):
        self.seen = []

    def log_progress(self, progress):
        self.seen.append(signal.getsignal(signal.SIGTERM))


def _own_handler(signum, frame):
    raise AssertionError("not expected to run")


def test_the_handler_is_installed_for_the_run_and_the_previous_one_restored(tmp_path):
    previous = signal.signal(signal.SIGTERM, _own_handler)
    try:
        probe = _HandlerProbe()
        t = toy.training(tmp_path / "a", epochs=1, renderer=CliMetricsRenderer(stream=io.StringIO()))
        t.with_progress_logger(probe).launch(toy.learner())
        assert probe.seen and all(h is not _own_handler for h in probe.seen)
        assert signal.getsignal(signal.SIGTERM) is _own_handler
        off = _HandlerProbe()
        t = toy.training(tmp_path / "b", epochs=1, renderer=CliMetricsRenderer(stream=io.StringIO()))
        t.with_progress_logger(off).with_sigterm_handler(False).launch(toy.learner())
        assert off.seen and all(h is _own_handler for h in off.seen)
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_run_outside_the_main_thread_installs_no_handler(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    probe, errors = _HandlerProbe(), []

    def work():
        try:
            t = toy.training(tmp_path, epochs=1, renderer=CliMetricsRenderer(stream=io.StringIO()))
            t.with_progress_logger(probe).launch(toy.learner())
        except BaseException as exc:  # (reported below, in the test's thread)
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(240)
    assert errors == [] and probe.seen
    assert all(h is before for h in probe.seen) and signal.getsignal(signal.SIGTERM) is before
