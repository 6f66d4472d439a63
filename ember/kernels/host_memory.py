"""Host allocator tuning for the NumPy-based backends.

glibc serves every allocation above its mmap threshold (at most 32 MiB by default) with a fresh
``mmap`` and returns it to the kernel on free, so a [32, 4, 256, 256] float32 activation is
page-faulted in anew at every op, which can cost far more than the op itself. Raising the mmap and trim thresholds keeps large blocks in the heap for reuse, the way
PyTorch's CPU caching allocator does. Set ``[memory] malloc_tuning = false`` in ember.toml (or ``EMBER_MALLOC_TUNING=0``) to leave
malloc alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

from ember import config

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_done = False


def tune_allocator() -> bool:
    """Raise glibc's mmap/trim thresholds once per process; True when applied."""
    global _done
    if _done:
        return True
    if not config.get("memory.malloc_tuning") or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, ...): nothing to tune
        return False
    _done = bool(mallopt(_M_MMAP_THRESHOLD, 1 << 30)) and bool(mallopt(_M_TRIM_THRESHOLD, 1 << 31))
    return _done
