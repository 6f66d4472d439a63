"""CUDA device utilities: availability, memory statistics and the memory-pool cache.

Nothing here imports CuPy until it is called, so ``import ember`` never needs a GPU.
"""

from __future__ import annotations


def is_available() -> bool:
    """True when CuPy is installed and a CUDA device is usable."""
    from ember.kernels.cuda.runtime import is_available as _available  # late: CuPy's loader

    return _available()


def device_count() -> int:
    from ember.kernels.cuda.runtime import cupy_or_error  # late: CuPy's loader

    return cupy_or_error().cuda.runtime.getDeviceCount()


def memory_stats(device: int = 0) -> dict:
    """Bytes used and cached by ember's CuPy memory pool, and free/total on the device."""
    from ember.kernels.cuda.runtime import cupy_or_error  # late: CuPy's loader

    cp = cupy_or_error()
    with cp.cuda.Device(device):
        pool = cp.get_default_memory_pool()
        free, total = cp.cuda.runtime.memGetInfo()
        return {
            "used_bytes": pool.used_bytes(),
            "pool_bytes": pool.total_bytes(),
            "free_bytes": free,
            "total_bytes": total,
        }


def empty_cache() -> None:
    """Return the cached, unused blocks of the memory pools to the driver."""
    from ember.kernels.cuda.runtime import cupy_or_error  # late: CuPy's loader

    cp = cupy_or_error()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


def synchronize(device: int | None = None) -> None:
    from ember.kernels.cuda.runtime import cupy_or_error  # late: CuPy's loader

    cp = cupy_or_error()
    if device is None:
        cp.cuda.get_current_stream().synchronize()
    else:
        with cp.cuda.Device(device):
            cp.cuda.Device(device).synchronize()
