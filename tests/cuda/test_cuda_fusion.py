"""The ``cuda`` chain runner (:mod:`ember.kernels.cuda.fused_chain`): its generated CUDA C
compiled without a GPU, run by the host emulator, and on a GPU.

:data:`CHAINS` is the catalogue: every op of ``engine.FUSED_UNARY`` and ``FUSED_BINARY``,
``where`` and the casts, on float32 and float64 (and bool where the op takes it), with
broadcast rows, columns and rank-3 shapes, one-element inputs, mixed dtypes, non-contiguous
inputs and several outputs (intermediates the test holds are written out by the kernel).

* nvcc (and NVRTC, as CuPy calls it, when libnvrtc is found) compiles the kernel of each
  chain, for both index widths; skipped, saying why, without them.
* The host emulator (g++, :mod:`cuda_host_emulator`) runs those kernels through the runner
  and the engine, and every output is compared with the backend's op-by-op values (NumPy
  here), with NaN, +-inf, +-0, huge and subnormal values among the inputs.
* On a GPU (``pytest -m cuda``): the same chains, and tensor-level chains forward and
  backward, fused against unfused on ``Device("cuda")``.
"""

from __future__ import annotations

import re
import subprocess
import types

import cuda_host_emulator
import numpy as np
import pytest
from helpers.fusion_chains import CHAINS as TENSOR_CHAINS
from test_cu_sources_compile import ARCH, _nvrtc_compile, find_nvcc, find_nvrtc

import ember
from ember.core import dtypes as dt
from ember.kernels.cuda import fused_chain, runtime
from ember.kernels.fusion import engine, plan
from ember.kernels.fusion.lazy import Lazy
from ember.kernels.reference import ArrayBackend

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
SHAPE = (37, 19)


class Ops:
    """The engine's element-wise entry points bound to one backend (what the tensor layer calls)."""

    def __init__(self, backend):
        self.backend = backend

    def u(self, op, x):
        return engine.unary(self.backend, op, x)

    def b(self, op, a, b):
        return engine.binary(self.backend, op, a, b)

    def where(self, c, a, b):
        return engine.where(self.backend, c, a, b)

    def cast(self, x, dtype):
        return engine.cast(self.backend, x, dt.dtype_from_numpy(np.dtype(dtype)))


def _edge_values(dtype) -> np.ndarray:
    big = np.finfo(dtype).max / 2
    tiny = np.finfo(dtype).smallest_subnormal * 3
    return np.array(
        [
            0.0,
            -0.0,
            np.inf,
            -np.inf,
            np.nan,
            big,
            -big,
            tiny,
            -tiny,
            0.5,
            1.5,
            2.5,
            -0.5,
            -2.5,
            1.0,
            -1.0,
            3.0,
        ],
        dtype,
    )


def inputs(dtype, seed: int = 0) -> dict:
    """The arrays the chains read (host NumPy arrays): ``x`` and ``y`` of SHAPE with edge
    values, a row ``w``, a column ``col``, a 0-d ``s``, masks ``m`` and ``m2``, ``z`` of the
    other float dtype, and rank-3 operands ``a3`` (4, 1, 5), ``b3`` (3, 1), ``c3`` (4, 3, 5)."""
    rng = np.random.default_rng(seed)
    other = FLOATS[1] if np.dtype(dtype) == FLOATS[0] else FLOATS[0]
    x = (rng.standard_normal(SHAPE) * 3).astype(dtype)
    y = (rng.standard_normal(SHAPE) * 3).astype(dtype)
    edges = _edge_values(dtype)
    x.reshape(-1)[: edges.size] = edges
    y.reshape(-1)[5 : 5 + edges.size] = edges[::-1]  # edge against edge, and against plain values
    return {
        "x": x,
        "y": y,
        "w": (rng.standard_normal(SHAPE[1]) * 2).astype(dtype),
        "col": np.concatenate([edges[:8], rng.standard_normal(SHAPE[0] - 8)]).astype(dtype)[:, None],
        "s": np.array(-1.25, dtype),
        "s2": np.array(0.75, dtype),
        "m": rng.random(SHAPE) < 0.5,
        "m2": rng.random(SHAPE) < 0.5,
        "z": (rng.standard_normal(SHAPE) * 2).astype(other),
        "a3": rng.standard_normal((4, 1, 5)).astype(dtype),
        "b3": rng.standard_normal((3, 1)).astype(dtype),
        "c3": rng.standard_normal((4, 3, 5)).astype(dtype),
        "xt": np.ascontiguousarray(x.T),  # transposed back below: a non-contiguous view
    }


