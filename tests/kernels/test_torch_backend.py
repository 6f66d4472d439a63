"""The ``torch`` backend itself: its devices, the contract, conversions to and from the other
backends (zero-copy with ``cpu`` where the layout allows), records across backends bit for bit,
generator states by name, and the dropout hash bit-identical to the reference's.

Its conformance is the suites' ``device`` fixture (``tests/conftest.py``); these are the
things only this backend has.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install ember[torch])")

import ember  # noqa: E402
from ember import nn  # noqa: E402
from ember.kernels import registry  # noqa: E402
from ember.kernels.backend import contract_violations  # noqa: E402
from ember.kernels.reference import ReferenceBackend  # noqa: E402
from ember.kernels.torch.backend import TorchBackend  # noqa: E402

pytestmark = pytest.mark.torch


def test_meets_the_contract():
    assert contract_violations(TorchBackend) == []


@pytest.mark.parametrize(
    ("spec", "kind", "index", "name"),
    [
        ("torch", "torch", None, "torch"),
        ("TORCH", "torch", None, "torch"),
        ("torch:cuda", "torch:cuda", 0, "torch:cuda:0"),
        ("torch:cuda:1", "torch:cuda", 1, "torch:cuda:1"),
        ("torch:mps", "torch:mps", None, "torch:mps"),
    ],
)
def test_device_names(spec, kind, index, name):
    device = ember.Device(spec)
    assert (device.kind, device.index, str(device)) == (kind, index, name)
    assert ember.Device(str(device)) == device
    assert repr(device) == f"Device('{name}')"


@pytest.mark.parametrize("spec", ["torch:xla", "torch:cuda:x", "torch:mps:1", "torch:2"])
def test_bad_device_names(spec):
    with pytest.raises(ValueError, match="Device"):
        ember.Device(spec)


def test_a_device_this_machine_lacks_says_so():
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA device"):
            ember.zeros((2,), device="torch:cuda:0")
    if not torch.backends.mps.is_available():
        with pytest.raises(ValueError, match="MPS"):
            ember.zeros((2,), device="torch:mps")


def test_arrays_are_plain_tensors_without_autograd():
    x = ember.randn((3, 4), device="torch").require_grad()
    y = (x.softmax(-1) * x).sum()
    assert isinstance(x._data, torch.Tensor) and not x._data.requires_grad
    assert not y._data.requires_grad and y._data.grad_fn is None
    grads = y.backward()
    assert isinstance(grads.get(x)._data, torch.Tensor)


@pytest.mark.parametrize("other", ["cpu", "reference"])
@pytest.mark.parametrize(
    "dtype", [ember.float16, ember.float32, ember.float64, ember.int32, ember.int64, ember.bool_]
)
def test_to_and_back_keeps_every_value(other, dtype):
    values = np.random.default_rng(0).standard_normal((4, 5)) * 100
    x = ember.tensor(values, device=other).to(dtype)
    there = x.to("torch")
    assert there.device == "torch" and there.dtype == dtype
    back = there.to(other)
    np.testing.assert_array_equal(back.numpy(), x.numpy())


def test_cpu_and_torch_share_memory_both_ways():
    x = ember.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3), device="cpu")
    on_torch = x.to("torch")
    assert np.shares_memory(on_torch._data.numpy(), x._data)
    back = on_torch.to("cpu")
    assert np.shares_memory(back._data, on_torch._data.numpy())
    assert np.shares_memory(on_torch.numpy(), x._data)


def test_a_transposed_view_arrives_by_value():
    x = ember.tensor(np.arange(6.0).reshape(2, 3), device="cpu").transpose(0, 1)
    np.testing.assert_array_equal(x.to("torch").numpy(), x.numpy())


def test_dlpack_from_a_torch_tensor():
    t = torch.arange(5, dtype=torch.float32)
    x = ember.from_dlpack(t, device="torch")
    np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_the_dropout_mask_is_the_reference_bits():
    for shape, p, seed in [((7, 33), 0.3, 12345), ((1000,), 0.9, 2**63 - 5), ((0, 3), 0.5, 1)]:
        want = ReferenceBackend().dropout_keep_mask(shape, p, seed)
        got = TorchBackend().dropout_keep_mask(shape, p, seed)
        np.testing.assert_array_equal(got.numpy(), want)


def test_same_seed_same_draws_as_the_reference():
    ember.seed(7)
    on_torch = ember.randn((5, 3), device="torch").numpy()
    ember.seed(7)
    on_reference = ember.randn((5, 3), device="reference").numpy()
    np.testing.assert_array_equal(on_torch, on_reference)


def test_generator_states_by_name():
    ember.zeros((1,), device="torch")
    states = registry.rng_states()
    assert "torch" in states
    first = ember.rand((4,), device="torch").numpy()
    registry.set_rng_states({"torch": states["torch"]})
    np.testing.assert_array_equal(ember.rand((4,), device="torch").numpy(), first)
    with pytest.raises(ValueError, match="bad device name 'torch:cuda'"):
        registry.set_rng_states({"torch:cuda": {}})


class _Model(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.linear = nn.LinearConfig(6, 4).init(device=device)
        self.norm = nn.LayerNormConfig(4).init(device=device)


@pytest.mark.parametrize(("source", "target"), [("torch", "cpu"), ("cpu", "torch")])
def test_records_load_across_backends_bit_for_bit(tmp_path, source, target):
    ember.seed(3)
    model = _Model(source)
    path = model.save_file(tmp_path / "model")
    loaded = _Model(target).load_file(path)
    for (name, a), (_, b) in zip(model.named_parameters(), loaded.named_parameters()):
        assert b.device == target, name
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    tensors = {name: p.numpy() for name, p in model.named_parameters()}
    ember.record.save_safetensors(tmp_path / "model.safetensors", tensors)
    record = ember.record.load_safetensors(tmp_path / "model.safetensors")
    for name, array in tensors.items():
        np.testing.assert_array_equal(np.asarray(record[name]), array, err_msg=name)


def test_float16_composites_compute_in_float32():
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float16) * 20
    for fn in (lambda t: t.softmax(-1), lambda t: t.log_softmax(-1), ember.gelu):
        got = fn(ember.tensor(x, device="torch")).numpy()
        want = fn(ember.tensor(x, device="reference")).numpy()
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-3)
