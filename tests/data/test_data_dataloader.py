"""DataLoader: length, order determinism across worker counts, progress, devices, worker
failures (exceptions, deaths, timeouts, unpicklable parts) and shutdown without stray
processes."""

from __future__ import annotations

import gc
import multiprocessing
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # worker processes import the helpers by name

import functools
import operator

import ember_data_helpers as helpers

from ember.data import (
    DataLoaderBuilder,
    DataLoaderWorkerError,
    InMemDataset,
    MapperDataset,
    Progress,
    RemoteTraceback,
    SamplerDataset,
)


def worker_children() -> list:
    return [p for p in multiprocessing.active_children() if p.name.startswith("ember-data-worker")]


@pytest.fixture(autouse=True)
def no_workers_left():
    yield
    gc.collect()
    assert worker_children() == [], "a test left DataLoader workers running"


def numbers(n: int) -> InMemDataset:
    return InMemDataset(range(n))


def loader_of(batcher, n: int, batch_size: int, workers: int, **settings):
    """A DataLoader of ``batcher`` over ``numbers(n)``; each keyword calls the builder's method
    of that name (``timeout=0.3``, ``prefetch=3``, ...)."""
    builder = DataLoaderBuilder(batcher).batch_size(batch_size).num_workers(workers)
    for name, value in settings.items():
        builder = getattr(builder, name)(value)
    return builder.build(numbers(n))


# -- length, order, progress ---------------------------------------------------------------------


@pytest.mark.parametrize("n, batch_size, batches", [(10, 3, 4), (9, 3, 3), (1, 5, 1), (0, 4, 0)])
def test_len_is_number_of_batches(n, batch_size, batches):
    loader = DataLoaderBuilder(helpers.ArrayBatcher()).batch_size(batch_size).build(numbers(n))
    assert len(loader) == batches and loader.num_items() == n
    out = list(loader)
    assert len(out) == batches
    assert sum(len(batch) for batch in out) == n
    if out:
        assert [len(b) for b in out[:-1]] == [batch_size] * (batches - 1)


def test_without_shuffle_batches_follow_dataset_order():
    loader = DataLoaderBuilder(helpers.ArrayBatcher()).batch_size(4).build(numbers(10))
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def collect(workers: int, prefetch: int = 2, epochs: int = 2) -> list:
    dataset = SamplerDataset(numbers(50), 37, seed=5)
    loader = (
        DataLoaderBuilder(helpers.ArrayBatcher())
        .batch_size(4)
        .shuffle(123)
        .num_workers(workers)
        .prefetch(prefetch)
        .build(dataset)
    )
    return [[batch.tolist() for batch in loader] for _ in range(epochs)]


def test_same_batches_in_same_order_whatever_the_number_of_workers():
    reference = collect(0)
    assert reference[0] != reference[1]  # a new shuffle and a new sample each epoch
    assert all(len(epoch) == 10 for epoch in reference)
    assert collect(1) == reference
    assert collect(3, prefetch=1) == reference


def test_shuffle_seed_changes_order_and_epochs_resume():
    def first_pass(seed, start_epoch=0):
        loader = DataLoaderBuilder(helpers.ArrayBatcher()).batch_size(5).shuffle(seed).build(numbers(20))
        loader.set_epoch(start_epoch)
        return [b.tolist() for b in loader]

    assert first_pass(1) != first_pass(2)
    assert sorted(functools.reduce(operator.iadd, first_pass(1), [])) == list(range(20))
    loader = DataLoaderBuilder(helpers.ArrayBatcher()).batch_size(5).shuffle(1).build(numbers(20))
    list(loader)
    assert loader.epoch == 1 and [b.tolist() for b in loader] == first_pass(1, start_epoch=1)


@pytest.mark.parametrize("workers", [0, 1])
def test_progress_counts_items(workers):
    loader = DataLoaderBuilder(helpers.ArrayBatcher()).batch_size(4).num_workers(workers).build(numbers(10))
    assert loader.progress() == Progress(0, 10)
    iterator = iter(loader)
    seen = []
    for _ in iterator:
        seen.append(iterator.progress().items_processed)
        assert loader.progress() == iterator.progress()
    assert seen == [4, 8, 10]
    assert loader.progress() == Progress(10, 10) and loader.progress().fraction == 1.0
    assert str(loader.progress()) == "10/10"


def test_slice_and_to_device_keep_settings():
    loader = DataLoaderBuilder(helpers.ListBatcher()).batch_size(2).build(numbers(10))
    part = loader.slice(4, 9)
    assert len(part) == 3 and [b["items"] for b in part] == [[4, 5], [6, 7], [8]]
    moved = loader.to_device("reference")
    assert moved.device == "reference" and moved.batch_size == 2


# -- devices -------------------------------------------------------------------------------------


