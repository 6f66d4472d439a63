"""What the ``cpu`` backend's generated kernels share: the scalar expression of each
element-wise op, array views with their dimensions merged, and loading a generated module so
that Numba caches its machine code on disk.

:mod:`.fused_chain` (element-wise chains) and :mod:`.fused_reduction` (reductions that read a
chain as they go) write their kernels' sources with these.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import jit

__all__ = [
    "PARALLEL_MIN_ELEMENTS",
    "REDUCE_COMBINE",
    "REDUCE_IDENTITY",
    "REDUCE_START",
    "REDUCE_UPDATE",
    "TYPES",
    "chain_source",
    "coalesced",
    "expression",
    "kernel_header",
    "kernel_source",
    "load_kernel",
    "packed_operands",
    "split_views",
    "thread_slices",
]

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
    "sign": "ops.sign({0})",
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
TYPES = {"float32": "np.float32", "float64": "np.float64", "bool": "np.bool_"}

#: Outputs smaller than this run on the calling thread (the pool's hand-off costs more).
PARALLEL_MIN_ELEMENTS = 1 << 16


# the accumulator's start and update for each reduction; NaN sticks in max/min (t != t takes a
# NaN in, and a NaN accumulator fails both comparisons), as the backend's np.max/np.min
REDUCE_IDENTITY = {"sum": 0.0, "max": -np.inf, "min": np.inf}
REDUCE_START = {"sum": "0.0", "max": "-np.inf", "min": "np.inf"}  # the same, as kernel source
REDUCE_UPDATE = {
    "sum": "ops.accumulate({acc}, {t})",  # reassociable there only (see fused_chain_ops.accumulate)
    "max": "{t} if ({t} > {acc} or {t} != {t}) else {acc}",
    "min": "{t} if ({t} < {acc} or {t} != {t}) else {acc}",
}
REDUCE_COMBINE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def expression(op: str, operands: list, dtype: np.dtype) -> str:
    kind, _, name = op.partition(":")
    t = TYPES[dtype.name]
    if kind == "unary":
        text = _UNARY[name].format(*operands, T=t)
    elif kind == "binary":
        text = _BINARY[name].format(*operands, T=t)
    elif kind == "where":
        text = f"{operands[1]} if {operands[0]} else {operands[2]}"
    else:  # cast
        text = operands[0]
    return f"{t}({text})"


def coalesced(shape: tuple, arrays: list):
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


def split_views(shape: tuple, arrays: list, k: int):
    """``(lead, trail, views)``: ``shape`` split after dim ``k``, each part's dimensions merged
    where every array steps through them as one, and each array viewed with that shape."""
    lead, lead_views = coalesced(shape[:k], [a[(slice(None),) * k + (0,) * (len(shape) - k)] for a in arrays])
    trail, trail_views = coalesced(shape[k:], [a[(0,) * k] for a in arrays])
    views = [
        np.lib.stride_tricks.as_strided(a, lead + trail, lv.strides + tv.strides, writeable=a.flags.writeable)
        for a, lv, tv in zip(arrays, lead_views, trail_views)
    ]
    return lead, trail, views


def packed_operands(inputs: list, views: iter) -> tuple:
    """``(masks, operands)`` for a kernel over the merged shape of ``views`` (the full-rank views
    of the array inputs, in order): a one-element input is passed as its value (mask None);
    an array as a view over only the dimensions it steps along (its mask), so a bias broadcast
    over rows is its own contiguous 1-D array and a per-row value is read once per row."""
    masks, operands = [], []
    for a in inputs:
        if a.size == 1:
            masks.append(None)
            operands.append(a.reshape(-1)[0])
            continue
        view = next(views)
        mask = tuple(d for d, (n, st) in enumerate(zip(view.shape, view.strides)) if st != 0 and n > 1)
        masks.append(mask)
        operands.append(
            np.lib.stride_tricks.as_strided(
                view,
                tuple(view.shape[d] for d in mask),
                tuple(view.strides[d] for d in mask),
                writeable=False,
            )
        )
    return tuple(masks), operands


def thread_slices(operands: list, masks: tuple, lo: int, hi: int) -> list:
    """The operands for the rows ``lo:hi`` of the first dimension."""
    return [v if m is None or not m or m[0] != 0 else v[lo:hi] for v, m in zip(operands, masks)]


def kernel_header(params: list, fastmath=()) -> list:
    """The first lines of a generated kernel module, up to ``def chain(*params):``."""
    options = 'cache=True, nogil=True, error_model="numpy"'
    if fastmath:
        options += f", fastmath={set(fastmath)!r}"
    return [
        "import numpy as np",
        "import numba",
        "from ember.kernels.cpu import fused_chain_ops as ops",
        "",
        "",
        f"@numba.njit({options})",
        f"def chain({', '.join(params)}):",
    ]


def kernel_source(params: list, steps: list, masks: tuple, rank: int, writes: list, fastmath=(), **at) -> str:
    """The module text of a kernel ``chain(*params, n0, ..)`` looping over ``rank`` dimensions
    of sizes ``n0..``, computing ``steps`` (operand ``i`` is ``x{i}``, read as a value or
    indexed by the dims of its mask) and storing ``writes`` (``(array, step)`` pairs, indexed
    by every dim) in the innermost loop.

    Each read and step is placed in the outermost loop where all its operands are known, so
    what depends only on per-row values is computed once per row. Loops count from 0: with a
    non-negative index LLVM drops the negative-index wrap-around and vectorises the innermost
    loop. ``at`` adds lines: ``before_<d>`` at the start of depth ``d`` (inside the loop over
    dim ``d - 1``), ``inner`` after the writes, ``after_<d>`` once the loop over dim ``d``
    has finished."""
    lines = kernel_header(list(params) + [f"n{d}" for d in range(rank)], fastmath)
    depth_of = {}
    placed: dict = {d: [] for d in range(rank + 1)}
    for i, mask in enumerate(masks):
        if mask is None:
            depth_of[("in", i)] = 0
            placed[0].append(f"v{i} = x{i}")
        else:
            depth = (max(mask) + 1) if mask else 0
            depth_of[("in", i)] = depth
            placed[depth].append(
                f"v{i} = x{i}[{', '.join(f'i{d}' for d in mask)}]" if mask else f"v{i} = x{i}[()]"
            )
    for j, (op, refs, dtype) in enumerate(steps):
        depth = max((depth_of[r] for r in refs), default=0)
        depth_of[("step", j)] = depth
        operands = [f"v{r}" if kind == "in" else f"t{r}" for kind, r in refs]
        placed[depth].append(f"t{j} = {expression(op, operands, dtype)}")
    index = ", ".join(f"i{d}" for d in range(rank))
    placed[rank] += [f"{array}[{index}] = t{j}" for array, j in writes] + list(at.get("inner", ()))
    for d in range(rank + 1):
        pad = "    " * (d + 1)
        lines += [pad + line for line in list(at.get(f"before_{d}", ())) + placed[d]]
        if d < rank:
            lines.append(pad + f"for i{d} in range(n{d}):")
    for d in range(rank - 1, -1, -1):
        lines += ["    " * (d + 1) + line for line in at.get(f"after_{d}", ())]
    return "\n".join(lines) + "\n"


def chain_source(steps: list, outputs: tuple, masks: tuple, rank: int) -> str:
    """The kernel ``chain(out0.., x0.., n0..)``: the chain's values in one loop nest."""
    params = [f"out{k}" for k in range(len(outputs))] + [f"x{i}" for i in range(len(masks))]
    return kernel_source(params, steps, masks, rank, [(f"out{k}", j) for k, j in enumerate(outputs)])


def _module_dir() -> Path:
    return jit.cache_dir().parent / "fusion"


def load_kernel(source: str):
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
            handle.write(
                f"# generated by ember's fusion engine (ember.kernels.cpu.fused_codegen): do not edit\n{source}"
            )
        os.replace(tmp, path)  # atomic: another process sees the whole file or none
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # Numba's disk cache finds the module by its name
        spec.loader.exec_module(module)
    return module.chain
