"""``FileCheckpointer``: one kind of record (model, optim, scheduler) per epoch as
``<dir>/<name>-<epoch>.bpk`` (Burn's ``FileCheckpointer``, ``checkpoint/file.rs``).

Records travel as burnpack bytes, serialised by the caller at the moment of the checkpoint,
so writing them later (in a background thread) can never see a half-updated model. Each file
is written atomically: a kill at any moment leaves either the previous file or the new one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from ember.record.atomic import atomic_write_bytes

__all__ = ["Checkpointer", "FileCheckpointer"]


class Checkpointer(Protocol):
    """Saves, restores and deletes one kind of record by epoch (Burn's ``Checkpointer``)."""

    def save(self, epoch: int, data: bytes) -> None: ...

    def restore(self, epoch: int) -> bytes: ...

    def delete(self, epoch: int) -> None: ...


class FileCheckpointer:
    """Burnpack files ``<directory>/<name>-<epoch>.bpk``.

    Args:
        directory: created on the first save.
        name: the file stem (``"model"``, ``"optim"``, ``"scheduler"``).
    """

    def __init__(self, directory: str | os.PathLike, name: str):
        self.directory = Path(directory)
        self.name = name

    def path(self, epoch: int) -> Path:
        return self.directory / f"{self.name}-{int(epoch)}.bpk"

    def save(self, epoch: int, data: bytes) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path(epoch), data)

    def restore(self, epoch: int) -> bytes:
        path = self.path(epoch)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            have = (
                sorted(p.name for p in self.directory.glob(f"{self.name}-*.bpk"))
                if self.directory.is_dir()
                else []
            )
            raise FileNotFoundError(
                f"checkpoint: no {self.name} checkpoint for epoch {epoch} at {path}; "
                f"available: {have or 'none'}"
            ) from None

    def delete(self, epoch: int) -> None:
        try:
            self.path(epoch).unlink()
        except FileNotFoundError:
            pass

    def __repr__(self) -> str:
        return f"FileCheckpointer({str(self.directory)!r}, {self.name!r})"
