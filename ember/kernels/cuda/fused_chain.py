"""The ``cuda`` backend's chain runner: a fusion graph compiled into one CUDA kernel.

:func:`run` takes the root :class:`~ember.kernels.fusion.lazy.Lazy` of a graph, lays out its
pending ops (:func:`ember.kernels.fusion.plan.layout`) and runs one grid-stride kernel that
computes the root, and the intermediates something else still holds, element by element.
Each input is read one of three ways: a one-element array once per thread (the scalars of
``x * 0.5``, read from device memory, so nothing waits for the GPU), an array laid out like
the C-contiguous result at the flat index, or any other array (broadcast, transposed,
sliced) at an offset built from its strides in elements, over the root's shape with size-1
dimensions dropped and adjacent dimensions merged where every input steps through them as
one. The kernel is keyed by the graph's relative signature (ops, wiring, dtypes, how each
input is read, the merged rank and the index width, not sizes), compiled by NVRTC through
``RawModule`` of the backend's array module on first use per device (CuPy keeps the binary
on disk), and kept in :data:`KERNELS`.

Each op computes exactly what the cuda backend's own element-wise op computes (the NumPy
reference's primitives run through CuPy): the same CUDA maths functions, CuPy's NaN rules
(``maximum``/``minimum`` give NaN when either operand is NaN, ``relu`` is ``maximum(x, 0)``,
``sign`` of NaN is what the installed CuPy gives: NaN from 14.2 on, 0 before), ``sigmoid``
split by sign, ``round`` as ``rint`` (half to even), ``rsqrt`` as ``1 / sqrt``, and every
intermediate rounded to its dtype. The kernel is compiled with ``--fmad=false``: one op's
product and the next op's sum stay two roundings, as in two kernels.
"""

from __future__ import annotations

import hashlib
import math
import threading
import types

import numpy as np

from ember.kernels.cuda import launch
from ember.kernels.fusion import plan
from ember.kernels.fusion.lazy import Lazy, realize

__all__ = [
    "COMPILE_OPTIONS",
    "KERNELS",
    "ChainKernel",
    "ChainPlan",
    "Runner",
    "Unsupported",
    "chain_source",
    "compiled_count",
    "run",
]

COMPILE_OPTIONS = ("-std=c++17", "--fmad=false")
"""NVRTC options of every chain kernel (no multiply-add contraction across ops)."""

KERNELS = plan.KernelCache("cuda")
"""The compiled chain kernels of this process (see :class:`~ember.kernels.fusion.plan.KernelCache`)."""

_CTYPE = {"float32": "float", "float64": "double", "bool": "bool"}
_STORE = {"float32": "float", "float64": "double", "bool": "unsigned char"}  # bool arrays are bytes
_FLOATS = ("float32", "float64")
_INT32_MAX = 2**31 - 1

# Device helpers, overloaded for float and double, each what the cuda backend's op computes;
# a kernel's source has those its steps call.
_HELPERS = {
    "ember_sign": r"""// sign: CuPy's float loop from 14.2 on (NaN stays NaN, -0 and +0 give +0)
__device__ __forceinline__ float ember_sign(float x) {
  return (x < 0.0f || x > 0.0f) ? copysignf(1.0f, x) : x - x;
}
__device__ __forceinline__ double ember_sign(double x) {
  return (x < 0.0 || x > 0.0) ? copysign(1.0, x) : x - x;
}
""",
    "ember_sigmoid": r"""// sigmoid split by sign, as the backend's: exp never overflows
__device__ __forceinline__ float ember_sigmoid(float x) {
  const float e = expf(-fabsf(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
__device__ __forceinline__ double ember_sigmoid(double x) {
  const double e = exp(-fabs(x));
  return x >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
""",
    "ember_maximum": r"""// maximum: NaN when either operand is NaN (CuPy's float loop)
__device__ __forceinline__ float ember_maximum(float a, float b) {
  return (isnan(a) || isnan(b)) ? a + b : fmaxf(a, b);
}
__device__ __forceinline__ double ember_maximum(double a, double b) {
  return (isnan(a) || isnan(b)) ? a + b : fmax(a, b);
}
""",
    "ember_minimum": r"""// minimum: NaN when either operand is NaN (CuPy's float loop)
__device__ __forceinline__ float ember_minimum(float a, float b) {
  return (isnan(a) || isnan(b)) ? a + b : fminf(a, b);
}
__device__ __forceinline__ double ember_minimum(double a, double b) {
  return (isnan(a) || isnan(b)) ? a + b : fmin(a, b);
}
""",
}

