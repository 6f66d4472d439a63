"""Regression tests for what the file fuzzer found (one test per finding), built by hand so
they keep testing the same thing whatever the fuzzer's mutations become."""

from __future__ import annotations

import json
import struct

import cbor2
import numpy as np
import pytest

import ember.record as rec


def burnpack(meta_blob: bytes, data: bytes) -> bytes:
    start = -(-(10 + len(meta_blob)) // 256) * 256
    return (
        struct.pack("<IHI", 0x4255524E, 1, len(meta_blob))
        + meta_blob
        + bytes(start - 10 - len(meta_blob))
        + data
    )


def test_bpk_descriptor_that_repeats_a_field_is_refused(tmp_path):
    # A map whose "data_offsets" appears twice: the reader kept the second one silently.
    descriptor = (
        b"\xa4"
        + cbor2.dumps("dtype")
        + cbor2.dumps("F32")
        + cbor2.dumps("shape")
        + cbor2.dumps([2])
        + cbor2.dumps("data_offsets")
        + cbor2.dumps([0, 8])
        + cbor2.dumps("data_offsets")
        + cbor2.dumps([256, 264])
    )
    blob = b"\xa1" + cbor2.dumps("tensors") + b"\xa1" + cbor2.dumps("w") + descriptor
    path = tmp_path / "repeat.bpk"
    path.write_bytes(burnpack(blob, bytes(264)))
    with pytest.raises(
        rec.RecordError, match=r"repeat.bpk.*malformed CBOR metadata: map key 'data_offsets' appears twice"
    ):
        rec.load(path)


def test_bpk_bool_dtype_with_a_non_text_store_is_a_record_error(tmp_path):
    # {"Bool": [0]} made the dtype lookup raise a raw TypeError (unhashable list).
    meta = {"tensors": {"m": {"dtype": {"Bool": [0]}, "shape": [2], "data_offsets": [0, 2]}}}
    path = tmp_path / "bool.bpk"
    path.write_bytes(burnpack(cbor2.dumps(meta), bytes(2)))
    with pytest.raises(rec.RecordError, match=r"bool.bpk.*tensor 'm': unknown dtype"):
        rec.load(path)


def safetensors_file(header_text: str, data: bytes) -> bytes:
    raw = header_text.encode()
    raw += b" " * (-len(raw) % 8)
    return len(raw).to_bytes(8, "little") + raw + data


@pytest.mark.parametrize(
    "header",
    [
        # the same tensor twice: the library kept one of the two entries without a word
        '{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}',
        # a field of one entry twice
        '{"w":{"dtype":"F32","shape":[1],"shape":[1],"data_offsets":[0,4]}}',
    ],
)
def test_safetensors_header_that_repeats_a_key_is_refused(tmp_path, header):
    path = tmp_path / "repeat.safetensors"
    path.write_bytes(safetensors_file(header, np.ones(1, np.float32).tobytes()))
    with pytest.raises(rec.RecordError, match=r"repeat.safetensors.*the header gives \[.*\] twice"):
        rec.load_safetensors(path)
    with pytest.raises(rec.RecordError, match="twice"):
        rec.safetensors_from_bytes(path.read_bytes())
    json.loads(header)  # (plain JSON parsers accept it: the check is ember's own)


def test_bpk_float_scalar_given_as_an_integer_must_be_exact(tmp_path):
    # {"Float": -(2**63) - 1} loaded as -9.223372036854776e18: a value the file does not hold.
    path = tmp_path / "scalar.bpk"
    path.write_bytes(burnpack(cbor2.dumps({"tensors": {}, "scalars": {"lr": {"Float": -(2**63) - 1}}}), b""))
    with pytest.raises(rec.RecordError, match=r"scalar.bpk': scalar 'lr' must be"):
        rec.load(path)
    path.write_bytes(burnpack(cbor2.dumps({"tensors": {}, "scalars": {"lr": {"Float": 3}}}), b""))
    assert rec.load(path).scalars == {"lr": 3.0}  # an integer that is exactly a float is fine
