"""The launcher's guardian of one rank: runs the rank as its child and records how it ended.

``ember.distributed.launch`` starts ``mpiexec -n N python guardian.py script.py ...``, so each
MPI process is a guardian whose only child is the rank. When the child ends, the guardian
writes ``exit-<pid>.json`` in the launcher's run directory — rank, pid, host, exit status or
signal, and when — then ends the same way (re-raising the signal), so ``mpiexec`` sees what it
would have seen without it.

Why: when one rank is killed, MPICH's hydra kills the other processes it started (SIGKILL) and
prints the first bad exit it finds, which can be one of the ranks it killed itself. Here the
rank that died on its own has a record written *before* hydra learns of anything (hydra only
sees the guardian end), while the processes hydra kills are guardians, killed before they can
write one; their children follow through ``PR_SET_PDEATHSIG``. So a record with a signal names
the rank that was killed first, whatever hydra prints.

The file runs as a script by path (the launcher passes its path), importing only the standard
library and ``environment`` beside it, so a guardian costs a bare interpreter, not ember's
imports.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

try:
    from .environment import GUARDIAN_VARIABLE, RUN_DIR_VARIABLE, env_rank, env_world_size
except ImportError:  # run as a script: the directory of this file is sys.path[0]
    from environment import GUARDIAN_VARIABLE, RUN_DIR_VARIABLE, env_rank, env_world_size

__all__ = ["EXIT_RECORD_GLOB", "main", "read_exit_records", "write_exit_record"]

EXIT_RECORD_GLOB = "exit-*.json"
# Signals a user or mpiexec sends to the process it started; the rank must receive them (once:
# it runs in a process group of its own, so hydra's killpg of the guardian's group misses it;
# a second Ctrl-C would abort the training instead of stopping it at the next batch).
_FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGTSTP", "SIGCONT")
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: a process group of its own (signals reach it through the
    guardian only), and SIGKILL when the guardian dies (hydra kills guardians)."""
    parent = int(os.environ[GUARDIAN_VARIABLE])
    os.setpgid(0, 0)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the rank outlives a killed guardian
        return
    if os.getppid() != parent:  # the guardian died before prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)


def write_exit_record(folder: Path, child_pid: int, returncode: int) -> Path:
    """Record (atomically) that the rank ``child_pid`` ended with ``returncode`` (Popen's:
    negative for a signal)."""
    record = {
        "rank": env_rank(),
        "world_size": env_world_size(),
        "pid": child_pid,
        "guardian_pid": os.getpid(),
        "host": socket.gethostname(),
        "returncode": returncode,
        "signal": -returncode if returncode < 0 else None,
        # CLOCK_MONOTONIC is one clock for every process of a host: records compare in time.
        "monotonic": time.monotonic(),
    }
    path = folder / f"exit-{child_pid}.json"
    tmp = folder / f".exit-{child_pid}.tmp"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)
    return path


def read_exit_records(folder: Path) -> list[dict]:
    """The guardians' records in ``folder``, earliest first (unreadable ones are skipped)."""
    records = []
    for path in folder.glob(EXIT_RECORD_GLOB):
        try:
            info = json.loads(path.read_text())
            int(info["pid"]), int(info["returncode"]), float(info["monotonic"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        records.append(info)
    return sorted(records, key=lambda info: float(info["monotonic"]))


def _end_like(returncode: int) -> None:
    """Exit as the child did: by the same signal, or with the same status."""
    if returncode >= 0:
        sys.exit(returncode)
    number = -returncode
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ImportError, ValueError, OSError):  # the child dumped core already, if it was to
        pass
    if number not in (signal.SIGKILL, signal.SIGSTOP):  # these two cannot be caught anyway
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
    os.kill(os.getpid(), number)
    sys.exit(128 + number)  # a signal whose default is to be ignored


def main(argv: list[str] | None = None) -> None:
    """``guardian.py script.py [args...]``: run the rank, record its end, end the same way."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        sys.stderr.write("ember.distributed.guardian: expected the rank's script and its arguments\n")
        sys.exit(2)
    env = dict(os.environ)
    env[GUARDIAN_VARIABLE] = str(os.getpid())
    os.environ[GUARDIAN_VARIABLE] = env[GUARDIAN_VARIABLE]  # for _die_with_parent, after fork
    # close_fds=False: the MPI's process manager may hand the rank an inherited socket (PMI_FD).
    child = subprocess.Popen([sys.executable, *argv], env=env, close_fds=False, preexec_fn=_die_with_parent)

    def forward(number, _frame) -> None:
        try:
            child.send_signal(number)
        except ProcessLookupError:
            pass

    for name in _FORWARDED:
        signal.signal(getattr(signal, name), forward)
    returncode = child.wait()
    raw = os.environ.get(RUN_DIR_VARIABLE, "").strip()
    if raw and Path(raw).is_dir():
        try:
            write_exit_record(Path(raw), child.pid, returncode)
        except OSError:  # the record is a courtesy to the launcher's report
            pass
    _end_like(returncode)


if __name__ == "__main__":
    main()
