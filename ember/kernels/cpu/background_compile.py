"""Tiered execution for the ``cpu`` backend: the composed kernels run while Numba compiles.

On an empty kernel cache (a fresh install that skipped ``python -m ember.precompile``, a new
Numba, an edited kernel) the first step would wait for Numba to compile every fused kernel it
reaches, many seconds in which nothing trains. Instead, the first fused call of a dtype whose kernels are not marked as
compiled starts ``python -m ember.precompile --dtype <dtype>`` as a separate process and the
backend answers with the composed NumPy implementations of the backend contract (the
``reference`` backend's code: same results up to rounding, same dropout masks, since both use
one counter-based hash). When the compile process has filled the cache it leaves a marker, and
from the next call on the fused kernels run, loaded from the cache in milliseconds.

The compile runs in two stages. The first compiles :data:`FIRST_STAGE`, the kernels of a
Transformer training step whose stand-ins cost most (attention, dropout, cross-entropy,
embedding, Adam, the token-packing rows, the layer-norm backward), in groups that compile in
parallel processes and leave a marker each, so those kernels take over group by group after a few
seconds; the second compiles everything else on idle CPU time only, while the step already runs
on the first stage's kernels (GELU and the layer-norm forward run on their C++ kernels meanwhile).

The marker (``compiled-<dtype>-<fingerprint>``, in Numba's cache directory) is keyed by the
kernels' sources, the Numba and Python versions and the host CPU, so any change of those starts a
new compile. One compile process per dtype runs at a time, whatever the number of ember processes
(data-loader workers, distributed ranks): the others wait for the same marker.

``EMBER_BACKGROUND_COMPILE=0`` turns this off: kernels then compile in the calling process on
first use (what the test suite does, so that it tests the kernels, not their stand-ins).
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from ember import config
from ember.kernels import autotune

__all__ = [
    "FIRST_STAGE",
    "FIRST_STAGE_GROUPS",
    "BackgroundCompile",
    "compile_here",
    "compiling",
    "enabled",
    "fingerprint",
    "first_stage_marker_path",
    "mark_compiled",
    "marker_path",
]

_PACKAGE_DIR = Path(__file__).resolve().parent
# How often a waiting process looks for the marker: a stat call, so cheap, but not every op.
_POLL_S = 0.25
# A lock file without its pid yet is the moment between creating and writing it.
_FRESH_LOCK_S = 10.0
# float16 runs through the float32 kernels; other dtypes never reach a fused kernel.
_KERNEL_DTYPE = {
    np.dtype(np.float16): "float32",
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
}


#: The kernels the first compile stage makes ready, in groups that compile in parallel and
#: switch on one by one, by the name a backend asks about (the composite's, or ``"rows"`` for the
#: token-packing row kernels): those a Transformer training step spends most time in when they run
#: composed. GELU and the layer-norm forward are not among them: their C++ kernels (built at
#: install) stand in until the second stage. The attention backward compiles with the forward: it
#: runs fused only on what the fused forward made (the composed one keeps no lse).
FIRST_STAGE_GROUPS: dict[str, frozenset[str]] = {
    "dropout": frozenset({"dropout", "dropout_backward"}),  # the costliest stand-in, compiled first
    "attention": frozenset({"attention", "attention_backward"}),
    "layers": frozenset(
        {
            "cross_entropy",
            "cross_entropy_backward",
            "embedding",
            "embedding_backward",
            "adam_update",
            "layer_norm_backward",
            "rows",
        }
    ),
}
FIRST_STAGE = frozenset().union(*FIRST_STAGE_GROUPS.values())
_GROUP_OF = {kernel: group for group, kernels in FIRST_STAGE_GROUPS.items() for kernel in kernels}

# The dtypes whose kernels this process found missing and still waits for, and when compiling()
# may look for their markers next (autotune asks it on every call of a key it has put off).
_PENDING: set[str] = set()
_next_look = [0.0]

_compile_here = False
# With compile_here(only=...): the kernels that compile here; the others run their stand-ins.
_compile_only: frozenset[str] | None = None


def compile_here(only: frozenset[str] | None = None) -> None:
    """From now on, in this process and the ones it starts, kernels compile on first use
    (what ``ember.precompile`` needs of its workloads), whatever backends exist already.

    ``only``: compile just these kernels (names as in :data:`FIRST_STAGE`); every other one runs
    its stand-in, so a workload compiles one stage's share and nothing more."""
    global _compile_here, _compile_only
    _compile_here = True
    _compile_only = None if only is None else frozenset(only)
    os.environ["EMBER_BACKGROUND_COMPILE"] = "0"