def _join(o, values: list):
    """One root reading every value: floats folded by ``maximum`` (exact: no rounding of
    its own, NaN propagates), bools by ``logical_or``, then a ``where``."""
    floats = [v for v in values if v.dtype != np.bool_]
    bools = [v for v in values if v.dtype == np.bool_]
    f = floats[0]
    for v in floats[1:]:
        f = o.b("maximum", f, v)
    if not bools:
        return f
    c = bools[0]
    for v in bools[1:]:
        c = o.b("logical_or", c, v)
    return o.where(c, f, o.u("neg", f))


UNARY_FLOAT = sorted(engine.FUSED_UNARY - {"logical_not", "isnan", "isinf", "isfinite"})
ARITHMETIC = ("add", "sub", "mul", "div", "pow", "maximum", "minimum")
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
LOGICAL = ("logical_and", "logical_or", "logical_xor")


def chain_unary(o, a):
    held = [o.u(op, a["x"]) for op in UNARY_FLOAT]
    tests = [o.u(op, a["x"]) for op in ("isnan", "isinf", "isfinite")]
    held += tests + [o.u("logical_not", tests[2])]
    return held


def chain_binary_row(o, a):
    x, w = a["x"], a["w"]
    held = [o.b(op, x, w) for op in ARITHMETIC] + [o.b(op, x, w) for op in COMPARE]
    held += [o.b(op, held[-1], a["m"]) for op in LOGICAL]  # bool and bool
    return held


def chain_binary_column(o, a):
    col, y = a["col"], a["y"]
    return [o.b(op, col, y) for op in ARITHMETIC] + [o.b(op, y, col) for op in ARITHMETIC + COMPARE]


def chain_edges_against_edges(o, a):
    x, y = a["x"], a["y"]
    return [o.b(op, x, y) for op in ARITHMETIC + COMPARE] + [o.b(op, x, y) for op in LOGICAL]


def chain_scalars(o, a):
    x, s, s2 = a["x"], a["s"], a["s2"]
    t = o.b("add", o.b("mul", x, s), s2)
    return [t, o.b("div", o.b("sub", s, x), s2), o.b("maximum", t, s), o.b("pow", o.u("abs", x), s2)]


def chain_zero_d(o, a):
    s, s2 = a["s"], a["s2"]
    return [o.b("sub", o.b("mul", s, s2), o.u("neg", s))]


def chain_mixed_dtypes(o, a):
    x, y, z, m, m2 = a["x"], a["y"], a["z"], a["m"], a["m2"]
    other = z.dtype
    return [
        o.b("add", x, z),  # promotes to float64
        o.b("lt", z, x),
        o.b("mul", o.cast(x, other), z),
        o.cast(o.b("sub", z, o.cast(y, other)), x.dtype),
        o.b("mul", m, x),  # bool times float
        o.cast(m, x.dtype),
        o.where(m, x, y),
        o.where(o.b("gt", x, y), o.u("sigmoid", x), y),
        o.b("logical_and", x, y),  # float operands: nonzero (NaN too) is true
        o.b("logical_xor", x, m),
        o.b("div", m, m2),  # true division of bools: float64
        o.b("add", m, m2),  # bool or
        o.b("mul", m, m2),  # bool and
        o.b("eq", m, m2),
    ]


def chain_rank3(o, a):
    t = o.b("mul", a["a3"], a["b3"])  # (4, 1, 5) * (3, 1) -> (4, 3, 5): both broadcast
    return [t, o.b("add", o.u("sigmoid", t), a["c3"])]


def chain_transposed(o, a):
    xt = a["xt"].T  # (37, 19), not contiguous: read at strided offsets
    return [o.b("add", o.u("tanh", xt), a["y"]), o.b("mul", xt, a["w"])]


def chain_signed_zeros(o, a):
    """Ops whose results (zeros' signs included) must equal eager execution exactly."""
    x, s = a["x"], a["s"]
    return [
        o.u("neg", x),
        o.u("abs", x),
        o.u("sign", x),
        o.u("floor", x),
        o.u("ceil", x),
        o.u("round", x),
        o.b("mul", x, s),
        o.b("sub", x, a["y"]),
        o.b("add", x, a["y"]),
        o.where(a["m"], x, o.u("neg", x)),
    ]


