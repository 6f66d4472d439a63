"""Write a file so that a crash or an error never leaves a partial file at its path.

The content goes to a scratch sibling ``<name>.<pid>-<n>.tmp`` in the same directory (so the
final rename stays on one filesystem), is flushed and fsynced, and is then renamed over the
destination with ``os.replace``; the directory is fsynced afterwards so the rename itself
survives power loss. On any exception (KeyboardInterrupt included) the scratch file is
removed and the destination is left exactly as it was. Only a hard kill (SIGKILL, power
loss) can strand a scratch file; its name makes it recognisable and safe to delete.
"""
from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path
from typing import BinaryIO, Iterator

__all__ = ["atomic_writer", "atomic_path", "atomic_write_bytes"]

_COUNTER = itertools.count()


def _open_scratch(destination: Path) -> tuple[Path, BinaryIO]:
    while True:
        scratch = destination.with_name(f"{destination.name}.{os.getpid()}-{next(_COUNTER)}.tmp")
        try:
            # O_EXCL: never reuse or follow a file or link that is already there; the
            # 0o666 mode lets the process umask decide permissions, like a normal open().
            fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                         | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        return scratch, os.fdopen(fd, "wb")


def _fsync_directory(directory: Path) -> None:
    if os.name != "posix":
        return  # no portable directory fsync elsewhere
    fd = os.open(directory, os.O_RDONLY)
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
    _fsync_directory(destination.parent)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Context manager yielding a scratch path to write by name (for libraries that take a
    file name); on success it is fsynced and renamed over ``path``, on error removed.

    Args:
        path: the destination; its directory must exist.
    """
    destination = Path(path)
    scratch, handle = _open_scratch(destination)
    handle.close()
    try:
        yield scratch
        fd = os.open(scratch, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(scratch, destination)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise
    _fsync_directory(destination.parent)


def atomic_write_bytes(path: str | os.PathLike, data: bytes | bytearray | memoryview) -> None:
    """Atomically replace ``path`` with ``data`` (see :func:`atomic_writer`).

    Args:
        path: the destination file.
        data: the complete new content.
    """
    with atomic_writer(path) as handle:
        handle.write(data)
