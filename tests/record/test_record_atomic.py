"""Atomic writes: a failure mid-write leaves no file (or the old file) and no scratch file."""

import os

import numpy as np
import pytest

import ember.record as rec
from ember.record import atomic


class ExplodingTensor:
    """Reports shape/dtype like a device tensor, then fails when copied out mid-write."""

    shape = (4,)
    dtype = np.dtype(np.float32)

    def __init__(self, exc=RuntimeError("device lost")):
        self.exc = exc

    def numpy(self):
        raise self.exc


def _tensors(failing):
    # The first tensor is written before the failing one is reached.
    return {"ok": np.arange(100, dtype=np.float32), "boom": failing}


def test_failure_mid_write_leaves_no_file(tmp_path):
    with pytest.raises(RuntimeError, match="device lost"):
        rec.save(tmp_path / "model.bpk", _tensors(ExplodingTensor()))
    assert os.listdir(tmp_path) == []


def test_failure_mid_write_keeps_the_previous_file(tmp_path):
    path = rec.save(tmp_path / "model.bpk", {"w": np.ones(3)})
    before = path.read_bytes()
    with pytest.raises(KeyboardInterrupt):
        rec.save(path, _tensors(ExplodingTensor(KeyboardInterrupt())))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.bpk"]


@pytest.mark.parametrize(
    "call, message", [("replace", "disk went away"), ("fsync", "EIO")], ids=["rename", "fsync"]
)
def test_failing_os_call_leaves_no_file(tmp_path, monkeypatch, call, message):
    def fail(*args):
        raise OSError(message)

    monkeypatch.setattr(atomic.os, call, fail)
    with pytest.raises(OSError, match=message):
        rec.save(tmp_path / "model.bpk", {"w": np.ones(3)})
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


def test_safetensors_and_config_saves_are_atomic(tmp_path, monkeypatch):
    class Small(rec.Config):
        n: int = 1

    monkeypatch.setattr(atomic.os, "replace", lambda src, dst: (_ for _ in ()).throw(OSError("no rename")))
    with pytest.raises(OSError):
        rec.save_safetensors(tmp_path / "m.safetensors", {"w": np.ones(2)})
    with pytest.raises(OSError):
        Small().save(tmp_path / "config.json")
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


def test_written_file_gets_normal_permissions(tmp_path):
    umask = os.umask(0)
    os.umask(umask)
    path = rec.save(tmp_path / "m.bpk", {"w": np.ones(1)})
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_existing_scratch_name_is_skipped_not_clobbered(tmp_path, monkeypatch):
    counter = iter(range(100))
    monkeypatch.setattr(atomic, "_COUNTER", counter)
    squatter = tmp_path / f"m.bpk.{os.getpid()}-0.tmp"
    squatter.write_bytes(b"someone else's")
    rec.save(tmp_path / "m.bpk", {"w": np.ones(1)})
    assert squatter.read_bytes() == b"someone else's"
    assert sorted(os.listdir(tmp_path)) == sorted(["m.bpk", squatter.name])


# ---- scratch files stranded by a killed writer -------------------------------------------
# A child process saves through the real writer and is SIGKILLed while the scratch file is
# open and half written; the next save to the same path removes that file, and only that.
_SLOW_SAVE = """
import sys, time
import numpy as np
import ember.record as rec

class Stalls:
    shape = (4,)
    dtype = np.dtype(np.float32)

    def numpy(self):
        print("writing", flush=True)
        time.sleep(600)

rec.save(sys.argv[1], {"first": np.arange(1 << 18, dtype=np.float32), "stalls": Stalls()})
"""


def _writer_mid_save(path):
    """A child process stopped inside ``rec.save(path)`` with its scratch file on disk."""
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-c", _SLOW_SAVE, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = child.stdout.readline()
    if line.strip() != "writing":
        child.kill()
        child.wait()
        pytest.fail(f"the writer did not start: {line!r} {child.stderr.read()}")
    scratch = [p for p in path.parent.iterdir() if p.name.startswith(f"{path.name}.{child.pid}-")]
    assert len(scratch) == 1 and scratch[0].name.endswith(".tmp")
    return child, scratch[0]


def _kill(child):
    import signal

    child.kill() if os.name != "posix" else os.kill(child.pid, signal.SIGKILL)


def _dead_pid() -> int:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(done.stdout)


@pytest.mark.skipif(os.name != "posix", reason="writer liveness is checked with POSIX signals")
def test_save_after_a_killed_save_removes_its_scratch_file(tmp_path):
    path = tmp_path / "model.bpk"
    child, scratch = _writer_mid_save(path)
    assert scratch.stat().st_size > 1 << 20  # the first tensor is on disk: a real partial file
    _kill(child)
    child.wait()
    rec.save(path, {"w": np.ones(3)})
    assert os.listdir(tmp_path) == ["model.bpk"]
    np.testing.assert_array_equal(rec.load(path)["w"].numpy(), np.ones(3))


@pytest.mark.skipif(os.name != "posix", reason="writer liveness is checked with POSIX signals")
def test_a_live_writers_scratch_file_is_never_removed(tmp_path):
    path = tmp_path / "model.bpk"
    child, scratch = _writer_mid_save(path)
    try:
        rec.save(path, {"w": np.ones(3)})
        assert scratch.exists()  # its writer is still running
        assert sorted(os.listdir(tmp_path)) == sorted(["model.bpk", scratch.name])
    finally:
        _kill(child)
        child.wait()
    rec.save(path, {"w": np.zeros(3)})
    assert os.listdir(tmp_path) == ["model.bpk"]


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="zombies are recognised through /proc")
def test_an_unreaped_killed_writer_counts_as_gone(tmp_path):
    import time

    path = tmp_path / "model.bpk"
    child, scratch = _writer_mid_save(path)
    _kill(child)
    try:
        deadline = time.monotonic() + 30
        while not atomic._writer_gone(child.pid):  # a zombie once the kernel has killed it
            assert time.monotonic() < deadline, "the killed writer never became a zombie"
            time.sleep(0.01)
        rec.save(path, {"w": np.ones(3)})
        assert not scratch.exists()
    finally:
        child.wait()


@pytest.mark.skipif(os.name != "posix", reason="writer liveness is checked with POSIX signals")
def test_only_the_destinations_stale_scratch_files_are_removed(tmp_path):
    dead = _dead_pid()
    stale = tmp_path / f"m.bpk.{dead}-3.tmp"
    keep = [
        tmp_path / f"other.bpk.{dead}-0.tmp",  # another destination's
        tmp_path / f"m.bpk.{os.getpid()}-7.tmp",  # this process: a live writer
        tmp_path / "m.bpk.x-1.tmp",  # not a scratch name
        tmp_path / f"m.bpk.{dead}-3.tmp.bak",
        tmp_path / f"m.bpk.{1}-0.tmp",
    ]  # init: alive
    for p in [stale] + keep:
        p.write_bytes(b"partial")
    link = tmp_path / f"m.bpk.{dead}-4.tmp"
    os.mkdir(link)  # a directory under a scratch name is not a scratch file
    rec.save(tmp_path / "m.bpk", {"w": np.ones(1)})
    assert not stale.exists()
    assert all(p.exists() for p in keep) and link.is_dir()