# CuPy before 14.2: (x > 0) - (x < 0), so the sign of NaN is 0
_SIGN_OF_NAN_IS_ZERO = r"""// sign: CuPy's float loop before 14.2 (NaN gives 0)
__device__ __forceinline__ float ember_sign(float x) { return (float)((x > 0.0f) - (x < 0.0f)); }
__device__ __forceinline__ double ember_sign(double x) { return (double)((x > 0.0) - (x < 0.0)); }
"""

# {0} the operand (of the step's float type), {T} that C type, {f} the float suffix of libm names
_UNARY_FLOAT = {
    "neg": "-{0}",
    "exp": "exp{f}({0})",
    "log": "log{f}({0})",
    "log1p": "log1p{f}({0})",
    "expm1": "expm1{f}({0})",
    "sqrt": "sqrt{f}({0})",
    "rsqrt": "{T}(1) / sqrt{f}({0})",
    "abs": "fabs{f}({0})",
    "sign": "ember_sign({0})",
    "sin": "sin{f}({0})",
    "cos": "cos{f}({0})",
    "tanh": "tanh{f}({0})",
    "sigmoid": "ember_sigmoid({0})",
    "erf": "erf{f}({0})",
    "relu": "ember_maximum({0}, {T}(0))",
    "reciprocal": "{T}(1) / {0}",
    "square": "{0} * {0}",
    "floor": "floor{f}({0})",
    "ceil": "ceil{f}({0})",
    "round": "rint{f}({0})",
}
_UNARY_TEST = {"isnan": "isnan({0})", "isinf": "isinf({0})", "isfinite": "isfinite({0})"}
_ARITHMETIC = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "div": "{0} / {1}",
    "pow": "pow{f}({0}, {1})",
    "maximum": "ember_maximum({0}, {1})",
    "minimum": "ember_minimum({0}, {1})",
}
# bool operands: NumPy's (and CuPy's) bool loops
_ARITHMETIC_BOOL = {
    "add": "{0} || {1}",
    "mul": "{0} && {1}",
    "maximum": "{0} || {1}",
    "minimum": "{0} && {1}",
}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_LOGICAL = {"logical_and": "{0} && {1}", "logical_or": "{0} || {1}", "logical_xor": "!{0} != !{1}"}


class Unsupported(Exception):
    """A step the kernel does not compute (an op on a dtype combination the cuda backend
    gives no float32/float64/bool loop for here): the chain runs op by op."""


def _convert(name: str, have: str, want: str) -> str:
    return name if have == want else f"({_CTYPE[want]}){name}"


def _expression(op: str, operands: list, dtypes: list, dtype: str) -> str:
    """The C expression of one step: ``operands`` are the C names of its operands, ``dtypes``
    their dtype names, ``dtype`` the step's."""
    kind, _, name = op.partition(":")
    if kind == "cast":
        return _convert(operands[0], dtypes[0], dtype)
    if kind == "expand":  # every step is computed at the root's index: its operand's value
        return operands[0]
    if kind == "where":
        if dtypes[0] != "bool" or dtypes[1] != dtype or dtypes[2] != dtype:
            raise Unsupported(op)
        return f"{operands[0]} ? {operands[1]} : {operands[2]}"
    if kind == "unary":
        (x,), (have,) = operands, dtypes
        if name == "logical_not":
            return f"!{x}"
        if have not in _FLOATS:
            raise Unsupported(op)
        if name in _UNARY_TEST and dtype == "bool":
            return _UNARY_TEST[name].format(x)
        if name in _UNARY_FLOAT and dtype == have:
            return _UNARY_FLOAT[name].format(x, T=_CTYPE[dtype], f="f" if dtype == "float32" else "")
        raise Unsupported(op)
    if kind == "binary":
        if name in _LOGICAL:
            return _LOGICAL[name].format(*operands)
        common = np.result_type(*dtypes).name
        if name in _COMPARE:
            if common not in _CTYPE:
                raise Unsupported(op)
            a, b = (_convert(o, d, common) for o, d in zip(operands, dtypes))
            return f"{a} {_COMPARE[name]} {b}"
        if name == "div" and common == "bool":
            common = "float64"  # true division of bools is float64
        if name not in _ARITHMETIC or common != dtype:
            raise Unsupported(op)
        if common == "bool":
            if name not in _ARITHMETIC_BOOL:
                raise Unsupported(op)
            return _ARITHMETIC_BOOL[name].format(*operands)
        a, b = (_convert(o, d, common) for o, d in zip(operands, dtypes))
        return _ARITHMETIC[name].format(a, b, f="f" if common == "float32" else "")
    raise Unsupported(op)