CHAINS = {
    "unary": chain_unary,
    "binary_row": chain_binary_row,
    "binary_column": chain_binary_column,
    "edges_against_edges": chain_edges_against_edges,
    "scalars": chain_scalars,
    "zero_d": chain_zero_d,
    "mixed_dtypes": chain_mixed_dtypes,
    "rank3": chain_rank3,
    "transposed": chain_transposed,
    "signed_zeros": chain_signed_zeros,
}
NON_CONTIGUOUS = {"transposed"}  # the emulator takes C-contiguous arrays only
EXACT = {"signed_zeros", "zero_d"}  # no maths function whose last bit may differ


def build(o, name, arrays):
    """``(root, held)``: the chain's root (reading every value) and the values the test holds."""
    held = CHAINS[name](o, arrays)
    if len(held) == 1:
        return held[0], []
    return _join(o, held), held


# ---- generated sources, compiled ------------------------------------------------------------
class RecordingBackend(ArrayBackend):
    """NumPy primitives with the cuda chain runner: the engine records chains on it (the runner
    is never called by the compile tests, which only generate the kernels' source)."""

    name = "cuda-recording"

    def __init__(self, xp=np):
        super().__init__(0)
        self.xp = xp
        self._runner = fused_chain.Runner(self)

    def chain_runner(self):
        return self._runner


@pytest.fixture
def fuse_all(monkeypatch):
    """Record every element-wise op whatever its size, and compile each chain the first time."""
    monkeypatch.setattr(engine.settings, "enabled", True)
    monkeypatch.setattr(engine.settings, "min_elements", 0)
    monkeypatch.setattr(fused_chain.KERNELS, "compile_after", 1)
    monkeypatch.setattr(plan, "REMAT_MAX_OPS", 0)  # every held value written: the kernel computes it


def catalogue_sources() -> list:
    """``(label, name, source)`` of every chain's kernel, float32 and float64, both index widths."""
    settings = engine.settings
    saved = {k: getattr(settings, k) for k in ("enabled", "min_elements")}
    settings.enabled, settings.min_elements = True, 0
    remat, plan.REMAT_MAX_OPS = plan.REMAT_MAX_OPS, 0  # every held value written by the kernel
    try:
        o = Ops(RecordingBackend())
        out = []
        for dtype in FLOATS:
            arrays = inputs(dtype)
            for chain in CHAINS:
                root, held = build(o, chain, arrays)
                assert type(root) is Lazy, f"{chain} [{dtype}]: the chain was not recorded"
                chain_plan = fused_chain.ChainPlan(root)
                outputs = len(chain_plan.outputs)
                assert outputs == len(held) + 1, f"{chain} [{dtype}]: held values not written out"
                for index in ("int", "long long"):
                    name, source = chain_plan.source(index)
                    out.append((f"{chain}[{dtype.name}, {index}]", name, source))
                if "ember_sign(" in source:  # CuPy before 14.2: the sign of NaN is 0
                    chain_plan.sign_keeps_nan = False
                    name, source = chain_plan.source()
                    out.append((f"{chain}[{dtype.name}, sign of NaN 0]", name, source))
        return out
    finally:
        plan.REMAT_MAX_OPS = remat
        for k, v in saved.items():
            setattr(settings, k, v)


@pytest.fixture(scope="module")
def sources():
    return catalogue_sources()


def test_the_catalogue_covers_every_fused_op(sources):
    ops = {m.group(1) for _, _, text in sources for m in re.finditer(r"\b(?:unary|binary):(\w+)", text)}
    assert set(engine.FUSED_UNARY) <= ops
    assert set(engine.FUSED_BINARY) <= ops
    text = "\n".join(s for _, _, s in sources)
    assert "// ember fused chain: " in text and " where " in text and "cast:float32" in text
    assert "cast:float64" in text


def _nvcc_unit(sources) -> str:
    # each kernel in a namespace of its own: one nvcc run for the whole catalogue
    return "\n".join(
        f"namespace k{i} {{\n{text}\n}}  // namespace k{i}\n" for i, (_, _, text) in enumerate(sources)
    )


