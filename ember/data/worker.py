"""The DataLoader's worker processes: the loop they run and how their failures travel.

A worker receives, once at start, the dataset, the batcher and the pass's item order; then
batch numbers on its task pipe. For each it fetches the items, calls the batcher on the CPU
device and sends the batch back (tensors as NumPy, see `transport`) on its result pipe, in the
order the numbers came. `None` on the task pipe or a closed pipe ends it.

A worker never outlives the main process, even while it is busy inside a dataset's `get()`:
a watcher thread exits the process as soon as the main process's end of multiprocessing's
parent pipe closes (or the worker is re-parented), and on Linux the kernel kills it when its
parent dies (`PR_SET_PDEATHSIG`), which covers code that holds the GIL and so stops the
watcher too. With the forkserver start method the parent is the forkserver, which lives as
long as any process holds its "alive" pipe; a worker closes its own copy, so the forkserver
(and then the kernel, and the resource tracker once its last client is gone) follows the main
process within moments. `SIGUSR1` makes a worker print every thread's Python stack to stderr
(the main process sends it when a batch times out).
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import ForkingPickler
from typing import Any

from .dataset import fetch_many
from .transport import cpu_device, to_host

__all__ = [
    "DataLoaderWorkerError",
    "ParentWatch",
    "RemoteTraceback",
    "WorkerFailure",
    "worker_loop",
]

# How often the watcher thread checks that the worker was not re-parented, in seconds (the
# parent pipe wakes it at once; this only bounds the fallback).
_PARENT_CHECK_S = 0.5
# Exit status of a worker that found its main process gone.
EXIT_PARENT_GONE = 75
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


class DataLoaderWorkerError(RuntimeError):
    """A DataLoader worker died, timed out, or raised an exception that could not be sent to
    the main process as itself (its type, message and traceback are in the message/cause)."""


class RemoteTraceback(Exception):
    """Carries a worker's formatted traceback; set as `__cause__` of the re-raised exception
    so the original traceback is printed above the main process's one."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text.rstrip()}\n"""'


@dataclass(frozen=True)
class ParentWatch:
    """What a worker needs to notice, and clean up after, the death of the main process.

    Args:
        main_pid: the main process.
        start_method: how the worker was started ("forkserver", "spawn", "fork").
        death_signal: whether the kernel may kill the worker when its parent dies: true when
            the parent is the forkserver or the main process's main thread (a parent-death
            signal fires when the *thread* that started the worker ends, so not for workers
            started from a thread that may finish first).
        temp_dir: the main process's multiprocessing temporary directory, which holds the
            forkserver's socket; a dead main process cannot remove it, so a worker does.
    """

    main_pid: int
    start_method: str
    death_signal: bool
    temp_dir: str | None = None


@dataclass
class WorkerFailure:
    """What a worker sends when building a batch raised.

    Args:
        exception: the exception itself when it survives pickling, else `None`.
        type_name: qualified name of the exception type.
        message: `str(exception)`.
        traceback: the formatted traceback, as the worker saw it.
    """

    exception: BaseException | None
    type_name: str
    message: str
    traceback: str


def _failure(exc: BaseException) -> WorkerFailure:
    kind = type(exc)
    try:
        # Exceptions with custom constructors often fail to unpickle: test the round trip here,
        # with the pickler the pipes use, rather than have the main process fail to receive it.
        clone = ForkingPickler.loads(ForkingPickler.dumps(exc))
        portable: BaseException | None = exc if type(clone) is kind else None
    except Exception:
        portable = None
    return WorkerFailure(
        exception=portable,
        type_name=f"{kind.__module__}.{kind.__qualname__}",
        message=str(exc),
        traceback="".join(traceback.format_exception(exc)),
    )


