"""The run-directory checks the training scripts make before any work (exit 2 on a bad one).

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.run_dir import check_run_dir``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def check_run_dir(parser: argparse.ArgumentParser, artifact_dir: str, resume: int | None) -> None:
    """Refuse with ``parser.error`` (exit 2), before any work, an ``--artifact-dir`` that cannot
    hold a run (a file, or a directory that cannot be created or written) and a ``--resume
    EPOCH`` without a complete checkpoint of that epoch (its list of the ones there)."""
    from ember.train.checkpoint.file_checkpointer import FileCheckpointer

    path = Path(artifact_dir).expanduser()
    if path.exists() and not path.is_dir():
        parser.error(f"--artifact-dir {artifact_dir}: a file, not a directory; pass --artifact-dir DIR")
    existing = path
    while not existing.exists():  # the deepest existing folder is where the run would be created
        existing = existing.parent
    if not existing.is_dir():
        parser.error(
            f"--artifact-dir {artifact_dir}: {existing} is a file, so the directory cannot be created"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "is not writable" if existing == path else f"cannot be created ({existing} is not writable)"
        parser.error(f"--artifact-dir {artifact_dir}: the directory {what}; pass --artifact-dir DIR")
    if resume is None:
        return
    # A checkpoint is complete once its "training" record (written last) exists.
    marker = FileCheckpointer(path / "checkpoint", "training")
    if not marker.path(resume).is_file():
        epochs = sorted(
            int(p.stem.rsplit("-", 1)[1])
            for p in marker.directory.glob("training-*.bpk")
            if p.stem.rsplit("-", 1)[1].isdigit()
        )
        have = ", ".join(map(str, epochs)) if epochs else "none"
        parser.error(
            f"--resume {resume}: no complete checkpoint of epoch {resume} in {marker.directory} "
            f"(complete epochs there: {have})"
        )
