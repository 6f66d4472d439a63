"""One thread setting for every CPU thread pool ember drives: Numba's, the native extension's
(both OpenMP) and BLAS's.

A training step alternates BLAS GEMMs with Numba/OpenMP kernels on the same cores. OpenMP
threads spin-wait by default after a parallel region, stealing the cores BLAS needs next (and
vice versa), so a whole training step is markedly slower with spinning than with
``OMP_WAIT_POLICY=passive``. The policy is read once, when the OpenMP runtime loads, so this
module must run before Numba or the extension is imported; a value set by the user wins.
"""

from __future__ import annotations

import os

from ember import config

_configured = False

#: An OpenMP runtime was already loaded when ember was imported, with no ``OMP_WAIT_POLICY``
#: set (``import torch`` first does this: PyTorch brings its libgomp). Its threads then spin
#: after every parallel region, and the policy can no longer be changed, so ember keeps its
#: kernels off that runtime: Numba's OpenMP layer gets a runtime of its own where it can (see
#: :mod:`ember.kernels.cpu.jit`), and the C++ kernels, which would share it, are left aside.
SPINNING_OPENMP = False


def openmp_runtimes() -> set[str]:
    """The files of the GNU, Intel or LLVM OpenMP runtimes mapped into this process (Linux;
    empty elsewhere)."""
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
    except OSError:  # (not Linux: nothing to tell)
        return set()
    paths = {line.split(maxsplit=5)[-1] for line in lines}  # the path may hold spaces
    return {p for p in paths if any(name in p for name in ("/libgomp", "/libiomp", "/libomp"))}


def configure_openmp() -> None:
    """Set the OpenMP wait policy before the runtime loads (idempotent), noting whether a
    runtime loaded earlier already ignores it."""
    global SPINNING_OPENMP
    if "OMP_WAIT_POLICY" not in os.environ and openmp_runtimes():
        SPINNING_OPENMP = True
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")


def apply_blas_threads() -> None:
    """Limit BLAS to ``[threads] num_threads`` threads (``EMBER_NUM_THREADS``) when set (once)."""
    global _configured
    if _configured:
        return
    _configured = True
    threads = config.get("threads.num_threads")
    if threads is None:
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # without threadpoolctl, OPENBLAS_NUM_THREADS/OMP_NUM_THREADS still work
        return
    threadpool_limits(threads, user_api="blas")


configure_openmp()