def chain_source(
    steps: list,
    outputs: tuple,
    kinds: tuple,
    in_dtypes: tuple,
    rank: int,
    index: str,
    sign_keeps_nan: bool = True,
):
    """``(name, source)`` of the kernel of a chain: ``steps`` as :func:`~ember.kernels.fusion.plan.layout`
    gives them, ``outputs`` the positions of the steps written out (the root last), ``kinds``
    how each input is read (``"scalar"``, ``"flat"``, ``"strided"``), ``in_dtypes`` the inputs'
    dtype names, ``rank`` the merged rank the strided inputs are indexed over (0 when none is),
    ``index`` the C type of indices (``"int"`` or ``"long long"``), ``sign_keeps_nan`` whether
    ``sign`` of NaN is NaN (else 0, as CuPy before 14.2). Raises :class:`Unsupported` for a
    step it does not compute."""
    if any(d not in _CTYPE for d in in_dtypes) or any(dtype.name not in _CTYPE for _, _, dtype in steps):
        raise Unsupported(f"dtypes {sorted(set(in_dtypes) | {d.name for _, _, d in steps})}")
    dtypes = list(in_dtypes)
    names = [f"v{i}" for i in range(len(kinds))]
    body = []
    for j, (op, refs, dtype) in enumerate(steps):
        operands = [names[r] if kind == "in" else f"t{r}" for kind, r in refs]
        operand_dtypes = [dtypes[r] if kind == "in" else steps[r][2].name for kind, r in refs]
        text = _expression(op, operands, operand_dtypes, dtype.name)
        body.append(f"    const {_CTYPE[dtype.name]} t{j} = ({_CTYPE[dtype.name]})({text});")
    strided = [i for i, k in enumerate(kinds) if k == "strided"]
    params = [f"const {index} n"] + [f"const {index} d{d}" for d in range(1, rank)]
    params += [f"{_STORE[steps[j][2].name]}* __restrict__ out{k}" for k, j in enumerate(outputs)]
    params += [f"const {_STORE[d]}* __restrict__ x{i}" for i, d in enumerate(in_dtypes)]
    params += [f"const {index} s{i}_{d}" for i in strided for d in range(rank)]
    lines = []
    for i, (kind, dtype) in enumerate(zip(kinds, in_dtypes)):
        if kind == "scalar":  # read once, before the loop
            lines.append(f"  const {_CTYPE[dtype]} v{i} = {_load(f'x{i}[0]', dtype)};")
    lines += [
        f"  const {index} step = ({index})gridDim.x * blockDim.x;",
        f"  for ({index} i = ({index})blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {{",
    ]
    if strided:
        lines.append(f"    {index} r = i, c;")
        lines.append(f"    {index} " + ", ".join(f"o{i} = 0" for i in strided) + ";")
        for d in range(rank - 1, 0, -1):  # innermost first
            lines.append(f"    c = r % d{d};")
            lines.append(f"    r /= d{d};")
            lines += [f"    o{i} += c * s{i}_{d};" for i in strided]
        lines += [f"    o{i} += r * s{i}_0;" for i in strided]
    for i, (kind, dtype) in enumerate(zip(kinds, in_dtypes)):
        if kind != "scalar":
            at = "i" if kind == "flat" else f"o{i}"
            lines.append(f"    const {_CTYPE[dtype]} v{i} = {_load(f'x{i}[{at}]', dtype)};")
    lines += body
    lines += [f"    out{k}[i] = ({_STORE[steps[j][2].name]})t{j};" for k, j in enumerate(outputs)]
    lines.append("  }")
    signature = repr((steps, outputs, kinds, in_dtypes, rank, index, sign_keeps_nan))
    name = "ember_chain_" + hashlib.sha256(signature.encode()).hexdigest()[:16]
    ops = ", ".join(f"{op} {dtype.name}" for op, _, dtype in steps)
    helpers = "".join(
        (text if helper != "ember_sign" or sign_keeps_nan else _SIGN_OF_NAN_IS_ZERO)
        for helper, text in _HELPERS.items()
        if any(f"{helper}(" in line for line in body)
    )
    text = (
        f"// ember fused chain: {ops}\n{helpers}\n"
        f"__global__ void __launch_bounds__({launch.ELEMENTWISE_THREADS})\n"
        f"{name}(" + ",\n    ".join(params) + ") {\n" + "\n".join(lines) + "\n}\n"
    )
    return name, text


