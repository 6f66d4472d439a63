"""Learning rate, iteration speed and the system metrics (CPU use / memory, Cuda)."""

from __future__ import annotations

import copy
import sys

import pytest

from ember.train.metric import (
    CpuMemory,
    CpuUse,
    CudaMetric,
    IterationSpeedMetric,
    LearningRateMetric,
    MetricMetadata,
    NumericEntry,
    system,
)


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_learning_rate_logs_metadata_lr():
    metric = LearningRateMetric()
    entry = metric.update(None, MetricMetadata.fake(lr=1e-3))
    assert entry.name == "Learning Rate"
    assert entry.serialized == "0.001,1"
    assert entry.formatted == "epoch 1.00e-3 - batch 1.00e-3"
    metric.update(None, MetricMetadata.fake(lr=3e-3))
    assert metric.running_value() == NumericEntry.Final(pytest.approx(2e-3))
    assert metric.update(None, MetricMetadata.fake(lr=None)).serialized == "0,1"
    assert metric.higher_is_better is False


def test_iteration_speed_counts_from_first_update():
    clock = _Clock()
    metric = IterationSpeedMetric(clock=clock)
    assert metric.update(None, MetricMetadata.fake(iteration=1)).serialized == "0,1"
    clock.now += 2.0
    entry = metric.update(None, MetricMetadata.fake(iteration=5))
    assert entry.serialized == "2.5,1" and metric.unit == "iter/sec"
    assert entry.formatted == "epoch 1.25 iter/sec - batch 2.50 iter/sec"
    metric.clear()
    assert metric.update(None, MetricMetadata.fake(iteration=1)).serialized == "0,1"  # clock restarted
    assert metric.running_value().current() == 0.0


def test_cpu_use_refreshes_at_most_every_200ms(monkeypatch):
    readings = iter([(10.0, 100.0), (40.0, 200.0), (40.0, 300.0)])
    monkeypatch.setattr(system, "cpu_times", lambda: next(readings))
    clock = _Clock()
    metric = CpuUse(clock=clock)
    entry = metric.update(None, MetricMetadata.fake())
    assert entry.serialized == "0.00" and entry.formatted == "CPU Usage: 0.00 %"  # too soon to refresh
    clock.now += 0.25
    entry = metric.update(None, MetricMetadata.fake())
    assert entry.serialized == "30.00" and metric.value() == NumericEntry.Value(30.0)
    clock.now += 0.25
    assert metric.update(None, MetricMetadata.fake()).serialized == "0.00"
    assert metric.name == "CPU Usage" and metric.unit == "%"


def test_cpu_memory_reports_gb(monkeypatch):
    monkeypatch.setattr(system, "memory_bytes", lambda: (2_500_000_000, 16_000_000_000))
    metric = CpuMemory()
    entry = metric.update(None, MetricMetadata.fake())
    assert entry.name == "CPU Memory"
    assert entry.serialized == "2.5"
    assert entry.formatted == "RAM Used: 2.50 / 16.00 Gb"
    assert metric.running_value() == NumericEntry.Value(2.5)


def test_proc_fallback_without_psutil(monkeypatch):
    monkeypatch.setattr(system, "_psutil", lambda: None)
    times, memory = system.cpu_times(), system.memory_bytes()
    if sys.platform.startswith("linux"):
        assert times is not None and 0 <= times[0] <= times[1]
        assert memory is not None and 0 < memory[0] < memory[1]
    CpuUse().update(None, MetricMetadata.fake())
    CpuMemory().update(None, MetricMetadata.fake())


def test_system_metrics_survive_deepcopy():
    for metric in (CpuUse(), CpuMemory(), CudaMetric(), IterationSpeedMetric()):
        clone = copy.deepcopy(metric)
        assert clone.update(None, MetricMetadata.fake()).name == metric.name


def test_cuda_metric_without_gpu_is_unavailable(monkeypatch):
    monkeypatch.setattr(system, "gpu_visible", lambda: False)
    metric = CudaMetric()
    entry = metric.update(None, MetricMetadata.fake())
    assert (entry.name, entry.formatted, entry.serialized) == ("Cuda", "Unavailable", "Unavailable")
    assert metric.numeric is False


def test_cuda_metric_reads_ember_cuda(monkeypatch):
    import ember.cuda

    monkeypatch.setattr(system, "gpu_visible", lambda: True)
    monkeypatch.setattr(ember.cuda, "is_available", lambda: True)
    monkeypatch.setattr(ember.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(
        ember.cuda,
        "memory_stats",
        lambda i: {
            "free_bytes": 60_000_000_000,
            "total_bytes": 80_000_000_000,
            "used_bytes": 0,
            "pool_bytes": 0,
        },
    )
    entry = CudaMetric().update(None, MetricMetadata.fake())
    assert entry.formatted == " GPU #0 - Memory 20.00/80.00 Gb"
    assert entry.serialized == "20/80 "


def test_cuda_metric_does_not_import_cupy_without_gpu():
    if "cupy" in sys.modules:
        pytest.skip("CuPy was imported before this test; nothing left to check")
    entry = CudaMetric().update(None, MetricMetadata.fake())
    if not system.gpu_visible():
        assert entry.serialized == "Unavailable"
        assert "cupy" not in sys.modules
