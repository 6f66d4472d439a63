"""The ``cpu`` backend's chain runner: a fusion graph compiled into one Numba loop nest.

:func:`run` takes the root :class:`~ember.kernels.fusion.lazy.Lazy` of a graph, lays out its
pending ops in order (each computed once, however many ops read it) with the computed arrays
they read as the kernel's inputs, and runs a kernel that computes the root element by element
in one pass over memory. Inputs are broadcast to the root's shape as strided views and
adjacent dimensions that every array steps through alike are merged, so most chains run as
one flat loop. The kernel is keyed by the graph's *relative* signature — the ops, their wiring
and the rank — not by sizes or strides (Numba specialises it per dtype and layout), so a
training step's chains compile once; its source is written under the kernel cache directory
so a second process loads the machine code from Numba's disk cache. The outer loop is split
over ember's threads (:mod:`.threadpool`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from ember.kernels.fusion import plan
from ember.kernels.fusion.lazy import Lazy

from . import jit, staggered, threadpool

__all__ = ["KERNELS", "Runner", "compiled_count", "run"]

# the scalar expression of each op: {0}, {1}, {2} are its operands, {T} the result's NumPy type
_UNARY = {
    "neg": "-{0}",
    "exp": "ops.exp({0})",
    "log": "np.log({0})",
    "log1p": "np.log1p({0})",
    "expm1": "np.expm1({0})",
    "sqrt": "np.sqrt({0})",
    "rsqrt": "{T}(1.0) / np.sqrt({0})",
    "abs": "abs({0})",
    "sign": "np.sign({0})",
    "sin": "np.sin({0})",
    "cos": "np.cos({0})",
    "tanh": "ops.tanh({0})",
    "sigmoid": "ops.sigmoid({0})",
    "erf": "ops.erf({0})",
    "relu": "ops.relu({0})",
    "reciprocal": "{T}(1.0) / {0}",
    "square": "{0} * {0}",
    "floor": "np.floor({0})",
    "ceil": "np.ceil({0})",
    "round": "np.rint({0})",
    "logical_not": "not {0}",
    "isnan": "np.isnan({0})",
    "isinf": "np.isinf({0})",
    "isfinite": "np.isfinite({0})",
}
_BINARY = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "div": "{0} / {1}",
    "pow": "{0} ** {1}",
    "maximum": "ops.maximum({0}, {1})",
    "minimum": "ops.minimum({0}, {1})",
    "eq": "{0} == {1}",
    "ne": "{0} != {1}",
    "lt": "{0} < {1}",
    "le": "{0} <= {1}",
    "gt": "{0} > {1}",
    "ge": "{0} >= {1}",
    "logical_and": "{0} and {1}",
    "logical_or": "{0} or {1}",
    "logical_xor": "{0} != {1}",
}
_TYPES = {"float32": "np.float32", "float64": "np.float64", "bool": "np.bool_"}

#: Outputs smaller than this run on the calling thread (the pool's hand-off costs more).
_PARALLEL_MIN_ELEMENTS = 1 << 16

KERNELS = plan.KernelCache()
"""The compiled chain kernels of this process (see :class:`~ember.kernels.fusion.plan.KernelCache`)."""


def _expression(op: str, operands: list, dtype: np.dtype) -> str:
    kind, _, name = op.partition(":")
    t = _TYPES[dtype.name]
    if kind == "unary":
        text = _UNARY[name].format(*operands, T=t)
    elif kind == "binary":
        text = _BINARY[name].format(*operands, T=t)
    elif kind == "where":
        text = f"{operands[1]} if {operands[0]} else {operands[2]}"
    else:  # cast
        text = operands[0]
    return f"{t}({text})"


def _coalesced(shape: tuple, arrays: list):
    """``shape`` and ``arrays`` (all of that shape) with adjacent dimensions merged wherever every
    array steps through them as one, and size-1 dimensions dropped: ``(shape, views)``."""
    blocks = []  # innermost first: [size, [stride of each array]]
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] == 1:
            continue
        strides = [a.strides[d] for a in arrays]
        if blocks and all(s == bs * blocks[-1][0] for s, bs in zip(strides, blocks[-1][1])):
            blocks[-1][0] *= shape[d]
        else:
            blocks.append([shape[d], strides])
    if not blocks:
        blocks = [[1, [0] * len(arrays)]]
    blocks.reverse()
    merged = tuple(size for size, _ in blocks)
    views = [
        np.lib.stride_tricks.as_strided(
            a, merged, tuple(b[1][i] for b in blocks), writeable=a.flags.writeable
        )
        for i, a in enumerate(arrays)
    ]
    return merged, views


def _source(steps: list, outputs: tuple, scalars: tuple, rank: int) -> str:
    """The kernel: ``scalars[i]`` says whether input ``i`` is one value (read once) or an array.
    Its loops count from 0 over the arrays it is given (a thread gets slices of the outer
    dimension): with a non-negative index LLVM drops the negative-index wrap-around and
    vectorises the loop, several times faster than counting from a ``lo`` argument."""
    idx = ", ".join(f"i{d}" for d in range(rank))
    n_inputs = len(scalars)
    params = ", ".join([f"out{k}" for k in range(len(outputs))] + [f"x{i}" for i in range(n_inputs)])
    lines = [
        "import numpy as np",
        "import numba",
        "from ember.kernels.cpu import fused_chain_ops as ops",
        "",
        "",
        '@numba.njit(cache=True, nogil=True, error_model="numpy")',
        f"def chain({params}):",
    ]
    lines += [f"    n{d} = out0.shape[{d}]" for d in range(rank)]
    lines += [f"    v{i} = x{i}" for i in range(n_inputs) if scalars[i]]
    for d in range(rank):
        lines.append("    " * (d + 1) + f"for i{d} in range(n{d}):")
    body = "    " * (rank + 1)
    lines += [f"{body}v{i} = x{i}[{idx}]" for i in range(n_inputs) if not scalars[i]]
    for j, (op, refs, dtype) in enumerate(steps):
        operands = [f"v{r}" if kind == "in" else f"t{r}" for kind, r in refs]
        lines.append(f"{body}t{j} = {_expression(op, operands, dtype)}")
    lines += [f"{body}out{k}[{idx}] = t{j}" for k, j in enumerate(outputs)]
    return "\n".join(lines) + "\n"


def _module_dir() -> Path:
    return jit.cache_dir().parent / "fusion"


def _load(source: str):
    """The ``chain`` function of ``source``, from a module file named by its hash (and by the
    helpers it inlines, so that an edit to them recompiles)."""
    stamp = jit.dependency_stamp(str(Path(__file__).with_name("fused_chain_ops.py")))
    name = "ember_chain_" + hashlib.sha256((source + stamp).encode()).hexdigest()[:24]
    directory = _module_dir()
    path = directory / f"{name}.py"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(f"# generated by ember.kernels.cpu.fused_chain: do not edit\n{source}")
        os.replace(tmp, path)  # atomic: another process sees the whole file or none
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # Numba's disk cache finds the module by its name
        spec.loader.exec_module(module)
    return module.chain


class Runner:
    """The chain runner of one backend (what ``CpuBackend.chain_runner`` gives)."""

    def __init__(self, backend):
        self.backend = backend

    def __call__(self, root: Lazy) -> np.ndarray:
        return run(root, self.backend)


def run(root: Lazy, backend) -> np.ndarray:
    """Compute ``root`` and every pending op it depends on in one kernel; the intermediate
    values something else still holds are kept as well (set on their nodes). A chain not
    compiled yet runs op by op through ``backend`` (see :class:`~ember.kernels.fusion.plan.KernelCache`)."""
    if math.prod(root.shape) == 0:
        return np.empty(root.shape, root.dtype)
    nodes, steps, inputs = plan.layout(root)
    held = plan.held_elsewhere(nodes, steps)
    outputs = tuple(held) + (len(steps) - 1,)
    # one-element inputs (the scalars of `x * 0.5`) are passed as values, read once
    scalars = tuple(a.size == 1 for a in inputs)
    arrays = [np.broadcast_to(a, root.shape) for a, one in zip(inputs, scalars) if not one]
    # the outputs are C-contiguous, so they merge wherever the inputs do
    shape, array_views = _coalesced(root.shape, arrays)
    signature = (tuple((op, refs, dtype.name) for op, refs, dtype in steps), outputs, scalars, len(shape))
    fn = KERNELS.lookup(signature, lambda: _load(_source(steps, outputs, scalars, len(shape))))
    if fn is None:
        return plan.one_by_one(nodes, steps, inputs, backend)
    outs = staggered.empty(root.shape, [steps[j][2] for j in outputs], arrays)
    out_views = [o.reshape(shape) for o in outs]
    array_views = iter(array_views)
    in_views = [a.reshape(-1)[0] if one else next(array_views) for a, one in zip(inputs, scalars)]
    n = shape[0]
    tasks = min(threadpool.pool().threads, n) if outs[0].size >= _PARALLEL_MIN_ELEMENTS else 1
    if tasks <= 1:
        fn(*out_views, *in_views)
    else:
        bounds = [n * t // tasks for t in range(tasks + 1)]
        threadpool.pool().run(
            [
                lambda lo=lo, hi=hi: fn(
                    *(o[lo:hi] for o in out_views),
                    *(v if one else v[lo:hi] for v, one in zip(in_views, scalars)),
                )
                for lo, hi in zip(bounds, bounds[1:])
            ]
        )
    for j, value in zip(held, outs):
        nodes[j].settle(value)
    return outs[-1]


def compiled_count() -> int:
    """How many chain kernels this process has loaded."""
    return len(KERNELS)
