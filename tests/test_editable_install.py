"""A directory named ``ember`` beside a user's script never shadows the installed package.

With setuptools' default editable install (an import finder appended to ``sys.meta_path``),
Python's own path search ran first and turned any ``ember/`` directory without an
``__init__.py`` in the working directory — a checkout cloned there, an empty folder — into an
empty namespace package: ``import ember`` "worked" and ``ember.seed`` raised ``AttributeError``.
pyproject.toml's ``package-dir`` makes ``pip install -e .`` write a plain path entry instead, and
a regular package on ``sys.path`` always wins over namespace portions. Each case runs a fresh
interpreter the way a user would, away from this checkout.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROBE = "import ember; ember.seed(0); print(ember.__file__)"


def installed_ember() -> Path:
    """The ``ember/__init__.py`` that the installed distribution provides; skips when ember is
    not installed (the tests are then run from a bare checkout, where nothing can shadow it)."""
    try:
        dist = importlib.metadata.distribution("ember")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("ember is not installed (pip install -e .); nothing to shadow")
    direct_url = dist.read_text("direct_url.json")
    info = json.loads(direct_url) if direct_url else {}
    if info.get("dir_info", {}).get("editable"):
        source = Path(info["url"].removeprefix("file://"))
        if source.resolve() != REPO:
            pytest.skip(f"the editable install points at another checkout ({source})")
        return REPO / "ember" / "__init__.py"
    return Path(dist.locate_file("ember/__init__.py"))


def run_python(args: list[str], cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # as a user's shell has it
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, (
        f"`import ember` from {cwd} did not reach the installed package (an `ember` directory there "
        f"shadows it; reinstall with `pip install -e .` so that the install is a path entry):\n"
        f"{done.stderr[-2000:]}"
    )
    return done.stdout.strip().splitlines()[-1]


def test_an_empty_ember_directory_in_the_working_directory(tmp_path):
    expected = installed_ember()
    (tmp_path / "ember").mkdir()
    assert Path(run_python(["-c", PROBE], tmp_path)).resolve() == expected.resolve()


def test_a_checkout_named_ember_in_the_working_directory(tmp_path):
    expected = installed_ember()
    checkout = tmp_path / "ember"  # `git clone ... ember` in the user's project, then `pip install -e ember`
    (checkout / "ember").mkdir(parents=True)
    (checkout / "ember" / "__init__.py").write_text("raise ImportError('the checkout beside the script')\n")
    (checkout / "pyproject.toml").write_text("[project]\nname = 'ember'\n")
    (checkout / "tests").mkdir()
    assert Path(run_python(["-c", PROBE], tmp_path)).resolve() == expected.resolve()


def test_an_ember_directory_next_to_a_script(tmp_path):
    expected = installed_ember()
    project = tmp_path / "project"
    (project / "ember").mkdir(parents=True)  # the script's directory comes first on sys.path
    (project / "train.py").write_text(PROBE.replace("; ", "\n") + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert Path(run_python([str(project / "train.py")], elsewhere)).resolve() == expected.resolve()
