"""The DataLoader's worker processes: the loop they run and how their failures travel.

A worker receives, once at start, the dataset, the batcher and the pass's item order; then
batch numbers on its task pipe. For each it fetches the items, calls the batcher on the CPU
device and sends the batch back (tensors as NumPy, see `transport`) on its result pipe, in the
order the numbers came. `None` on the task pipe, a closed pipe, or the death of its parent
ends it.
"""

from __future__ import annotations

import os
import signal
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

from .dataset import fetch_many
from .transport import cpu_device, to_host

__all__ = ["DataLoaderWorkerError", "RemoteTraceback", "WorkerFailure", "worker_loop"]

# How often an idle worker checks that its parent is still alive, in seconds.
_PARENT_CHECK_S = 1.0


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


def worker_loop(
    dataset: Any,
    batcher: Any,
    order: Any,
    batch_size: int,
    tasks: Connection,
    results: Connection,
) -> None:
    """Body of a worker process (the target of `multiprocessing.Process`).

    Args:
        dataset: the dataset, with the pass's epoch already set.
        batcher: the batcher; `batch(items, cpu_device)` is called for each task.
        order: int64 array, the dataset position of each item of the pass, in pass order.
        batch_size: items per batch (the last batch may be shorter).
        tasks: receives batch numbers, `None` to stop.
        results: sends `(batch_number, True, batch)` or `(batch_number, False, WorkerFailure)`.
    """
    # Ctrl-C reaches the whole process group; the main process decides what to do and shuts
    # workers down itself, so a worker must not die mid-message on SIGINT.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    device = cpu_device()
    parent = os.getppid()
    while True:
        try:
            if not tasks.poll(_PARENT_CHECK_S):
                # Re-parented: the main process (or the forkserver, which lives and dies with
                # it) has gone without closing our pipes.
                if os.getppid() != parent:
                    return
                continue
            batch_number = tasks.recv()
        except (EOFError, OSError):
            return
        if batch_number is None:
            return
        start = batch_number * batch_size
        indices = [int(position) for position in order[start : start + batch_size]]
        try:
            batch = to_host(batcher.batch(fetch_many(dataset, indices), device))
        except Exception as exc:  # noqa: BLE001 - every failure is reported to the main process
            message: tuple[int, bool, Any] = (batch_number, False, _failure(exc))
        else:
            message = (batch_number, True, batch)
        try:
            results.send(message)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            return  # the main process stopped listening (early stop or shutdown)
        except Exception as exc:  # noqa: BLE001 - the batch itself could not be pickled
            try:
                results.send((batch_number, False, _failure(exc)))
            except (BrokenPipeError, ConnectionResetError, EOFError):
                return
