"""Native C++ kernels vs their Numba twins vs NumPy vs PyTorch, at AG News sizes.

GELU runs on the feed-forward activation ``[32, 256, 512]`` and layer norm on the
model width ``[32, 256, 128]`` (batch 32, sequence 256), float32. Each benchmark sets
``benchmark.group`` (one group per op/shape/dtype) and ``benchmark.extra_info["impl"]``
in {"native", "numba", "numpy", "torch"}; entries whose implementation is missing
(extension not built, Numba kernel not written yet, torch not installed) are skipped.

Run:  pytest bench/bench_native.py --benchmark-only --benchmark-columns=median,iqr,ops
      (add --benchmark-json=out.json to keep the numbers)
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable

import numpy as np
import pytest

from ember.kernels import native_ops

GELU_SHAPE = (32, 256, 512)
LN_SHAPE = (32, 256, 128)
EPS = 1e-5
IMPLS = ("native", "numba", "numpy", "torch")


def _shape_str(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(s) for s in shape) + "]"


DTYPES = {"f32": np.float32, "f64": np.float64}


@pytest.fixture(scope="module", params=list(DTYPES))
def data(request):
    rng = np.random.default_rng(0)
    d = LN_SHAPE[-1]
    dt = DTYPES[request.param]
    return {
        "dtype": request.param,
        "gx": rng.standard_normal(GELU_SHAPE).astype(dt),
        "gdy": rng.standard_normal(GELU_SHAPE).astype(dt),
        "lx": rng.standard_normal(LN_SHAPE).astype(dt),
        "ldy": rng.standard_normal(LN_SHAPE).astype(dt),
        "gamma": (1.0 + 0.1 * rng.standard_normal(d)).astype(dt),
        "beta": (0.1 * rng.standard_normal(d)).astype(dt),
    }


# ------------------------------------------------------------------ implementations
def _numba_module(name: str):
    try:
        return importlib.import_module(f"ember.kernels.cpu.{name}")
    except ImportError as exc:
        pytest.skip(f"Numba twin ember.kernels.cpu.{name} not available: {exc}")


def _native(op: str, d: dict) -> Callable[[], object]:
    if not native_ops.available():
        pytest.skip(f"native extension not built: {native_ops.load_error()}")
    return _kernel_calls(native_ops, op, d)


def _numba(op: str, d: dict) -> Callable[[], object]:
    module = _numba_module("activations" if op.startswith("gelu") else "norms")
    name = op.split()[0].replace("-tanh", "")
    if not hasattr(module, name) or not hasattr(module, f"{name}_backward"):
        pytest.skip(f"{module.__name__} has no {name}/{name}_backward yet")
    return _kernel_calls(module, op, d)


def _kernel_calls(module, op: str, d: dict) -> Callable[[], object]:
    """The contract-named functions of `module` bound to the benchmark data."""
    approx = "tanh" in op
    if op.startswith("gelu") and op.endswith("fwd"):
        return lambda: module.gelu(d["gx"], approx)
    if op.startswith("gelu"):
        return lambda: module.gelu_backward(d["gx"], d["gdy"], approx)
    if op == "layer_norm fwd":
        return lambda: module.layer_norm(d["lx"], d["gamma"], d["beta"], EPS)
    _, mean, rstd = module.layer_norm(d["lx"], d["gamma"], d["beta"], EPS)
    return lambda: module.layer_norm_backward(d["ldy"], d["lx"], mean, rstd, d["gamma"])


_erf = np.frompyfunc(math.erf, 1, 1)


def _numpy(op: str, d: dict) -> Callable[[], object]:
    """Composed from NumPy ufuncs, as the reference backend does (erf via math.erf)."""
    x, dy = d["gx"], d["gdy"]
    c = np.float32(math.sqrt(2.0 / math.pi))
    k = np.float32(0.044715)

    def cdf(v):
        return np.float32(0.5) * (1 + _erf(v * np.float32(1 / math.sqrt(2))).astype(np.float32))

    if op == "gelu fwd":
        return lambda: x * cdf(x)
    if op == "gelu bwd":
        pdf = lambda v: np.float32(1 / math.sqrt(2 * math.pi)) * np.exp(np.float32(-0.5) * v * v)
        return lambda: dy * (cdf(x) + x * pdf(x))
    if op == "gelu-tanh fwd":
        return lambda: np.float32(0.5) * x * (1 + np.tanh(c * (x + k * x**3)))

    def gelu_tanh_bwd():
        t = np.tanh(c * (x + k * x**3))
        return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * k * x * x))

    if op == "gelu-tanh bwd":
        return gelu_tanh_bwd
    lx, ldy, gamma, beta = d["lx"], d["ldy"], d["gamma"], d["beta"]

    def ln_fwd():
        mean = lx.mean(-1, keepdims=True)
        xc = lx - mean
        rstd = 1 / np.sqrt((xc * xc).mean(-1, keepdims=True) + np.float32(EPS))
        return xc * rstd * gamma + beta, mean, rstd

    if op == "layer_norm fwd":
        return ln_fwd
    _, mean, rstd = ln_fwd()

    def ln_bwd():
        xhat = (lx - mean) * rstd
        g = ldy * gamma
        dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
        rows = ldy.reshape(-1, gamma.shape[0])
        return dx, (rows * xhat.reshape(rows.shape)).sum(0), rows.sum(0)

    return ln_bwd


def _torch(op: str, d: dict) -> Callable[[], object]:
    torch = pytest.importorskip("torch")
    torch.set_num_threads(native_ops.num_threads())
    t = {k: torch.from_numpy(v) for k, v in d.items() if isinstance(v, np.ndarray)}
    mode = "tanh" if "tanh" in op else "none"
    aten = torch.ops.aten
    if op.startswith("gelu") and op.endswith("fwd"):
        return lambda: torch.nn.functional.gelu(t["gx"], approximate=mode)
    if op.startswith("gelu"):
        return lambda: aten.gelu_backward(t["gdy"], t["gx"], approximate=mode)
    norm_shape = [LN_SHAPE[-1]]
    if op == "layer_norm fwd":
        return lambda: torch.native_layer_norm(t["lx"], norm_shape, t["gamma"], t["beta"], EPS)
    _, mean, rstd = torch.native_layer_norm(t["lx"], norm_shape, t["gamma"], t["beta"], EPS)
    mask = [True, True, True]
    return lambda: aten.native_layer_norm_backward(
        t["ldy"], t["lx"], norm_shape, mean, rstd, t["gamma"], t["beta"], mask
    )


_FACTORIES = {"native": _native, "numba": _numba, "numpy": _numpy, "torch": _torch}

OPS = {
    "gelu fwd": GELU_SHAPE,
    "gelu bwd": GELU_SHAPE,
    "gelu-tanh fwd": GELU_SHAPE,
    "gelu-tanh bwd": GELU_SHAPE,
    "layer_norm fwd": LN_SHAPE,
    "layer_norm bwd": LN_SHAPE,
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", list(OPS))
def test_bench(benchmark, data, op, impl):
    fn = _FACTORIES[impl](op, data)
    fn()  # compile (Numba) / warm caches and thread pools outside the timed region
    benchmark.group = f"{op} {_shape_str(OPS[op])} {data['dtype']}"
    benchmark.extra_info["impl"] = impl
    benchmark.extra_info["threads"] = native_ops.num_threads()
    if impl == "native":
        benchmark.extra_info["isa"] = native_ops.isa()
    if impl == "numpy" and op in ("gelu fwd", "gelu bwd"):
        # math.erf per element takes about a second here: a few rounds are enough.
        benchmark.pedantic(fn, rounds=3, iterations=1)
    else:
        benchmark(fn)
