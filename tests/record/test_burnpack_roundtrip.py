"""Round trips through burnpack files and bytes, and the reader/writer APIs around them."""

import os

import numpy as np
import pytest
from helpers.record_dtypes import NUMERIC_DTYPES

import ember.record as rec


def _all_dtype_arrays():
    rng = np.random.default_rng(0)
    out = {}
    for name in NUMERIC_DTYPES:
        info = np.finfo(name) if np.dtype(name).kind == "f" else np.iinfo(name)
        arr = rng.integers(-100, 100, size=(3, 5)).astype(name)
        arr.flat[0] = info.max
        arr.flat[1] = info.min
        out[name] = arr
    out["bool"] = rng.random((4, 2)) > 0.5
    return out


def test_file_round_trip_every_dtype(tmp_path):
    arrays = _all_dtype_arrays()
    path = rec.save(
        tmp_path / "all",
        arrays,
        metadata={"producer": "ember"},
        scalars={"epoch": 3, "lr": 1e-3, "done": True},
    )
    assert path == tmp_path / "all.bpk" and path.exists()
    loaded = rec.load(tmp_path / "all")  # no extension: .bpk is tried
    assert list(loaded) == list(arrays)  # file order == write order
    for name, arr in arrays.items():
        view = loaded[name]
        assert view.shape == arr.shape and view.dtype_name == name
        out = view.numpy()
        assert out.dtype == arr.dtype
        np.testing.assert_array_equal(out, arr)
    assert loaded.metadata == {"producer": "ember"}
    assert loaded.scalars == {"epoch": 3, "lr": 1e-3, "done": True}
    assert type(loaded.scalars["done"]) is bool and type(loaded.scalars["epoch"]) is int


def test_bytes_round_trip_matches_file(tmp_path):
    arrays = _all_dtype_arrays()
    data = rec.to_bytes(arrays, {"a": "b"}, {"x": 1})
    path = rec.save(tmp_path / "f.bpk", arrays, {"a": "b"}, {"x": 1})
    assert path.read_bytes() == data
    again = rec.from_bytes(data)
    for name, arr in arrays.items():
        np.testing.assert_array_equal(again[name].numpy(), arr)


def test_loaded_record_saves_back_byte_identical(tmp_path):
    data = rec.to_bytes(
        {
            "z": np.arange(3.0),
            "a": rec.TensorRecord(np.ones(2), param_id=5),
            "bf": rec.TensorRecord(np.array([1.5, -2.0]), dtype="bfloat16"),
        },
        {"m": "x"},
        {"rank": rec.UInt(1), "loss": 0.25, "step": -1},
    )
    loaded = rec.from_bytes(data)
    assert rec.to_bytes(loaded.tensors, loaded.metadata, loaded.scalars) == data
    assert isinstance(loaded.scalars["rank"], rec.UInt)


def test_param_ids_from_mapping_record_and_view():
    data = rec.to_bytes(
        {"a": np.zeros(1), "b": rec.TensorRecord(np.zeros(1), param_id=9), "c": np.zeros(1)},
        param_ids={"a": 2**64 - 1, "b": 10},
    )
    loaded = rec.from_bytes(data)
    assert loaded.param_ids == {"a": 2**64 - 1, "b": 10}  # the mapping wins over the record
    assert loaded["c"].param_id is None
    resaved = rec.from_bytes(rec.to_bytes(loaded.tensors))
    assert resaved.param_ids == loaded.param_ids


def test_bfloat16_storage_and_conversion():
    values = np.array([[1.0, -2.5], [3.140625, np.inf]], np.float32)
    loaded = rec.from_bytes(rec.to_bytes({"w": rec.TensorRecord(values, dtype="bf16")}))
    view = loaded["w"]
    assert view.dtype_name == "bfloat16" and view.dtype == np.float32
    assert view.array.dtype == np.uint16  # raw bit patterns, zero-copy
    np.testing.assert_array_equal(view.numpy(), values)
    np.testing.assert_array_equal(np.asarray(view), values)
    rounded = rec.from_bytes(
        rec.to_bytes({"w": rec.TensorRecord(np.float32([1.00390625]), dtype="bfloat16")})
    )
    assert rounded["w"].numpy()[0] == 1.0  # ties to even


def test_odd_inputs_zero_d_empty_noncontiguous_bigendian_lists():
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    tensors = {
        "scalar": np.float64(2.5),
        "empty": np.zeros((0, 3), np.int32),
        "transposed": base.T,
        "big_endian": np.arange(4, dtype=">i4"),
        "nested_list": [[1, 2], [3, 4]],
        "cast": rec.TensorRecord(base, dtype="float16"),
    }
    loaded = rec.from_bytes(rec.to_bytes(tensors))
    assert loaded["scalar"].shape == () and loaded["scalar"].numpy() == 2.5
    assert loaded["empty"].shape == (0, 3) and loaded["empty"].numpy().size == 0
    np.testing.assert_array_equal(loaded["transposed"].numpy(), base.T)
    assert loaded["big_endian"].array.dtype == np.dtype("<i4")
    np.testing.assert_array_equal(loaded["big_endian"].numpy(), np.arange(4))
    np.testing.assert_array_equal(loaded["nested_list"].numpy(), [[1, 2], [3, 4]])
    assert loaded["cast"].dtype_name == "float16"