def _load(element: str, dtype: str) -> str:
    return f"({element} != 0)" if dtype == "bool" else element


class ChainKernel:
    """One chain's kernel: its source, compiled per (array module, device) on first use."""

    def __init__(self, name: str, source: str, description: str):
        self.name = name
        self.__module__ = name  # what the fusion log calls a kernel
        self.source = source
        self.description = description
        self._functions: dict = {}
        self._lock = threading.Lock()

    def function(self, xp):
        """The compiled kernel for the current device of ``xp`` (CuPy, or a stand-in)."""
        key = (xp, int(xp.cuda.Device().id))  # (the module itself: an id could be reused)
        fn = self._functions.get(key)
        if fn is None:
            with self._lock:
                fn = self._functions.get(key)
                if fn is None:
                    try:
                        module = xp.RawModule(
                            code=self.source, options=COMPILE_OPTIONS, name_expressions=[self.name]
                        )
                        fn = module.get_function(self.name)
                    except Exception as exc:
                        raise RuntimeError(
                            f"cuda fused chain [{self.description}]: the kernel {self.name} failed to "
                            f"compile ({type(exc).__name__}: {exc})"
                        ) from exc
                    self._functions[key] = fn
        return fn


class Runner:
    """The chain runner of one backend (what ``CudaBackend.chain_runner`` gives)."""

    def __init__(self, backend):
        self.backend = backend

    def __call__(self, root: Lazy):
        return run(root, self.backend)


def _element_strides(array, shape: tuple) -> list:
    """``array``'s strides in elements when broadcast to ``shape`` (0 along broadcast dims)."""
    lead = len(shape) - array.ndim
    strides = [0] * lead
    for d in range(array.ndim):
        strides.append(0 if array.shape[d] == 1 else array.strides[d] // array.itemsize)
    return strides


def _merged(shape: tuple, strides: list):
    """``(dims, strides)``: ``shape`` without its size-1 dimensions and with adjacent ones
    merged where every array's strides step through them as one (outermost first)."""
    dims, merged = [], [[] for _ in strides]
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] == 1:
            continue
        if dims and all(s[d] == m[-1] * dims[-1] for s, m in zip(strides, merged)):
            dims[-1] *= shape[d]
            continue
        dims.append(shape[d])
        for s, m in zip(strides, merged):
            m.append(s[d])
    return dims[::-1], [m[::-1] for m in merged]


def _reduce(root: Lazy, backend):
    """A reduction recorded on a chain (``"reduce:<op>:<rows|columns:k>"``): the chain as one
    kernel, then the backend's reduction of its value."""
    _, op, kind = root.op.split(":", 2)
    source = root.args[0]
    ndim = len(source.shape)
    axes = (ndim - 1,) if kind == "rows" else tuple(range(int(kind.split(":")[1])))
    return backend.reduce(op, realize(source), axes, len(root.shape) == ndim).reshape(root.shape)


