"""The kernel cache: ember's locator stamps each kernel with its file and the package modules it
imports, and `python -m ember.precompile` leaves nothing for a model's first step to compile."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

numba = pytest.importorskip("numba")
from numba.core import caching  # noqa: E402

from ember.kernels.cpu import jit  # noqa: E402


def _closure(name: str) -> set[str]:
    seen, todo = set(), [jit._PACKAGE_DIR / name]
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += jit._imported_siblings(path) - seen
    return {p.name for p in seen}


def test_dependencies_follow_imports_transitively():
    # attention inlines the GEMM tiles, which use vecmath; dropout's hash is shared too
    assert {"attention.py", "tilegemm.py", "vecmath.py", "dropout.py", "jit.py"} <= _closure("attention.py")
    # the Adam kernels depend on nothing but their own file and the jit options
    assert _closure("optim_updates.py") == {"optim_updates.py", "jit.py"}


def test_stamp_changes_with_a_dependency_only(tmp_path, monkeypatch):
    for name, body in {
        "a.py": "from .b import f\n",
        "b.py": "from .jit import serial\n",
        "jit.py": "",
        "c.py": "",
    }.items():
        (tmp_path / name).write_text(body)
    monkeypatch.setattr(jit, "_PACKAGE_DIR", tmp_path)
    jit.dependency_stamp.cache_clear()
    before = jit.dependency_stamp(str(tmp_path / "a.py"))
    (tmp_path / "c.py").write_text("x = 1\n")  # not imported by a.py
    jit.dependency_stamp.cache_clear()
    assert jit.dependency_stamp(str(tmp_path / "a.py")) == before
    (tmp_path / "jit.py").write_text("FLAGS = 2\n")  # imported through b.py
    jit.dependency_stamp.cache_clear()
    assert jit.dependency_stamp(str(tmp_path / "a.py")) != before
    jit.dependency_stamp.cache_clear()


def test_locator_applies_to_ember_kernels_only():
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    assert impl._locator_classes[0] is jit._KernelCacheLocator

    def outside():
        return 1

    assert jit._KernelCacheLocator.from_function(outside, __file__) is None
    from ember.kernels.cpu import softmax

    source = softmax.__file__
    func = next(v.py_func for v in vars(softmax).values() if hasattr(v, "py_func"))
    locator = jit._KernelCacheLocator.from_function(func, source)
    assert locator is not None
    assert locator.get_source_stamp() == jit.dependency_stamp(source)
    assert str(locator.get_cache_path()).startswith(os.environ.get("NUMBA_CACHE_DIR", ""))


# The start of a script that lists, in `compiled`, the functions Numba compiles from then on.
_LISTEN_TO_COMPILES = textwrap.dedent(
    """
    from numba.core import event
    compiled = []
    class Listener(event.Listener):
        def on_start(self, ev):
            pass
        def on_end(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    event.register("numba:compile", Listener())
    """
)

_COUNT_COMPILES = _LISTEN_TO_COMPILES + textwrap.dedent(
    """
    from ember.precompile import WORKLOADS
    WORKLOADS["classifier"]("float32")
    print("COMPILED", len(compiled), sorted(set(compiled)))
    """
)


def test_precompile_leaves_nothing_to_compile():
    """After the command (cheap when the cache is already warm, as after `make install`), a
    Transformer classifier's training step and inference batch load every kernel from the cache."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-m", "ember.precompile"], capture_output=True, text=True, env=env, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kernels ready" in done.stdout
    check = subprocess.run(
        [sys.executable, "-c", _COUNT_COMPILES], capture_output=True, text=True, env=env, timeout=600
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "COMPILED 0 []" in check.stdout, check.stdout


def test_precompile_rejects_bad_arguments():
    from ember.precompile import precompile

    with pytest.raises(ValueError, match="precompile: dtypes must be float32/float64"):
        precompile(["int8"])
    with pytest.raises(ValueError, match="jobs >= 1"):
        precompile(jobs=0)


_FIRST_STAGE_STEP = _LISTEN_TO_COMPILES + textwrap.dedent(
    """
    from ember.kernels.cpu import background_compile as bg
    bg.BackgroundCompile._start = lambda self, dtype, marker: None  # as if another process compiled
    from ember.precompile import WORKLOADS
    WORKLOADS["first-stage"]("float32")
    print("COMPILED", sorted(set(compiled) - {"chain"}))
    """
)


def test_the_first_stage_leaves_nothing_to_compile_for_a_transformer_step(tmp_path):
    """With only the first stage's markers, a Transformer classifier's training step, inference
    batch and token packing run the first stage's kernels from the cache and stand-ins for the
    rest: the training process compiles nothing (the fusion engine's own chains aside)."""
    env = {
        **os.environ,
        "PYTHONWARNINGS": "ignore",
        "NUMBA_CACHE_DIR": str(tmp_path),
        "EMBER_BACKGROUND_COMPILE": "1",
    }
    from ember.kernels.cpu.background_compile import FIRST_STAGE_GROUPS, fingerprint
    from ember.precompile import FIRST_STAGE_WORKERS

    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ember.precompile",
                "--workload",
                "first-stage",
                "--groups",
                ",".join(groups),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for groups in FIRST_STAGE_WORKERS
    ]
    for worker in workers:
        output, _ = worker.communicate(timeout=900)
        assert worker.returncode == 0, output
    for group in FIRST_STAGE_GROUPS:  # each worker marked its groups
        assert (tmp_path / f"compiled-first-{group}-float32-{fingerprint()}").exists()
    check = subprocess.run(
        [sys.executable, "-c", _FIRST_STAGE_STEP], capture_output=True, text=True, env=env, timeout=600
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "COMPILED []" in check.stdout, check.stdout
