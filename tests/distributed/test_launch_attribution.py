"""Which rank the launcher blames: the guardian's records of how each rank ended, not the order
in which the MPI's process manager lists the processes it killed while cleaning up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mpi_run import needs_mpi

from ember.distributed.guardian import read_exit_records
from ember.distributed.launch import GUARDIAN_SCRIPT, failure_report

_HYDRA = "=   PID {pid} RUNNING AT vm\n=   EXIT CODE: 9\n"


def _guard(tmp_path, code: str, rank: int = 1, **kwargs) -> subprocess.Popen:
    env = dict(os.environ, EMBER_DISTRIBUTED_RUN_DIR=str(tmp_path), PMI_RANK=str(rank), PMI_SIZE="2")
    return subprocess.Popen([sys.executable, GUARDIAN_SCRIPT, "-c", code], env=env, **kwargs)


def _record(path: Path, rank: int, pid: int, returncode: int, at: float, host: str = "vm") -> None:
    info = {
        "rank": rank,
        "world_size": 2,
        "pid": pid,
        "guardian_pid": pid - 1,
        "host": host,
        "returncode": returncode,
        "signal": -returncode if returncode < 0 else None,
        "monotonic": at,
    }
    (path / f"exit-{pid}.json").write_text(json.dumps(info))


# ---- the guardian ------------------------------------------------------------------------------
def test_the_guardian_records_a_killed_rank_and_ends_by_the_same_signal(tmp_path):
    guardian = _guard(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert guardian.wait(30) == -signal.SIGKILL  # mpiexec sees what it saw without the guardian
    (record,) = read_exit_records(tmp_path)
    assert record["rank"] == 1 and record["world_size"] == 2
    assert record["signal"] == signal.SIGKILL and record["returncode"] == -signal.SIGKILL
    assert record["guardian_pid"] == guardian.pid and record["pid"] != guardian.pid


def test_the_guardian_passes_a_status_through(tmp_path):
    assert _guard(tmp_path, "raise SystemExit(3)").wait(30) == 3
    (record,) = read_exit_records(tmp_path)
    assert record["returncode"] == 3 and record["signal"] is None


def test_the_guardian_forwards_sigterm_to_the_rank(tmp_path):
    guardian = _guard(
        tmp_path, "import time; print('ready', flush=True); time.sleep(60)", stdout=subprocess.PIPE
    )
    assert guardian.stdout.readline().strip() == b"ready"
    guardian.send_signal(signal.SIGTERM)
    assert guardian.wait(30) == -signal.SIGTERM
    (record,) = read_exit_records(tmp_path)
    assert record["signal"] == signal.SIGTERM


def test_a_rank_dies_with_its_killed_guardian_and_leaves_no_record(tmp_path):
    """What MPICH's clean-up does to the other ranks: it SIGKILLs the guardians."""
    guardian = _guard(
        tmp_path, "import os, time; print(os.getpid(), flush=True); time.sleep(60)", stdout=subprocess.PIPE
    )
    child = int(guardian.stdout.readline())
    guardian.kill()
    guardian.wait(30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.02)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the rank outlived its guardian")
    assert read_exit_records(tmp_path) == []


# ---- the report --------------------------------------------------------------------------------
def test_the_rank_killed_first_is_named_though_hydra_lists_one_it_killed_itself(tmp_path):
    (tmp_path / "rank-0.json").write_text(json.dumps({"rank": 0, "world_size": 2, "pid": 100, "host": "vm"}))
    _record(tmp_path, 1, 201, -9, at=5.0)
    # a peer that saw rank 1 vanish and raised before hydra killed it: a consequence
    (tmp_path / "rank-0.failed").write_text("ember.distributed: rank 0 of 2 failed with MPI.Exception")
    line = failure_report(tmp_path, [_HYDRA.format(pid=100)], 9, oom_kills=0)
    assert "rank 1 of 2 (pid 201 on vm) was killed by SIGKILL" in line, line
    assert "rank 0" not in line


def test_of_two_killed_ranks_the_earlier_is_named(tmp_path):
    _record(tmp_path, 0, 101, -9, at=7.5)
    _record(tmp_path, 1, 201, -6, at=7.25)
    assert "rank 1 of 2 (pid 201 on vm) was killed by SIGABRT" in failure_report(tmp_path, [], 1)


def test_the_out_of_memory_killer_is_named_only_on_evidence(tmp_path):
    _record(tmp_path, 1, 201, -9, at=1.0, host=os.uname().nodename)
    assert "not by the out-of-memory killer" in failure_report(tmp_path, [], 9, oom_kills=0)
    assert "the out-of-memory killer ended 1 process(es)" in failure_report(tmp_path, [], 9, oom_kills=1)
    unknown = failure_report(tmp_path, [], 9, oom_kills=None)
    assert "does not say which" in unknown and "most likely" not in unknown
    # hydra's word alone (no records) never suggests it
    fallback = failure_report(tmp_path / "none", [_HYDRA.format(pid=5)], 9, oom_kills=0)
    assert "out-of-memory" not in fallback and "as mpiexec reports it" in fallback