class ChainPlan:
    """How the graph of ``root`` runs as one kernel: its layout (``nodes``, ``steps``,
    ``inputs``), the intermediates written out (``held``; ``outputs`` adds the root), how each
    input is read (``kinds``), the merged ``dims`` and the strides of the strided inputs, the
    index type, the launch and the relative ``signature``."""

    def __init__(self, root: Lazy, sign_keeps_nan: bool = True):
        self.nodes, self.steps, self.inputs = plan.layout(root)
        self.held = plan.held_elsewhere(self.nodes, self.steps)
        self.outputs = tuple(self.held) + (len(self.steps) - 1,)
        self.shape = root.shape
        self.n = math.prod(self.shape)
        scalar = [a.size == 1 for a in self.inputs]
        arrays = [a for a, one in zip(self.inputs, scalar) if not one]
        dims, strides = _merged(self.shape, [_element_strides(a, self.shape) for a in arrays])
        contiguous = [math.prod(dims[d + 1 :]) for d in range(len(dims))]
        strides = iter(strides)
        kinds, self.strided = [], []
        for one in scalar:
            if one:
                kinds.append("scalar")
                continue
            s = next(strides)
            flat = s == contiguous
            kinds.append("flat" if flat else "strided")
            if not flat:
                self.strided.append(s)
        self.kinds = tuple(kinds)
        self.dims = dims
        self.rank = len(dims) if self.strided else 0
        self.grid, self.block = launch.elementwise_launch(self.n)
        reach = max((sum(abs(si) * (di - 1) for si, di in zip(s, dims)) for s in self.strided), default=0)
        small = self.n + self.grid[0] * self.block[0] <= _INT32_MAX and reach <= _INT32_MAX
        self.index = "int" if small else "long long"
        self.in_dtypes = tuple(a.dtype.name for a in self.inputs)
        self.signature = (
            tuple((op, refs, dtype.name) for op, refs, dtype in self.steps),
            self.outputs,
            self.kinds,
            self.in_dtypes,
            self.rank,
            self.index,
        )
        # the sign helper follows the backend's own sign (CuPy's changed in 14.2)
        self.sign_keeps_nan = sign_keeps_nan
        if any(op == "unary:sign" for op, _, _ in self.steps):
            self.signature += (sign_keeps_nan,)

    def source(self, index: str | None = None):
        """``(name, source)`` of this chain's kernel (with indices of C type ``index``, this
        plan's by default)."""
        return chain_source(
            self.steps,
            self.outputs,
            self.kinds,
            self.in_dtypes,
            self.rank,
            index or self.index,
            self.sign_keeps_nan,
        )

    def arguments(self, outs: list) -> tuple:
        """The kernel's arguments, writing ``outs``."""
        itype = np.int32 if self.index == "int" else np.int64
        args = [itype(self.n)] + [itype(d) for d in self.dims[1 : self.rank]] + outs + list(self.inputs)
        return tuple(args + [itype(v) for s in self.strided for v in s])


def run(root: Lazy, backend):
    """Compute ``root`` and every pending op it depends on in one kernel; the intermediate
    values something else still holds are kept as well (set on their nodes). A chain not
    compiled yet (see :class:`~ember.kernels.fusion.plan.KernelCache`), or with an op the
    kernel does not compute, runs op by op through ``backend``."""
    if root.op.startswith("reduce:"):
        return _reduce(root, backend)
    if root.op == "expand":  # computed on its own: the broadcast view eager gives
        return backend.expand(realize(root.args[0]), root.shape)
    xp = backend.xp
    if math.prod(root.shape) == 0:
        return xp.empty(root.shape, root.dtype)
    chain = ChainPlan(root, _sign_keeps_nan(xp))
    kernel = KERNELS.lookup(chain.signature, lambda: _build(xp, chain))
    if kernel is None or kernel is _UNSUPPORTED:
        return plan.one_by_one(chain.nodes, chain.steps, chain.inputs, backend)
    outs = [xp.empty(chain.shape, chain.steps[j][2]) for j in chain.outputs]
    kernel.function(xp)(chain.grid, chain.block, chain.arguments(outs))
    for j, value in zip(chain.held, outs):
        chain.nodes[j].settle(value)
    return outs[-1]


_SIGN_KEEPS_NAN: dict = {}


def _sign_keeps_nan(xp) -> bool:
    """Whether ``xp.sign`` gives NaN for NaN (NumPy; CuPy from 14.2) or 0 (CuPy before): asked
    once per array module, so that a chain's ``sign`` is the backend's own."""
    keeps = _SIGN_KEEPS_NAN.get(xp)
    if keeps is None:
        probe = xp.sign(xp.full((1,), np.nan, np.float32))
        keeps = _SIGN_KEEPS_NAN[xp] = bool(np.isnan(float(probe[0])))
    return keeps


_UNSUPPORTED = types.SimpleNamespace(__module__="op by op: a step no chain kernel computes")
"""What :data:`KERNELS` keeps for a signature with a step no kernel computes."""


def _build(xp, chain: ChainPlan):
    try:
        name, source = chain.source()
    except Unsupported:
        return _UNSUPPORTED
    kernel = ChainKernel(name, source, ", ".join(f"{op} {dtype.name}" for op, _, dtype in chain.steps))
    kernel.function(xp)  # compiled now: the compile counts once, here
    return kernel


def compiled_count() -> int:
    """How many chain signatures this process has built a kernel for."""
    return sum(1 for k in KERNELS.kernels() if k is not _UNSUPPORTED)
