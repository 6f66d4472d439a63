"""The tree passes the project's ruff configuration (pyproject.toml): lint and format.

ruff comes with the ``test`` extra, so `make test` and CI run these; without ruff they skip.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    return [exe]


@pytest.mark.parametrize(
    "args",
    [["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]],
    ids=["lint", "format"],
)
def test_tree_passes_ruff(args):
    result = subprocess.run([*_ruff(), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (
        f"`ruff {' '.join(args)}` failed (run `make format` to fix formatting):\n"
        f"{result.stdout}{result.stderr}"
    )
