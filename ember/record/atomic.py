"""Write a file so that a crash or an error never leaves a partial file at its path.

The content goes to a scratch sibling ``<name>.<pid>-<n>.tmp`` in the same directory (so the
final rename stays on one filesystem), is flushed and fsynced, and is then renamed over the
destination with ``os.replace``; the directory is fsynced afterwards so the rename itself
survives power loss. On any exception (KeyboardInterrupt included) the scratch file is
removed and the destination is left exactly as it was. Only a hard kill (SIGKILL, power
loss) can strand a scratch file; the next save to the same path removes the scratch files
of that path whose writer process is gone (POSIX; a live writer's file, or one whose pid
has been reused by a running process, is left alone).

:func:`atomic_path` serves libraries that write a file by name; some (safetensors) write
through their own temporary file beside that name, so the name is inside a private scratch
directory ``<name>.<pid>-<n>.tmpdir/``, removed the same way as a scratch file.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_path", "atomic_write_bytes", "atomic_writer", "fsync_path", "remove_stale_scratch"]

_COUNTER = itertools.count()


def _writer_gone(pid: int) -> bool:
    """Whether no process ``pid`` can still be writing (it does not exist, or is a zombie)."""
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: it exists (another user's process)
        return False
    try:  # Linux: a killed child its parent has not reaped yet is a zombie, not a writer
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def remove_stale_scratch(path: str | os.PathLike) -> list[Path]:
    """Remove the scratch files ``<name>.<pid>-<n>.tmp`` (and scratch directories
    ``<name>.<pid>-<n>.tmpdir``) of ``path`` left by writers that were killed mid-write
    (their process is gone); returns the paths removed.

    A scratch file whose pid belongs to a running process is never touched. Only POSIX
    systems can tell, elsewhere nothing is removed; errors (a file removed meanwhile, a
    directory that cannot be listed) are ignored.
    """
    if os.name != "posix":
        return []
    destination = Path(path)
    pattern = re.compile(re.escape(destination.name) + r"\.([0-9]+)-[0-9]+\.tmp(dir)?")
    removed = []
    try:
        entries = list(os.scandir(destination.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or not _writer_gone(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            if match.group(2) is None and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
            elif match.group(2) is not None and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
                removed.append(Path(entry.path))
    return removed


def _open_scratch(destination: Path) -> tuple[Path, BinaryIO]:
    remove_stale_scratch(destination)  # before writing: they may be what filled the disk
    while True:
        scratch = destination.with_name(f"{destination.name}.{os.getpid()}-{next(_COUNTER)}.tmp")
        try:
            # O_EXCL: never reuse or follow a file or link that is already there; the
            # 0o666 mode lets the process umask decide permissions, like a normal open().
            fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        return scratch, os.fdopen(fd, "wb")


def fsync_path(path: str | os.PathLike, directory: bool = False) -> None:
    """Flush ``path`` (a closed file, or with ``directory`` a directory, so that a rename in it
    lasts) to disk."""
    if directory and os.name != "posix":
        return  # no portable directory fsync elsewhere
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Context manager yielding a binary file whose content replaces ``path`` on success.

    Args:
        path: the destination; its directory must exist.

    Example:
        >>> with atomic_writer("model.bpk") as f:   # doctest: +SKIP
        ...     f.write(data)
    """
    destination = Path(path)
    scratch, handle = _open_scratch(destination)
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(scratch, destination)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise
    fsync_path(destination.parent, directory=True)


def _make_scratch_directory(destination: Path) -> Path:
    remove_stale_scratch(destination)
    while True:
        scratch = destination.with_name(f"{destination.name}.{os.getpid()}-{next(_COUNTER)}.tmpdir")
        try:
            os.mkdir(scratch, 0o700)  # fails if anything already has the name
        except FileExistsError:
            continue
        return scratch


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Context manager yielding a scratch path to write by name (for libraries that take a
    file name); on success it is fsynced and renamed over ``path``, on error removed.

    The path lies inside a private scratch directory beside ``path``, so temporary files
    the library makes next to it are removed with it, even after a kill (by the next save).

    Args:
        path: the destination; its directory must exist.
    """
    destination = Path(path)
    directory = _make_scratch_directory(destination)
    scratch = directory / destination.name
    try:
        yield scratch
        fd = os.open(scratch, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(scratch, destination)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    shutil.rmtree(directory, ignore_errors=True)
    fsync_path(destination.parent, directory=True)


def atomic_write_bytes(path: str | os.PathLike, data: bytes | bytearray | memoryview) -> None:
    """Atomically replace ``path`` with ``data`` (see :func:`atomic_writer`).

    Args:
        path: the destination file.
        data: the complete new content.
    """
    with atomic_writer(path) as handle:
        handle.write(data)
