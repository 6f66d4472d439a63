"""Numba setup shared by every fused kernel of the ``cpu`` backend.

Importing this module configures Numba once, before any kernel is compiled:

* **On-disk cache.** Kernels are compiled with ``cache=True`` so that a second process
  loads machine code instead of recompiling. Numba writes next to the source file by
  default, which fails for read-only installs, so unless ``NUMBA_CACHE_DIR`` is already
  set it is pointed at ``$EMBER_CACHE_DIR/numba/<fingerprint>`` (default
  ``~/.cache/ember/numba/<fingerprint>``). Numba revalidates a cached kernel only
  against its own source file, not against the helpers it inlines from other files;
  the fingerprint (of this package's sources) keeps an edited helper from being
  served stale machine code.
* **Threads.** ``EMBER_NUM_THREADS`` (a positive integer) sets the size of Numba's
  thread pool; by default Numba uses every core. BLAS threads are configured by the
  backend with the same variable, so the two never oversubscribe the machine.

The decorators ``kernel`` (parallel, for ``prange`` loops) and ``serial`` (helpers and
small loops) carry the shared compilation options so every module compiles alike.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import tempfile
import warnings
from pathlib import Path

__all__ = [
    "FASTMATH",
    "cache_dir",
    "configured_threads",
    "kernel",
    "num_threads",
    "serial",
    "serial_ordered",
]


def _source_fingerprint() -> str:
    """Short hash of the names, sizes and modification times of this package's sources."""
    digest = hashlib.sha1()
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        stat = path.stat()
        digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


def cache_dir() -> Path:
    """Return the directory ember uses for Numba's compiled-kernel cache.

    ``$EMBER_CACHE_DIR/numba/<fingerprint>`` when ``EMBER_CACHE_DIR`` is set, otherwise
    ``~/.cache/ember/numba/<fingerprint>``. An explicit ``NUMBA_CACHE_DIR`` takes
    precedence over both (see :func:`_configure_cache`).
    """
    base = os.environ.get("EMBER_CACHE_DIR")
    root = Path(base).expanduser() if base else Path.home() / ".cache" / "ember"
    return root / "numba" / _source_fingerprint()


def configured_threads() -> int | None:
    """Parse ``EMBER_NUM_THREADS``; ``None`` when it is unset or empty.

    Raises:
        ValueError: if the variable is set to something other than a positive integer.
    """
    raw = os.environ.get("EMBER_NUM_THREADS", "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"EMBER_NUM_THREADS must be a positive integer, got {raw!r}")
    return value


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


_configure_cache()
_configure_threads_before_import()

import numba  # noqa: E402  (must follow the environment setup above)


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

#: Decorator for kernels whose outer loop is a ``numba.prange``.
kernel = functools.partial(numba.njit, parallel=True, **_COMMON)

#: Decorator for serial kernels and for helpers called from kernels.
serial = functools.partial(numba.njit, **_COMMON)

#: ``serial`` without reassociation, for helpers whose order of float operations carries
#: precision (a two-float value ``hi + lo`` subtracted as ``(x - hi) - lo``); instruction
#: flags survive inlining into a fast-math caller.
serial_ordered = functools.partial(numba.njit, **{**_COMMON, "fastmath": set(FASTMATH - {"reassoc"})})
