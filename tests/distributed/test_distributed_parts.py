"""The parts of ember.distributed that run in one process: the sampler, the output merge, the
gradient mean (over a loopback communicator), the launcher's report and the install hints."""

from __future__ import annotations

import builtins
import json

import numpy as np
import pytest

import ember
from ember import nn
from ember.distributed import (
    Communicator,
    DistributedSampler,
    GradientAverager,
    MissingDistributedDependency,
    PendingCollective,
    global_order,
    merge_fields,
)
from ember.distributed.launch import failure_report, find_mpiexec, rank_environment
from ember.optim import GradientsParams


# ---- sampler ----------------------------------------------------------------------------------
@pytest.mark.parametrize("num_items", [0, 1, 5, 64, 97, 100])
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", [None, 7])
def test_the_ranks_together_read_the_single_process_batches_in_order(num_items, world_size, seed):
    batch = 8
    global_batch = batch * world_size
    shards = [DistributedSampler(num_items, batch, world_size, r, seed).shard(3) for r in range(world_size)]
    order = global_order(num_items, seed, 3)
    steps = -(-num_items // global_batch)
    assert all(len(s.counts) == steps for s in shards)
    offsets = [0] * world_size
    for step in range(steps):
        expected = order[step * global_batch : (step + 1) * global_batch]
        parts = []
        for rank, shard in enumerate(shards):
            held = batch if step < steps - 1 else len(shard.indices) - offsets[rank]
            part = shard.indices[offsets[rank] : offsets[rank] + held]
            offsets[rank] += held
            assert 1 <= len(part) <= batch  # every rank takes part in every step
            parts.append(part[: shard.counts[step]])
            assert shard.step_sizes[step] == len(expected)
        np.testing.assert_array_equal(np.concatenate(parts), expected)
        assert sum(s.weights[step] for s in shards) == pytest.approx(1.0)


def test_a_rank_without_items_in_the_last_step_repeats_one_with_weight_0():
    # 17 items, 2 ranks of 8: the last step holds one item, rank 1 has none of it
    shard = DistributedSampler(17, 8, 2, 1).shard(0)
    assert shard.counts.tolist() == [8, 0]
    assert shard.weights.tolist() == [0.5, 0.0]
    assert shard.indices[-1] == 16  # the step's only item, read again and ignored


def test_the_global_order_is_the_data_loaders():
    from ember.data import DataLoaderBuilder

    class Ids:
        def batch(self, items, device):
            return list(items)

    loader = DataLoaderBuilder(Ids()).batch_size(5).shuffle(11).build(list(range(23)))
    loader.set_epoch(2)
    seen = [i for batch in loader for i in batch]
    assert seen == global_order(23, 11, 2).tolist()


def test_sampler_refuses_bad_counts():
    with pytest.raises(ValueError, match="rank"):
        DistributedSampler(10, 4, 2, 2)
    with pytest.raises(ValueError, match="batch_size"):
        DistributedSampler(10, 0, 2, 0)


# ---- output merge -----------------------------------------------------------------------------
def test_per_sample_fields_are_concatenated_in_rank_order():
    a, b = np.arange(6.0).reshape(3, 2), np.arange(6.0, 10.0).reshape(2, 2)
    np.testing.assert_array_equal(merge_fields("output", [(3, a), (2, b)]), np.concatenate([a, b]))


def test_a_mean_loss_is_weighted_by_the_item_counts():
    merged = merge_fields("loss", [(3, np.float32(1.0)), (1, np.float32(5.0))])
    assert merged == pytest.approx((3 * 1.0 + 1 * 5.0) / 4)
    assert np.asarray(merged).dtype == np.float32


def test_merge_errors_name_the_field():
    with pytest.raises(ValueError, match="'logits'.*beyond the batch"):
        merge_fields("logits", [(2, np.zeros((2, 3))), (2, np.zeros((2, 4)))])
    with pytest.raises(ValueError, match="'predictions' is None on some ranks"):
        merge_fields("predictions", [(2, np.zeros(2)), (2, None)])
    assert merge_fields("predictions", [(2, None), (1, None)]) is None


# ---- gradient mean over a loopback communicator ----------------------------------------------
class _Pending(PendingCollective):
    def wait(self) -> None:
        pass


class _Loopback(Communicator):
    """One rank standing for ``copies`` identical ranks: a sum multiplies by ``copies``."""

    def __init__(self, copies: int = 1):
        self.rank, self.world_size, self.timeout, self.copies = 0, copies, 1.0, copies
        self.sent: list[int] = []

    def start_allreduce_sum(self, array):
        self.sent.append(array.size)
        array *= self.copies
        return _Pending()

    def broadcast_array(self, array, root=0):
        pass

    def allreduce_host(self, array, op="sum"):
        if op == "sum":
            array *= self.copies

    def broadcast_bytes(self, data, root=0):
        return data

    def gather_bytes(self, data, root=0):
        return [data] * self.copies

    def barrier(self):
        pass

    def abort(self, code=1):
        raise AssertionError("abort")


class _Two(nn.Module):
    def __init__(self):
        self.a = nn.LinearConfig(3, 4).init()
        self.b = nn.LinearConfig(4, 2).init()


@pytest.mark.parametrize("device", ["reference", "cpu"])
@pytest.mark.parametrize("bucket_bytes", [1, 40, 1 << 20])
def test_equal_shares_of_identical_gradients_average_to_them(device, bucket_bytes):
    ember.seed(0)
    model = _Two().to(device)
    grads = GradientsParams()
    rng = np.random.default_rng(0)
    expected = {}
    for _, p in model.named_parameters():
        g = rng.normal(size=p.shape).astype(np.float32)
        grads.register(p.id, ember.from_numpy(g, device=device))
        expected[p.id] = g
    comm = _Loopback(copies=4)
    out = GradientAverager(comm, bucket_bytes).average(grads, model, weight=0.25)
    assert sorted(out.ids()) == sorted(expected)
    for pid, g in expected.items():
        np.testing.assert_allclose(out[pid].numpy(), g, rtol=1e-6)
        assert out[pid].device == grads[pid].device and out[pid].dtype == grads[pid].dtype
    if bucket_bytes == 1:  # one tensor per bucket
        assert len(comm.sent) == 4
    if bucket_bytes == 1 << 20:
        assert len(comm.sent) == 1


def test_a_gradient_present_on_no_rank_stays_absent():
    model = _Two()
    grads = GradientsParams()
    only = model.a.weight
    grads.register(only.id, ember.ones(only.shape))
    out = GradientAverager(_Loopback(1)).average(grads, model, weight=1.0)
    assert out.ids() == [only.id]


# ---- launcher ----------------------------------------------------------------------------------
def test_rank_environment_gives_each_rank_its_share_of_the_cores(monkeypatch):
    for name in ("EMBER_NUM_THREADS", "NUMBA_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("ember.distributed.launch._cores", lambda: 8)
    env = rank_environment(2, None, "/tmp/x", 7.0)
    assert env["EMBER_NUM_THREADS"] == env["NUMBA_NUM_THREADS"] == env["OMP_NUM_THREADS"] == "4"
    assert env["EMBER_DISTRIBUTED_RUN_DIR"] == "/tmp/x" and env["EMBER_DISTRIBUTED_TIMEOUT"] == "7.0"
    assert rank_environment(16, None, "/tmp/x", None)["EMBER_NUM_THREADS"] == "1"
    monkeypatch.setenv("EMBER_NUM_THREADS", "3")  # the user's setting wins
    assert rank_environment(2, None, "/tmp/x", None)["EMBER_NUM_THREADS"] == "3"
    assert rank_environment(2, 2, "/tmp/x", None)["EMBER_NUM_THREADS"] == "2"  # unless asked


def test_failure_report_names_the_rank_behind_the_killed_pid(tmp_path):
    (tmp_path / "rank-1.json").write_text(json.dumps({"rank": 1, "world_size": 2, "pid": 4242, "host": "h"}))
    hydra = ["=   PID 4242 RUNNING AT h\n", "=   EXIT CODE: 9\n"]
    line = failure_report(tmp_path, hydra, 9)
    assert "rank 1 of 2 (pid 4242 on h) was killed by SIGKILL" in line
    openmpi = [
        "mpiexec noticed that process rank 3 with PID 77 on node n exited on signal 15 (Terminated).\n"
    ]
    assert "rank 3 (pid 77 on n) was killed by SIGTERM" in failure_report(tmp_path, openmpi, 1)
    (tmp_path / "rank-0.failed").write_text("ember.distributed: rank 0 of 2 failed with ValueError: x")
    assert failure_report(tmp_path, hydra, 1).startswith("ember.distributed: rank 0 of 2 failed")


def test_failure_report_without_a_clue_says_so(tmp_path):
    assert "exited with status 3 (no rank reported why)" in failure_report(tmp_path, [], 3)


def test_missing_mpiexec_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.delenv("EMBER_MPIEXEC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("sys.executable", str(tmp_path / "python"))
    with pytest.raises(FileNotFoundError, match=r'pip install "ember\[distributed\]"'):
        find_mpiexec()


def _without(monkeypatch, *modules):
    real_import = builtins.__import__

    def fake(name, *args, **kwargs):
        if name.split(".")[0] in modules:
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)


def test_missing_mpi4py_says_what_to_install(monkeypatch):
    from ember.distributed import MpiCommunicator

    _without(monkeypatch, "mpi4py")
    with pytest.raises(MissingDistributedDependency, match=r'pip install "ember\[distributed\]"'):
        MpiCommunicator()


def test_missing_cupy_says_what_to_install(monkeypatch):
    from ember.distributed import NcclCommunicator

    _without(monkeypatch, "cupy")
    with pytest.raises(MissingDistributedDependency, match=r"cupy-cuda12x"):
        NcclCommunicator()


def test_ddp_without_mpi_fails_at_launch_with_the_install_hint(monkeypatch, tmp_path):
    from ember.train import DistributedDataParallel

    _without(monkeypatch, "mpi4py")
    with pytest.raises(MissingDistributedDependency, match="mpi4py"):
        DistributedDataParallel().check_supported()
    with pytest.raises(ValueError, match="one device per process"):
        DistributedDataParallel(devices=("cpu", "cpu"))