def test_every_chain_kernel_compiles_with_nvcc(sources, tmp_path):
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found (PATH, /usr/local/bin, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    cu = tmp_path / "chains.cu"
    cu.write_text(_nvcc_unit(sources))
    cmd = [nvcc, "-std=c++17", f"-arch={ARCH}", "--fmad=false", "-cubin", "-Xptxas", "-v"]
    proc = subprocess.run(
        [*cmd, "-o", str(tmp_path / "chains.cubin"), str(cu)], capture_output=True, text=True
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-8000:]
    warnings = [ln for ln in log.splitlines() if "warning" in ln.lower() and "ptxas info" not in ln]
    assert not warnings, "\n".join(warnings)
    entries = re.findall(r"Compiling entry function '(\w+)'", log)
    assert len(entries) == len(sources), (len(entries), [label for label, _, _ in sources])
    for line in re.findall(r"Used (\d+) registers", log):
        assert int(line) <= 255


def test_a_broken_chain_source_fails_the_nvcc_build(sources, tmp_path):
    """The harness really compiles the generated code: an undefined function must fail it."""
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found")
    label, _, text = next(s for s in sources if "tanhf(" in s[2])
    cu = tmp_path / "bad.cu"
    cu.write_text(text.replace("tanhf(", "ember_no_such_function("))
    proc = subprocess.run(
        [nvcc, "-std=c++17", f"-arch={ARCH}", "--ptx", "-o", str(tmp_path / "bad.ptx"), str(cu)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0, label


def test_every_chain_kernel_compiles_with_nvrtc_like_cupy(sources):
    import ctypes

    path = find_nvrtc()
    if path is None:
        pytest.skip("libnvrtc not found (system, $CUDA_HOME/lib64, or nvidia-cuda-nvrtc wheel)")
    lib = ctypes.CDLL(path)
    options = list(fused_chain.COMPILE_OPTIONS) + ["-arch=compute_80"]
    for label, name, text in sources:
        rc, log, lowered = _nvrtc_compile(lib, text, options, (name,))
        assert rc == 0, f"{label} failed under NVRTC:\n{log[-6000:]}"
        assert set(lowered) == {name}, f"{label}: {name} not resolved"


def test_the_signature_is_relative_not_absolute(fuse_all):
    """Other sizes of the same chain share one kernel; another rank, layout or dtype does not."""
    o = Ops(RecordingBackend())

    def signature(shape, wshape, dtype=np.float32):
        x, w = np.ones(shape, dtype), np.ones(wshape, dtype)
        return fused_chain.ChainPlan(o.u("exp", o.b("mul", x, w))).signature

    assert signature((5, 7), (7,)) == signature((300, 90), (90,)) == signature((2, 3, 4), (4,))
    assert signature((5, 7), (5, 7)) == signature((11,), (11,))  # contiguous: a flat index
    # strides are arguments: a row and a column broadcast share the kernel, a third dim does not
    assert signature((5, 7), (7,)) == signature((5, 7), (5, 1))
    assert signature((5, 7), (7,)) != signature((4, 5, 7), (5, 1))
    assert signature((5, 7), (7,)) != signature((5, 7), (7,), np.float64)
    assert signature((5, 7), (5, 7)) != signature((5, 7), (7,))


VIEWS = {
    "transposed": lambda b: b.T,
    "reversed": lambda b: b[::-1, ::-1].T,
    "every_other_column": lambda b: b.T[:, ::2],
    "rank3_broadcast": lambda b: b[:4, None, :5],
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_strided_inputs_are_addressed_by_their_element_strides(fuse_all, view):
    """What the kernel reads for a strided input, element ``i`` at ``sum(c_d * s_d)`` over the
    merged dims and the plan's element strides, is the input broadcast to the result's shape
    (checked with the same arithmetic done by ``as_strided``): transposed, reversed and sliced
    views, and broadcast dims."""
    o = Ops(RecordingBackend())
    base = np.arange(48 * 40, dtype=np.float64).reshape(48, 40)
    v = VIEWS[view](base)
    other = np.ones((4, 3, 5) if v.ndim == 3 else v.shape)
    shape = np.broadcast_shapes(v.shape, other.shape)
    chain = fused_chain.ChainPlan(o.u("exp", o.b("add", v, other)))
    assert chain.kinds[0] == "strided" and chain.kinds[1] == "flat"
    assert chain.rank == len(chain.dims) and len(chain.strided[0]) == chain.rank
    read = np.lib.stride_tricks.as_strided(v, chain.dims, [s * v.itemsize for s in chain.strided[0]])
    np.testing.assert_array_equal(read.reshape(shape), np.broadcast_to(v, shape))
    assert chain.index == "int"


def test_indices_are_64_bit_past_int32(fuse_all):
    o = Ops(RecordingBackend())
    wide = np.broadcast_to(np.arange(2, dtype=np.float32), (2**30, 2))  # 2**31 elements, 8 bytes
    chain = fused_chain.ChainPlan(o.u("exp", o.b("mul", wide, np.float32(2.0) * np.ones(1, np.float32))))
    assert chain.n == 2**31 and chain.index == "long long"
    assert "const long long n" in chain.source()[1]
    args = chain.arguments([np.empty(1, np.float32)])
    assert type(args[0]) is np.int64 and args[0] == 2**31


def test_an_op_without_a_loop_here_runs_op_by_op(fuse_all):
    """``abs`` of a bool array: the engine records it, the kernel has no bool loop for it, so the
    chain runs op by op through the backend."""
    o = Ops(RecordingBackend())
    m = np.array([True, False, True])
    root = o.u("abs", o.b("logical_xor", m, m[::-1].copy()))
    with pytest.raises(fused_chain.Unsupported):
        fused_chain.ChainPlan(root).source()
    np.testing.assert_array_equal(root.realize(), [False, False, False])


# ---- generated kernels run by the host emulator ------------------------------------------
class _EmulatedCupy(types.ModuleType):
    """NumPy, with the emulator's RawModule and device: the backend's eager ops are NumPy's,
    its chains run as the generated CUDA C compiled by g++."""

    def __getattr__(self, name):
        return getattr(np, name)


@pytest.fixture(scope="module")
def emulated_xp():
    if cuda_host_emulator.compiler() is None:
        pytest.skip("no C++ compiler (g++) for the CUDA host emulator")
    fake = cuda_host_emulator.make_fake_cupy()
    xp = _EmulatedCupy("emulated_cupy")
    xp.RawModule, xp.cuda = fake.RawModule, fake.cuda
    return xp


def run_chain(backend, name, arrays, monkeypatch):
    """The chain's values (held ones and the root) fused, and op by op with fusion off."""
    o = Ops(backend)
    root, held = build(o, name, arrays)
    assert type(root) is Lazy, f"{name}: the chain was not recorded"

    def not_op_by_op(*args):
        raise AssertionError(f"{name}: the chain ran op by op, not as one kernel")

    with monkeypatch.context() as patch:
        patch.setattr(plan, "one_by_one", not_op_by_op)
        fused = [root.realize()]
    for h in held:
        assert h.value is not None, f"{name}: a held value was not written by the kernel"
        fused.append(h.value)
    monkeypatch.setattr(engine.settings, "enabled", False)
    try:
        root, held = build(o, name, arrays)
        eager = [root] + held
    finally:
        monkeypatch.setattr(engine.settings, "enabled", True)
    return fused, eager


def compare(name, dtype, fused, eager, to_host, exact):
    rtol, atol = (4e-6, 1e-30) if np.dtype(dtype) == FLOATS[0] else (1e-14, 1e-300)
    for k, (got, want) in enumerate(zip(fused, eager)):
        got, want = to_host(got), to_host(want)
        what = f"{name} [{np.dtype(dtype).name}] output {k}"
        assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype)
        if exact or got.dtype == np.bool_:
            np.testing.assert_array_equal(got, want, err_msg=what)
            if exact and got.dtype != np.bool_:
                zeros = want == 0
                np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]), err_msg=what)
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(set(CHAINS) - NON_CONTIGUOUS))
def test_emulated_kernels_equal_op_by_op_execution(emulated_xp, fuse_all, monkeypatch, name, dtype):
    backend = RecordingBackend(emulated_xp)
    with np.errstate(all="ignore"):
        fused, eager = run_chain(backend, name, inputs(dtype), monkeypatch)
    compare(name, dtype, fused, eager, np.asarray, name in EXACT)


