"""Running ``tests/distributed/ddp_toy.py`` alone, under ``mpiexec`` or under the launcher."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

TOY = str(Path(__file__).with_name("ddp_toy.py"))


def mpi_unavailable_reason() -> str | None:
    """Why the multi-process tests cannot run here, None when they can."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return 'mpi4py is not installed (pip install "ember[distributed]")'
    from ember.distributed.launch import find_mpiexec

    try:
        find_mpiexec()
    except FileNotFoundError:
        return "no mpiexec on this machine"
    return None


needs_mpi = pytest.mark.skipif(mpi_unavailable_reason() is not None, reason=str(mpi_unavailable_reason()))


def _env() -> dict:
    env = dict(os.environ)
    env.update(EMBER_RENDERER="cli", EMBER_NUM_THREADS="1")
    return env


def run_toy(
    directory,
    *args,
    ranks: int = 0,
    launcher: bool = False,
    timeout: float = 50,
    extra_env: dict | None = None,
) -> tuple:
    """Run the toy; returns ``(returncode, stdout, stderr, seconds)``.

    Args:
        ranks: 0 for one plain process, else the number of MPI ranks (``--ddp`` is added).
        launcher: start the ranks with ``python -m ember.distributed.launch`` instead of mpiexec.
        extra_env: variables added to the environment.
    """
    from ember.distributed.launch import find_mpiexec

    toy = [TOY, str(directory), *args]
    if ranks == 0:
        command = [sys.executable, *toy]
    elif launcher:
        command = [sys.executable, "-m", "ember.distributed.launch", "-n", str(ranks), *toy, "--ddp"]
    else:
        command = [find_mpiexec(), "-n", str(ranks), sys.executable, *toy, "--ddp"]
    started = time.monotonic()
    env = {**_env(), **(extra_env or {})}
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def weights(directory, rank: int = 0) -> dict:
    with np.load(Path(directory) / f"weights-rank{rank}.npz") as data:
        return {k: data[k] for k in data.files}


def assert_same_weights(a: dict, b: dict, atol: float = 2e-6) -> None:
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=0, atol=atol, err_msg=key)


def ok(result) -> None:
    code, out, err, _ = result
    assert code == 0, f"exit {code}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}"


def artifact_files(directory) -> list[str]:
    root = Path(directory)
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "weights-rank" not in p.name
    )
