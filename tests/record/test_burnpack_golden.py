"""Golden bytes: the exact container Burn's writer produces for a small record.

The expected CBOR below is written out by hand from Burn's serde structs
(crates/burn-pack/src/base.rs: ``Metadata{tensors, metadata?, scalars?}``,
``TensorDescriptor{dtype, shape, data_offsets, param_id?}``, externally tagged ``Scalar``
and ``DType``) and ciborium's encoding rules (definite lengths, shortest integers, shortest
exact float), not produced by ember's encoder.
"""

import cbor2
import numpy as np

import ember.record as rec


def _text(s: str) -> str:
    raw = s.encode()
    assert len(raw) < 24
    return f"{0x60 + len(raw):02x}" + raw.hex()


EXPECTED_CBOR = "".join(
    [
        "a3",  # Metadata: 3 fields (metadata and scalars are non-empty)
        _text("tensors"),
        "a2",  # BTreeMap: sorted by name -> "b" before "w"
        _text("b"),
        "a3",  # no param_id -> 3 fields
        _text("dtype"),
        _text("I64"),
        _text("shape"),
        "81",
        "01",
        _text("data_offsets"),
        "82",
        "190100",
        "190108",  # (256, 264): second tensor, aligned
        _text("w"),
        "a4",
        _text("dtype"),
        _text("F32"),
        _text("shape"),
        "81",
        "02",
        _text("data_offsets"),
        "82",
        "00",
        "08",
        _text("param_id"),
        "07",
        _text("metadata"),
        "a1",
        _text("k"),
        _text("v"),
        _text("scalars"),
        "a2",
        _text("lr"),
        "a1",
        _text("Float"),
        "f93800",  # 0.5 fits a half float exactly
        _text("n"),
        "a1",
        _text("UInt"),
        "03",
    ]
)


def _golden_record() -> bytes:
    return rec.to_bytes(
        {"w": rec.TensorRecord(np.array([1.0, 2.0], np.float32), param_id=7), "b": np.array([3], np.int64)},
        metadata={"k": "v"},
        scalars={"lr": 0.5, "n": rec.UInt(3)},
    )


def test_header_bytes_exact():
    data = _golden_record()
    metadata_size = len(bytes.fromhex(EXPECTED_CBOR))
    assert data[:4] == b"NRUB"  # magic 0x4255524E little-endian
    assert data[4:6] == b"\x01\x00"  # version 1
    assert data[6:10] == metadata_size.to_bytes(4, "little")
    assert data[:10].hex() == "4e5255420100" + metadata_size.to_bytes(4, "little").hex()


def test_cbor_metadata_exact():
    data = _golden_record()
    size = int.from_bytes(data[6:10], "little")
    assert data[10 : 10 + size].hex() == EXPECTED_CBOR


def test_padding_and_data_layout_exact():
    data = _golden_record()
    size = int.from_bytes(data[6:10], "little")
    start = 256  # 10 + 143 rounded up to 256
    assert 10 + size <= start
    assert data[10 + size : start] == bytes(start - 10 - size)
    assert data[start : start + 8] == np.array([1.0, 2.0], "<f4").tobytes()
    assert data[start + 8 : start + 256] == bytes(248)  # padding before the next tensor
    assert data[start + 256 : start + 264] == (3).to_bytes(8, "little")
    assert len(data) == start + 264


def test_cbor_structure_field_by_field():
    data = rec.to_bytes(
        {
            "z.bias": np.zeros(3, np.float16),
            "a.weight": np.ones((2, 5)),
            "flag": np.array([True, False, True]),
        },
        param_ids={"a.weight": 2**64 - 1},
    )
    size = int.from_bytes(data[6:10], "little")
    meta = cbor2.loads(data[10 : 10 + size])
    assert list(meta) == ["tensors"]  # empty metadata/scalars are omitted, as serde does
    tensors = meta["tensors"]
    assert list(tensors) == ["a.weight", "flag", "z.bias"]
    assert list(tensors["a.weight"]) == ["dtype", "shape", "data_offsets", "param_id"]
    assert tensors["a.weight"] == {
        "dtype": "F64",
        "shape": [2, 5],
        "data_offsets": [256, 336],
        "param_id": 2**64 - 1,
    }
    assert tensors["flag"] == {"dtype": {"Bool": "Native"}, "shape": [3], "data_offsets": [512, 515]}
    assert tensors["z.bias"] == {"dtype": "F16", "shape": [3], "data_offsets": [0, 6]}
    data_start = -(-(10 + size) // 256) * 256
    for desc in tensors.values():
        assert desc["data_offsets"][0] % 256 == 0
        assert (data_start + desc["data_offsets"][0]) % 256 == 0
    assert len(data) == data_start + 515


def test_every_dtype_name_as_serialized():
    names = {
        "float64": "F64",
        "float32": "F32",
        "float16": "F16",
        "bfloat16": "BF16",
        "int64": "I64",
        "int32": "I32",
        "int16": "I16",
        "int8": "I8",
        "uint64": "U64",
        "uint32": "U32",
        "uint16": "U16",
        "uint8": "U8",
        "bool": {"Bool": "Native"},
    }
    tensors = {name: rec.TensorRecord(np.zeros(2), dtype=name) for name in names}
    data = rec.to_bytes(tensors)
    size = int.from_bytes(data[6:10], "little")
    meta = cbor2.loads(data[10 : 10 + size])
    assert {name: d["dtype"] for name, d in meta["tensors"].items()} == names


def test_no_tensors_still_pads_to_data_section():
    data = rec.to_bytes({})
    assert data[10 : 10 + 10].hex() == "a1" + _text("tensors") + "a0"
    assert len(data) == 256
    assert rec.from_bytes(data).tensors == {}


def test_scalar_variants_and_float_widths():
    data = rec.to_bytes(
        {},
        scalars={
            "i": -5,
            "u": rec.UInt(2**64 - 1),
            "b": False,
            "f32": float(np.float32(0.1)),
            "f64": 0.1,
            "big": 2**63,
            "npu": np.uint8(4),
        },
    )
    size = int.from_bytes(data[6:10], "little")
    blob = data[10 : 10 + size]
    assert cbor2.loads(blob)["scalars"] == {
        "b": {"Bool": False},
        "big": {"UInt": 2**63},
        "f32": {"Float": float(np.float32(0.1))},
        "f64": {"Float": 0.1},
        "i": {"Int": -5},
        "npu": {"UInt": 4},
        "u": {"UInt": 2**64 - 1},
    }
    assert bytes.fromhex("fa3dcccccd") in blob  # exact in single precision -> 4-byte float
    assert bytes.fromhex("fb3fb999999999999a") in blob  # needs double precision
