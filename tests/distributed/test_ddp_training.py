"""Data-parallel training end to end: ``mpiexec -n 2`` runs of a small classifier against one
process with the global batch (the issue's tests: same weights, artifacts once, exact metrics,
a failed rank ends the job quickly and by name, resume with another number of ranks)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mpi_run import artifact_files, assert_same_weights, needs_mpi, ok, run_toy, weights

from ember.train.logger import read_aggregate

pytestmark = needs_mpi


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """One process, batch 32, 2 epochs over 97 items (the last step holds one item)."""
    directory = tmp_path_factory.mktemp("single")
    ok(run_toy(directory, "--batch-size", "32", "--n-train", "97"))
    return directory


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ddp")
    ok(run_toy(directory, "--batch-size", "16", "--n-train", "97", ranks=2))
    return directory


def _log_lines(directory, relative: str) -> list[str]:
    return (Path(directory) / relative).read_text().splitlines()


def test_two_ranks_end_with_the_weights_of_one_process_with_the_global_batch(single, two_ranks):
    assert_same_weights(weights(single), weights(two_ranks, 0))
    # every rank holds the same model (rank 1 started from other weights: rank 0's were broadcast)
    assert_same_weights(weights(two_ranks, 0), weights(two_ranks, 1), atol=0)


def test_artifacts_are_written_once_by_rank_0(single, two_ranks):
    assert artifact_files(two_ranks) == artifact_files(single)
    log = (two_ranks / "experiment.log").read_text()
    assert log.count("Starting training for 2 epochs") == 1
    assert log.count("Training ended.") == 1
    # one line per step and a final one: a second writer would double or clobber them
    assert len(_log_lines(two_ranks, "train/epoch-1/Loss.log")) == 4 + 1


@pytest.mark.parametrize("split", ["train", "valid"])
@pytest.mark.parametrize("metric", ["Loss", "Accuracy"])
def test_metric_aggregates_equal_the_single_process_run(single, two_ranks, split, metric):
    for epoch in (1, 2):
        relative = f"{split}/epoch-{epoch}/{metric}.log"
        expected = read_aggregate(single / relative)
        assert expected is not None
        assert read_aggregate(two_ranks / relative) == pytest.approx(expected, rel=1e-6)
        one, two = _log_lines(single, relative), _log_lines(two_ranks, relative)
        # per step: the same value and the same count (the global batch's, not one rank's)
        assert [line.split(",")[1] for line in two] == [line.split(",")[1] for line in one]
        assert [float(line.split(",")[0]) for line in two] == pytest.approx(
            [float(line.split(",")[0]) for line in one], rel=1e-6
        )


def test_gradient_accumulation_matches_one_process(tmp_path):
    ok(run_toy(tmp_path / "one", "--batch-size", "32", "--accumulate", "2", "--epochs", "1"))
    ok(run_toy(tmp_path / "two", "--batch-size", "16", "--accumulate", "2", "--epochs", "1", ranks=2))
    assert_same_weights(weights(tmp_path / "one"), weights(tmp_path / "two"))


def test_the_cpu_backend_trains_the_same_across_ranks(tmp_path):
    args = ("--backend", "cpu", "--epochs", "1", "--n-train", "64")
    ok(run_toy(tmp_path / "one", "--batch-size", "32", *args, timeout=120))
    ok(run_toy(tmp_path / "two", "--batch-size", "16", *args, ranks=2, timeout=120))
    assert_same_weights(weights(tmp_path / "one"), weights(tmp_path / "two"))


def test_a_rank_killed_mid_epoch_ends_the_job_with_an_error_naming_it(tmp_path):
    code, _, err, seconds = run_toy(tmp_path, "--fail", "1:kill:6", ranks=2, launcher=True, timeout=60)
    assert code != 0
    assert seconds < 30
    assert "rank 1 of 2" in err and "SIGKILL" in err, err[-2000:]
    assert not (tmp_path / "weights-rank0.npz").exists()


def test_a_rank_that_raises_aborts_every_rank_and_is_named(tmp_path):
    code, _, err, seconds = run_toy(tmp_path, "--fail", "1:raise:3", ranks=2, timeout=60)
    assert code != 0
    assert seconds < 30
    assert "rank 1 of 2" in err and "deliberate failure at training step 3" in err, err[-2000:]


def test_a_hung_rank_is_detected_by_the_collective_timeout(tmp_path):
    code, _, err, seconds = run_toy(
        tmp_path,
        "--fail",
        "1:hang:3",
        ranks=2,
        launcher=True,
        timeout=60,
        extra_env={"EMBER_DISTRIBUTED_TIMEOUT": "3"},
    )
    assert code != 0
    assert seconds < 30
    assert "DistributedTimeoutError" in err and "rank 0 of 2 waited 3 s" in err, err[-2000:]


def test_an_interrupt_on_one_rank_stops_every_rank_and_resumes_in_one_process(single, tmp_path):
    """2 ranks stopped at step 2 of epoch 2 (asked on rank 1), finished by one process."""
    ok(run_toy(tmp_path, "--batch-size", "16", "--n-train", "97", "--fail", "1:stop:6", ranks=2))
    assert (tmp_path / "checkpoint" / "training-2.bpk").exists()
    ok(run_toy(tmp_path, "--batch-size", "32", "--n-train", "97", "--resume", "2"))
    assert_same_weights(weights(single), weights(tmp_path))


def test_a_one_process_checkpoint_resumes_on_two_ranks(single, tmp_path):
    ok(run_toy(tmp_path, "--batch-size", "32", "--n-train", "97", "--epochs", "1"))
    ok(run_toy(tmp_path, "--batch-size", "16", "--n-train", "97", "--resume", "1", ranks=2))
    assert_same_weights(weights(single), weights(tmp_path, 0))
    assert_same_weights(weights(single), weights(tmp_path, 1))