def test_views_are_lazy_read_only_memory_maps(tmp_path):
    path = rec.save(tmp_path / "m.bpk", {"w": np.arange(1000, dtype=np.float32)})
    loaded = rec.load(path)
    view = loaded["w"]
    assert not view.array.flags.writeable
    with pytest.raises(ValueError):
        view.array[0] = 1.0
    copy = view.numpy()
    assert copy.flags.writeable and not np.shares_memory(copy, view.array)
    assert np.asarray(view) is view.array  # __array__ without copy is zero-copy
    assert view.array.ctypes.data % 256 == 0  # aligned in memory as in the file


def test_old_views_survive_overwriting_the_file(tmp_path):
    path = rec.save(tmp_path / "m.bpk", {"w": np.full(8, 1.0)})
    first = rec.load(path)
    rec.save(path, {"w": np.full(8, 2.0)})  # atomic replace: the old mapping stays valid
    assert first["w"].numpy()[0] == 1.0
    assert rec.load(path)["w"].numpy()[0] == 2.0


class FakeDeviceTensor:
    """Stands in for an ember Tensor: reports shape/dtype and copies out on numpy()."""

    def __init__(self, array, report_shape=None):
        self._array = array
        self.shape = report_shape if report_shape is not None else array.shape
        self.dtype = array.dtype
        self.calls = 0

    def numpy(self):
        self.calls += 1
        return self._array


def test_tensor_likes_are_materialized_only_while_writing():
    t = FakeDeviceTensor(np.arange(6, dtype=np.int64).reshape(2, 3))
    data = rec.to_bytes({"t": t, "bf": rec.TensorRecord(FakeDeviceTensor(np.ones(2)), dtype="bfloat16")})
    assert t.calls == 1
    loaded = rec.from_bytes(data)
    np.testing.assert_array_equal(loaded["t"].numpy(), np.arange(6).reshape(2, 3))
    assert loaded["bf"].dtype_name == "bfloat16"


def test_tensor_like_that_lies_about_its_shape_is_refused():
    liar = FakeDeviceTensor(np.zeros(4, np.float32), report_shape=(5,))
    with pytest.raises(rec.RecordError, match=r"tensor 'liar'.*shape \(4,\).*\(5,\)"):
        rec.to_bytes({"liar": liar})


def test_ember_tensor_values():
    import ember

    t = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device="reference")
    i = ember.tensor([1, 2, 3], device="reference")
    loaded = rec.from_bytes(rec.to_bytes({"t": t, "i": i}))
    assert loaded["t"].dtype_name == "float32" and loaded["i"].dtype_name == "int64"
    np.testing.assert_array_equal(loaded["t"].numpy(), t.numpy())
    back = ember.from_numpy(loaded["i"].numpy(), device="reference")
    np.testing.assert_array_equal(back.numpy(), [1, 2, 3])


@pytest.mark.parametrize(
    "tensors, kwargs, match",
    [
        ({"o": np.array([object()])}, {}, "'o'"),
        ({"c": np.zeros(2, np.complex64)}, {}, "tensor 'c'.*complex64"),
        ({1: np.zeros(1)}, {}, "names must be str"),
        ({"a": rec.TensorRecord(np.zeros(1), param_id=-1)}, {}, "param_id"),
        ({"a": np.zeros(1)}, {"param_ids": {"b": 1}}, r"not saved: \['b'\]"),
        (
            {"v": rec.from_bytes(rec.to_bytes({"v": np.ones(1)}))["v"]},
            {"param_ids": {"v": True}},
            "tensor 'v': param_id",
        ),
        ({"a": rec.TensorRecord(np.zeros(1), dtype="complex64")}, {}, "tensor 'a'.*complex64"),
        ({"a": np.zeros(1)}, {"metadata": {"k": 1}}, "metadata must map str -> str"),
        ({"a": np.zeros(1)}, {"scalars": {"s": "text"}}, "scalar 's'"),
        ({"a": np.zeros(1)}, {"scalars": {"s": 2**64}}, "does not fit in 64 bits"),
    ],
)
def test_invalid_inputs_raise_record_error(tensors, kwargs, match):
    with pytest.raises(rec.RecordError, match=match):
        rec.to_bytes(tensors, **kwargs)


def test_invalid_save_writes_nothing(tmp_path):
    with pytest.raises(rec.RecordError):
        rec.save(tmp_path / "bad", {"c": np.zeros(2, np.complex128)})
    assert os.listdir(tmp_path) == []


def test_record_mapping_behaviour():
    loaded = rec.from_bytes(rec.to_bytes({"b": np.zeros(1), "a": np.zeros(2)}))
    assert len(loaded) == 2 and "a" in loaded and list(loaded) == ["b", "a"]
    with pytest.raises(KeyError, match="no tensor named 'c'"):
        loaded["c"]
    assert set(loaded.numpy()) == {"a", "b"}
    with loaded as same:
        assert same is loaded
    assert loaded.tensors == {}


def test_extension_rules(tmp_path):
    assert rec.save(tmp_path / "model.v2", {}).name == "model.v2"  # has an extension
    assert rec.save(tmp_path / "plain", {}).name == "plain.bpk"
    (tmp_path / "exact").write_bytes(rec.to_bytes({"x": np.ones(1)}))
    assert "x" in rec.load(tmp_path / "exact")  # exists as given: no .bpk appended
    with pytest.raises(FileNotFoundError):
        rec.load(tmp_path / "missing")