def test_batcher_gets_target_device_in_process_and_cpu_in_workers():
    ember = pytest.importorskip("ember")
    loader = DataLoaderBuilder(helpers.ListBatcher()).batch_size(5).set_device(ember.Device("reference"))
    assert {b["device"] for b in loader.build(numbers(10))} == {"reference"}
    assert {b["device"] for b in loader.num_workers(1).build(numbers(10))} == {"cpu"}


def _cpu_tensors_work() -> bool:
    try:
        import ember

        ember.from_numpy(np.zeros(2, np.float32), device=ember.Device("cpu")).numpy()
        return True
    except Exception:  # the cpu backend may be unavailable in this checkout
        return False


@pytest.mark.skipif(not _cpu_tensors_work(), reason="ember's cpu backend is not available")
def test_worker_tensors_arrive_on_the_loader_device():
    import ember

    target = ember.Device("reference")
    loader = DataLoaderBuilder(helpers.TensorBatcher()).batch_size(4).num_workers(1).set_device(target)
    batches = list(loader.build(numbers(6)))
    assert len(batches) == 2
    first = batches[0]
    assert isinstance(first, helpers.TensorBatch) and first.labels == [0, 1, 2, 3]
    assert first.values.device == target and first.mask.device == target
    np.testing.assert_array_equal(first.values.numpy(), np.array([0, 1, 2, 3], np.float32))
    np.testing.assert_array_equal(first.mask.numpy(), np.array([True, False, True, False]))


# -- failures ------------------------------------------------------------------------------------


def test_worker_exception_reaches_main_with_original_traceback():
    loader = DataLoaderBuilder(helpers.FailingBatcher(bad=9)).batch_size(4).num_workers(2).build(numbers(20))
    received = []
    with pytest.raises(ValueError, match=r"bad item in \[8, 9, 10, 11\]") as info:
        for batch in loader:
            received.append(batch)
    assert received == [[0, 1, 2, 3], [4, 5, 6, 7]]  # batches before the failure came through
    cause = info.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert "_explode" in cause.text and "ember_data_helpers.py" in cause.text
    assert 'raise ValueError(f"bad item in {items}")' in cause.text
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "DataLoader worker 0" in notes and "batch 2" in notes


def test_exception_in_process_without_workers_is_plain():
    loader = DataLoaderBuilder(helpers.FailingBatcher(bad=1)).batch_size(2).build(numbers(4))
    with pytest.raises(ValueError, match="bad item") as info:
        list(loader)
    assert info.value.__cause__ is None


def test_unpicklable_worker_exception_becomes_worker_error():
    loader = (
        DataLoaderBuilder(helpers.UnpicklableErrorBatcher()).batch_size(2).num_workers(1).build(numbers(4))
    )
    with pytest.raises(DataLoaderWorkerError, match=r"NeedsTwoArgsError: code 7: custom failure") as info:
        list(loader)
    assert "NeedsTwoArgsError" in info.value.__cause__.text


def test_worker_death_is_reported():
    loader = DataLoaderBuilder(helpers.ExitingBatcher(bad=6)).batch_size(2).num_workers(2).build(numbers(10))
    with pytest.raises(
        DataLoaderWorkerError, match=r"worker 1 \(pid \d+\) exited unexpectedly with exit code 3"
    ):
        list(loader)


def test_timeout():
    loader = loader_of(helpers.SlowBatcher(5.0), 4, batch_size=2, workers=1, timeout=0.3)
    with pytest.raises(
        DataLoaderWorkerError,
        match=r"did not deliver batch 0 \(dataset indices \[0, 1\]\) within the 0.3 s timeout; its Python "
        r"stack was printed to stderr",
    ):
        next(iter(loader))


def test_slow_batch_without_timeout_logs_the_worker_pid_once(monkeypatch, caplog):
    import ember.data.dataloader as dataloader_module

    monkeypatch.setattr(dataloader_module, "SLOW_BATCH_WARNING_S", 0.2)
    loader = DataLoaderBuilder(helpers.SlowBatcher(0.6)).batch_size(2).num_workers(1).build(numbers(4))
    with caplog.at_level("WARNING", logger="ember.data"), iter(loader) as iterator:
        pid = iterator.worker_pids()[0]
        assert list(iterator) == [[0, 1], [2, 3]]
    warnings = [record.getMessage() for record in caplog.records if record.name == "ember.data"]
    assert len(warnings) == 1, warnings  # once per pass, not once per slow batch
    assert f"(pid {pid}) has spent" in warnings[0] and f"kill -USR1 {pid}" in warnings[0]


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGUSR1"), reason="no SIGUSR1 here")
def test_sigusr1_prints_a_busy_workers_stack_and_keeps_it_running(capfd):
    import signal

    # spawn: the worker's stderr is this test's (a forkserver keeps the stderr it started with)
    loader = loader_of(
        helpers.StallingBatcher(bad=2), 6, batch_size=2, workers=1, multiprocessing_context="spawn"
    )
    with iter(loader) as iterator:
        assert next(iterator) == [0, 1]  # the worker is up; it is now stuck on batch 1
        pid = iterator.worker_pids()[0]
        # the worker may still be between batches when first asked: ask again until it is stuck
        deadline = time.monotonic() + 20
        err = ""
        while not ("in batch" in err and "ember_data_helpers.py" in err) and time.monotonic() < deadline:
            os.kill(pid, signal.SIGUSR1)
            time.sleep(0.5)
            err += capfd.readouterr().err
        assert helpers.pid_alive(pid)
    assert "in batch" in err and "ember_data_helpers.py" in err, err  # where it is stuck


