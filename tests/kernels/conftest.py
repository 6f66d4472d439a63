"""Fixtures of the fusion engine's tests."""

from __future__ import annotations

import pytest

from ember.kernels.fusion import engine


@pytest.fixture
def fuse_all(monkeypatch):
    """Record every element-wise op whatever its size (the default records large ones only),
    and compile each chain the first time (the default waits for its second sighting)."""
    monkeypatch.setattr(engine.settings, "min_elements", 0)
    monkeypatch.setattr(engine.settings, "compile_after", 1)


@pytest.fixture
def eager(monkeypatch):
    """``eager(fn, *args)``: ``fn(*args)`` with fusion off (every op run at once)."""

    def run(fn, *args):
        monkeypatch.setattr(engine.settings, "enabled", False)
        try:
            return fn(*args)
        finally:
            monkeypatch.setattr(engine.settings, "enabled", True)

    return run