def enabled() -> bool:
    """Whether ``[compile] background`` (``EMBER_BACKGROUND_COMPILE``) allows tiered execution
    (default: yes)."""
    return config.get("compile.background")


@functools.cache
def fingerprint() -> str:
    """A hash of everything the compiled kernels depend on: the kernel sources, Numba's and
    Python's versions and the host CPU and target features (Numba compiles for the machine
    it runs on)."""
    import llvmlite.binding as llvm
    import numba

    from . import jit  # noqa: F401  (late, Numba: sets the target features read below)

    digest = hashlib.sha256()
    for path in sorted(_PACKAGE_DIR.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(f"{numba.__version__}|{sys.version}|{llvm.get_host_cpu_name()}".encode())
    # the target Numba compiles for when it is overridden (jit.py sets the features on AVX-512)
    for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"):
        digest.update(f"|{os.environ.get(name, '')}".encode())
    return digest.hexdigest()[:24]


def _cache_root() -> Path | None:
    import numba

    root = numba.config.CACHE_DIR or os.environ.get("NUMBA_CACHE_DIR")
    return Path(root) if root else None


def _in_cache(name: str) -> Path | None:
    """``name``, a marker stamped with the fingerprint, in the kernel cache (None: no cache)."""
    root = _cache_root()
    return None if root is None else root / f"{name}-{fingerprint()}"


def marker_path(dtype: str) -> Path | None:
    """Where the marker saying "``dtype``'s kernels are in the cache" lives (None: no cache)."""
    return _in_cache(f"compiled-{dtype}")


def first_stage_marker_path(dtype: str, group: str) -> Path | None:
    """Where the marker saying "the kernels of :data:`FIRST_STAGE_GROUPS` ``group`` of ``dtype``
    are in the cache" lives (None: no cache)."""
    return _in_cache(f"compiled-first-{group}-{dtype}")


def mark_compiled(dtype: str, group: str | None = None) -> None:
    """Record that the cache holds every kernel of ``dtype`` (``ember.precompile`` calls this),
    or, with ``group``, those of that group of the first stage."""
    path = marker_path(dtype) if group is None else first_stage_marker_path(dtype, group)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"compiled by pid {os.getpid()} at {time.time():.0f}\n", encoding="utf-8")


def compiling() -> bool:
    """Whether this process waits for a background compile (of any dtype) to finish (the
    marker is looked for again here, at most every poll interval: a process may stop asking for
    the kernels meanwhile)."""
    now = time.monotonic()
    if _PENDING and now >= _next_look[0]:
        _next_look[0] = now + _POLL_S
        for dtype in list(_PENDING):
            if marker_path(dtype).exists():
                _PENDING.discard(dtype)
    return bool(_PENDING)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


