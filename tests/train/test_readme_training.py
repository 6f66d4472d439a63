"""The README's training script runs as written: trains, checkpoints, resumes, summarises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def training_script() -> str:
    section = README.read_text().split("## Training (`ember.train`)", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    scripts = [b for b in blocks if "SupervisedTraining(" in b and "__main__" in b]
    assert len(scripts) == 1, "the README's training section should hold one complete script"
    return scripts[0]


def test_readme_training_script_runs(tmp_path):
    (tmp_path / "train_spirals.py").write_text(training_script())
    env = dict(os.environ, EMBER_RENDERER="cli")
    done = subprocess.run(
        [sys.executable, "train_spirals.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Learner Summary" in done.stdout and "Total Epochs: 6" in done.stdout
    accuracy = float(done.stdout.strip().splitlines()[-1].split(":")[-1])
    assert accuracy > 95.0
    run = tmp_path / "artifacts" / "spirals"
    assert (run / "model.bpk").exists() and (run / "experiment.log").exists()
    assert (run / "train" / "epoch-5" / "Loss.log").exists() and (
        run / "valid" / "epoch-6" / "Accuracy.log"
    ).exists()
    assert "Resuming from the checkpoint of epoch 4" in (run / "experiment.log").read_text()
