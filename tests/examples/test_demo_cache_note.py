"""The demo says that its first run compiles the cpu kernels only when the kernel cache is cold
(no marker from ``python -m ember.precompile``), not after ``make install`` filled it."""

from __future__ import annotations

import pytest
from text_classification import demo

from ember.kernels.cpu import background_compile

TINY = [
    "--source", "synthetic", "--d-model", "16", "--d-ff", "32", "--n-heads", "2", "--n-layers", "1",
    "--seq-length", "32", "--epochs", "1", "--train-samples", "96", "--valid-samples", "32",
    "--num-workers", "0",
]  # fmt: skip


@pytest.fixture
def marker(monkeypatch, tmp_path):
    """The cache's compiled-marker, at a path the test creates (warm) or not (cold)."""
    path = tmp_path / "compiled-float32-test"
    monkeypatch.setattr(background_compile, "marker_path", lambda dtype: path)
    return path


def test_no_compile_note_when_the_cache_is_warm(marker, tmp_path, capsys):
    marker.write_text("compiled\n")
    demo.main(TINY + ["--model", "transformer", "--artifact-dir", str(tmp_path / "run")])
    out = capsys.readouterr().out
    assert "Transformer held-out accuracy" in out
    assert "about 40 s" not in out and "kernel compilation" not in out, out


def test_the_compile_note_when_the_cache_is_cold(marker, tmp_path, capsys):
    args = ["--model", "fasttext", "--source", "synthetic", "--buckets", "1024", "--epochs", "1"]
    demo.main(args + ["--artifact-dir", str(tmp_path / "run")])
    out = capsys.readouterr().out
    assert demo.COLD_CACHE_NOTE.strip() in out and "including start-up and kernel compilation" in out


def test_only_the_cpu_backend_compiles_kernels(marker):
    assert demo.kernel_cache_cold("cpu") and not demo.kernel_cache_cold("reference")
    marker.write_text("compiled\n")
    assert not demo.kernel_cache_cold("cpu")
