"""``make demo`` / ``make test`` install ember into the venv once, then only when what the
install builds from changes (stamps in the venv), and precompile the kernels likewise; a fresh
venv (``.ci/run``'s) gets the whole install. Checked with ``make -n`` (nothing runs)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PIP = "-m pip install -e"
PRECOMPILE = "-m ember.precompile"
TUNE = "-m ember.autotune"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")


def _dry_run(target: str, venv: Path, *extra: str) -> str:
    done = subprocess.run(
        ["make", "-n", target, f"VENV={venv}", *extra], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _fake_venv(tmp_path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    return venv


def _stamp(path: Path) -> None:
    path.write_text("")
    future = time.time() + 3600  # newer than every input, whatever the checkout's times
    os.utime(path, (future, future))


@pytest.mark.parametrize("target", ["demo", "test"])
def test_a_fresh_venv_installs_precompiles_and_tunes(tmp_path, target):
    out = _dry_run(target, tmp_path / "fresh")
    assert "-m venv" in out and PIP in out and PRECOMPILE in out and TUNE in out
    assert out.index(PRECOMPILE) < out.index(TUNE)  # tuning measures the compiled kernels


@pytest.mark.parametrize("target", ["demo", "test"])
def test_an_installed_venv_skips_pip_precompile_and_tuning(tmp_path, target):
    venv = _fake_venv(tmp_path)
    _stamp(venv / ".ember-installed")
    _stamp(venv / ".ember-precompiled")
    _stamp(venv / ".ember-tuned")
    out = _dry_run(target, venv)
    assert PIP not in out and PRECOMPILE not in out and TUNE not in out
    assert ("demo.py" if target == "demo" else "-m pytest") in out


@pytest.mark.parametrize("changed", ["pyproject.toml", "setup.py", "csrc/module.cpp"])
def test_a_changed_install_input_reinstalls(tmp_path, changed):
    venv = _fake_venv(tmp_path)
    _stamp(venv / ".ember-installed")
    _stamp(venv / ".ember-precompiled")
    out = _dry_run("demo", venv, f"--what-if={changed}")  # as if `changed` were just edited
    assert PIP in out and PRECOMPILE in out


def test_a_changed_kernel_only_precompiles(tmp_path):
    venv = _fake_venv(tmp_path)
    _stamp(venv / ".ember-installed")
    _stamp(venv / ".ember-precompiled")
    _stamp(venv / ".ember-tuned")
    out = _dry_run("test", venv, "--what-if=ember/kernels/cpu/gemm.py")
    assert PIP not in out and PRECOMPILE in out and TUNE in out


def test_a_changed_tuner_only_tunes(tmp_path):
    venv = _fake_venv(tmp_path)
    for stamp in (".ember-installed", ".ember-precompiled", ".ember-tuned"):
        _stamp(venv / stamp)
    out = _dry_run("test", venv, "--what-if=ember/kernels/autotune/tunable.py")
    assert PIP not in out and PRECOMPILE not in out and TUNE in out


def test_cis_new_venv_with_torch_but_no_stamp_installs(tmp_path):
    """.ci/run creates .venv-ci and installs PyTorch into it before `make test VENV=.venv-ci`."""
    out = _dry_run("test", _fake_venv(tmp_path))
    assert "-m venv" not in out and PIP in out and PRECOMPILE in out and TUNE in out and "-m pytest" in out
