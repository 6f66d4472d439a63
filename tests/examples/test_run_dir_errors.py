"""A bad ``--artifact-dir`` or ``--resume EPOCH`` is a usage error (exit 2, one line, no
traceback) raised before any work, in every training script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from text_classification import ag_news_finetune, db_pedia_train, demo, training

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "text_classification" / "db_pedia_train.py"


@pytest.fixture
def no_training(monkeypatch):
    """Training must not start: reaching it fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("training started despite a bad --artifact-dir / --resume")

    monkeypatch.setattr(training, "train", refuse)


@pytest.mark.parametrize("script", [db_pedia_train, ag_news_finetune, demo])
def test_a_file_as_artifact_dir_is_a_usage_error(script, tmp_path, no_training, usage_error):
    afile = tmp_path / "afile"
    afile.write_text("")
    err = usage_error(script.main, ["--source", "synthetic", "--artifact-dir", str(afile)])
    assert f"--artifact-dir {afile}: a file, not a directory" in err


def test_a_directory_below_a_file_is_a_usage_error(tmp_path, no_training, usage_error):
    (tmp_path / "afile").write_text("")
    err = usage_error(db_pedia_train.main, ["--artifact-dir", str(tmp_path / "afile" / "run")])
    assert "cannot be created" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes everywhere")
def test_an_unwritable_directory_is_a_usage_error(tmp_path, no_training, usage_error):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    err = usage_error(db_pedia_train.main, ["--artifact-dir", str(locked / "run")])
    assert "cannot be created" in err and "not writable" in err


@pytest.mark.parametrize("script", [db_pedia_train, ag_news_finetune, demo])
def test_resume_without_that_checkpoint_lists_the_complete_ones(script, tmp_path, no_training, usage_error):
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    for name in ("training-1.bpk", "model-1.bpk", "model-2.bpk"):  # epoch 2 never completed
        (folder / name).write_bytes(b"")
    argv = ["--source", "synthetic", "--artifact-dir", str(tmp_path), "--resume", "2"]
    if script is demo:
        argv += ["--model", "transformer"]
    err = usage_error(script.main, argv)
    assert f"--resume 2: no complete checkpoint of epoch 2 in {folder} (complete epochs there: 1)" in err


def test_the_script_ends_with_one_line_not_a_traceback(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--source",
            "synthetic",
            "--artifact-dir",
            str(tmp_path),
            "--resume",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        "--resume 3: no complete checkpoint of epoch 3" in done.stderr
        and "complete epochs there: none" in done.stderr
    )
