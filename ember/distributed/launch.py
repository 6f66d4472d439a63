"""``python -m ember.distributed.launch -n N script.py [args...]``: start N ranks with ``mpiexec``.

What it adds to a bare ``mpiexec -n N python script.py``:

* **threads**: each rank gets ``cores // N`` compute threads (``EMBER_NUM_THREADS``, which
  sizes Numba's and the native kernels' pools, and the BLAS/OpenMP variables), so N ranks on
  one machine do not oversubscribe its cores; a value already set in the environment wins;
* **failure report**: when the job fails it names the rank — the one killed by a signal (each
  rank runs under a guardian process that records how it ended, see
  :mod:`ember.distributed.guardian`; the out-of-memory killer is named only when this host's
  ``oom_kill`` count rose) or the one that raised (each rank aborts the job on an uncaught
  exception, see :mod:`ember.distributed.failure`) — and exits with a non-zero status.

``mpiexec`` is the one beside the running Python (the MPICH wheel's, in a virtual environment),
else the first on ``PATH``; ``--mpiexec`` or ``EMBER_MPIEXEC`` choose another. Extra ``mpiexec``
options go after ``--mpi-args``, e.g. ``--mpi-args "-hosts a,b"``. The script runs unchanged
under a cluster's own ``mpiexec`` or ``srun`` too: the launcher is a convenience, not a
requirement.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from .environment import RUN_DIR_VARIABLE, TIMEOUT_VARIABLE
from .guardian import read_exit_records

__all__ = ["GUARDIAN_SCRIPT", "failure_report", "find_mpiexec", "main", "oom_kill_count", "rank_environment"]

# Each MPI process is this script, which runs the rank as its child and records how it ended.
GUARDIAN_SCRIPT = str(Path(__file__).with_name("guardian.py"))

_THREAD_VARIABLES = (
    "EMBER_NUM_THREADS",
    "NUMBA_NUM_THREADS",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
)
# How MPICH's hydra and Open MPI report a rank that ended badly.
_HYDRA_PID = re.compile(r"PID (\d+) RUNNING AT (\S+)")
_HYDRA_EXIT = re.compile(r"EXIT CODE: (\d+)")
_OPENMPI_RANK = re.compile(r"process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)")


def find_mpiexec(explicit: str | None = None) -> str:
    """The ``mpiexec`` to run.

    Raises:
        FileNotFoundError: none found; says what to install.
    """
    candidates = [explicit, os.environ.get("EMBER_MPIEXEC")]
    beside = Path(sys.executable).parent / "mpiexec"
    candidates += [str(beside) if beside.exists() else None, shutil.which("mpiexec"), shutil.which("mpirun")]
    for candidate in candidates:
        if candidate and (os.path.isfile(candidate) or shutil.which(candidate)):
            return candidate
    raise FileNotFoundError(
        'ember.distributed.launch: no mpiexec found; install MPI with `pip install "ember[distributed]"` '
        "(mpi4py and the MPICH wheel, whose mpiexec lands beside python), load your cluster's MPI "
        "module, or pass --mpiexec PATH"
    )


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def rank_environment(num_ranks: int, threads: int | None, run_dir: str, timeout: float | None) -> dict:
    """The environment every rank starts with.

    Args:
        num_ranks: ranks started on this machine.
        threads: compute threads per rank; None: ``cores // num_ranks`` (at least 1).
        run_dir: where the ranks leave their pid and failure notes.
        timeout: ``EMBER_DISTRIBUTED_TIMEOUT`` to set, None to leave it.
    """
    env = dict(os.environ)
    per_rank = threads if threads is not None else max(1, _cores() // max(1, num_ranks))
    for name in _THREAD_VARIABLES:
        if threads is not None or not env.get(name, "").strip():
            env[name] = str(per_rank)
    env[RUN_DIR_VARIABLE] = run_dir
    if timeout is not None:
        env[TIMEOUT_VARIABLE] = str(timeout)
    return env


def _pump(source, sink, seen: list[str]) -> None:
    """Copy the MPI's output through, keeping the lines that report a failed process."""
    for raw in iter(source.readline, b""):
        sink.buffer.write(raw)
        sink.flush()
        line = raw.decode("utf-8", "replace")
        if _HYDRA_PID.search(line) or _HYDRA_EXIT.search(line) or _OPENMPI_RANK.search(line):
            seen.append(line)
    source.close()