class _OldCupySign(_EmulatedCupy):
    """An array module whose ``sign`` is CuPy's before 14.2: ``(x > 0) - (x < 0)``, 0 for NaN."""

    @staticmethod
    def sign(x):
        return ((x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)).astype(x.dtype)


def test_emulated_sign_follows_the_backends_sign_of_nan(emulated_xp, fuse_all, monkeypatch):
    old = _OldCupySign("old_cupy_sign")
    old.RawModule, old.cuda = emulated_xp.RawModule, emulated_xp.cuda
    x = np.array([np.nan, -0.0, 0.0, -np.inf, 2.5, -3.0, np.nan], np.float32)
    for xp, nan_sign in ((old, 0.0), (emulated_xp, np.nan)):
        o = Ops(RecordingBackend(xp))
        with monkeypatch.context() as patch:
            patch.setattr(plan, "one_by_one", None)  # as one kernel, or a TypeError
            got = o.b("mul", o.u("sign", x), np.float32(2.0) * np.ones(7, np.float32)).realize()
        np.testing.assert_array_equal(got, [nan_sign, 0, 0, -2, 2, -2, nan_sign])


def test_emulated_kernel_is_reused_for_other_sizes(emulated_xp, fuse_all):
    backend = RecordingBackend(emulated_xp)
    o = Ops(backend)
    compiled = fused_chain.KERNELS.stats["compiled"]
    for n in (3, 700, 2000):  # 2000 elements: 8 blocks of the grid-stride loop
        x = np.linspace(-3, 3, n, dtype=np.float32).reshape(-1, 1) * np.ones(4, np.float32)
        got = o.b("mul", o.u("tanh", x), np.float32(2.0) * np.ones(4, np.float32)).realize()
        np.testing.assert_allclose(got, np.tanh(x) * 2, rtol=4e-6, atol=1e-7)
    assert fused_chain.KERNELS.stats["compiled"] <= compiled + 1


