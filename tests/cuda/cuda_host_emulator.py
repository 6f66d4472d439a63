"""Run ember's CUDA kernels on the CPU, through a NumPy stand-in for the ``cupy`` module.

Tests only. :class:`FakeCupy` offers the part of CuPy's API that ember's cuda wrappers use;
its ``RawModule`` compiles the kernel source with g++ after ``cuda_host_emulator.h`` (a fiber
scheduler emulating blocks, barriers, shuffles and atomics), so the very code that CuPy
compiles with NVRTC runs on host memory. On every launch it also checks what CuPy cannot:
each argument's type against the kernel's parameter (a NumPy scalar of exactly the right
type; arrays of the right element type, C-contiguous), the grid and block limits, and that
barriers are reached by every thread.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import types
from pathlib import Path

import numpy as np

HEADER = Path(__file__).resolve().parent / "cuda_host_emulator.h"

_SCALARS = {"f": np.float32, "d": np.float64, "i": np.int32, "I": np.uint32, "q": np.int64, "Q": np.uint64}
_CTYPES = {
    "f": ctypes.c_float,
    "d": ctypes.c_double,
    "i": ctypes.c_int32,
    "I": ctypes.c_uint32,
    "q": ctypes.c_int64,
    "Q": ctypes.c_uint64,
}
_ELEMENTS = {
    "f": (np.dtype(np.float32),),
    "d": (np.dtype(np.float64),),
    "e": (np.dtype(np.float16),),
    "i": (np.dtype(np.int32),),
    "I": (np.dtype(np.uint32),),
    "q": (np.dtype(np.int64),),
    "Q": (np.dtype(np.uint64),),
    "B": (np.dtype(np.uint8), np.dtype(np.bool_)),
}


def compiler() -> str | None:
    """Path of the host C++ compiler, or None."""
    return shutil.which(os.environ.get("CXX", "g++"))


def _cache_dir() -> Path:
    path = Path(tempfile.gettempdir()) / "ember-cuda-host-emulator"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _all_expressions(code: str, requested: list[str]) -> list[str]:
    """Every instantiation of the ember source ``code`` (all module variants), so that one
    library per source serves all its variants: one g++ run per source instead of one per
    (source, variant)."""
    from ember.kernels.cuda import modules

    for source, variants in modules.NAME_EXPRESSIONS.items():
        if modules.source_text(source) == code:
            return sorted({e for exprs in variants.values() for e in exprs})
    return sorted(set(requested))


def build_library(code: str, name_expressions: list[str]) -> Path:
    """Compile ``code`` for the emulator with a launcher per name expression; cached on disk
    by content."""
    table = ",\n".join(f'    emu_make("{e}", &{e})' for e in name_expressions)
    unit = (
        f'#include "{HEADER}"\n{code}\n'
        f"std::vector<EmuKernel>& emu_table() {{\n"
        f"  static std::vector<EmuKernel> t = {{\n{table}\n  }};\n  return t;\n}}\n"
    )
    # EMBER_EMU_SANITIZE=1 builds with AddressSanitizer (run python with libasan preloaded)
    # so that out-of-bounds accesses of the kernels abort with a report.
    sanitize = (
        ["-fsanitize=address", "-fno-omit-frame-pointer"]
        if os.environ.get("EMBER_EMU_SANITIZE") == "1"
        else []
    )
    digest = hashlib.sha256((unit + HEADER.read_text() + " ".join(sanitize)).encode()).hexdigest()[:20]
    lib = _cache_dir() / f"k{digest}.so"
    if lib.exists():
        return lib
    src = _cache_dir() / f"k{digest}.cpp"
    src.write_text(unit)
    tmp = lib.with_suffix(f".{os.getpid()}.tmp")
    # -O0 builds about twice as fast as -O1 and the emulated test sizes are small.
    cmd = [
        compiler() or "g++",
        "-std=c++20",
        "-O0",
        "-fPIC",
        "-shared",
        "-w",
        "-fno-strict-aliasing",
        *sanitize,
        str(src),
        "-o",
        str(tmp),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"emulator build failed:\n{proc.stderr[-6000:]}")
    os.replace(tmp, lib)
    return lib


class EmulatedKernel:
    """One kernel of an emulated module, called like a CuPy RawModule function."""

    def __init__(self, lib: ctypes.CDLL, index: int, name: str, sig: str):
        self._lib = lib
        self._index = index
        self.name = name
        self.sig = sig.split(",") if sig else []
        self.launches = 0

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        grid, block = tuple(grid), tuple(block)
        if shared_mem != 0:
            raise ValueError(f"{self.name}: dynamic shared memory is not used by ember's kernels")
        for dims, label in ((grid, "grid"), (block, "block")):
            if not 1 <= len(dims) <= 3 or any(type(d) is not int or d < 1 for d in dims):
                raise ValueError(f"{self.name}: {label} must be 1-3 positive Python ints, got {dims}")
        grid = grid + (1,) * (3 - len(grid))
        block = block + (1,) * (3 - len(block))
        if block[0] * block[1] * block[2] > 1024 or block[2] > 64:
            raise ValueError(f"{self.name}: block {block} exceeds CUDA limits")
        if grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
            raise ValueError(f"{self.name}: grid {grid} exceeds CUDA limits")
        args = tuple(args)
        if len(args) != len(self.sig):
            raise TypeError(f"{self.name}: expects {len(self.sig)} arguments ({self.sig}), got {len(args)}")
        holders = []
        for i, (a, code) in enumerate(zip(args, self.sig)):
            if code.endswith("*"):
                if not isinstance(a, np.ndarray):
                    raise TypeError(f"{self.name}: argument {i} must be an array, got {type(a)}")
                if a.dtype not in _ELEMENTS[code[:-1]]:
                    raise TypeError(
                        f"{self.name}: argument {i} must have element type "
                        f"{_ELEMENTS[code[:-1]]}, got {a.dtype}"
                    )
                if not a.flags.c_contiguous:
                    raise TypeError(f"{self.name}: argument {i} is not C-contiguous")
                holders.append(ctypes.c_void_p(a.ctypes.data))
            else:
                if type(a) is not _SCALARS[code]:
                    raise TypeError(
                        f"{self.name}: argument {i} must be a {_SCALARS[code].__name__} "
                        f"scalar, got {type(a).__name__} {a!r}"
                    )
                holders.append(_CTYPES[code](a.item()))
        argv = (ctypes.c_void_p * max(1, len(holders)))(
            *[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders]
        )
        err = ctypes.create_string_buffer(2048)
        rc = self._lib.emu_launch(self._index, *grid, *block, argv, err, len(err))
        self.launches += 1
        if rc != 0:
            raise RuntimeError(f"{self.name}: {err.value.decode()}")


class EmulatedRawModule:
    """Stand-in for ``cupy.RawModule(code=..., options=..., name_expressions=...)``."""

    instances: list[EmulatedRawModule] = []

    def __init__(self, code: str, options=(), name_expressions=None):
        if not name_expressions:
            raise ValueError("ember compiles every module with name_expressions")
        self.options = tuple(options)
        self.name_expressions = list(name_expressions)
        path = build_library(code, _all_expressions(code, self.name_expressions))
        self._lib = ctypes.CDLL(str(path))
        self._lib.emu_kernel_name.restype = ctypes.c_char_p
        self._lib.emu_kernel_sig.restype = ctypes.c_char_p
        self._lib.emu_launch.argtypes = (
            [ctypes.c_int] + [ctypes.c_uint] * 6 + [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        )
        self.kernels = {}
        for i in range(self._lib.emu_kernel_count()):
            name = self._lib.emu_kernel_name(i).decode()
            self.kernels[name] = EmulatedKernel(self._lib, i, name, self._lib.emu_kernel_sig(i).decode())
        EmulatedRawModule.instances.append(self)

    def get_function(self, name: str) -> EmulatedKernel:
        # Like CuPy, only the module's own name expressions can be looked up.
        if name not in self.name_expressions or name not in self.kernels:
            raise KeyError(f"{name!r} is not among the module's name expressions")
        return self.kernels[name]


def prebuild(codes: list[str], workers: int = 2) -> None:
    """Build the libraries of several ember sources in parallel (g++ runs in subprocesses)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda c: build_library(c, _all_expressions(c, [])), codes))


def make_fake_cupy() -> types.ModuleType:
    """A module object exposing the subset of CuPy's API used by ember's cuda wrappers."""
    cp = types.ModuleType("fake_cupy")
    for name in (
        "ndarray",
        "float16",
        "float32",
        "float64",
        "int32",
        "int64",
        "uint8",
        "uint32",
        "uint64",
        "bool_",
        "empty",
        "zeros",
        "ones",
        "full",
        "empty_like",
        "zeros_like",
        "ascontiguousarray",
        "arange",
        "dtype",
    ):
        setattr(cp, name, getattr(np, name))

    def asarray(a, dtype=None):
        # CuPy copies host data to the device: never alias the caller's NumPy array.
        return np.array(a, dtype=dtype, copy=True, order="C")

    cp.asarray = asarray
    cp.asnumpy = lambda a: np.array(a, copy=True)
    cp.RawModule = EmulatedRawModule
    device = types.SimpleNamespace(id=0, compute_capability="90")
    cp.cuda = types.SimpleNamespace(Device=lambda *a: device)
    return cp
