"""The text-classification example's ``--backend torch|torch:cuda|torch:mps``: the device each
names, ``--dtype f16`` on them, and a clear error where this machine lacks the device."""

from __future__ import annotations

import argparse

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install ember[torch])")

from text_classification import ag_news_train  # noqa: E402
from text_classification.flags import resolve_device  # noqa: E402

import ember  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.mark.parametrize(("dtype", "want"), [("f32", None), ("f16", ember.float16)])
def test_torch_on_the_cpu(dtype, want):
    assert resolve_device(argparse.ArgumentParser(), "torch", dtype) == ("torch", want)


@pytest.mark.parametrize(
    ("backend", "available", "says"),
    [
        ("torch:cuda", lambda: torch.cuda.is_available(), "PyTorch sees no CUDA GPU"),
        ("torch:mps", lambda: torch.backends.mps.is_available(), "PyTorch's MPS backend is not available"),
    ],
)
def test_a_missing_accelerator_is_a_clear_error(backend, available, says, usage_error):
    if available():
        assert resolve_device(argparse.ArgumentParser(), backend, "f16")[0].startswith(backend)
        return
    err = usage_error(ag_news_train.main, ["--backend", backend])
    assert f"--backend {backend}: {says}" in err and "--backend torch" in err
