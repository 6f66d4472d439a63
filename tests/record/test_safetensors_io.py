"""safetensors files: round trips, interop with the safetensors package, bfloat16, errors."""

import numpy as np
import pytest
import safetensors
import safetensors.numpy as stnp
from helpers.record_dtypes import NUMERIC_DTYPES

import ember.record as rec


def _arrays():
    rng = np.random.default_rng(1)
    out = {name: rng.integers(-50, 50, size=(2, 3)).astype(name) for name in NUMERIC_DTYPES}
    out["bool"] = rng.random(5) > 0.5
    out["scalar"] = np.float32(3.5)
    return out


def test_round_trip_every_dtype_with_metadata(tmp_path):
    arrays = _arrays()
    path = rec.save_safetensors(tmp_path / "m.safetensors", arrays, {"format": "np"})
    loaded = rec.load_safetensors(path)
    assert loaded.metadata == {"format": "np"} and loaded.param_ids == {}
    assert set(loaded) == set(arrays)
    for name, arr in arrays.items():
        out = loaded[name].numpy()
        assert out.dtype == np.asarray(arr).dtype and out.shape == np.shape(arr)
        np.testing.assert_array_equal(out, arr)


def test_files_interoperate_with_the_safetensors_package(tmp_path):
    arrays = {k: v for k, v in _arrays().items() if k != "scalar"}
    ours = rec.save_safetensors(tmp_path / "ours.safetensors", arrays)
    theirs_read = stnp.load_file(str(ours))
    for name, arr in arrays.items():
        np.testing.assert_array_equal(theirs_read[name], arr)
    stnp.save_file(arrays, str(tmp_path / "theirs.safetensors"), metadata={"a": "b"})
    loaded = rec.load_safetensors(tmp_path / "theirs.safetensors")
    assert loaded.metadata == {"a": "b"}
    for name, arr in arrays.items():
        np.testing.assert_array_equal(loaded[name].numpy(), arr)


def test_bytes_api_matches_files(tmp_path):
    arrays = _arrays()
    data = rec.safetensors_to_bytes(arrays, {"k": "v"})
    path = rec.save_safetensors(tmp_path / "m.safetensors", arrays, {"k": "v"})
    assert path.read_bytes() == data
    loaded = rec.safetensors_from_bytes(data)
    assert loaded.metadata == {"k": "v"}
    np.testing.assert_array_equal(loaded["int8"].numpy(), arrays["int8"])


def test_bfloat16_both_ways(tmp_path):
    values = np.array([[1.0, -0.5], [2.0, 1024.0]], np.float32)
    path = rec.save_safetensors(
        tmp_path / "bf.safetensors",
        {"w": rec.TensorRecord(values, dtype="bfloat16"), "f": np.ones(2, np.float32)},
    )
    with safetensors.safe_open(str(path), framework="np") as handle:
        assert handle.get_slice("w").get_dtype() == "BF16"
    loaded = rec.load_safetensors(path)
    assert loaded["w"].dtype_name == "bfloat16"
    np.testing.assert_array_equal(loaded["w"].numpy(), values)
    np.testing.assert_array_equal(loaded["f"].numpy(), [1, 1])
    # A bfloat16 view saves back as bfloat16, bit for bit, in either format.
    again = rec.safetensors_from_bytes(rec.safetensors_to_bytes(loaded.tensors))
    np.testing.assert_array_equal(again["w"].array, loaded["w"].array)
    bpk = rec.from_bytes(rec.to_bytes(loaded.tensors))
    assert bpk["w"].dtype_name == "bfloat16"


def test_torch_bfloat16_file_if_torch_present(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    t = torch.randn(3, 4).to(torch.bfloat16)
    save_file({"t": t}, str(tmp_path / "t.safetensors"))
    loaded = rec.load_safetensors(tmp_path / "t.safetensors")
    np.testing.assert_array_equal(loaded["t"].numpy(), t.float().numpy())


def test_unsupported_dtype_names_the_tensor(tmp_path):
    raw = np.zeros(4, np.uint8)
    spec = safetensors.TensorSpec(
        dtype="float8_e4m3fn", shape=[4], data_ptr=raw.ctypes.data, data_len=raw.nbytes
    )
    path = tmp_path / "f8.safetensors"
    safetensors.serialize_file({"fp8_w": spec}, str(path))
    with pytest.raises(rec.RecordError, match="tensor 'fp8_w'.*F8_E4M3"):
        rec.load_safetensors(path)


def test_remap_on_load_and_save(tmp_path):
    path = rec.save_safetensors(
        tmp_path / "m.safetensors", {"enc.w": np.ones(1)}, remap=[(r"^enc\.", "model.encoder.")]
    )
    assert list(stnp.load_file(str(path))) == ["model.encoder.w"]
    loaded = rec.load_safetensors(path, remap=[(r"^model\.", "")])
    assert list(loaded) == ["encoder.w"]
    with pytest.raises(rec.RecordError, match="remap sends"):
        rec.safetensors_to_bytes({"a.x": np.ones(1), "b.x": np.ones(1)}, remap=[(r"^\w\.", "")])


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        rec.load_safetensors(tmp_path / "missing.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    with pytest.raises(rec.RecordError, match="bad.safetensors"):
        rec.load_safetensors(bad)
    with pytest.raises(rec.RecordError, match="metadata must map str -> str"):
        rec.safetensors_to_bytes({"a": np.ones(1)}, {"k": 3})
    with pytest.raises(ValueError, match="unknown adapter"):
        rec.safetensors_to_bytes({"a": np.ones(1)}, adapter="tensorflow")


def _raw_safetensors(name, dtype, shape, nbytes):
    import json
    import struct

    header = json.dumps({name: {"dtype": dtype, "shape": shape, "data_offsets": [0, nbytes]}}).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + bytes(nbytes)


@pytest.mark.parametrize("dtype", ["F32", "BF16"])
@pytest.mark.parametrize(
    "shape, match",
    [
        ([1] * 65, "shape has 65 dimensions, more than the 64"),
        ([0] * 65, "shape has 65 dimensions, more than the 64"),
        ([0, 2**63], r"shape \[0, 9223372036854775808\] cannot be represented"),
        ([0, 2**62], r"shape \[.*\] cannot be represented"),
    ],
)
def test_shapes_numpy_cannot_represent_are_record_errors(tmp_path, dtype, shape, match):
    itemsize = 4 if dtype == "F32" else 2
    data = _raw_safetensors("w", dtype, shape, itemsize if 0 not in shape else 0)
    path = tmp_path / "odd.safetensors"
    path.write_bytes(data)
    with pytest.raises(rec.RecordError, match=f"safetensors file '{path}': tensor 'w': {match}"):
        rec.load_safetensors(path)
    with pytest.raises(rec.RecordError, match=f"safetensors <bytes>: tensor 'w': {match}"):
        rec.safetensors_from_bytes(data)