def _ranks(run_dir: Path) -> dict[int, dict]:
    """The ranks' own notes (``rank-<r>.json``) by pid, and by their guardian's pid."""
    out = {}
    for path in run_dir.glob("rank-*.json"):
        try:
            info = json.loads(path.read_text())
            out[int(info["pid"])] = info
            if info.get("guardian_pid") is not None:
                out[int(info["guardian_pid"])] = info
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def oom_kill_count() -> int | None:
    """This host's count of processes the out-of-memory killer ended (``/proc/vmstat``'s
    ``oom_kill``, Linux 4.13+); None where it cannot be read."""
    try:
        with open("/proc/vmstat") as vmstat:
            for line in vmstat:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _sigkill_cause(oom_kills: int | None) -> str:
    """What the launcher knows of who sent a SIGKILL that nothing in the job sent."""
    if oom_kills is None:
        return " (another process or the out-of-memory killer sent it; this host does not say which)"
    if oom_kills > 0:
        return (
            f"; the out-of-memory killer ended {oom_kills} process(es) on this host during the job "
            "(/proc/vmstat oom_kill), so most likely it: give the ranks more memory or smaller batches"
        )
    return (
        " (not by the out-of-memory killer: this host's oom_kill count did not rise; another process sent it)"
    )


def _failed_ranks(run_dir: Path) -> set[int]:
    """The ranks that wrote why they failed (``rank-<r>.failed``)."""
    ranks = set()
    for path in run_dir.glob("rank-*.failed"):
        number = path.stem.split("-", 1)[1]
        if number.isdigit():
            ranks.add(int(number))
    return ranks


def _from_exit_records(run_dir: Path, oom_kills: int | None) -> str | None:
    """The line naming the first rank that the guardians saw die by a signal, else None. A rank
    that recorded an exception first is left out: its own abort may end it by a signal."""
    records = read_exit_records(run_dir)
    explained = _failed_ranks(run_dir)
    killed = [info for info in records if info.get("signal") and info.get("rank") not in explained]
    if not killed:
        return None
    info = killed[0]  # the earliest: the ranks hydra kills afterwards leave no record
    by_pid = _ranks(run_dir)
    rank, world = info.get("rank"), info.get("world_size")
    noted = by_pid.get(int(info["pid"]))
    if rank is None and noted is not None:
        rank, world = noted["rank"], noted["world_size"]
    who = "a rank" if rank is None else f"rank {rank}" + (f" of {world}" if world else "")
    number = int(info["signal"])
    how = f"was killed by {_signal_name(number)}"
    if number == signal.SIGKILL:
        local = info.get("host") == socket.gethostname()
        how += _sigkill_cause(oom_kills if local else None)
    return (
        f"ember.distributed.launch: {who} (pid {info['pid']} on {info.get('host', '?')}) {how}; "
        "mpiexec ended the other ranks"
    )


def _from_status_records(run_dir: Path) -> str | None:
    """The line naming the first rank that exited with a non-zero status, else None."""
    for info in read_exit_records(run_dir):
        if int(info["returncode"]) > 0:
            rank, world = info.get("rank"), info.get("world_size")
            who = "a rank" if rank is None else f"rank {rank}" + (f" of {world}" if world else "")
            return (
                f"ember.distributed.launch: {who} (pid {info['pid']} on {info.get('host', '?')}) exited "
                f"with status {info['returncode']}; mpiexec ended the other ranks"
            )
    return None


