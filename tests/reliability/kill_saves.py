"""The saves the kill test interrupts, one per kind of file ember writes atomically.

A child process (`python kill_saves.py KIND DIR`) writes the two versions of its file once
to `DIR/refs/` (so the test knows what a complete file is), prints `ready`, then saves them
alternately to the same path in `DIR/work/` until it is killed. Each version is a few MB, so
a kill lands inside a write with good odds; the test waits for a scratch file to appear
before it kills.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

KINDS = ("module", "safetensors", "checkpoint", "sqlite")
_ELEMENTS = 1 << 20  # 4 MB of float32 per version


def _arrays(version: int) -> dict[str, np.ndarray]:
    return {"w": np.full(_ELEMENTS, float(version), dtype=np.float32), "b": np.arange(3) + version}


def target_name(kind: str) -> str:
    """File name each kind writes in the work directory."""
    return {
        "module": "model.bpk",
        "safetensors": "model.safetensors",
        "checkpoint": "model-1.bpk",
        "sqlite": "data.db",
    }[kind]


def saver(kind: str, version: int) -> Callable[[Path], None]:
    """A function writing version `version` (0 or 1) of `kind` into a directory."""
    import ember
    from ember.record import save_safetensors, to_bytes

    if kind == "module":
        ember.seed(version)
        module = ember.nn.LinearConfig(1024, 1024).init(device="cpu")
        return lambda directory: module.save_file(directory / target_name(kind))
    if kind == "safetensors":
        arrays = _arrays(version)
        return lambda directory: save_safetensors(directory / target_name(kind), arrays)
    if kind == "checkpoint":
        from ember.train.checkpoint.async_checkpointer import AsyncCheckpointer
        from ember.train.checkpoint.file_checkpointer import FileCheckpointer

        data = to_bytes(_arrays(version))

        def save_checkpoint(directory: Path) -> None:
            checkpointer = AsyncCheckpointer(FileCheckpointer(directory, "model"))
            checkpointer.save(1, data)
            checkpointer.close()

        return save_checkpoint
    if kind == "sqlite":
        from ember.data import SqliteDatasetWriter

        rows = [{"text": f"{version}:{i}:" + "x" * 200, "label": i % 7} for i in range(20_000)]

        def save_sqlite(directory: Path) -> None:
            with SqliteDatasetWriter(directory / target_name(kind), overwrite=True) as writer:
                writer.write_split("train", rows)

        return save_sqlite
    raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")


def main(kind: str, directory: Path) -> None:
    versions = [saver(kind, 0), saver(kind, 1)]
    for version, save in enumerate(versions):
        refs = directory / "refs" / str(version)
        refs.mkdir(parents=True)
        save(refs)
    work = directory / "work"
    work.mkdir()
    versions[0](work)
    print("ready", flush=True)
    while True:
        for save in versions:
            save(work)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
