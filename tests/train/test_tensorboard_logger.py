"""TensorBoardLogger: the event files a SupervisedTraining run writes, read back record by
record (TFRecord framing with its CRCs, tensorboardX's Event protobuf), hold every batch
value and epoch aggregate of the Burn file logs, under the documented tags and steps."""

from __future__ import annotations

import io
import struct
import sys
from pathlib import Path

import pytest
from helpers import train_toy as toy

from ember.train import FileMetricLogger, TensorBoardLogger
from ember.train.renderer import CliMetricsRenderer

Event = pytest.importorskip("tensorboardX.proto.event_pb2").Event
masked_crc32c = pytest.importorskip("tensorboardX.record_writer").masked_crc32c


def read_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] from every event file in ``folder``, checking each record's CRCs."""
    scalars: dict[str, list[tuple[int, float]]] = {}
    files = sorted(folder.glob("events.out.tfevents.*"))
    assert files, f"no event file in {folder}"
    for path in files:
        data, pos = path.read_bytes(), 0
        while pos < len(data):
            header = data[pos : pos + 8]
            (length,) = struct.unpack("<Q", header)
            assert struct.unpack("<I", data[pos + 8 : pos + 12])[0] == masked_crc32c(header)
            body = data[pos + 12 : pos + 12 + length]
            assert struct.unpack("<I", data[pos + 12 + length : pos + 16 + length])[0] == masked_crc32c(body)
            pos += 16 + length
            event = Event.FromString(body)
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def log_lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_run_writes_every_step_and_epoch_scalar(tmp_path):
    epochs, board = 2, tmp_path / "board"
    training = (
        toy.training(tmp_path, epochs=epochs, renderer=CliMetricsRenderer(stream=io.StringIO()))
        .with_metric_logger(FileMetricLogger(tmp_path))
        .with_metric_logger(TensorBoardLogger(board))
    )
    training.launch(toy.learner())

    for split, metrics in (("train", ("Loss", "Accuracy", "Learning Rate")), ("valid", ("Loss", "Accuracy"))):
        scalars = read_scalars(board / split)
        for name in metrics:
            tag = name.replace(" ", "_")
            batches, finals = [], []
            for epoch in range(1, epochs + 1):
                lines = log_lines(tmp_path / split / f"epoch-{epoch}" / f"{tag}.log")
                batches += [float(line.split(",")[0]) for line in lines[:-1]]
                finals.append((epoch, float(lines[-1].split(",")[0])))
            steps = scalars[f"step/{tag}"]
            assert [s for s, _ in steps] == list(range(1, len(batches) + 1))
            # event files hold float32 values
            assert [v for _, v in steps] == pytest.approx(batches, rel=1e-6, abs=1e-7)
            epoch_points = scalars[f"epoch/{tag}"]
            assert [s for s, _ in epoch_points] == [e for e, _ in finals]
            assert [v for _, v in epoch_points] == pytest.approx([v for _, v in finals], rel=1e-6)
    assert "step/Learning_Rate" not in read_scalars(board / "valid")


def test_entries_map_to_tags_steps_and_values(tmp_path):
    logger = TensorBoardLogger(tmp_path)
    logger.log("train", 1, "Top-5 Accuracy", "50,16")
    logger.log("train", 1, "Top-5 Accuracy", "75,16")
    logger.log("train", 1, "Notes", "some text, not a number")  # a text metric: skipped
    logger.log("train", 1, "Top-5 Accuracy", "62.5,final")
    logger.end_split("train", 1)
    logger.log("train", 2, "Top-5 Accuracy", "0.5")
    logger.log("train", 2, "Top-5 Accuracy", "80,final")
    assert logger.read_numeric("train", "Top-5 Accuracy", 1) == 62.5
    assert logger.read_numeric("train", "Top-5 Accuracy", 3) is None
    logger.close()
    assert read_scalars(tmp_path / "train") == {
        "step/Top-5_Accuracy": [(1, 50.0), (2, 75.0), (3, 0.5)],
        "epoch/Top-5_Accuracy": [(1, 62.5), (2, 80.0)],
    }


def test_missing_tensorboardx_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import fails as if not installed
    with pytest.raises(ImportError, match=r'pip install "ember\[interop\]"'):
        TensorBoardLogger(tmp_path)