def test_the_first_rank_that_raised_is_named_not_the_lowest(tmp_path):
    (tmp_path / "rank-1.failed").write_text("ember.distributed: rank 1 of 2 failed with ValueError: first")
    later = time.time_ns() + 10**9
    (tmp_path / "rank-0.failed").write_text(
        "ember.distributed: rank 0 of 2 failed with DistributedTimeoutError"
    )
    os.utime(tmp_path / "rank-0.failed", ns=(later, later))
    _record(tmp_path, 0, 101, 1, at=1.0)  # the aborting rank's own exit status comes after its reason
    assert failure_report(tmp_path, [], 1).startswith("ember.distributed: rank 1 of 2 failed with ValueError")


def test_a_non_zero_exit_without_a_reason_is_named(tmp_path):
    _record(tmp_path, 1, 201, 3, at=1.0)
    assert "rank 1 of 2 (pid 201 on vm) exited with status 3" in failure_report(tmp_path, [], 3)


# ---- end to end, with a process manager that lists the wrong process first ---------------------
_FAKE_MPIEXEC = textwrap.dedent(
    """\
    # Starts the ranks like mpiexec; when one ends badly, SIGKILLs the others (MPICH's clean-up),
    # then reports rank 0's process first, as hydra can under load.
    import os, signal, subprocess, sys
    n, command = int(sys.argv[2]), sys.argv[3:]
    procs = [
        subprocess.Popen(command, env=dict(os.environ, PMI_RANK=str(r), PMI_SIZE=str(n))) for r in range(n)
    ]
    pid, status = os.wait()
    for p in procs:
        if p.pid != pid:
            p.kill()
    for p in procs:
        p.wait()
    print("=   PID %d RUNNING AT vm" % procs[0].pid)
    print("=   EXIT CODE: 9", flush=True)
    sys.exit(9)
    """
)
_RANK = textwrap.dedent(
    """\
    import os, signal, sys, time
    from ember.distributed.failure import announce_rank
    rank = int(os.environ["PMI_RANK"])
    announce_rank(rank, int(os.environ["PMI_SIZE"]))
    time.sleep(0.5)
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)
    """
)


@needs_mpi
def test_the_launcher_names_the_killed_rank_whatever_the_process_manager_lists(tmp_path):
    (tmp_path / "mpiexec.py").write_text(_FAKE_MPIEXEC)
    (tmp_path / "mpiexec").write_text(f'#!/bin/sh\nexec {sys.executable} {tmp_path / "mpiexec.py"} "$@"\n')
    (tmp_path / "mpiexec").chmod(0o755)
    (tmp_path / "rank.py").write_text(_RANK)
    done = subprocess.run(
        [sys.executable, "-m", "ember.distributed.launch", "-n", "2", "--mpiexec", str(tmp_path / "mpiexec"),
         str(tmp_path / "rank.py")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode != 0
    assert "rank 1 of 2" in last and "SIGKILL" in last, done.stderr[-2000:]


def test_a_signal_to_the_guardians_process_group_reaches_the_rank_once(tmp_path):
    """hydra starts each process in a session of its own and signals its group (killpg): the
    rank must see one Ctrl-C, not the group's and the guardian's (a second one aborts training)."""
    code = (
        "import signal, sys, time\n"
        "seen = []\n"
        "signal.signal(signal.SIGINT, lambda *a: seen.append(1))\n"
        "print('ready', flush=True)\n"
        "deadline = time.monotonic() + 30\n"
        "while not seen and time.monotonic() < deadline: time.sleep(0.01)\n"
        "time.sleep(0.5)\n"
        "sys.exit(len(seen))\n"
    )
    guardian = _guard(tmp_path, code, stdout=subprocess.PIPE, start_new_session=True)
    assert guardian.stdout.readline().strip() == b"ready"
    os.killpg(guardian.pid, signal.SIGINT)
    assert guardian.wait(30) == 1


def test_a_rank_that_raised_is_named_by_its_reason_though_its_abort_ended_it_by_a_signal(tmp_path):
    (tmp_path / "rank-1.failed").write_text("ember.distributed: rank 1 of 2 failed with ValueError: x")
    _record(tmp_path, 1, 201, -6, at=1.0)  # MPI_Abort may end the raising rank by SIGABRT
    assert failure_report(tmp_path, [], 1).startswith("ember.distributed: rank 1 of 2 failed with ValueError")
