"""Kill test: SIGKILL a child process in the middle of a save and in the middle of a
DataLoader pass, then count what it left behind.

- Saves (module `.bpk`, safetensors, checkpoint, SQLite dataset): the child is killed while
  its scratch file exists, i.e. mid-write. The target must then hold one of the two complete
  versions, and the next save to the same path must leave nothing but the target.
- DataLoader: the child is killed while both workers are inside a dataset's `get()`. Within a
  few seconds none of its descendants (workers, forkserver, resource tracker) may be left,
  and nothing may be left in its temporary directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and fork are POSIX")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import kill_saves  # noqa: E402

ORPHAN_WAIT_S = 5.0  # the brief allows "a second or two"; slack for a loaded CI machine


def child_env(tmp_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE), env.get("PYTHONPATH", "")])
    env["TMPDIR"] = str(tmp_dir)  # whatever the child leaves in its temp dir shows up here
    return env


def running(process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_until(condition, timeout: float, step: float = 0.002) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


# -- saves --------------------------------------------------------------------------------------


def scratch_files(directory: Path, name: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != name)


def test_a_save_killed_mid_write_leaves_a_complete_file_and_no_scratch_after_the_next_save(tmp_path):
    children = {}
    for kind in kill_saves.KINDS:
        directory = tmp_path / kind
        directory.mkdir()
        (directory / "tmp").mkdir()
        children[kind] = subprocess.Popen(
            [sys.executable, str(HERE / "kill_saves.py"), kind, str(directory)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(directory / "tmp"),
        )
    try:
        for kind, child in children.items():
            line = child.stdout.readline()
            assert line.strip() == "ready", f"{kind}: {line!r} {child.stderr.read()}"
            work = tmp_path / kind / "work"
            name = kill_saves.target_name(kind)
            # A scratch file exists only while a save is writing: kill right then.
            assert wait_until(lambda: scratch_files(work, name), timeout=30), kind
            child.send_signal(signal.SIGKILL)
            child.wait(10)
    finally:
        for child in children.values():
            if child.poll() is None:
                child.kill()
                child.wait()
    for kind in kill_saves.KINDS:
        work = tmp_path / kind / "work"
        name = kill_saves.target_name(kind)
        complete = {(tmp_path / kind / "refs" / v / name).read_bytes() for v in ("0", "1")}
        assert (work / name).read_bytes() in complete, f"{kind}: the target is not a complete file"
        # The killed writer's scratch file is still there (or it was killed between writes)...
        left = scratch_files(work, name)
        assert all(entry.endswith((".tmp", ".tmpdir")) for entry in left), (kind, left)
        # ...and the next save to the same path removes it.
        save = kill_saves.saver(kind, 1)
        save(work)
        assert scratch_files(work, name) == [], f"{kind}: a later save left {scratch_files(work, name)}"
        fresh = tmp_path / kind / "fresh"
        fresh.mkdir()
        save(fresh)
        assert (work / name).read_bytes() == (fresh / name).read_bytes()
        assert list((tmp_path / kind / "tmp").iterdir()) == []


# -- DataLoader ---------------------------------------------------------------------------------

LOADER_CHILD = textwrap.dedent(
    """
    import sys
    import busy_dataset
    from ember.data import DataLoaderBuilder

    if __name__ == "__main__":
        start_method, hold_gil, markers = sys.argv[1], sys.argv[2] == "gil", sys.argv[3]
        loader = (DataLoaderBuilder(busy_dataset.ListBatcher()).batch_size(1).num_workers(2)
                  .multiprocessing_context(start_method)
                  .build(busy_dataset.BusyDataset(markers, hold_gil)))
        iterator = iter(loader)
        print(" ".join(map(str, iterator.worker_pids())), flush=True)
        next(iterator)  # never returns: every get() blocks
    """
)

CASES = [
    ("forkserver", "sleep"),
    # get() stuck in C code that holds the GIL: the watcher thread cannot run, only the
    # kernel's parent-death signal can end the worker (Linux).
    pytest.param(
        "forkserver",
        "gil",
        marks=pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux"),
    ),
    ("spawn", "sleep"),
    pytest.param(
        "fork",
        "sleep",
        marks=pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork start method"),
    ),
]


@pytest.mark.parametrize("start_method, busy", CASES)
def test_no_process_or_file_survives_a_main_process_killed_while_workers_are_in_get(
    tmp_path, start_method, busy
):
    temp = tmp_path / "tmp"
    markers = tmp_path / "busy"
    temp.mkdir()
    markers.mkdir()
    script = tmp_path / "loader_child.py"
    script.write_text(LOADER_CHILD)
    child = subprocess.Popen(
        [sys.executable, str(script), start_method, busy, str(markers)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(temp),
    )
    try:
        workers = [int(pid) for pid in child.stdout.readline().split()]
        assert len(workers) == 2, child.stderr.read()
        # Both workers have entered get() (each writes a marker first).
        assert wait_until(lambda: len(list(markers.iterdir())) == 2, timeout=60, step=0.05), (
            child.stderr.read()
        )
        descendants = psutil.Process(child.pid).children(recursive=True)
        assert set(workers) <= {p.pid for p in descendants}
        if start_method == "forkserver":
            assert len(descendants) >= 4  # the workers, the forkserver and the resource tracker
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        wait_until(lambda: not any(running(p) for p in descendants), timeout=ORPHAN_WAIT_S, step=0.05)
        orphans = [(p.pid, " ".join(p.cmdline())[:100]) for p in descendants if running(p)]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    for process in descendants:  # never leave strays behind, even when the test fails
        if running(process):
            process.kill()
    assert orphans == [], f"processes outlived the killed main process: {orphans}"
    if busy == "sleep":
        # The forkserver's socket lives in the main process's multiprocessing temp dir; a
        # worker removes it when the main process is gone. (When get() holds the GIL no
        # Python code can run, so only the processes are guaranteed to go.)
        assert list(temp.rglob("*")) == []
