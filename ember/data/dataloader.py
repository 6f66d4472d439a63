"""`DataLoaderBuilder` and `DataLoader`: batches from a dataset, optionally built by worker
processes (Burn's `DataLoaderBuilder` / `DataLoader`).

Determinism: the main process decides the item order of each pass (a permutation drawn from
`(seed, epoch)` when shuffling) and which items go in batch `b`; batch `b` is built by worker
`b % num_workers`, and each worker handles its batches in order, so batches arrive in the
same order, with the same content, whatever the number of workers.

Stuck items: by default (`timeout(None)`) the loader waits for a batch as long as its worker
lives, because a slow batch is not an error. After `SLOW_BATCH_WARNING_S` seconds on one batch
it logs a warning (logger `ember.data`) naming the worker's pid and the batch's dataset
indices; `kill -USR1 <pid>` then prints that worker's Python stack (every thread) to stderr.
With `timeout(seconds)` it raises `DataLoaderWorkerError` instead, after sending the worker
`SIGUSR1` so its stack is printed first. Workers never outlive the main process, even when
it is killed with SIGKILL while they are inside a dataset's `get()` (see `worker`).
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import multiprocessing.util
import os
import pickle  # only for PicklingError: workers get the dataset through multiprocessing's pipes
import signal
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from typing import Any

import numpy as np

from .dataset import as_integer, fetch_many, set_epoch
from .progress import Progress
from .transform.partial import PartialDataset
from .transport import default_device, from_host
from .worker import (
    DataLoaderWorkerError,
    ParentWatch,
    RemoteTraceback,
    WorkerFailure,
    worker_loop,
)

__all__ = [
    "SLOW_BATCH_WARNING_S",
    "DataLoader",
    "DataLoaderBuilder",
    "DataLoaderIterator",
    "default_start_method",
]

logger = logging.getLogger("ember.data")

# Seconds a worker gets to exit on its own at shutdown before it is terminated.
_SHUTDOWN_GRACE_S = 0.5
# Seconds one batch may take, without a timeout set, before the loader logs a warning.
SLOW_BATCH_WARNING_S = 60.0


def default_start_method() -> str:
    """The multiprocessing start method used for workers unless one is chosen.

    "forkserver" where available (Linux, macOS), else "spawn". Not "fork": forking a process
    that already runs threads (Numba's and BLAS's pools, the tokenizers' Rayon pool, CUDA)
    copies their locks in whatever state they are in, which can deadlock the child. The
    forkserver is a fresh single-threaded process started once; workers are forked from it,
    which is as safe as "spawn" and much faster to start. Both require the dataset and the
    batcher to be picklable; `DataLoaderBuilder.multiprocessing_context("fork")` opts out.
    """
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


@dataclass(frozen=True)
class _Settings:
    """What a `DataLoaderBuilder` sets and a `DataLoader` runs with (see the builder's methods)."""

    batch_size: int = 1
    seed: int | None = None
    num_workers: int = 0
    prefetch: int = 2
    device: Any = None
    start_method: str | None = None
    timeout: float | None = None


def _setting(name: str, doc: str) -> property:
    """A read-only property of the loader giving its setting ``name``."""
    return property(lambda loader: getattr(loader._settings, name), doc=doc)


def _check_positive(name: str, value: Any, minimum: int) -> int:
    number = as_integer(value, f"DataLoaderBuilder.{name}: expected an integer")
    if number < minimum:
        raise ValueError(f"DataLoaderBuilder.{name}: must be >= {minimum}, got {number}")
    return number


class DataLoaderBuilder:
    """Configure and build a `DataLoader`.

    Args:
        batcher: an object with `batch(items, device)` (see `Batcher`).

    Example:
        >>> loader = (DataLoaderBuilder(batcher).batch_size(32).shuffle(42)
        ...           .num_workers(2).build(train_dataset))
        >>> for batch in loader: ...
    """

    def __init__(self, batcher: Any) -> None:
        if not callable(getattr(batcher, "batch", None)):
            raise TypeError(
                f"DataLoaderBuilder: batcher must have a batch(items, device) method, got "
                f"{type(batcher).__name__}"
            )
        self._batcher = batcher
        self._settings = _Settings()

    def _set(self, **change: Any) -> "DataLoaderBuilder":
        self._settings = replace(self._settings, **change)
        return self

    def batch_size(self, batch_size: int) -> "DataLoaderBuilder":
        """Items per batch (default 1); the last batch of a pass may be smaller.

        Args:
            batch_size: >= 1.
        """
        return self._set(batch_size=_check_positive("batch_size", batch_size, 1))

    def shuffle(self, seed: int) -> "DataLoaderBuilder":
        """Visit the items in a new random order each pass, drawn from `(seed, pass number)`.

        Args:
            seed: non-negative integer; the same seed gives the same sequence of passes.
        """
        return self._set(seed=_check_positive("shuffle", seed, 0))

    def num_workers(self, num_workers: int) -> "DataLoaderBuilder":
        """Worker processes building batches (default 0: build them in the calling thread).

        Args:
            num_workers: >= 0.
        """
        return self._set(num_workers=_check_positive("num_workers", num_workers, 0))

    def prefetch(self, prefetch: int) -> "DataLoaderBuilder":
        """Batches each worker builds ahead of the one being consumed (default 2).

        Args:
            prefetch: >= 1; memory holds up to `num_workers * prefetch` batches.
        """
        return self._set(prefetch=_check_positive("prefetch", prefetch, 1))

    def set_device(self, device: Any) -> "DataLoaderBuilder":
        """The device batches are delivered on (default: `ember.default_device()` when a
        pass starts, the CPU unless changed).

        Args:
            device: an `ember.Device` or device string such as `"cpu"` or `"cuda:0"`.
        """
        return self._set(device=device)

    def multiprocessing_context(self, method: str) -> "DataLoaderBuilder":
        """How worker processes are started: "forkserver" (default where available), "spawn"
        or "fork" (Linux; allows unpicklable datasets such as lambdas, but see
        `default_start_method` for why it can deadlock).

        Args:
            method: a start method name accepted by `multiprocessing.get_context`.
        """
        available = multiprocessing.get_all_start_methods()
        if method not in available:
            raise ValueError(
                f"DataLoaderBuilder.multiprocessing_context: {method!r} is not available here; "
                f"choose one of {available}"
            )
        return self._set(start_method=method)

    def timeout(self, seconds: float | None) -> "DataLoaderBuilder":
        """Give up (raise `DataLoaderWorkerError`) when a worker takes longer than this to
        deliver a batch; the worker is first sent `SIGUSR1`, which prints its Python stack to
        stderr, so the error shows where it was stuck. Default `None`: wait as long as the
        worker lives, logging a warning (with the worker's pid, to send `SIGUSR1` by hand)
        once a batch has taken `SLOW_BATCH_WARNING_S` seconds.

        Args:
            seconds: > 0, or `None`.
        """
        if seconds is not None and not seconds > 0:
            raise ValueError(f"DataLoaderBuilder.timeout: must be > 0 or None, got {seconds!r}")
        return self._set(timeout=None if seconds is None else float(seconds))

    def build(self, dataset: Any) -> "DataLoader":
        """Create the loader over `dataset` (anything with `__len__` and `__getitem__`)."""
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise TypeError(
                f"DataLoaderBuilder.build: dataset must have __len__ and __getitem__, got "
                f"{type(dataset).__name__}"
            )
        return DataLoader(dataset, self._batcher, **vars(self._settings))


class _Counter:
    """Progress of one pass, shared between an iterator and its loader."""

    __slots__ = ("processed", "total")

    def __init__(self, total: int) -> None:
        self.processed = 0
        self.total = total


class DataLoader:
    """Iterable over batches of a dataset; made by `DataLoaderBuilder`.

    Each `iter(loader)` is one pass (epoch) over the dataset: the pass number advances, the
    dataset's `set_epoch` is called (so `SamplerDataset` draws new items), the order is
    reshuffled when `shuffle` was set, and worker processes (if any) are started for the pass
    and stopped when it ends, is abandoned, or fails.
    """

    def __init__(
        self,
        dataset: Any,
        batcher: Any,
        *,
        batch_size: int = 1,
        seed: int | None = None,
        num_workers: int = 0,
        prefetch: int = 2,
        device: Any = None,
        start_method: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self._dataset = dataset
        self._batcher = batcher
        self._settings = _Settings(
            batch_size, seed, num_workers, prefetch, device, start_method or default_start_method(), timeout
        )
        self._epoch = 0
        self._counter: _Counter | None = None

    @property
    def dataset(self) -> Any:
        """The dataset batches are drawn from."""
        return self._dataset

    batch_size = _setting("batch_size", "Items per batch.")
    num_workers = _setting("num_workers", "Worker processes per pass (0: batches built by the caller).")
    device = _setting("device", "Device batches are delivered on (`None`: `ember.default_device()`).")

    @property
    def epoch(self) -> int:
        """Number of the next pass."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Make the next pass number `epoch` (e.g. when resuming from a checkpoint, so the
        shuffles and samples continue where they were).

        Args:
            epoch: >= 0.
        """
        self._epoch = _check_positive("set_epoch", epoch, 0)

    def num_items(self) -> int:
        """Items per pass (the dataset length)."""
        return len(self._dataset)

    def __len__(self) -> int:
        """Batches per pass: `ceil(num_items / batch_size)`."""
        return math.ceil(len(self._dataset) / self._settings.batch_size)

    def __iter__(self) -> "DataLoaderIterator":
        epoch = self._epoch
        self._epoch += 1
        iterator = DataLoaderIterator(self, epoch)
        self._counter = iterator._counter
        return iterator

    def progress(self) -> Progress:
        """Progress of the most recent pass (`0/num_items` before the first one)."""
        if self._counter is None:
            return Progress(0, len(self._dataset))
        return Progress(self._counter.processed, self._counter.total)

    def _with(self, dataset: Any, **changes: Any) -> "DataLoader":
        """A loader over `dataset` with these settings, but for `changes` (setting=value)."""
        return DataLoader(dataset, self._batcher, **vars(replace(self._settings, **changes)))

    def to_device(self, device: Any) -> "DataLoader":
        """A loader with the same settings delivering batches on `device`.

        Args:
            device: an `ember.Device` or device string.
        """
        return self._with(self._dataset, device=device)

    def slice(self, start: int, end: int) -> "DataLoader":
        """A loader with the same settings over items `[start, end)` of the dataset (used to
        give each device its share).

        Args:
            start: first item.
            end: one past the last item.
        """
        return self._with(PartialDataset(self._dataset, start, end))

    def __repr__(self) -> str:
        settings = self._settings
        return (
            f"DataLoader(items={len(self._dataset)}, batch_size={settings.batch_size}, "
            f"batches={len(self)}, shuffle_seed={settings.seed}, num_workers={settings.num_workers}, "
            f"prefetch={settings.prefetch}, start_method={settings.start_method!r})"
        )


@dataclass
class _Worker:
    process: Any
    tasks: Connection
    results: Connection


def _shutdown(workers: list[_Worker]) -> None:
    """Stop worker processes; safe to call more than once and from a finalizer."""
    for worker in workers:
        try:
            worker.tasks.send(None)
        except (OSError, ValueError):
            pass  # already gone or pipe closed
    for worker in workers:
        # Nobody will read further batches: closing our end makes a worker blocked in send()
        # fail with EPIPE and exit instead of waiting forever.
        worker.results.close()
    deadline = time.monotonic() + _SHUTDOWN_GRACE_S
    for worker in workers:
        worker.process.join(max(0.0, deadline - time.monotonic()))
    for worker in workers:
        if worker.process.is_alive():
            worker.process.terminate()
            worker.process.join(1.0)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.tasks.close()
    workers.clear()


def _shown(indices: np.ndarray) -> list:
    """A batch's dataset indices for a message (the first eight)."""
    values = indices.tolist()
    return values if len(values) <= 8 else values[:8] + ["..."]


def _parent_watch(start_method: str) -> ParentWatch:
    """What the workers of this process need to notice its death (see `worker`)."""
    # A parent-death signal fires when the thread that started the worker ends: safe from
    # the forkserver (its only thread) or from our main thread, not from a passing thread.
    main_thread = threading.current_thread() is threading.main_thread()
    death_signal = start_method == "forkserver" or main_thread
    temp_dir = None
    if start_method == "forkserver":
        # Where the forkserver's socket lives (multiprocessing made it when starting the
        # forkserver): if we are killed, a worker removes it.
        temp_dir = multiprocessing.util.get_temp_dir()
    return ParentWatch(os.getpid(), start_method, death_signal, temp_dir)


def _request_stack_dump(pid: int) -> bool:
    """Ask a worker to print its Python stack (its SIGUSR1 handler, see `worker`)."""
    dump_signal = getattr(signal, "SIGUSR1", None)
    if dump_signal is None:
        return False
    try:
        os.kill(pid, dump_signal)
    except OSError:
        return False
    time.sleep(0.2)  # the handler writes at once; give it a moment before the worker is stopped
    return True


def _describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "an unknown status"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (the system may have run out of memory)" if name == "SIGKILL" else ""
        return f"{name}{hint}"
    return f"exit code {exitcode}"


class DataLoaderIterator(Iterator[Any]):
    """One pass over a `DataLoader`. Use it in a `for` loop; `progress()` reports how far it
    got; `close()` (or leaving a `with` block, or dropping the iterator) stops its workers."""

    def __init__(self, loader: DataLoader, epoch: int) -> None:
        self._loader = loader
        self._epoch = epoch
        dataset = loader._dataset
        set_epoch(dataset, epoch)
        n = len(dataset)
        settings = loader._settings
        if settings.seed is not None:
            order = np.random.default_rng([settings.seed, epoch]).permutation(n)
        else:
            order = np.arange(n, dtype=np.int64)
        self._order = order.astype(np.int64, copy=False)
        self._batch_size = settings.batch_size
        self._num_batches = math.ceil(n / self._batch_size)
        self._next_batch = 0
        self._counter = _Counter(n)
        self._device = settings.device if settings.device is not None else default_device()
        self._workers: list[_Worker] = []
        self._finalizer: weakref.finalize | None = None
        self._closed = False
        self._warned_slow = False
        if settings.num_workers > 0 and self._num_batches > 0:
            self._start_workers()

    # -- public -------------------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        """The pass number of this iterator."""
        return self._epoch

    def __len__(self) -> int:
        """Batches in this pass."""
        return self._num_batches

    def progress(self) -> Progress:
        """Items in the batches yielded so far, out of the pass's items."""
        return Progress(self._counter.processed, self._counter.total)

    def worker_pids(self) -> list[int]:
        """Process ids of the running workers (empty once closed or with 0 workers)."""
        return [worker.process.pid for worker in self._workers]

    def __iter__(self) -> "DataLoaderIterator":
        return self

    def __next__(self) -> Any:
        if self._closed or self._next_batch >= self._num_batches:
            self.close()
            raise StopIteration
        number = self._next_batch
        indices = self._indices(number)
        if self._workers:
            batch = self._receive(number)
        else:
            items = fetch_many(self._loader._dataset, indices.tolist())
            batch = self._loader._batcher.batch(items, self._device)
        self._next_batch += 1
        self._counter.processed += len(indices)
        if self._next_batch >= self._num_batches:
            self.close()  # free the workers as soon as the last batch is out
        return batch

    def close(self) -> None:
        """Stop the workers of this pass; further `next()` calls raise `StopIteration`."""
        self._closed = True
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> "DataLoaderIterator":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- workers ------------------------------------------------------------------------------

    def _indices(self, number: int) -> np.ndarray:
        start = number * self._batch_size
        return self._order[start : start + self._batch_size]

    def _start_workers(self) -> None:
        loader = self._loader
        context = multiprocessing.get_context(loader._settings.start_method)
        workers = self._workers
        # The finalizer holds the worker list, not the iterator, so dropping the iterator
        # (early `break`, exception, garbage collection, interpreter exit) stops the workers.
        self._finalizer = weakref.finalize(self, _shutdown, workers)
        watch = _parent_watch(loader._settings.start_method)
        for worker_id in range(loader._settings.num_workers):
            task_reader, task_writer = context.Pipe(duplex=False)
            result_reader, result_writer = context.Pipe(duplex=False)
            process = context.Process(
                target=worker_loop,
                args=(
                    loader._dataset,
                    loader._batcher,
                    self._order,
                    self._batch_size,
                    task_reader,
                    result_writer,
                    watch,
                ),
                name=f"ember-data-worker-{worker_id}",
                daemon=True,
            )
            try:
                process.start()
            except (pickle.PicklingError, AttributeError, TypeError) as error:
                for connection in (task_reader, task_writer, result_reader, result_writer):
                    connection.close()
                self.close()
                raise TypeError(
                    f"DataLoader: cannot send the dataset and batcher to worker processes "
                    f"(start method {loader._settings.start_method!r} pickles them): {error}. Use "
                    "module-level functions and classes instead of lambdas or local ones, "
                    "use num_workers(0), or multiprocessing_context('fork') on Linux."
                ) from error
            except BaseException:
                for connection in (task_reader, task_writer, result_reader, result_writer):
                    connection.close()
                self.close()
                raise
            # Keep only our ends: a worker's death then shows up as end-of-file.
            task_reader.close()
            result_writer.close()
            workers.append(_Worker(process, task_writer, result_reader))
        in_flight = min(self._num_batches, loader._settings.num_workers * loader._settings.prefetch)
        for number in range(in_flight):
            self._send_task(number)

    def _send_task(self, number: int) -> None:
        worker = self._workers[number % len(self._workers)]
        try:
            worker.tasks.send(number)
        except OSError:
            pass  # a dead worker is reported by _receive with its exit status

    def _receive(self, number: int) -> Any:
        worker_id = number % len(self._workers)
        worker = self._workers[worker_id]
        timeout = self._loader._settings.timeout
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        warn_at = None if self._warned_slow else started + SLOW_BATCH_WARNING_S
        message = None
        while message is None:
            limits = [moment for moment in (deadline, warn_at) if moment is not None]
            remaining = max(0.0, min(limits) - time.monotonic()) if limits else None
            ready = wait([worker.results, worker.process.sentinel], remaining)
            if not ready:
                if deadline is not None and time.monotonic() >= deadline:
                    dumped = _request_stack_dump(worker.process.pid)
                    self._fail(
                        DataLoaderWorkerError(
                            f"DataLoader worker {worker_id} (pid {worker.process.pid}) did not "
                            f"deliver batch {number} (dataset indices "
                            f"{_shown(self._indices(number))}) within the {timeout} s timeout"
                            + ("; its Python stack was printed to stderr" if dumped else "")
                        )
                    )
                self._warn_slow(worker_id, worker, number, time.monotonic() - started)
                warn_at = None
                continue
            if worker.results in ready or worker.results.poll():
                try:
                    message = worker.results.recv()
                except (EOFError, OSError):
                    self._worker_died(worker_id, worker, number)
            else:
                self._worker_died(worker_id, worker, number)
        received, ok, payload = message
        if received != number:  # would mean the task bookkeeping is broken
            self._fail(
                DataLoaderWorkerError(
                    f"DataLoader worker {worker_id} sent batch {received} while batch {number} was expected"
                )
            )
        if not ok:
            self._raise_failure(payload, worker_id, worker, number)
        ahead = number + len(self._workers) * self._loader._settings.prefetch
        if ahead < self._num_batches:
            self._send_task(ahead)
        # Tensors were built on the worker's CPU device; rebuild them on the loader's device.
        return from_host(payload, self._device)

    def _warn_slow(self, worker_id: int, worker: _Worker, number: int, waited: float) -> None:
        self._warned_slow = True  # once per pass: a slow dataset would otherwise flood the log
        pid = worker.process.pid
        hint = ""
        if hasattr(signal, "SIGUSR1"):
            hint = f"kill -USR1 {pid} prints its Python stack to stderr; "
        logger.warning(
            "DataLoader worker %d (pid %d) has spent %.0f s on batch %d (dataset indices %s); "
            "%sDataLoaderBuilder.timeout(seconds) turns a stuck batch into an error",
            worker_id,
            pid,
            waited,
            number,
            _shown(self._indices(number)),
            hint,
        )

    def _fail(self, error: BaseException) -> None:
        self.close()
        raise error

    def _worker_died(self, worker_id: int, worker: _Worker, number: int) -> None:
        worker.process.join(1.0)
        status = _describe_exit(worker.process.exitcode)
        pid = worker.process.pid
        hint = ""
        if number < len(self._workers):
            hint = (
                " Its stderr shows why. A worker that dies before its first batch often means "
                "the dataset or batcher cannot be imported in a fresh process, or the main "
                "script lacks an `if __name__ == '__main__':` guard."
            )
        self._fail(
            DataLoaderWorkerError(
                f"DataLoader worker {worker_id} (pid {pid}) exited unexpectedly with {status} "
                f"before delivering batch {number}.{hint}"
            )
        )

    def _raise_failure(self, failure: WorkerFailure, worker_id: int, worker: _Worker, number: int) -> None:
        context = (
            f"raised in DataLoader worker {worker_id} (pid {worker.process.pid}) while building "
            f"batch {number} of epoch {self._epoch} (dataset indices "
            f"{_shown(self._indices(number))})"
        )
        self.close()
        remote = RemoteTraceback(failure.traceback)
        error = failure.exception
        if error is None:
            raise DataLoaderWorkerError(
                f"{failure.type_name}: {failure.message} [{context}; the exception could not be "
                "pickled, so it is reported as DataLoaderWorkerError]"
            ) from remote
        if hasattr(error, "add_note"):
            error.add_note(context)
        raise error from remote