def _release_forkserver() -> None:
    """Close this process's copy of the forkserver's "alive" pipe (each forkserver child gets
    one), so the forkserver exits with the main process instead of waiting for the workers.
    A process started here later launches its own forkserver, so nothing needs the copy."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if isinstance(fd, int):
        with contextlib.suppress(OSError):
            os.close(fd)
        server._forkserver_alive_fd = None


def _set_parent_death_signal() -> bool:
    """Linux: have the kernel SIGKILL this process when its parent dies."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _process_gone(pid: int) -> bool:
    """Whether `pid` no longer runs (it does not exist, or is a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    try:  # Linux: a killed process its own parent has not reaped yet
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _remove_forkserver_socket(watch: ParentWatch) -> None:
    """Remove the dead main process's forkserver socket and its temporary directory, as the
    main process would have at exit (only the sockets: anything else there is left alone)."""
    if watch.temp_dir is None or not _process_gone(watch.main_pid):
        return
    with contextlib.suppress(OSError):
        for entry in os.scandir(watch.temp_dir):
            if entry.name.startswith("listener-") and not entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        os.rmdir(watch.temp_dir)


def _main_process_fd(watch: ParentWatch) -> int | None:
    """A pidfd of the main process (Linux 5.3+) when a forkserver socket is to be removed at its
    death, else None. The forkserver, this worker's parent, exits as soon as the main process
    is gone and the parent-death signal then kills this worker: waiting for the parent alone,
    the worker often died before it removed the socket."""
    if watch.temp_dir is None or not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(watch.main_pid)
    except OSError:  # already gone, or pidfds not supported
        return None


def _watch_parent(watch: ParentWatch, parent_ppid: int) -> None:
    """Watcher thread: end the process once the main process is gone."""
    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None)
    watched = [] if sentinel is None else [sentinel]
    main = _main_process_fd(watch)
    if main is not None:
        watched.append(main)
    while True:
        if watched:
            # The parent holds the other end of the sentinel pipe (end-of-file: it is gone); a
            # pidfd of the main process becomes readable the moment it dies, so the socket is
            # removed before the forkserver's exit has the kernel kill this worker.
            gone = bool(wait(watched, _PARENT_CHECK_S))
        else:
            time.sleep(_PARENT_CHECK_S)
            gone = False
        if gone or os.getppid() != parent_ppid:
            _remove_forkserver_socket(watch)
            os._exit(EXIT_PARENT_GONE)  # the main thread may be stuck in get(): no cleanup


def _guard_against_orphaning(watch: ParentWatch | None) -> None:
    if watch is None:
        return
    parent_ppid = os.getppid()
    if watch.start_method == "forkserver":
        _release_forkserver()
    if watch.death_signal:
        _set_parent_death_signal()
    threading.Thread(
        target=_watch_parent, args=(watch, parent_ppid), name="ember-parent-watch", daemon=True
    ).start()


def _register_stack_dump() -> None:
    register = getattr(faulthandler, "register", None)  # not on Windows
    if register is None or sys.stderr is None:
        return
    with contextlib.suppress(RuntimeError, ValueError, OSError, AttributeError):
        register(signal.SIGUSR1, all_threads=True)


def worker_loop(
    dataset: Any,
    batcher: Any,
    order: Any,
    batch_size: int,
    tasks: Connection,
    results: Connection,
    watch: ParentWatch | None = None,
) -> None:
    """Body of a worker process (the target of `multiprocessing.Process`).

    Args:
        dataset: the dataset, with the pass's epoch already set.
        batcher: the batcher; `batch(items, cpu_device)` is called for each task.
        order: int64 array, the dataset position of each item of the pass, in pass order.
        batch_size: items per batch (the last batch may be shorter).
        tasks: receives batch numbers, `None` to stop.
        results: sends `(batch_number, True, batch)` or `(batch_number, False, WorkerFailure)`.
        watch: how to notice that the main process died (`None`: only through the pipes).
    """
    # Ctrl-C reaches the whole process group; the main process decides what to do and shuts
    # workers down itself, so a worker must not die mid-message on SIGINT.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _guard_against_orphaning(watch)
    _register_stack_dump()
    device = cpu_device()
    while True:
        try:
            batch_number = tasks.recv()
        except (EOFError, OSError):
            return
        if batch_number is None:
            return
        start = batch_number * batch_size
        indices = [int(position) for position in order[start : start + batch_size]]
        try:
            batch = to_host(batcher.batch(fetch_many(dataset, indices), device))
        except Exception as exc:  # every failure is reported to the main process
            message: tuple[int, bool, Any] = (batch_number, False, _failure(exc))
        else:
            message = (batch_number, True, batch)
        try:
            results.send(message)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            return  # the main process stopped listening (early stop or shutdown)
        except Exception as exc:  # the batch itself could not be pickled
            try:
                results.send((batch_number, False, _failure(exc)))
            except (BrokenPipeError, ConnectionResetError, EOFError):
                return