def test_unpicklable_batcher_gets_a_clear_error():
    loader = DataLoaderBuilder(helpers.HoldsLambdaBatcher()).batch_size(2).num_workers(2).build(numbers(4))
    with pytest.raises(TypeError, match=r"cannot send the dataset and batcher to worker processes.*lambda"):
        iter(loader)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")
def test_fork_context_accepts_unpicklable_parts():
    dataset = MapperDataset(numbers(6), lambda x: x + 100)
    loader = DataLoaderBuilder(helpers.ArrayBatcher()).batch_size(3).num_workers(2)
    batches = [b.tolist() for b in loader.multiprocessing_context("fork").build(dataset)]
    assert batches == [[100, 101, 102], [103, 104, 105]]


def test_builder_validates_arguments():
    builder = DataLoaderBuilder(helpers.ArrayBatcher())
    with pytest.raises(ValueError, match=r"batch_size: must be >= 1, got 0"):
        builder.batch_size(0)
    with pytest.raises(ValueError, match="num_workers: must be >= 0"):
        builder.num_workers(-1)
    with pytest.raises(ValueError, match="prefetch: must be >= 1"):
        builder.prefetch(0)
    with pytest.raises(TypeError, match="expected an integer"):
        builder.batch_size(2.5)
    with pytest.raises(ValueError, match="not available"):
        builder.multiprocessing_context("telepathy")
    with pytest.raises(ValueError, match="timeout"):
        builder.timeout(0)
    with pytest.raises(TypeError, match="batch\\(items, device\\)"):
        DataLoaderBuilder(object())
    with pytest.raises(TypeError, match="__len__ and __getitem__"):
        builder.build(42)


# -- shutdown ------------------------------------------------------------------------------------


def test_early_break_stops_workers():
    loader = loader_of(helpers.SlowBatcher(0.05), 100, batch_size=2, workers=2, prefetch=3)
    iterator = iter(loader)
    pids = []
    for _ in iterator:
        pids = iterator.worker_pids()
        break
    assert len(pids) == 2 and all(helpers.pid_alive(pid) for pid in pids)
    del iterator
    assert helpers.wait_dead(pids, timeout=0) == []  # stopped synchronously when dropped


def test_close_unblocks_workers_stuck_sending_large_batches(monkeypatch):
    import ember.data.dataloader as dataloader_module

    # a generous grace period, so a busy machine cannot turn a clean exit into terminate()
    monkeypatch.setattr(dataloader_module, "_SHUTDOWN_GRACE_S", 10.0)
    loader = loader_of(helpers.BigBatcher(), 50, batch_size=1, workers=2, prefetch=2)
    with iter(loader) as iterator:
        next(iterator)
        processes = [worker.process for worker in iterator._workers]
    assert iterator.worker_pids() == []
    # they left by themselves (EPIPE / stop message), not through terminate()
    assert [process.exitcode for process in processes] == [0, 0]


def test_exhausted_pass_stops_workers_at_once():
    loader = DataLoaderBuilder(helpers.ArrayBatcher()).batch_size(3).num_workers(2).build(numbers(7))
    iterator = iter(loader)
    pids = iterator.worker_pids()
    assert len(list(iterator)) == 3
    assert iterator.worker_pids() == [] and helpers.wait_dead(pids, timeout=0) == []
    with pytest.raises(StopIteration):
        next(iterator)


def test_workers_exit_when_the_main_process_is_killed(tmp_path):
    script = tmp_path / "killed_main.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, signal, sys
            sys.path[:0] = {sys.path!r}
            import ember_data_helpers as helpers
            from ember.data import DataLoaderBuilder, InMemDataset

            if __name__ == "__main__":
                loader = (DataLoaderBuilder(helpers.SlowBatcher(0.05)).batch_size(1)
                          .num_workers(2).build(InMemDataset(range(1000))))
                iterator = iter(loader)
                next(iterator)
                print(" ".join(map(str, iterator.worker_pids())), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)  # no cleanup of any kind
            """
        )
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    pids = [int(pid) for pid in result.stdout.split()]
    assert len(pids) == 2, result.stderr
    assert helpers.wait_dead(pids, timeout=10) == []
