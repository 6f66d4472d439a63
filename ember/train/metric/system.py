"""System metrics (Burn's ``sys-metrics``): ``CpuUse``, ``CpuMemory`` and the text metric ``CudaMetric``.

The CPU figures come from ``psutil`` when it is importable, else from ``/proc``. The CUDA
figures come from ``ember.cuda`` (CuPy); CuPy is imported only when a GPU is visibly there,
so the metric costs nothing on a machine without one and shows ``Unavailable``.
"""

from __future__ import annotations

import glob
import importlib.util
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import ember.cuda

from .base import Metric, MetricEntry, MetricMetadata, NumericEntry, NumericMetric
from .format import format_f64

__all__ = ["CpuMemory", "CpuUse", "CudaMetric", "cpu_times", "memory_bytes"]

_log = logging.getLogger(__name__)
_REFRESH_SECONDS = 0.2  # Burn refreshes the system figures at most every 200 ms


def _psutil():
    try:
        import psutil

        return psutil
    except ImportError:
        return None


def cpu_times() -> tuple[float, float] | None:
    """``(busy, total)`` CPU seconds summed over all cores since boot, or None if unknown."""
    ps = _psutil()
    if ps is not None:
        t = ps.cpu_times()
        idle = t.idle + getattr(t, "iowait", 0.0)
        # Linux counts guest time inside user/nice already
        total = sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)
        return total - idle, total
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [float(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal (guest time is already in user)
    total = sum(fields[:8])
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    return total - idle, total


def memory_bytes() -> tuple[int, int] | None:
    """``(used, total)`` bytes of RAM, used = total − available, or None if unknown."""
    ps = _psutil()
    if ps is not None:
        vm = ps.virtual_memory()
        return int(vm.total - vm.available), int(vm.total)
    try:
        info = {}
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                key, _, rest = line.partition(":")
                info[key] = int(rest.split()[0]) * 1024
        return info["MemTotal"] - info["MemAvailable"], info["MemTotal"]
    except (OSError, ValueError, KeyError, IndexError):
        return None


class _RefreshedMetric(NumericMetric):
    """A system figure read again at most every 200 ms, lower is better.

    Subclasses implement :meth:`_refresh` (a new reading, at construction too; it sets
    ``_last_refresh``), :meth:`_reading` (the figure) and :meth:`_report` (the entry).

    Args:
        clock: seconds as a float (tests inject one).
    """

    input_type = None
    higher_is_better = False
    _last_refresh: float

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._refresh()

    def _refresh(self) -> None:
        raise NotImplementedError

    def _reading(self) -> float:
        raise NotImplementedError

    def _report(self) -> MetricEntry:
        raise NotImplementedError

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Refresh (when 200 ms have passed) and report.

        Args:
            item: ignored.
            metadata: ignored.
        """
        if self._clock() - self._last_refresh >= _REFRESH_SECONDS:
            self._refresh()
        return self._report()

    def clear(self) -> None:
        pass

    def value(self) -> NumericEntry:
        return NumericEntry.Value(self._reading())

    def running_value(self) -> NumericEntry:
        return NumericEntry.Value(self._reading())


class CpuUse(_RefreshedMetric):
    """``CPU Usage`` in %: busy share of all cores since the previous refresh (at most every
    200 ms), lower is better. Logged as a bare value with two decimals, as Burn.

    Args:
        clock: seconds as a float (tests inject one).
    """

    name = "CPU Usage"
    unit = "%"
    current = 0.0  # until a refresh finds the cores' times advanced
    _last: tuple[float, float] | None = None  # (busy, total) core times of the last refresh

    def _refresh(self) -> None:
        now = cpu_times()
        if now is not None and self._last is not None and now[1] > self._last[1]:
            busy, total = now[0] - self._last[0], now[1] - self._last[1]
            self.current = max(0.0, min(100.0, 100.0 * busy / total))
        self._last = now
        self._last_refresh = self._clock()

    def _reading(self) -> float:
        return self.current

    def _report(self) -> MetricEntry:
        return MetricEntry(self.name, f"{self.name}: {self.current:.2f} %", f"{self.current:.2f}")


class CpuMemory(_RefreshedMetric):
    """``CPU Memory``: RAM in use, in GB (10⁹ bytes), shown as ``RAM Used: u / t Gb``.

    Args:
        clock: seconds as a float (tests inject one).
    """

    name = "CPU Memory"
    unit = "Gb"
    used_bytes, total_bytes = 0, 0  # where the system gives no reading

    def _refresh(self) -> None:
        reading = memory_bytes()
        if reading is not None:
            self.used_bytes, self.total_bytes = reading
        self._last_refresh = self._clock()

    @property
    def used_gb(self) -> float:
        return self.used_bytes / 1e9

    @property
    def total_gb(self) -> float:
        return self.total_bytes / 1e9

    def _reading(self) -> float:
        return self.used_gb

    def _report(self) -> MetricEntry:
        return MetricEntry(
            self.name, f"RAM Used: {self.used_gb:.2f} / {self.total_gb:.2f} Gb", format_f64(self.used_gb)
        )


def gpu_visible() -> bool:
    """Whether a CUDA GPU may be usable, decided without importing CuPy.

    CuPy already imported (the cuda backend is in use) → ask it. Otherwise CuPy must be
    installed, ``CUDA_VISIBLE_DEVICES`` must not hide every device, and the NVIDIA driver
    must expose a device node.
    """
    if "cupy" in sys.modules:
        return True
    if importlib.util.find_spec("cupy") is None:
        return False
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return bool(glob.glob("/dev/nvidia[0-9]*") or glob.glob("/proc/driver/nvidia/gpus/*"))


class CudaMetric(Metric):
    """``Cuda`` (a text metric): memory used / total on every GPU, as Burn's NVML metric.

    Shown as `` GPU #0 - Memory 1.23/80.00 Gb`` per device and logged as ``{used}/{total} ``
    (GB, Rust f64 Display); ``Unavailable`` without a GPU. Device memory comes from
    ``ember.cuda.memory_stats()`` (driver free/total; used = total − free).
    """

    name = "Cuda"
    numeric = False
    input_type = None
    UNAVAILABLE = "Unavailable"

    def __init__(self) -> None:
        self._available: bool | None = None  # probed on first update

    def _probe(self) -> bool:
        if self._available is None:
            self._available = False
            if gpu_visible():
                try:
                    self._available = bool(ember.cuda.is_available())
                except Exception as exc:  # a broken CUDA install must not stop training
                    _log.warning("Unable to initialise the Cuda metric: %s", exc)
        return self._available

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Read the devices' memory.

        Args:
            item: ignored.
            metadata: ignored.
        """
        if not self._probe():
            return MetricEntry(self.name, self.UNAVAILABLE, self.UNAVAILABLE)
        formatted, raw = "", ""
        try:
            for index in range(ember.cuda.device_count()):
                stats = ember.cuda.memory_stats(index)
                used_gb = (stats["total_bytes"] - stats["free_bytes"]) * 1e-9
                total_gb = stats["total_bytes"] * 1e-9
                formatted += f" GPU #{index} - Memory {used_gb:.2f}/{total_gb:.2f} Gb"
                raw += f"{format_f64(used_gb)}/{format_f64(total_gb)} "
        except Exception as exc:
            _log.warning("Unable to read CUDA memory: %s", exc)
            return MetricEntry(self.name, self.UNAVAILABLE, self.UNAVAILABLE)
        return MetricEntry(self.name, formatted, raw)

    def clear(self) -> None:
        pass
