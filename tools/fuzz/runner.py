"""Run fuzz inputs in child processes, many per child, and count what happened.

Each child (a fresh interpreter, `spawn`) builds the targets' seed files once, caps its
address space (`RLIMIT_AS`), says it is ready, then takes batches `(target, start, count)`:
for every input it writes the mutated file, loads and judges it (`targets`), checks that
its peak RSS stayed within the seed's size times a few plus a constant, and publishes the
index it is working on in shared memory. The parent hands out batches and watches:

- a child that stops advancing for `timeout` seconds is hung on the input it published: it
  is killed, the input counted as a hang, and the rest of the batch handed out again;
- a child that dies (a signal, an exit) crashed on that input, counted likewise;
- a child over its memory bound reports the input as `memory` and is replaced, so one
  input's peak does not hide the next one's.

Inputs are numbered and reproducible (`Target.make_input`), so redone work gives the same
answers and a finding can be written out again by the parent.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import shutil
import signal
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path

from .targets import OUTCOMES, TARGETS, make_target, write_input

__all__ = ["Finding", "Tally", "run"]

COLUMNS = OUTCOMES + ("crash", "hang")
# Peak RSS an input may add, beyond this many times its file size.
MEMORY_CONSTANT = 64 << 20
MEMORY_PER_BYTE = 4
# Address space a child may map beyond what it holds once ready.
ADDRESS_SPACE_MARGIN = 2 << 30


@dataclass
class Finding:
    target: str
    index: int
    outcome: str
    detail: str
    note: str = ""


@dataclass
class Tally:
    """Counts of one target's outcomes (`COLUMNS`) and its findings (not clean/correct)."""

    counts: Counter = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0  # summed over children

    @property
    def inputs(self) -> int:
        return sum(self.counts.values())

    def bad(self) -> int:
        return sum(self.counts[name] for name in ("silent", "unclear", "memory", "crash", "hang"))


# -- child ----------------------------------------------------------------------------------------


def _peak_rss() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if os.uname().sysname == "Darwin" else peak * 1024  # Linux reports KiB


