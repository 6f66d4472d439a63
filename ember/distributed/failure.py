"""What a rank does when it fails: say who it is and why, then end the whole job.

An MPI job whose rank raised does not end by itself: the failed rank waits in
``MPI_Finalize`` and the others wait in their next collective. So the first communicator of a
multi-rank process installs an exception hook that prints the traceback, a line naming the
rank, records that line for ``ember.distributed.launch``, and calls ``MPI_Abort``.

Under the launcher each rank also writes ``rank-<r>.json`` (its pid, host and guardian's pid)
in the run directory, which lets the launcher name the rank behind a pid that the MPI reports
as killed; how a rank ended the guardian records (:mod:`ember.distributed.guardian`).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .environment import GUARDIAN_VARIABLE, RUN_DIR_VARIABLE

__all__ = ["announce_rank", "install_abort_on_exception", "record_failure", "run_dir"]

_installed = False
_lock = threading.Lock()
# mpiexec forwards a rank's stderr asynchronously and kills the job as soon as one rank
# aborts, which could drop the line naming the failure on a busy machine: the failing rank
# waits this long after writing it.
_FORWARD_GRACE_S = 0.5


def run_dir() -> Path | None:
    """The launcher's run directory, None when not started by ``ember.distributed.launch``."""
    raw = os.environ.get(RUN_DIR_VARIABLE, "").strip()
    return Path(raw) if raw and Path(raw).is_dir() else None


def announce_rank(rank: int, world_size: int) -> None:
    """Note this rank's pid and host for the launcher (nothing outside it)."""
    folder = run_dir()
    if folder is None:
        return
    info = {"rank": rank, "world_size": world_size, "pid": os.getpid(), "host": socket.gethostname()}
    guardian = os.environ.get(GUARDIAN_VARIABLE, "").strip()
    if guardian.isdigit() and int(guardian) == os.getppid():  # the pid mpiexec knows this rank by
        info["guardian_pid"] = int(guardian)
    path = folder / f"rank-{rank}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, path)


def record_failure(rank: int, message: str) -> None:
    """Leave ``message`` (why rank ``rank`` fails) for the launcher's closing report."""
    folder = run_dir()
    if folder is None:
        return
    try:
        (folder / f"rank-{rank}.failed").write_text(message)
    except OSError:  # the report is a courtesy; the abort below is what matters
        pass


def failure_line(rank: int, world_size: int, error: BaseException) -> str:
    """The line naming the failed rank, e.g. ``rank 1 of 2 (pid 7, host h) failed: ...``."""
    what = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return (
        f"ember.distributed: rank {rank} of {world_size} (pid {os.getpid()} on {socket.gethostname()}) "
        f"failed with {what}; aborting every rank of the job"
    )


def install_abort_on_exception(rank: int, world_size: int, abort: Callable[[int], None]) -> None:
    """Make an uncaught exception in this process end the whole job (once per process).

    Args:
        rank: this process's rank (for the message).
        world_size: the number of ranks.
        abort: ends every rank, given an exit code (``MPI_Abort``).
    """
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    previous = sys.excepthook

    def hook(exc_type, error, traceback) -> None:
        previous(exc_type, error, traceback)
        line = failure_line(rank, world_size, error)
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            sys.stdout.flush()
        except Exception:  # a closed stream must not keep the job alive
            pass
        record_failure(rank, line)
        time.sleep(_FORWARD_GRACE_S)
        abort(1)

    sys.excepthook = hook
