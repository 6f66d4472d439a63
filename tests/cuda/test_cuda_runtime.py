"""CPU-only tests of the cuda backend's host side: CuPy detection, launch geometry,
argument validation and the kernel registry. None of these need CuPy or a GPU."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import types

import numpy as np
import pytest

from ember.kernels.cuda import launch, modules, runtime, validate


# ---- runtime detection -------------------------------------------------------------------
def test_import_does_not_import_cupy():
    code = (
        "import sys, ember.kernels.cuda as k, ember.kernels.cuda.backend; "
        "assert 'cupy' not in sys.modules, 'cupy imported'; "
        "assert callable(k.softmax) and callable(k.adam_update); "
        "assert all(callable(getattr(k, n)) for n in k.__all__); print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.fixture
def fresh_runtime(monkeypatch):
    monkeypatch.setattr(runtime, "_probe_result", None)
    yield runtime
    runtime.reset()


def _fake_cupy(get_count):
    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=get_count))
    return fake


def test_missing_cupy_is_explained(fresh_runtime, monkeypatch):
    def no_cupy(name):
        raise ImportError(f"No module named '{name}'")

    monkeypatch.setattr(runtime.importlib, "import_module", no_cupy)
    assert not fresh_runtime.is_available()
    with pytest.raises(fresh_runtime.CudaUnavailableError) as info:
        fresh_runtime.cupy_or_error()
    msg = str(info.value)
    assert "CuPy is not installed" in msg and "pip install ember[cuda]" in msg
    assert "cupy-cuda12x" in msg and "cupy-cuda13x" in msg
    assert isinstance(info.value, RuntimeError)


class CUDARuntimeError(RuntimeError):
    """Stands in for cupy_backends.cuda.api.runtime.CUDARuntimeError."""


@pytest.mark.parametrize(
    "message,expected",
    [
        ("cudaErrorNoDevice: no CUDA-capable device is detected", "no CUDA device was found"),
        (
            "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version",
            "driver is too old",
        ),
        ("CuPy failed to load libcuda.so.1", "driver (libcuda) is missing"),
        ("cudaErrorUnknown: unknown error", "could not initialise CUDA"),
    ],
)
def test_driver_and_device_errors_are_explained(fresh_runtime, monkeypatch, message, expected):
    def count():
        raise CUDARuntimeError(message)

    monkeypatch.setattr(runtime.importlib, "import_module", lambda name: _fake_cupy(count))
    assert fresh_runtime.unavailable_reason() is not None
    with pytest.raises(fresh_runtime.CudaUnavailableError, match=re.escape(expected)):
        fresh_runtime.cupy_or_error()


def test_zero_devices_and_success(fresh_runtime, monkeypatch):
    monkeypatch.setattr(runtime.importlib, "import_module", lambda name: _fake_cupy(lambda: 0))
    with pytest.raises(fresh_runtime.CudaUnavailableError, match="no CUDA device is visible"):
        fresh_runtime.cupy_or_error()
    fresh_runtime.reset()
    fake = _fake_cupy(lambda: 2)
    monkeypatch.setattr(runtime.importlib, "import_module", lambda name: fake)
    assert fresh_runtime.cupy_or_error() is fake
    assert fresh_runtime.is_available() and fresh_runtime.unavailable_reason() is None


# ---- launch geometry -----------------------------------------------------------------------
@pytest.mark.parametrize("rows,cols", [(1, 1), (10, 1024), (3, 1025), (5, 4096), (2, 4097), (100000, 7)])
def test_row_launch(rows, cols):
    cfg = launch.row_launch(rows, cols)
    assert cfg.warp == (cols <= 1024)
    threads = cfg.block[0]
    assert threads % 32 == 0 and threads <= 512
    covered = cfg.grid[0] * (threads // 32) if cfg.warp else cfg.grid[0]
    assert covered >= rows and (covered - rows) < (threads // 32 if cfg.warp else 1)


@pytest.mark.parametrize("rows,cols", [(1, 1), (7, 3), (8192, 128), (33, 5000), (10**6, 4)])
def test_column_launch_chunks_cover_rows(rows, cols):
    grid, block, chunks, per = launch.column_launch(rows, cols)
    assert block == (32, 8) and grid == (math.ceil(cols / 32), chunks) and grid[1] <= 65535
    assert (chunks - 1) * per < rows <= chunks * per  # every chunk non-empty, all rows covered


def test_attention_geometry():
    assert [launch.attention_dpad(d) for d in (1, 32, 33, 64, 65, 128)] == [32, 32, 64, 64, 128, 128]
    with pytest.raises(ValueError):
        launch.attention_dpad(129)
    assert launch.attention_launch(128, 256, 32) == ((128, 2), (128,))
    assert launch.attention_launch(6, 65, 64) == ((6, 2), (128,))
    assert launch.attention_launch(6, 33, 128) == ((6, 2), (128,))


def test_elementwise_and_optim_geometry():
    assert launch.elementwise_launch(1) == ((1,), (256,))
    assert launch.elementwise_launch(10**12)[0] == (65535,)
    tensor, start = launch.optim_chunks([5, 0, 4097, 1])
    assert tensor == [0, 2, 2, 3] and start == [0, 0, 4096, 0]


# ---- validation ----------------------------------------------------------------------------
def test_dropout_threshold_equals_the_float_comparison():
    rng = np.random.default_rng(0)
    ps = np.concatenate([[0.0, 1.0, 0.1, 0.5, 0.9, 1e-9, 1 - 1e-9, 2.0**-24, 3 * 2.0**-25], rng.random(200)])
    for p in ps:
        t = int(validate.dropout_threshold(float(p)))
        for k in {max(t - 1, 0), t, min(t + 1, 1 << 24), 0, (1 << 24) - 1}:
            assert (k * 2.0**-24 >= p) == (k >= t), (p, k, t)


def test_seed_and_probability_checks():
    assert validate.seed_u64("op", -1) == np.uint64(2**64 - 1)
    assert validate.seed_u64("op", 2**64 + 3) == np.uint64(3)
    with pytest.raises(TypeError, match="op: seed must be an integer"):
        validate.seed_u64("op", 1.5)
    with pytest.raises(ValueError, match=r"op: p must lie in \[0, 1\]"):
        validate.probability("op", "p", -0.1)
    with pytest.raises(ValueError, match="op: `eps` must be finite, got nan"):
        validate.finite_scalar("op", "eps", float("nan"), minimum=0.0)


def test_array_checks_use_the_given_module():
    # validate works with any NumPy-like module: here NumPy itself stands in for CuPy.
    x = np.zeros((2, 3), np.float32)
    assert validate.float_array(np, "op", "x", x) is x
    assert validate.float_array(np, "op", "x", np.ones((), np.float32), min_ndim=0).ndim == 0
    with pytest.raises(TypeError, match=r"op: x must be a numpy.ndarray on the GPU, got builtins.list"):
        validate.float_array(np, "op", "x", [1.0])
    with pytest.raises(TypeError, match="op: ids must be int64 or int32, got dtype uint8"):
        validate.index_array(np, "op", "ids", np.zeros(3, np.uint8))
    t = validate.float_array(np, "op", "x", x.T)
    assert t.flags.c_contiguous and t.shape == (3, 2)


# ---- kernel registry -----------------------------------------------------------------------
def _kernels_in(source: str) -> set[str]:
    text = (
        (modules.KERNEL_DIR / source).read_text() if source.endswith(".cuh") else modules.kernel_text(source)
    )
    return set(re.findall(r"__global__\s+void\s+(?:__launch_bounds__\(\w+\)\s+)?(\w+)\s*\(", text))


def test_registry_matches_the_sources():
    common = _kernels_in("common.cuh")
    for source, variants in modules.NAME_EXPRESSIONS.items():
        declared = _kernels_in(source) | common
        named = {e.split("<")[0] for exprs in variants.values() for e in exprs}
        assert named <= declared, f"{source}: unknown kernels {named - declared}"
        assert _kernels_in(source) <= named, f"{source}: never instantiated {_kernels_in(source) - named}"
        assert modules.source_text(source).startswith((modules.KERNEL_DIR / "common.cuh").read_text())


def test_kernel_lookup_rejects_unregistered_instantiations():
    with pytest.raises(KeyError, match="not instantiated"):
        modules.kernel("softmax.cu", "float", "softmax_fwd", "float", "maybe", "true")
    assert modules.name_expr("k", "float", 64) == "k<float, 64>"
    assert modules.acc_scalar(np.float16, 0.5).dtype == np.float32
    assert modules.acc_scalar(np.float64, 0.5).dtype == np.float64