# ---- on a GPU ------------------------------------------------------------------------------
@pytest.fixture
def cuda_backend():
    reason = runtime.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    return ember.Device("cuda").backend


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_gpu_kernels_equal_unfused_execution(cuda_backend, fuse_all, monkeypatch, name, dtype):
    cp = cuda_backend.xp
    arrays = {k: cp.asarray(v) for k, v in inputs(dtype).items()}
    fused, eager = run_chain(cuda_backend, name, arrays, monkeypatch)
    # the same CUDA maths functions as CuPy's own kernels, no contraction: equal but for the
    # last bits of a maths function (exact where only arithmetic and selection run)
    compare(name, dtype, fused, eager, cp.asnumpy, name in EXACT)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
@pytest.mark.parametrize("name", sorted(TENSOR_CHAINS))
def test_gpu_tensor_chains_forward_and_backward(cuda_backend, fuse_all, monkeypatch, name, dtype):
    chain = TENSOR_CHAINS[name]
    rng = np.random.default_rng(7)
    x0, w0 = rng.standard_normal((257, 65)) * 2, rng.standard_normal(65)

    def forward_backward():
        x = ember.tensor(x0, dtype=dtype, device="cuda").require_grad()
        w = ember.tensor(w0, dtype=dtype, device="cuda").require_grad()
        y = chain(x, w)
        grads = (y * y).sum().backward()
        return y.numpy(), grads[x].numpy(), grads[w].numpy()

    x = ember.tensor(x0, dtype=dtype, device="cuda")
    pending = chain(x, ember.tensor(w0, dtype=dtype, device="cuda"))._arr
    assert type(pending) is Lazy and pending.value is None, "the chain was not recorded"
    compiled = fused_chain.KERNELS.stats["compiled"] + fused_chain.KERNELS.stats["hits"]
    got = forward_backward()
    assert fused_chain.KERNELS.stats["compiled"] + fused_chain.KERNELS.stats["hits"] > compiled
    monkeypatch.setattr(engine.settings, "enabled", False)
    want = forward_backward()
    rtol = 2e-5 if dtype == ember.float32 else 1e-12
    for g, w, what in zip(got, want, ("value", "grad x", "grad w")):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, err_msg=f"{name}: {what}")


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op, axes", [("sum", (2,)), ("max", (2,)), ("min", (0,)), ("sum", (0, 1))])
def test_emulated_reduction_of_a_chain(emulated_xp, fuse_all, op, axes, keepdim):
    """A reduction the engine records on a chain: the chain runs as one kernel, the backend
    reduces its value; a chain reading the reduction runs after it."""
    backend = RecordingBackend(emulated_xp)
    o = Ops(backend)
    x = np.random.default_rng(3).standard_normal((6, 5, 7)).astype(np.float32)
    t = o.u("exp", o.b("mul", x, np.float32(0.5) * np.ones(7, np.float32)))
    r = engine.reduce(backend, op, t, axes, keepdim)
    assert type(r) is Lazy and r.op.startswith("reduce:"), r
    y = o.b("div", t, r) if keepdim else o.u("sqrt", r)
    want_r = getattr(np, op)(np.exp(x * np.float32(0.5)), axis=axes, keepdims=keepdim)
    want = np.exp(x * np.float32(0.5)) / want_r if keepdim else np.sqrt(want_r)
    np.testing.assert_allclose(y.realize(), want, rtol=2e-6)
    np.testing.assert_allclose(r.realize(), want_r, rtol=2e-6)
