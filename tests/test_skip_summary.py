"""The test run's summary: failures and errors in full, skips counted by reason (one line per
reason, not one per test), through tests/conftest.py and pyproject's ``addopts``."""

import subprocess
import sys
import textwrap
from pathlib import Path

import tomllib

TESTS = Path(__file__).resolve().parent


def test_pyproject_reports_failures_and_errors_but_not_each_skip():
    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())
    assert config["tool"]["pytest"]["ini_options"]["addopts"].split() == ["-rfE"]


def test_skips_are_counted_by_reason_and_failures_stay_in_full(tmp_path):
    # The inner run loads the project's conftest.py as its own, so the hook under test is the real one.
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(f"""
        import importlib.util
        _spec = importlib.util.spec_from_file_location("ember_tests_conftest", {str(TESTS / "conftest.py")!r})
        _conftest = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_conftest)
        pytest_terminal_summary = _conftest.pytest_terminal_summary
    """)
    )
    (tmp_path / "test_inner.py").write_text(
        textwrap.dedent("""
        import pytest

        @pytest.mark.parametrize("case", range(5))
        def test_needs_gpu(case):
            pytest.skip("cuda backend unavailable: no GPU")

        @pytest.mark.skip(reason="slow on this machine")
        def test_slow():
            pass

        def test_broken():
            assert 1 + 1 == 3, "arithmetic is off"
    """)
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfE", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = run.stdout
    assert run.returncode == 1, out
    assert "6 skipped, by reason" in out
    assert "     5  cuda backend unavailable: no GPU" in out and "     1  slow on this machine" in out
    assert "SKIPPED [" not in out  # no line per skipped test
    assert "FAILED test_inner.py::test_broken - AssertionError: arithmetic is off" in out
    assert "assert (1 + 1) == 3" in out  # the failure's traceback, in full
