"""Numba setup shared by every fused kernel of the ``cpu`` backend.

Importing this module configures Numba once, before any kernel is compiled:

* **On-disk cache.** Kernels are compiled with ``cache=True`` so that a second process
  loads machine code instead of recompiling (``python -m ember.precompile`` fills it ahead
  of the first step). Numba writes next to the source file by default, which fails for
  read-only installs, so unless ``NUMBA_CACHE_DIR`` is already set it is pointed at
  ``<cache_dir>/numba/kernels`` (``[compile] cache_dir`` of ember.toml, ``EMBER_CACHE_DIR``;
  default ``~/.cache/ember``). Numba
  revalidates a cached kernel against a hash of its own source file only, not of the
  helpers it inlines from other files, so ember's kernels get a cache locator whose stamp
  hashes the kernel's file *and* every module of this package it imports (transitively):
  editing a helper recompiles the kernels that use it, and nothing else.
* **Threads.** ``[threads] num_threads`` (``EMBER_NUM_THREADS``) sets the size of Numba's
  thread pool; by default Numba uses every core. BLAS threads are configured by the
  backend with the same setting, so the two never oversubscribe the machine.
* **Vector width.** On CPUs with AVX-512 LLVM still emits 256-bit vectors unless told
  otherwise (its tuning dates from Skylake-SP, whose clock drops under heavy 512-bit code;
  Ice Lake and later cores, and Zen 4, barely slow down). Unless ``NUMBA_CPU_NAME`` or
  ``NUMBA_CPU_FEATURES`` is set, ember sets ``NUMBA_CPU_FEATURES`` to the host's features
  with that preference removed, so its loops use all 16 float32 lanes (twice the work per
  instruction on the element-wise kernels); setting either variable keeps LLVM's choice.

The decorators ``kernel`` (parallel, for ``prange`` loops) and ``serial`` (helpers and
small loops) carry the shared compilation options so every module compiles alike.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import sys
import tempfile
import threading
import warnings
from pathlib import Path

from ember import config
from ember.kernels import threads

__all__ = [
    "FASTMATH",
    "cache_dir",
    "configured_threads",
    "dependency_stamp",
    "host_cpu_features",
    "kernel",
    "num_threads",
    "serial",
    "serial_ordered",
]


_PACKAGE_DIR = Path(__file__).resolve().parent


def _imported_siblings(path: Path) -> set[Path]:
    """The modules of this package that ``path`` imports (``from . import x``, ``from .x import``,
    ``from ember.kernels.cpu.x import``), read from its source."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 1:
            names = [node.module] if node.module else [alias.name for alias in node.names]
        elif node.module and node.module.startswith(__package__ + "."):
            names = [node.module[len(__package__) + 1 :]]
        elif node.module == __package__:
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            candidate = _PACKAGE_DIR / f"{name.split('.')[0]}.py"
            if candidate.exists():
                found.add(candidate)
    return found