class BackgroundCompile:
    """Per process: which dtypes' fused kernels may run now, and the compile processes started.

    ``ready(dtype, kernel)`` is called before every fused kernel; once it has said yes for a
    dtype (or for the first stage's kernels of a dtype) it answers from a dict. ``command``
    builds the compile process's argument list (the tests replace it)."""

    def __init__(self, command=None, poll_s: float = _POLL_S):
        self._active = enabled() and _cache_root() is not None
        self._ready: dict[str, bool] = {}
        self._first_ready: set[tuple[str, str]] = set()  # (dtype, group) marked
        self._next_poll: dict[str, float] = {}
        self._children: dict[str, subprocess.Popen] = {}
        self._command = command or (
            lambda dtype: [sys.executable, "-m", "ember.precompile", "--dtype", dtype]
        )
        self._poll_s = poll_s
        if hasattr(os, "register_at_fork"):
            # A forked child (a data-loader worker) cannot wait on its parent's children; it
            # waits for the marker like any other process, through the lock file.
            os.register_at_fork(after_in_child=self._children.clear)

    def ready_for(self, array, kernel: str | None = None) -> bool:
        """``ready`` for the dtype of ``array`` (an ndarray, or a list whose first item is one)."""
        if isinstance(array, (list, tuple)):
            array = array[0] if array else None
        dtype = _KERNEL_DTYPE.get(getattr(array, "dtype", None))
        return True if dtype is None else self.ready(dtype, kernel)

    def ready(self, dtype: str, kernel: str | None = None) -> bool:
        """Whether the fused kernel ``kernel`` of ``dtype`` ("float32"/"float64") runs now
        (``None``: every kernel of the dtype); starts the compile process on the first call that
        finds the kernels missing."""
        if self._ready.get(dtype):
            return True
        if _compile_here:
            if _compile_only is not None:
                return kernel in _compile_only
            self._ready[dtype] = True
            return True
        if not self._active:
            self._ready[dtype] = True
            return True
        group = _GROUP_OF.get(kernel)
        if group is not None and (dtype, group) in self._first_ready:
            return True
        return self._poll(dtype) or (dtype, group) in self._first_ready

    def _poll(self, dtype: str) -> bool:
        """Look for the markers (at most every ``poll_s``), start or take over the compile
        process when none runs; whether every kernel of ``dtype`` is ready."""
        ready = self._look(dtype)
        if ready:
            _PENDING.discard(dtype)
        else:
            _PENDING.add(dtype)
        return ready

    def _look(self, dtype: str) -> bool:
        state = self._ready.get(dtype)
        now = time.monotonic()
        if state is not None and now < self._next_poll[dtype]:
            return False
        self._next_poll[dtype] = now + self._poll_s
        marker = marker_path(dtype)
        if marker.exists():
            self._ready[dtype] = True
            return True
        for group in FIRST_STAGE_GROUPS:
            if first_stage_marker_path(dtype, group).exists():
                self._first_ready.add((dtype, group))
        if state is None:
            self._ready[dtype] = not self._try_start(dtype, marker)
            return self._ready[dtype]
        child = self._children.get(dtype)
        if child is not None and child.poll() is not None and not marker.exists():
            # The compile process failed: compile here, on first use, as without tiers.
            warnings.warn(
                f"ember: the background kernel compile for {dtype} exited with {child.returncode} "
                f"(log: {self._log_path(marker)}); compiling in this process instead",
                RuntimeWarning,
                stacklevel=3,
            )
            self._ready[dtype] = True
            return True
        if child is None and not self._lock_holder_alive(marker):
            # the process that was compiling died: take over
            self._ready[dtype] = not self._try_start(dtype, marker)
        return self._ready[dtype]

    # ---- the compile process ------------------------------------------------------------
    @staticmethod
    def _lock_path(marker: Path) -> Path:
        return marker.with_name(marker.name + ".lock")

    @staticmethod
    def _log_path(marker: Path) -> Path:
        return marker.with_name(marker.name + ".log")

    def _lock_holder_alive(self, marker: Path) -> bool:
        lock = self._lock_path(marker)
        try:
            text = lock.read_text(encoding="utf-8")
            if not text.strip():  # created, its pid not written yet: a live holder if recent
                return time.time() - lock.stat().st_mtime < _FRESH_LOCK_S
            return _alive(int(text.split()[0]))
        except (OSError, ValueError):
            return False

    def _try_start(self, dtype: str, marker: Path) -> bool:
        """``_start``, or False (with a warning) when no process can be started: a read-only
        cache, no fork/exec. The kernels then compile in this process on first use."""
        try:
            self._start(dtype, marker)
            return True
        except OSError as error:
            warnings.warn(
                f"ember: cannot start the background kernel compile for {dtype} ({error}); "
                "compiling in this process instead",
                RuntimeWarning,
                stacklevel=4,
            )
            return False

    def _start(self, dtype: str, marker: Path) -> None:
        """Start the compile process unless another live process already runs one."""
        lock = self._lock_path(marker)
        marker.parent.mkdir(parents=True, exist_ok=True)
        if self._lock_holder_alive(marker):
            return
        lock.unlink(missing_ok=True)  # a dead holder's
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return  # another process won the race and compiles
        env = dict(os.environ, EMBER_BACKGROUND_COMPILE="0", NUMBA_CACHE_DIR=str(marker.parent))
        with open(self._log_path(marker), "w", encoding="utf-8") as log:
            child = subprocess.Popen(
                self._command(dtype), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        os.write(fd, f"{child.pid}\n".encode())
        os.close(fd)
        self._children[dtype] = child
        print(
            f"ember: compiling the cpu kernels for {dtype} in the background (pid {child.pid}); "
            "until they are ready the composed kernels run (`python -m ember.precompile` does this ahead)",
            file=sys.stderr,
            flush=True,
        )


# Autotune measures nothing while this process waits for its kernels: the compile processes
# would time themselves into every candidate, and the decisions would persist.
autotune.defer_while(compiling)