def failure_report(run_dir: Path, reported: list[str], returncode: int, oom_kills: int | None = None) -> str:
    """The closing line naming the rank that ended the job (as well as it can be known).

    The ranks' own records decide, in this order: a rank its guardian saw killed by a signal
    (the earliest: ranks killed in the MPI's clean-up leave no record), then a rank that raised
    (the earliest ``rank-<r>.failed``; a peer's death can make the others raise too, so a
    signal comes first), then a rank that exited with a non-zero status. Only without any
    record (ranks on other hosts, a run not under the guardians) does the MPI's own report
    decide, and hydra's may name a rank it killed itself while cleaning up.

    Args:
        run_dir: the run directory the ranks and their guardians wrote to.
        reported: the lines of the MPI's output that report a failed process.
        returncode: mpiexec's exit status.
        oom_kills: how many processes this host's out-of-memory killer ended during the job
            (None: unknown); a SIGKILL is blamed on it only when this rose.
    """
    line = _from_exit_records(run_dir, oom_kills)
    if line is not None:
        return line
    failed = []
    for path in run_dir.glob("rank-*.failed"):
        try:
            failed.append((path.stat().st_mtime_ns, path.read_text().strip()))
        except OSError:
            continue
    if failed:
        return min(failed)[1]
    line = _from_status_records(run_dir)
    if line is not None:
        return line
    by_pid = _ranks(run_dir)
    text = "".join(reported)
    match = _OPENMPI_RANK.search(text)
    if match:
        rank, pid, host, number = match.groups()
        return (
            f"ember.distributed.launch: rank {rank} (pid {pid} on {host}) was killed by "
            f"{_signal_name(int(number))}; mpiexec ended the other ranks"
        )
    match = _HYDRA_PID.search(text)
    if match:
        pid, host = int(match.group(1)), match.group(2)
        code = _HYDRA_EXIT.search(text)
        status = int(code.group(1)) if code else None
        info = by_pid.get(pid)
        who = f"rank {info['rank']} of {info['world_size']}" if info else "a rank"
        # hydra reports a signal's number as the exit code of a killed process; without the
        # ranks' records it may name one it killed itself while cleaning up, so say it is hydra's.
        how = (
            f"was killed by {_signal_name(status)}"
            + (_sigkill_cause(oom_kills) if status == signal.SIGKILL and oom_kills else "")
            if status is not None and 0 < status < 32
            else f"exited with status {status}"
        )
        return (
            f"ember.distributed.launch: {who} (pid {pid} on {host}) {how}, as mpiexec reports it (the "
            "ranks left no record of their end); mpiexec ended the other ranks"
        )
    return f"ember.distributed.launch: mpiexec exited with status {returncode} (no rank reported why)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ember.distributed.launch",
        description="Run a training script as N MPI ranks (data-parallel training with ember).",
    )
    parser.add_argument("-n", "--num-ranks", type=int, required=True, help="ranks to start")
    parser.add_argument("--threads-per-rank", type=int, default=None, help="default: cores // ranks")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds a collective may wait (EMBER_DISTRIBUTED_TIMEOUT)",
    )
    parser.add_argument("--mpiexec", default=None, help="the mpiexec to run")
    parser.add_argument("--mpi-args", default="", help="extra mpiexec options, one string")
    parser.add_argument("script", help="the script, then its arguments")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the job; returns the exit status (non-zero when a rank failed)."""
    parser = _parser()
    options = parser.parse_args(argv)
    if options.num_ranks < 1:
        parser.error(f"-n must be >= 1, got {options.num_ranks}")
    if options.threads_per_rank is not None and options.threads_per_rank < 1:
        parser.error(f"--threads-per-rank must be >= 1, got {options.threads_per_rank}")
    try:
        import mpi4py  # noqa: F401  (the ranks need it; say so before starting them)

        mpiexec = find_mpiexec(options.mpiexec)
    except ImportError:
        sys.stderr.write(
            'ember.distributed.launch: mpi4py is not installed; `pip install "ember[distributed]"` '
            "installs it with the MPICH wheel (or build mpi4py against your cluster's MPI)\n"
        )
        return 2
    except FileNotFoundError as error:
        sys.stderr.write(f"{error}\n")
        return 2
    command = [
        mpiexec, "-n", str(options.num_ranks), *shlex.split(options.mpi_args),
        sys.executable, GUARDIAN_SCRIPT, options.script, *options.args,
    ]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="ember-launch-") as run_dir:
        env = rank_environment(options.num_ranks, options.threads_per_rank, run_dir, options.timeout)
        oom_before = oom_kill_count()
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        reported: list[str] = []
        pumps = [
            threading.Thread(target=_pump, args=(process.stdout, sys.stdout, reported), daemon=True),
            threading.Thread(target=_pump, args=(process.stderr, sys.stderr, reported), daemon=True),
        ]
        for pump in pumps:
            pump.start()
        while True:
            try:
                returncode = process.wait()
                break
            except KeyboardInterrupt:  # mpiexec got the Ctrl-C too and forwards it to the ranks
                continue
        for pump in pumps:
            pump.join(5.0)
        if returncode != 0:
            oom_after = oom_kill_count()
            oom_kills = None if oom_before is None or oom_after is None else oom_after - oom_before
            sys.stderr.write(failure_report(Path(run_dir), reported, returncode, oom_kills) + "\n")
            sys.stderr.flush()
    return returncode


if __name__ == "__main__":
    sys.exit(main())
