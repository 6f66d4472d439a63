"""The autotune cache on disk: one JSON-lines file of decisions per op, in a folder per ember
version and machine fingerprint, shared by every process through a file lock.

    <cache>/<ember version>/<machine>/machine.json      the fingerprint, for a reader
    <cache>/<ember version>/<machine>/<op>.jsonl        one decision a line, appended only

A line is ``{"key", "source", "winner", "level", "times_ms", "at"}``: the input class it was
measured for, the hash of the candidates' source (a changed kernel does not match its old
decisions, which stay as history), the winning candidate, the tuning level and each
candidate's median time. Lines are never rewritten. A line that does not parse (a process
killed mid-write, a hand edit) is skipped with one warning per file and measured again.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import warnings
from pathlib import Path

from ember import config
from ember._version import __version__

from .fingerprint import fingerprint, folder_name

__all__ = ["Store", "cache_folder"]

#: how long a process waits for another one tuning the same op before measuring anyway
LOCK_TIMEOUT_S = 120.0


def cache_folder(where=None, machine: dict | None = None) -> Path | None:
    """The folder of this version's and machine's decisions for ``[autotune] cache`` (or
    ``where``): ``"user"`` under the kernel cache directory, ``"project"`` beside the
    configuration file in effect (else the working directory), a path as given; None for
    ``"off"`` (decisions kept in memory only)."""
    where = config.get("autotune.cache") if where is None else where
    if where == "off":
        return None
    if where == "user":
        root = Path(config.get("compile.cache_dir")) / "autotune"
    elif where == "project":
        file = config.config_file().path
        root = (file.parent if file is not None else Path.cwd()) / ".ember" / "autotune"
    else:
        root = Path(where)
    return root / __version__ / folder_name(machine or fingerprint())


class _OpFile:
    """What this process has read of one op's file: the decisions by (key, source), and how
    far it has read."""

    def __init__(self, path: Path):
        self.path = path
        self.decisions: dict[tuple[str, str], dict] = {}
        self.offset = 0
        self.warned = False

    def read_new(self, truncated_tail_is_corrupt: bool) -> None:
        """Read the lines appended since the last read. An unterminated last line is another
        process's write in progress, unless the caller holds the lock (then it is a write
        that was cut short: unreadable)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return
        end = len(data) if truncated_tail_is_corrupt else data.rfind(b"\n") + 1
        bad = 0
        for raw in data[:end].splitlines():
            if not raw.strip():
                continue
            entry = _parse(raw)
            if entry is None:
                bad += 1
            else:
                self.decisions[(entry["key"], entry["source"])] = entry  # the last line wins
        self.offset += end
        if bad and not self.warned:
            self.warned = True
            warnings.warn(
                f"ember autotune: skipped {bad} unreadable line(s) of {self.path} (a process stopped "
                f"mid-write, or an edit); those inputs are measured again",
                RuntimeWarning,
                stacklevel=5,
            )


def _parse(raw: bytes) -> dict | None:
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    ok = (
        isinstance(entry, dict)
        and all(isinstance(entry.get(k), str) for k in ("key", "source", "winner", "level"))
        and isinstance(entry.get("times_ms", {}), dict)
    )
    return entry if ok else None


class Store:
    """The decisions of one cache folder, or of this process only (``folder=None``)."""

    def __init__(self, folder: Path | None, machine: dict | None = None):
        self.folder = folder
        self.machine = machine  # written to machine.json (None: this machine's fingerprint)
        self._files: dict[str, _OpFile] = {}
        self._memory: dict[tuple[str, str, str], dict] = {}

    def _file(self, op: str) -> _OpFile:
        file = self._files.get(op)
        if file is None:
            file = self._files[op] = _OpFile(self.folder / f"{op}.jsonl")
            file.read_new(truncated_tail_is_corrupt=False)
        return file

    def lookup(self, op: str, key: str, source: str, fresh: bool = False) -> dict | None:
        """The decision stored for ``key`` measured with these sources, or None. ``fresh``
        reads what other processes appended since (call it holding :meth:`locked`)."""
        if self.folder is None:
            return self._memory.get((op, key, source))
        file = self._file(op)
        if fresh:
            file.read_new(truncated_tail_is_corrupt=True)
        return file.decisions.get((key, source))

    @contextlib.contextmanager
    def locked(self, op: str):
        """Hold ``op``'s file lock: one process measures a key while the others wait for its
        decision. Past :data:`LOCK_TIMEOUT_S` (a hung process) the caller goes on unlocked."""
        if self.folder is None:
            yield
            return
        from filelock import FileLock, Timeout  # late: filelock (only when a cache folder is used)

        self._prepare()
        lock = FileLock(str(self.folder / f"{op}.jsonl.lock"))
        try:
            lock.acquire(timeout=LOCK_TIMEOUT_S)
        except Timeout:
            warnings.warn(
                f"ember autotune: {lock.lock_file} held for over {LOCK_TIMEOUT_S:.0f} s; measuring without it",
                RuntimeWarning,
                stacklevel=3,
            )
            yield
            return
        try:
            yield
        finally:
            lock.release()

    def append(self, op: str, entry: dict) -> None:
        """Add a decision (call it holding :meth:`locked`)."""
        entry = {**entry, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        if self.folder is None:
            self._memory[(op, entry["key"], entry["source"])] = entry
            return
        file = self._file(op)
        line = json.dumps(entry, sort_keys=True) + "\n"
        try:
            with open(file.path, "ab") as f:
                if f.tell() and not _ends_with_newline(file.path):
                    line = "\n" + line  # after a line cut short: start a line of our own
                f.write(line.encode())
                f.flush()
                os.fsync(f.fileno())
        except OSError as error:
            warnings.warn(
                f"ember autotune: cannot write {file.path} ({error}); the decision is kept for this process only",
                RuntimeWarning,
                stacklevel=3,
            )
        file.decisions[(entry["key"], entry["source"])] = entry

    def _prepare(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        machine = self.folder / "machine.json"
        if not machine.exists():
            tmp = machine.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(self.machine or fingerprint(), indent=1) + "\n", encoding="utf-8")
            os.replace(tmp, machine)  # atomic: a reader sees the whole file or none


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"
