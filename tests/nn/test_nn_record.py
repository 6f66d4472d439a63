import numpy as np
import pytest
from helpers.devices import DEV, cpu_available

import ember
from ember import nn
from ember.record import RecordError, load


class Net(nn.Module):
    def __init__(self):
        self.fc = nn.LinearConfig(3, 4).init(DEV)
        self.bn = nn.BatchNormConfig(4).init(DEV)
        self.out = nn.LinearConfig(4, 2, bias=False).init(DEV)

    def forward(self, x):
        return self.out(self.bn(self.fc(x)))


def test_into_record_is_a_host_snapshot_with_ids():
    net = Net()
    rec = net.into_record()
    assert list(rec) == [
        "fc.weight",
        "fc.bias",
        "bn.gamma",
        "bn.beta",
        "bn.running_mean",
        "bn.running_var",
        "out.weight",
    ]
    entry = rec["fc.weight"]
    assert isinstance(entry.array, np.ndarray) and entry.param_id == net.fc.weight.id
    net.fc.weight.set_value(net.fc.weight.value * 0.0)
    assert np.abs(rec["fc.weight"].array).sum() > 0  # a copy, not a view
    group = net.into_record(lambda path, pid: path.startswith("fc"))
    assert list(group) == ["fc.weight", "fc.bias"]


def test_file_round_trip_keeps_values_and_ids(tmp_path):
    ember.seed(0)
    net = Net()
    net(ember.randn(5, 3, device=DEV))  # moves the running statistics
    path = net.save_file(tmp_path / "net.bpk", metadata={"epoch": "3"})
    raw = load(path)
    assert raw.param_ids["fc.weight"] == int(net.fc.weight.id) and raw.metadata == {"epoch": "3"}
    other = Net()
    assert other.fc.weight.id != net.fc.weight.id
    out = other.load_file(path)
    assert out is other
    for (p1, a), (p2, b) in zip(net.named_parameters(), other.named_parameters()):
        assert p1 == p2 and a.id == b.id
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert b.is_require_grad() == a.is_require_grad()
    assert other.fc.weight.value.is_require_grad() and other.fc.weight.value._node.is_leaf


def test_bytes_round_trip_and_plain_mappings():
    net = Net()
    data = net.into_record().to_bytes()
    other = Net().load_record(nn.ModuleRecord.from_bytes(data))
    np.testing.assert_array_equal(other.out.weight.numpy(), net.out.weight.numpy())
    mapping = {p: par.numpy() for p, par in net.named_parameters()}
    third = Net().load_record(mapping)
    np.testing.assert_array_equal(third.fc.bias.numpy(), net.fc.bias.numpy())


def test_missing_and_unused_are_reported_and_nothing_changes(tmp_path):
    net = Net()
    rec = dict(net.into_record())
    del rec["bn.gamma"]
    rec["extra.weight"] = rec["fc.weight"]
    target = Net()
    before = target.fc.weight.numpy().copy()
    with pytest.raises(RecordError) as info:
        target.load_record(rec)
    msg = str(info.value)
    assert (
        "missing from the record (1): ['bn.gamma']" in msg
        and "not in the module (1): ['extra.weight']" in msg
    )
    assert "Nothing was loaded" in msg
    np.testing.assert_array_equal(target.fc.weight.numpy(), before)
    target.load_record(nn.ModuleRecord(rec).allow_partial().allow_unused())
    np.testing.assert_array_equal(target.fc.weight.numpy(), net.fc.weight.numpy())
    Net().load_record(rec, strict=False)
    path = net.save_file(tmp_path / "full")
    small = nn.LinearConfig(3, 4).init(DEV)
    with pytest.raises(RecordError, match="not in the module"):
        small.load_file(path)


def test_shape_and_kind_mismatches_name_the_path():
    net = Net()
    rec = dict(net.into_record())
    rec["fc.weight"] = np.zeros((4, 3), np.float32)
    rec["fc.bias"] = np.zeros(4, np.int64)
    with pytest.raises(RecordError) as info:
        Net().load_record(rec)
    msg = str(info.value)
    assert "fc.weight: shape mismatch, expected [3, 4] (float32) but the record has [4, 3] (float32)" in msg
    assert "fc.bias: dtype mismatch, expected a float tensor (float32) but the record has int64" in msg


def test_dtype_policies():
    net = Net().to(ember.float64)
    rec = net.into_record()
    from_record = Net().load_record(rec)
    assert from_record.fc.weight.dtype is ember.float64
    cast = Net().load_record(rec.with_dtype_policy(nn.DTypePolicy.CastToModule))
    assert cast.fc.weight.dtype is ember.float32
    np.testing.assert_allclose(cast.fc.weight.numpy(), net.fc.weight.numpy(), rtol=1e-7)
    cast2 = Net().load_record(rec, dtype_policy="CastToModule")
    assert cast2.bn.running_var.dtype is ember.float32


def test_frozen_flags_survive_loading():
    net = Net()
    target = Net()
    target.fc.freeze()
    target.load_record(net.into_record())
    assert not target.fc.weight.is_require_grad() and not target.fc.weight.value.is_require_grad()
    assert target.out.weight.is_require_grad()


@pytest.mark.skipif(not cpu_available(), reason="cpu backend not importable yet")
def test_records_are_device_agnostic(tmp_path):
    net = Net()
    path = net.save_file(tmp_path / "ref.bpk")
    on_cpu = Net().to("cpu").load_file(path)
    assert on_cpu.devices() == [ember.Device("cpu")]
    np.testing.assert_array_equal(on_cpu.fc.weight.numpy(), net.fc.weight.numpy())
