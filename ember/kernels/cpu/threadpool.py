"""ember's own worker threads for kernels that run as several serial calls at once.

Numba's ``parallel=True`` kernels are slow to compile (each level of the call tree is
optimised again inside the parallel region, and a fresh install's first step waits for
it), and BLAS cannot run inside them. A ``nogil`` serial kernel called from a few
Python threads at once runs in parallel just the same, compiles like any serial function,
and lets BLAS run single-threaded pieces (see :mod:`.gemm`). The pool has one thread fewer
than the thread count: the caller runs the first task itself.
"""

from __future__ import annotations

import os
import queue
import threading

from .jit import num_threads

__all__ = ["pool", "run"]


class _Pool:
    def __init__(self, threads: int):
        self.threads = threads
        self._inbox: list[queue.SimpleQueue] = []
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()  # one batch of tasks at a time: they share the workers
        for index in range(threads - 1):
            inbox: queue.SimpleQueue = queue.SimpleQueue()
            worker = threading.Thread(
                target=self._serve, args=(inbox,), name=f"ember-worker-{index}", daemon=True
            )
            worker.start()
            self._inbox.append(inbox)

    def _serve(self, inbox):
        while True:
            task = inbox.get()
            try:
                task()
                self._done.put(None)
            except BaseException as error:  # (re-raised in the caller)
                self._done.put(error)

    def run(self, tasks):
        """Runs every callable of ``tasks`` (at most ``threads``), returns when all are done,
        and raises the first error any of them raised."""
        if len(tasks) > self.threads:
            raise ValueError(f"threadpool.run: {len(tasks)} tasks for {self.threads} threads")
        with self._lock:
            for inbox, task in zip(self._inbox, tasks[1:]):
                inbox.put(task)
            first_error = None
            try:
                if tasks:
                    tasks[0]()
            except BaseException as error:
                first_error = error
            for _ in tasks[1:]:
                result = self._done.get()
                if first_error is None and result is not None:
                    first_error = result
        if first_error is not None:
            raise first_error


_pool: _Pool | None = None
_setup_lock = threading.Lock()


def _forget_after_fork() -> None:
    # A forked child (e.g. a DataLoader worker) has none of the parent's worker threads, and a
    # lock held at fork time stays held: it builds its own pool on first use.
    global _pool, _setup_lock
    _pool = None
    _setup_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def pool() -> _Pool:
    """The process's pool, sized by Numba's thread count (``EMBER_NUM_THREADS``) when first used."""
    global _pool
    if _pool is None:
        with _setup_lock:
            if _pool is None:
                _pool = _Pool(max(1, num_threads()))
    return _pool


def run(kernel, *args) -> None:
    """``kernel(*args, first, step)`` on every thread: task ``t`` takes items ``t, t + T, ...``."""
    workers = pool()
    threads = workers.threads
    workers.run([(lambda t=t: kernel(*args, t, threads)) for t in range(threads)])
