"""ember's reader against a .bpk file written here independently of ember's writer: cbor2 for
the metadata and struct for the header, following the burnpack format description (magic u32
0x4255524E little-endian, version u16 1, metadata size u32, CBOR metadata, zero padding to a
256-byte boundary, each tensor's bytes 256-byte aligned, offsets relative to the data section)."""

import struct

import cbor2
import numpy as np

import ember.record

ALIGN = 256


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _write_bpk(path, tensors, param_ids, metadata):
    entries, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        start = _align(offset)
        blobs.append((start, raw))
        dtype = {np.float32: "F32", np.int64: "I64", np.float64: "F64"}[arr.dtype.type]
        entries[name] = {
            "dtype": dtype,
            "shape": list(arr.shape),
            "data_offsets": [start, start + len(raw)],
            "param_id": param_ids[name],
        }
        offset = start + len(raw)
    meta = cbor2.dumps({"tensors": entries, "metadata": metadata})
    header = struct.pack("<IHI", 0x4255524E, 1, len(meta))
    data_start = _align(len(header) + len(meta))
    data = bytearray(offset)
    for start, raw in blobs:
        data[start : start + len(raw)] = raw
    with open(path, "wb") as f:
        f.write(header + meta + b"\0" * (data_start - len(header) - len(meta)) + bytes(data))


def test_reader_reads_an_independently_written_file(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {
        "encoder.weight": rng.standard_normal((3, 5)).astype(np.float32),
        "encoder.bias": rng.standard_normal(5).astype(np.float32),
        "steps": np.arange(7, dtype=np.int64),
        "scale": np.array([[1.5, -2.25]], dtype=np.float64),
    }
    ids = {name: 1000 + i for i, name in enumerate(tensors)}
    path = tmp_path / "independent.bpk"
    _write_bpk(path, tensors, ids, {"format": "burnpack", "producer": "test"})

    rec = ember.record.load(path)
    assert list(rec) == list(tensors)
    for name, arr in tensors.items():
        got = rec[name].numpy()
        assert got.dtype == arr.dtype and got.shape == arr.shape
        np.testing.assert_array_equal(got, arr)
        assert rec.param_ids[name] == ids[name]
    assert rec.metadata["producer"] == "test"
