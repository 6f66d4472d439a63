"""Shared pytest configuration: markers, the backend-parametrized ``device`` fixture, helpers.

Every conformance test takes the ``device`` fixture (a device name string) or ``backend``
(that device's Backend object) and so runs once per backend:

* ``reference`` — pure NumPy, the specification;
* ``cpu`` — Numba kernels; a core backend, so an import failure FAILS its tests (never skips);
* ``cuda`` — marked ``cuda`` and skipped, with the runtime's reason, when no GPU/CuPy is usable;
* ``torch`` — PyTorch's kernels on the CPU, marked ``torch`` and skipped when PyTorch is not
  installed (it is the optional extra ``ember[torch]``).

``pytest -m cuda`` therefore selects exactly the cuda-parametrized tests.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import pytest

# The suite tests the fused kernels, so they compile on first use rather than running their
# composed stand-ins while a background compile fills an empty cache (tests of that tiering set
# the variable themselves). Subprocesses the tests start inherit it.
os.environ.setdefault("EMBER_BACKGROUND_COMPILE", "0")
# Tuned kernels run their default candidate and no decision is read from or written to a cache:
# which candidate computes a result never depends on the machine's timings or on an earlier run
# (tests/kernels/test_autotune*.py turn autotune on themselves, and run each candidate).
os.environ.setdefault("EMBER_AUTOTUNE_LEVEL", "minimal")
os.environ.setdefault("EMBER_AUTOTUNE_CACHE", "off")

# ember before any test module imports PyTorch: its OpenMP runtime then loads with the passive
# policy ember sets, and the kernels stay on OpenMP as in a script that imports ember first.
import ember  # noqa: F401

_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:  # makes ``helpers`` (tests/helpers/) importable from any test file
    sys.path.insert(0, _TESTS_DIR)


def _without_local_constants() -> None:
    """Hypothesis draws, now and then, a literal it found in any local module already imported
    (every ember module, examples/...): which ones depends on what the collected test files and
    the tests run so far imported, and changes with any literal edited anywhere in ember, so a
    derandomized test would draw other examples alone than in the whole suite. The pool is
    kept empty: each test's examples depend on its own code only. Hypothesis has no setting
    for this; without the private hook (an older or newer Hypothesis) nothing changes."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:
        return
    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        providers._get_local_constants = providers.Constants


_without_local_constants()

_MARKERS = (
    "cuda: needs a CUDA GPU and CuPy",
    "slow: long-running",
    "torch: uses PyTorch (as an oracle, or the torch backend)",
)


def pytest_configure(config):
    # pyproject.toml registers these too; registering here keeps --strict-markers working
    # when the tests are run with another config file or none.
    for line in _MARKERS:
        config.addinivalue_line("markers", line)


def cuda_unavailable_reason() -> str | None:
    """None when the cuda backend can run here, else why not, in the runtime's own words
    (``unavailable_reason()``, or the error ``cupy_or_error()`` raises)."""
    try:
        runtime = importlib.import_module("ember.kernels.cuda.runtime")
    except ImportError as exc:
        return f"ember.kernels.cuda.runtime cannot be imported ({exc})"
    try:
        if runtime.is_available():
            return None
        explain = getattr(runtime, "unavailable_reason", None)
        if explain is not None and explain():
            return str(explain())
        getter = getattr(runtime, "cupy_or_error", None)
        if getter is not None:
            getter()
    except Exception as exc:  # - a broken driver must skip, not crash collection
        return f"{type(exc).__name__}: {exc}"
    return "CUDA is not available"


def _check_cpu_backend() -> None:
    try:
        importlib.import_module("ember.kernels.cpu.backend")
    except Exception as exc:  # - any import error of a core backend is a failure
        pytest.fail(f"the core 'cpu' backend failed to import: {type(exc).__name__}: {exc}", pytrace=False)


def _prepare(name: str) -> str:
    if name == "cpu":
        _check_cpu_backend()
    elif name == "cuda":
        reason = cuda_unavailable_reason()
        if reason is not None:
            pytest.skip(f"cuda backend unavailable: {reason}")
    elif name == "torch" and importlib.util.find_spec("torch") is None:
        pytest.skip("torch backend unavailable: PyTorch is not installed (pip install ember[torch])")
    return name


DEVICE_PARAMS = [
    pytest.param("reference", id="reference"),
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.cuda),
    pytest.param("torch", id="torch", marks=pytest.mark.torch),
]

# Backends compared against ``reference`` in cross-backend tests.
OTHER_DEVICE_PARAMS = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.cuda),
    pytest.param("torch", id="torch", marks=pytest.mark.torch),
]


@pytest.fixture(scope="session", params=DEVICE_PARAMS)
def device(request) -> str:
    """The name of a device to run a conformance test on (one test per backend).

    Session-scoped so that Hypothesis tests may use it and tests are grouped per backend.
    """
    return _prepare(request.param)


@pytest.fixture(scope="session")
def backend(device):
    """The Backend object computing on ``device``."""
    from ember.tensor.device import as_device

    return as_device(device).backend


@pytest.fixture(scope="session", params=OTHER_DEVICE_PARAMS)
def other_device(request) -> str:
    """A non-reference device, for tests that check it agrees with ``reference``."""
    return _prepare(request.param)


@pytest.fixture
def rng():
    """A NumPy generator with a fixed seed, fresh for every test."""
    import numpy as np

    return np.random.default_rng(1234)


# ---- skipped tests: counted by reason in the summary ---------------------------------------------
# pyproject's ``-rfE`` lists failures and errors in full; skips (about a thousand cuda cases on a
# machine without a GPU) get one line per distinct reason here instead of one line per test.
def _skip_reason(report) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter):
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    import collections

    counts = collections.Counter(_skip_reason(report) for report in skipped)
    terminalreporter.section(f"{len(skipped)} skipped, by reason", sep="-")
    for reason, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        terminalreporter.write_line(f"{count:6d}  {reason}")