@functools.cache
def dependency_stamp(path: str) -> str:
    """SHA-256 of the source of ``path`` and of every module of this package it imports,
    transitively: what a kernel's machine code can depend on."""
    seen, todo = set(), [Path(path).resolve()]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo += _imported_siblings(current) - seen
    digest = hashlib.sha256()
    for dep in sorted(seen):
        digest.update(dep.name.encode() + b"\0" + dep.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_dir() -> Path:
    """Return the directory ember uses for Numba's compiled-kernel cache.

    ``<cache_dir>/numba/kernels``, where ``cache_dir`` is ``[compile] cache_dir`` of ember.toml
    or ``EMBER_CACHE_DIR`` (default ``~/.cache/ember``). An explicit ``NUMBA_CACHE_DIR`` takes
    precedence over both (see :func:`_configure_cache`).
    """
    return config.get("compile.cache_dir") / "numba" / "kernels"


def configured_threads() -> int | None:
    """``[threads] num_threads`` (``EMBER_NUM_THREADS``); ``None`` when unset.

    Raises:
        ValueError: (a ``ConfigError``) the variable or the file holds something other than a
            positive integer.
    """
    return config.get("threads.num_threads")


def _configure_cache() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    path = cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        # A read-only home must not make the backend unusable: fall back to /tmp.
        user = getattr(os, "getuid", lambda: "user")()
        path = Path(tempfile.gettempdir()) / f"ember-numba-{user}" / path.name
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            return  # no writable place: Numba then compiles without caching

    os.environ["NUMBA_CACHE_DIR"] = str(path)
    numba_module = sys.modules.get("numba")
    if numba_module is not None and not numba_module.config.CACHE_DIR:
        # Numba was imported before us and read its config already; the cache
        # locator reads config.CACHE_DIR lazily, so updating it still takes effect.
        numba_module.config.CACHE_DIR = str(path)


def _configure_threads_before_import() -> None:
    threads = configured_threads()
    if threads is not None and "numba" not in sys.modules:
        # The pool size is fixed at import; setting it here also makes the choice
        # apply to every Python thread (numba.set_num_threads is thread-local).
        os.environ.setdefault("NUMBA_NUM_THREADS", str(threads))


@functools.cache
def host_cpu_features() -> str:
    """LLVM's feature string for this CPU (``+avx2,-avx512f,...``), read once per process."""
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_features().flatten()


def _configure_vector_width_before_import() -> None:
    # An environment variable rather than numba.config: Numba re-reads its config from the
    # environment whenever a NUMBA_* variable changes, which would drop a value set in config.
    if any(os.environ.get(name) for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")):
        return
    if os.environ.get("NUMBA_ENABLE_AVX", "1") == "0":
        return
    features = host_cpu_features()
    if "+avx512f" in features.split(","):
        os.environ["NUMBA_CPU_FEATURES"] = features + ",-prefer-256-bit"


_configure_cache()
_configure_threads_before_import()
_configure_vector_width_before_import()

import numba  # noqa: E402  (must follow the environment setup above)
from numba.core import caching as _caching  # noqa: E402

# Public names since Numba 0.61, underscored before.
_UserProvidedCacheLocator = (
    getattr(_caching, "UserProvidedCacheLocator", None) or _caching._UserProvidedCacheLocator
)
_CacheImpl = getattr(_caching, "CacheImpl", None) or _caching._CacheImpl


class _KernelCacheLocator(_UserProvidedCacheLocator):
    """Numba's cache locator for functions defined in this package: the cache directory as
    configured, and a source stamp that covers the modules the function's file imports."""

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve().parent != _PACKAGE_DIR:
            return None
        return super().from_function(py_func, py_file)

    def get_source_stamp(self):
        return dependency_stamp(str(self._py_file))


_CacheImpl._locator_classes.insert(0, _KernelCacheLocator)


def _apply_thread_setting() -> None:
    threads = configured_threads()
    if threads is None:
        return
    available = numba.config.NUMBA_NUM_THREADS
    if threads > available:
        warnings.warn(
            f"EMBER_NUM_THREADS={threads} exceeds Numba's thread pool of {available} "
            f"(NUMBA_NUM_THREADS); using {available} threads",
            RuntimeWarning,
            stacklevel=2,
        )
        threads = available
    numba.set_num_threads(threads)


_apply_thread_setting()


def num_threads() -> int:
    """Number of threads Numba's parallel kernels currently use."""
    return numba.get_num_threads()


# Fast-math without 'nnan'/'ninf': reductions may be reassociated (needed to vectorise
# them) and FMAs contracted, but infinities and NaNs keep IEEE semantics, so masked
# -inf/-1e4 scores and overflowing exponentials stay well defined.
FASTMATH = frozenset({"reassoc", "contract", "arcp", "nsz", "afn"})

_COMMON = dict(cache=True, fastmath=set(FASTMATH), nogil=True, error_model="numpy")


def _own_openmp_runtime() -> bool:
    """Load Numba's OpenMP layer so that it binds to an OpenMP runtime of its own, not to the
    one loaded before ember; True when it got one.

    The layer's extension names its runtime by file (``libgomp.so.1.0.0``), so the loader maps
    the system's libgomp even when PyTorch's (``libgomp.so.1``) is loaded already, but binds the
    layer's calls to whichever came first. ``RTLD_DEEPBIND`` makes it look in its own
    dependencies first: a fresh runtime, which reads the passive policy ember set. Where the
    two are one file (or the layer was loaded before ember), no new runtime appears and the
    answer is False."""
    deepbind = getattr(os, "RTLD_DEEPBIND", None)  # glibc only
    if deepbind is None or "numba.np.ufunc.omppool" in sys.modules:
        return False
    before = threads.openmp_runtimes()
    flags = sys.getdlopenflags()
    sys.setdlopenflags(flags | deepbind)
    try:
        import numba.np.ufunc.omppool  # noqa: F401  (Numba's layer selection finds it loaded)
    except ImportError:
        return False
    finally:
        sys.setdlopenflags(flags)
    return bool(threads.openmp_runtimes() - before)


def _launch_layer() -> str | None:
    """The threading layer ember picks for Numba's parallel kernels, or None for Numba's own
    choice. When the OpenMP runtime already loaded spins (see
    :data:`ember.kernels.threads.SPINNING_OPENMP`): ``omp`` on a runtime of its own where the
    loader allows one (:func:`_own_openmp_runtime`), else ``workqueue``: its launches cost
    more than omp's, but a training step on the spinning runtime loses more, its threads taking
    the cores the next kernel needs. ``NUMBA_THREADING_LAYER``, when set, wins."""
    chosen = os.environ.get("NUMBA_THREADING_LAYER")
    if chosen is not None and chosen != os.environ.get(_OWN_LAYER_MARK):
        return None  # the user's
    if threads.SPINNING_OPENMP:
        return "omp" if _own_openmp_runtime() else "workqueue"
    if chosen is not None:  # inherited from an ember process that had to choose: choose anew
        os.environ.pop("NUMBA_THREADING_LAYER")
        os.environ.pop(_OWN_LAYER_MARK, None)
        numba.config.THREADING_LAYER = "default"  # (Numba read the inherited one at import)
    return None


# The choice goes into the environment, not only numba.config: Numba re-reads its config from
# the environment whenever a NUMBA_* variable changes, and a value set in config alone was lost
# before the first parallel launch (then Numba took its default, the spinning runtime). The mark
# tells ember's choice from the user's in the processes that inherit it.
_OWN_LAYER_MARK = "EMBER_CHOSE_NUMBA_THREADING_LAYER"
_LAYER = _launch_layer()
if _LAYER is not None:
    os.environ["NUMBA_THREADING_LAYER"] = os.environ[_OWN_LAYER_MARK] = _LAYER
    numba.config.THREADING_LAYER = _LAYER

#: One parallel kernel at a time: Numba's workqueue layer aborts the process on concurrent
#: launches (two Python threads calling ember at once).
_launch_lock = threading.Lock()


class _SerialLaunches:
    """A parallel dispatcher whose calls hold :data:`_launch_lock` (workqueue layer only)."""

    def __init__(self, dispatcher):
        self._dispatcher = dispatcher
        functools.update_wrapper(self, dispatcher.py_func)

    def __call__(self, *args, **kwargs):
        with _launch_lock:
            return self._dispatcher(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._dispatcher, name)


def kernel(function):
    """Decorator for kernels whose outer loop is a ``numba.prange``."""
    dispatcher = numba.njit(parallel=True, **_COMMON)(function)
    return _SerialLaunches(dispatcher) if numba.config.THREADING_LAYER == "workqueue" else dispatcher


#: Decorator for serial kernels and for helpers called from kernels.
serial = functools.partial(numba.njit, **_COMMON)

#: ``serial`` without reassociation, for helpers whose order of float operations carries
#: precision (a two-float value ``hi + lo`` subtracted as ``(x - hi) - lo``); instruction
#: flags survive inlining into a fast-math caller.
serial_ordered = functools.partial(numba.njit, **{**_COMMON, "fastmath": set(FASTMATH - {"reassoc"})})
