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


def test_failing_rename_leaves_no_scratch(tmp_path, monkeypatch):
    def refuse(src, dst):
        raise OSError("disk went away")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    with pytest.raises(OSError, match="disk went away"):
        rec.save(tmp_path / "model.bpk", {"w": np.ones(3)})
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


def test_failing_fsync_leaves_no_file(tmp_path, monkeypatch):
    def broken_fsync(fd):
        raise OSError("EIO")

    monkeypatch.setattr(atomic.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="EIO"):
        rec.save(tmp_path / "model.bpk", {"w": np.ones(3)})
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


def test_safetensors_and_config_saves_are_atomic(tmp_path, monkeypatch):
    class Small(rec.Config):
        n: int = 1

    monkeypatch.setattr(atomic.os, "replace", lambda src, dst: (_ for _ in ()).throw(
        OSError("no rename")))
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