def _address_space() -> int | None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _child(conn, progress, names: list[str], seed: int, workdir: str, memory_constant: int) -> None:
    """Body of a child: set up, then judge batches until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    targets = {name: make_target(name) for name in names}
    mapped = _address_space()
    if mapped is not None and hasattr(resource, "RLIMIT_AS"):
        limit = mapped + ADDRESS_SPACE_MARGIN
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    folder = Path(tempfile.mkdtemp(prefix="child-", dir=workdir))
    conn.send(("ready", os.getpid()))
    try:
        while True:
            task = conn.recv()
            if task is None:
                return
            name, start, count = task
            target = targets[name]
            path = folder / f"input{target.suffix}"
            counts: Counter = Counter()
            findings = []
            began = time.monotonic()
            done = 0
            for index in range(start, start + count):
                progress.value = index
                before = _peak_rss()
                which, data, note = target.make_input(seed, index)
                write_input(path, data)
                verdict = target.judge(path, which, data)
                bound = before + MEMORY_PER_BYTE * len(data) + memory_constant
                peak = _peak_rss()
                if peak > bound and verdict.outcome != "memory":
                    verdict.outcome, verdict.detail = "memory", f"peak RSS rose by {peak - before} bytes"
                counts[verdict.outcome] += 1
                done += 1
                if verdict.outcome not in ("clean", "correct"):
                    findings.append(Finding(name, index, verdict.outcome, verdict.detail, note))
                if verdict.outcome == "memory":
                    break
            leaving = counts["memory"] > 0  # the peak stays up: a fresh child measures the rest
            conn.send(("done", name, start, done, counts, findings, time.monotonic() - began, leaving))
            if leaving:
                return
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- parent ---------------------------------------------------------------------------------------


@dataclass
class _Worker:
    process: multiprocessing.Process
    conn: object
    progress: object
    ready: bool = False
    leaving: bool = False  # said it exits after its last batch
    task: tuple | None = None
    seen: int = -1
    since: float = 0.0


class _Campaign:
    """The parent's side: a queue of batches, the children working on them, the tallies."""

    def __init__(
        self,
        names: list[str],
        inputs: dict[str, int],
        batch: int,
        seed: int,
        workdir: str | None,
        timeout: float,
        memory_constant: int,
    ) -> None:
        self.names, self.seed, self.workdir = names, seed, workdir
        self.timeout, self.memory_constant = timeout, memory_constant
        self.tallies = {name: Tally() for name in inputs}
        self.queue: deque = deque()
        chunks = {
            name: deque((name, s, min(batch, inputs[name] - s)) for s in range(0, inputs[name], batch))
            for name in names
        }
        while any(chunks.values()):  # interleave the targets, so every one progresses
            for name in names:
                if chunks[name]:
                    self.queue.append(chunks[name].popleft())
        self.context = multiprocessing.get_context("spawn")
        self.workers: list[_Worker] = []

    def busy(self) -> bool:
        return bool(self.queue) or any(w.task is not None for w in self.workers)

    def spawn(self) -> None:
        parent_end, child_end = self.context.Pipe()
        progress = self.context.RawValue("q", -1)
        process = self.context.Process(
            target=_child,
            name="ember-fuzz-child",
            daemon=True,
            args=(child_end, progress, self.names, self.seed, self.workdir, self.memory_constant),
        )
        process.start()
        child_end.close()
        self.workers.append(_Worker(process, parent_end, progress))

    def lose(self, worker: _Worker, outcome: str, detail: str) -> None:
        """The child hung or died on the input it published: count it, redo the rest."""
        name, start, count = worker.task
        published = worker.progress.value
        index = published if start <= published < start + count else start
        self.tallies[name].counts[outcome] += 1
        self.tallies[name].findings.append(Finding(name, index, outcome, detail))
        if index + 1 < start + count:
            self.queue.appendleft((name, index + 1, start + count - index - 1))
        if index > start:
            self.queue.appendleft((name, start, index - start))
        worker.task = None

    def step(self) -> None:
        """Hand out work, wait a little, and deal with every child that has news."""
        now = time.monotonic()
        for worker in self.workers:
            if worker.ready and not worker.leaving and worker.task is None and self.queue:
                worker.task = self.queue.popleft()
                worker.seen, worker.since = -1, now
                worker.conn.send(worker.task)
        ready = wait([w.conn for w in self.workers] + [w.process.sentinel for w in self.workers], 0.2)
        gone = [worker for worker in self.workers if not self._check(worker, ready, time.monotonic())]
        for worker in gone:
            self.workers.remove(worker)
            worker.conn.close()
            if self.busy():
                self.spawn()

    def _check(self, worker: _Worker, ready: list, now: float) -> bool:
        """Take a child's message or notice its death or hang; False when it is gone."""
        message = None
        if worker.conn in ready or worker.conn.poll():
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):
                message = None
        if message is not None and message[0] == "ready":
            worker.ready = True
            return True
        if message is not None and message[0] == "done":
            _, name, start, done, counts, findings, seconds, worker.leaving = message
            tally = self.tallies[name]
            tally.counts.update(counts)
            tally.findings.extend(findings)
            tally.seconds += seconds
            count = worker.task[2]
            worker.task = None
            if done < count:  # it stopped early (memory): the rest goes back
                self.queue.appendleft((name, start + done, count - done))
            return True
        if not worker.process.is_alive():
            worker.process.join()
            if not worker.ready:
                raise RuntimeError(
                    f"a fuzz child failed to start (exit code {worker.process.exitcode}); "
                    "its stderr shows why"
                )
            if worker.task is not None:
                self.lose(worker, "crash", f"child exited with {worker.process.exitcode}")
            return False  # crashed, or left as it said it would
        if worker.task is not None:
            if worker.progress.value != worker.seen:
                worker.seen, worker.since = worker.progress.value, now
            elif now - worker.since > self.timeout:
                self.lose(worker, "hang", f"no progress for {self.timeout} s")
                worker.process.kill()
                worker.process.join()
                return False
        return True

    def stop(self) -> None:
        for worker in self.workers:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        for worker in self.workers:
            worker.process.join(5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()


def run(
    inputs: dict[str, int],
    *,
    seed: int = 0,
    jobs: int = 2,
    batch: int = 250,
    timeout: float = 10.0,
    workdir: str | None = None,
    findings_dir: str | os.PathLike | None = None,
    report: Callable[[dict[str, Tally], float], None] | None = None,
    report_every: float = 30.0,
    memory_constant: int = MEMORY_CONSTANT,
) -> dict[str, Tally]:
    """Judge `inputs[target]` inputs of each target in `jobs` child processes.

    Args:
        inputs: target name (see `targets.TARGETS`) -> number of inputs.
        seed: selects the inputs (the same seed, the same inputs).
        jobs: child processes working at once.
        batch: inputs per task sent to a child.
        timeout: seconds one input may take before it counts as a hang.
        workdir: where children write their inputs (default: /dev/shm when it exists).
        findings_dir: if given, each finding's input is written there as a file.
        report: called every `report_every` seconds with the tallies so far.
            Ctrl-C (KeyboardInterrupt) ends the run early with the tallies of the batches
            finished so far.
        memory_constant: bytes of peak RSS an input may add beyond `MEMORY_PER_BYTE` times
            its size.

    Returns:
        target -> `Tally`.
    """
    unknown = sorted(set(inputs) - set(TARGETS))
    if unknown:
        raise ValueError(f"unknown fuzz targets {unknown}; expected some of {sorted(TARGETS)}")
    names = [name for name, count in inputs.items() if count > 0]
    if workdir is None:
        workdir = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    # One folder for the run: a child that is killed (hang) or crashes cannot clean up its
    # own inputs, so the parent removes them all at the end.
    root = tempfile.mkdtemp(prefix="ember-fuzz-", dir=workdir)
    campaign = _Campaign(names, inputs, batch, seed, root, timeout, memory_constant)
    started = last_report = time.monotonic()
    try:
        for _ in range(max(1, min(jobs, len(campaign.queue)))):
            campaign.spawn()
        while campaign.busy():
            campaign.step()
            if report is not None and time.monotonic() - last_report > report_every:
                last_report = time.monotonic()
                report(campaign.tallies, last_report - started)
    except KeyboardInterrupt:
        pass  # stop early: what finished is counted
    finally:
        campaign.stop()
        shutil.rmtree(root, ignore_errors=True)
    if findings_dir is not None:
        _write_findings(campaign.tallies, seed, Path(findings_dir))
    return campaign.tallies


def _write_findings(tallies: dict[str, Tally], seed: int, directory: Path) -> None:
    """Write each finding's input, and a line on it, for reproduction."""
    findings = [f for tally in tallies.values() for f in tally.findings]
    if not findings:
        return
    directory.mkdir(parents=True, exist_ok=True)
    targets = {}
    with open(directory / "findings.txt", "a") as log:
        for finding in findings:
            target = targets.get(finding.target) or targets.setdefault(
                finding.target, make_target(finding.target)
            )
            _, data, note = target.make_input(seed, finding.index)
            name = f"{finding.target}-seed{seed}-{finding.index}-{finding.outcome}{target.suffix}"
            (directory / name).write_bytes(data)
            log.write(f"{name}\t{note}\t{finding.detail}\n")
