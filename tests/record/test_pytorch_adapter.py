"""The PyTorch adapter: names and layouts between PyTorch state_dicts and ember's."""

import numpy as np
import pytest

import ember.record as rec
from ember.record import PyTorchAdapter


def _hand_state_dict():
    """What torch would give for Embedding(10,4) -> Linear(4,3) -> LayerNorm(3) -> BN1d(3)."""
    rng = np.random.default_rng(2)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    return {
        "tok_emb.weight": f(10, 4),
        "fc.weight": f(3, 4),
        "fc.bias": f(3),
        "ln.weight": f(3),
        "ln.bias": f(3),
        "bn.weight": f(3),
        "bn.bias": f(3),
        "bn.running_mean": f(3),
        "bn.running_var": np.abs(f(3)),
        "bn.num_batches_tracked": np.array(7, np.int64),
        "conv.weight": f(5, 3, 2),
        "conv.bias": f(5),
    }


def test_default_rules_on_a_hand_built_state_dict():
    sd = _hand_state_dict()
    out = PyTorchAdapter().to_ember(sd)
    assert sorted(out) == sorted(
        [
            "tok_emb.weight",
            "fc.weight",
            "fc.bias",
            "ln.gamma",
            "ln.beta",
            "bn.gamma",
            "bn.beta",
            "bn.running_mean",
            "bn.running_var",
            "conv.weight",
            "conv.bias",
        ]
    )
    np.testing.assert_array_equal(out["fc.weight"], sd["fc.weight"].T)  # [out,in] -> [in,out]
    np.testing.assert_array_equal(out["tok_emb.weight"], sd["tok_emb.weight"])  # not a Linear
    np.testing.assert_array_equal(out["conv.weight"], sd["conv.weight"])  # same layout
    np.testing.assert_array_equal(out["ln.gamma"], sd["ln.weight"])
    np.testing.assert_array_equal(out["bn.beta"], sd["bn.bias"])
    np.testing.assert_array_equal(out["bn.running_var"], sd["bn.running_var"])

    back = PyTorchAdapter().to_pytorch(out)
    assert sorted(back) == sorted(sd)
    for key in sd:
        if key != "bn.num_batches_tracked":
            np.testing.assert_array_equal(back[key], sd[key])
    assert back["bn.num_batches_tracked"] == 0 and back["bn.num_batches_tracked"].dtype == np.int64
    assert "bn.num_batches_tracked" not in PyTorchAdapter(add_num_batches_tracked=False).to_pytorch(out)


def test_explicit_selectors():
    sd = {
        "proj.weight": np.zeros((3, 2)),
        "table.weight": np.zeros((5, 2)),
        "prelu.weight": np.zeros(3),
        "norm.weight": np.zeros(3),
        "norm.bias": np.zeros(3),
        "bn.weight": np.zeros(3),
        "bn.running_mean": np.zeros(3),
    }
    out = PyTorchAdapter(embeddings={"table"}, norms=lambda path: path == "norm").to_ember(sd)
    assert out["proj.weight"].shape == (2, 3)
    assert out["table.weight"].shape == (5, 2)
    assert "prelu.weight" in out  # 1-D weight, but not named as a norm
    assert "norm.gamma" in out and "norm.beta" in out
    assert "bn.gamma" in out  # running stats make it a batch norm regardless
    only = PyTorchAdapter(linear=["table"], embeddings=[]).to_ember(sd)
    assert only["proj.weight"].shape == (3, 2) and only["table.weight"].shape == (2, 5)
    with pytest.raises(TypeError, match="wrap it in a list"):
        PyTorchAdapter(linear="proj")


def test_top_level_keys_and_collisions():
    out = PyTorchAdapter().to_ember({"weight": np.zeros((2, 3)), "bias": np.zeros(2)})
    assert out["weight"].shape == (3, 2)
    with pytest.raises(rec.RecordError, match="'ln.weight' maps to 'ln.gamma'"):
        PyTorchAdapter().to_ember({"ln.gamma": np.zeros(3), "ln.weight": np.zeros(3)})


def test_adapter_keeps_bfloat16_bits_through_files(tmp_path):
    sd = {"fc.weight": rec.TensorRecord(np.arange(6, dtype=np.float32).reshape(2, 3), dtype="bfloat16")}
    path = rec.save_safetensors(tmp_path / "m.safetensors", sd)
    loaded = rec.load_safetensors(path, adapter="pytorch")
    assert loaded["fc.weight"].dtype_name == "bfloat16"
    np.testing.assert_array_equal(loaded["fc.weight"].numpy(), np.arange(6, dtype=np.float32).reshape(2, 3).T)


def test_torch_oracle_round_trip(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file

    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb = torch.nn.Embedding(10, 4)
            self.blocks = torch.nn.ModuleList(
                [torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4)) for _ in range(2)]
            )
            self.bn = torch.nn.BatchNorm1d(4)
            self.head = torch.nn.Linear(4, 3)

        def forward(self, ids):
            x = self.tok_emb(ids)
            for block in self.blocks:
                x = block(x)
            return self.head(self.bn(x))

    net = Net()
    net.train()
    net(torch.randint(0, 10, (16,)))  # populate running stats
    net.eval()
    path = tmp_path / "net.safetensors"
    save_file(net.state_dict(), str(path))

    loaded = rec.load_safetensors(path, adapter="pytorch")
    assert "bn.num_batches_tracked" not in loaded
    assert loaded["blocks.0.0.weight"].shape == (4, 4)
    assert loaded["head.weight"].shape == (4, 3) and loaded["tok_emb.weight"].shape == (10, 4)
    assert {"blocks.1.1.gamma", "blocks.1.1.beta", "bn.gamma", "bn.running_var"} <= set(loaded)

    # Recompute the head in NumPy with ember's layout: y = x @ W[in,out] + b.
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    expected = net.head(torch.from_numpy(x)).detach().numpy()
    got = x @ loaded["head.weight"].numpy() + loaded["head.bias"].numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

    out = tmp_path / "back.safetensors"
    rec.save_safetensors(out, loaded.tensors, adapter="pytorch")
    fresh = Net()
    fresh.load_state_dict(load_file(str(out)), strict=True)
    fresh.eval()
    ids = torch.randint(0, 10, (8,))
    torch.testing.assert_close(fresh(ids), net(ids))
