"""Malformed and hostile burnpack input: clear RecordErrors, no large allocations."""

import struct
import tracemalloc

import cbor2
import numpy as np
import pytest

import ember.record as rec

LIMIT_BYTES = 2 * 1024 * 1024  # no hostile input may make the reader allocate this much


def _pack(meta, data: bytes = b"", *, version=1, magic=0x4255524E, size=None) -> bytes:
    blob = meta if isinstance(meta, bytes) else cbor2.dumps(meta)
    header = struct.pack("<IHI", magic, version, len(blob) if size is None else size)
    start = -(-(10 + len(blob)) // 256) * 256
    return header + blob + bytes(start - 10 - len(blob)) + data


def _tensor(dtype="F32", shape=(2,), offsets=(0, 8), **extra):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets), **extra}


def _load_bounded(data: bytes, match: str, tmp_path=None):
    """Parse from bytes (and from a file when tmp_path is given) under a memory watch."""
    tracemalloc.start()
    try:
        with pytest.raises(rec.RecordError, match=match) as info:
            rec.from_bytes(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < LIMIT_BYTES, f"reader allocated {peak} bytes on hostile input"
    if tmp_path is not None:
        path = tmp_path / "hostile.bpk"
        path.write_bytes(data)
        with pytest.raises(rec.RecordError, match=match) as file_info:
            rec.load(path)
        assert str(path) in str(file_info.value)  # the message names the file
    return info.value


def test_huge_metadata_size_claim(tmp_path):
    data = _pack({"tensors": {}}, size=rec.MAX_METADATA_SIZE + 1)
    _load_bounded(data, "exceeds the limit", tmp_path)


def test_metadata_size_past_end_of_file(tmp_path):
    data = _pack({"tensors": {}}, size=50 * 1024 * 1024)[:300]
    _load_bounded(data, "truncated", tmp_path)


def test_too_many_tensors_checked_before_decoding_entries(tmp_path):
    # A map header declaring 100,001 entries, followed by nothing: refused on the count.
    blob = bytes.fromhex("a1") + cbor2.dumps("tensors") + bytes.fromhex("ba000186a1")
    err = _load_bounded(_pack(blob), "100001 entries, over the limit of 100000", tmp_path)
    assert "tensors map" in str(err)


def test_huge_declared_array_length_is_refused_without_allocating():
    # An unknown field holding an array that claims 2**32 - 1 items.
    blob = (
        bytes.fromhex("a2")
        + cbor2.dumps("tensors")
        + bytes.fromhex("a0")
        + cbor2.dumps("junk")
        + bytes.fromhex("9affffffff")
    )
    _load_bounded(_pack(blob), "declares 4294967295 entries")


def test_offsets_past_end_of_file(tmp_path):
    meta = {"tensors": {"w": _tensor(shape=[1024], offsets=[0, 4096])}}
    err = _load_bounded(_pack(meta, bytes(16)), "tensor 'w'.*past the end", tmp_path)
    assert "(0, 4096)" in str(err)


def test_shape_and_byte_length_mismatch(tmp_path):
    meta = {"tensors": {"layer.weight": _tensor(shape=[3], offsets=[0, 8])}}
    _load_bounded(_pack(meta, bytes(8)), r"tensor 'layer.weight'.*\[3\].*needs 12 bytes", tmp_path)


def test_tensor_over_the_size_limit():
    n = rec.MAX_TENSOR_SIZE // 4 + 1
    meta = {"tensors": {"big": _tensor(shape=[n], offsets=[0, 4 * n])}}
    _load_bounded(_pack(meta, bytes(8)), "tensor 'big'.*exceed the limit")


def test_shape_product_overflowing_64_bits():
    meta = {"tensors": {"w": _tensor(shape=[2**40, 2**40], offsets=[0, 8])}}
    _load_bounded(_pack(meta, bytes(8)), "tensor 'w'.*needs")


@pytest.mark.parametrize(
    "desc, match",
    [
        (_tensor(offsets=[8, 0]), "end before they start"),
        (_tensor(offsets=[-1, 7]), "data offset must be an unsigned 64-bit"),
        (_tensor(offsets=[0.0, 8.0]), "data offset must be an unsigned"),
        (_tensor(offsets=[0, 8, 16]), "data_offsets must be a pair"),
        (_tensor(shape=[-2]), "shape dimension"),
        ({"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}, "shape must be a list"),
        (_tensor(dtype="F128"), "unknown dtype 'F128'"),
        (_tensor(dtype={"QFloat": {}}), "quantized"),
        (_tensor(param_id=-3), "param_id"),
        ({"dtype": "F32", "shape": [2]}, "missing 'data_offsets'"),
        ([1, 2], "descriptor must be a map"),
    ],
)
def test_bad_descriptor_fields(desc, match):
    err = _load_bounded(_pack({"tensors": {"t0": desc}}, bytes(8)), match)
    assert "tensor 't0'" in str(err)


@pytest.mark.parametrize(
    "data, match",
    [
        (b"NRUB\x01", "only 5 bytes"),
        (struct.pack("<IHI", 0xDEADBEEF, 1, 0), "not a burnpack file"),
        (struct.pack("<IHI", 0x4255524E, 2, 0), "version 2 is newer"),
        (_pack(cbor2.dumps([1, 2])), "must be a CBOR map"),
        (_pack({"metadata": {}}), "no 'tensors' field"),
        (_pack({"tensors": {}, "metadata": {"k": 1}}), "'metadata' must map text to text"),
        (_pack({"tensors": {}, "scalars": {"s": {"Int": 1.5}}}), "scalar 's'"),
        (_pack({"tensors": {}, "scalars": {"s": {"Big": 1}}}), "scalar 's'"),
        (_pack({"tensors": {}, "scalars": {"s": {"Int": 2**63}}}), "scalar 's'"),
        (_pack(cbor2.dumps({"tensors": {}}) + b"\x00"), "stray bytes"),
        (
            _pack(bytes.fromhex("a1") + cbor2.dumps("tensors") + bytes.fromhex("a1636162")),
            "truncated CBOR",
        ),  # a 3-byte key with 2 bytes left
        (
            _pack(bytes.fromhex("a1") + cbor2.dumps("tensors") + bytes.fromhex("a1fe00")),
            "reserved additional information",
        ),
        (
            _pack(bytes.fromhex("a1") + cbor2.dumps("tensors") + bytes.fromhex("a1617880")),
            "descriptor must be a map",
        ),
    ],
)
def test_bad_container(data, match):
    _load_bounded(data, match)


def test_deep_nesting_is_refused_without_recursion_error():
    deep = bytes.fromhex("81") * 10_000 + b"\x00"  # [[[[...0...]]]] in an unknown field
    blob = bytes.fromhex("a2") + cbor2.dumps("tensors") + bytes.fromhex("a0") + cbor2.dumps("junk") + deep
    _load_bounded(_pack(blob), "nesting deeper than 128")


def test_duplicate_tensor_names_are_refused():
    entry = cbor2.dumps("w") + cbor2.dumps(_tensor())
    blob = bytes.fromhex("a1") + cbor2.dumps("tensors") + bytes.fromhex("a2") + entry + entry
    _load_bounded(_pack(blob, bytes(8)), "tensor 'w': duplicate tensor name")


def test_truncated_data_section(tmp_path):
    good = rec.to_bytes({"w": np.arange(512, dtype=np.float32)})
    _load_bounded(good[: len(good) // 2], "tensor 'w'.*past the end", tmp_path)


def test_tiny_and_empty_files(tmp_path):
    path = tmp_path / "empty.bpk"
    path.write_bytes(b"")
    with pytest.raises(rec.RecordError, match="only 0 bytes"):
        rec.load(path)


def test_indefinite_lengths_and_unknown_fields_are_accepted():
    # Burn never writes these, but its ciborium reader accepts them; so does ember.
    blob = (
        bytes.fromhex("bf")
        + cbor2.dumps("future")
        + cbor2.dumps({"x": [1, 2.5]})
        + cbor2.dumps("tensors")
        + bytes.fromhex("bf")
        + cbor2.dumps("w")
        + cbor2.dumps(_tensor(extra_field=True))
        + bytes.fromhex("ff")
        + bytes.fromhex("ff")
    )
    loaded = rec.from_bytes(_pack(blob, np.float32([1, 2]).tobytes()))
    np.testing.assert_array_equal(loaded["w"].numpy(), [1, 2])


def test_burn_read_only_dtypes():
    meta = {
        "tensors": {
            "f": _tensor(dtype="Flex32"),
            "b8": _tensor(dtype={"Bool": "U8"}, shape=[2], offsets=[256, 258]),
            "b32": _tensor(dtype={"Bool": "U32"}, shape=[2], offsets=[512, 520]),
        }
    }
    data = np.float32([1, 2]).tobytes() + bytes(248) + b"\x01\x00" + bytes(254) + np.uint32([0, 7]).tobytes()
    loaded = rec.from_bytes(_pack(meta, data))
    np.testing.assert_array_equal(loaded["f"].numpy(), [1, 2])
    assert loaded["b8"].numpy().tolist() == [True, False]
    assert loaded["b32"].numpy().tolist() == [False, True]
    assert loaded["b32"].dtype == np.bool_
    assert rec.to_bytes(loaded.tensors) == rec.to_bytes(
        rec.from_bytes(rec.to_bytes(loaded.tensors)).tensors
    )  # re-saved with their original dtypes


# ---- byte ranges shared by two tensors; shapes NumPy cannot represent --------------------------
@pytest.mark.parametrize(
    "tensors, match",
    [
        (
            {"a": _tensor(shape=[4], offsets=[0, 16]), "b": _tensor(shape=[2], offsets=[8, 16])},
            r"tensor 'b': data_offsets \(8, 16\) overlap those of tensor 'a', which reach 16",
        ),
        (
            {"a": _tensor(shape=[2], offsets=[0, 8]), "b": _tensor(shape=[2], offsets=[0, 8])},
            r"tensor 'b': data_offsets \(0, 8\) overlap those of tensor 'a'",
        ),
        (
            {
                "big": _tensor(shape=[64], offsets=[0, 256]),
                "c": _tensor(shape=[1], offsets=[4, 8]),
                "d": _tensor(shape=[2], offsets=[252, 260]),
            },
            r"tensor 'c': data_offsets \(4, 8\) overlap those of tensor 'big', which reach 256",
        ),
    ],
)
def test_overlapping_tensors_are_refused(tmp_path, tensors, match):
    _load_bounded(_pack({"tensors": tensors}, bytes(512)), match, tmp_path)


def test_adjacent_and_empty_tensors_are_not_overlaps():
    meta = {
        "tensors": {
            "a": _tensor(shape=[2], offsets=[0, 8]),
            "b": _tensor(shape=[2], offsets=[8, 16]),
            "inside": _tensor(shape=[0], offsets=[4, 4]),
            "at_end": _tensor(shape=[0, 3], offsets=[16, 16]),
        }
    }
    loaded = rec.from_bytes(_pack(meta, np.float32([1, 2, 3, 4]).tobytes()))
    assert loaded["b"].numpy().tolist() == [3, 4] and loaded["inside"].shape == (0,)
    assert loaded["at_end"].shape == (0, 3)


@pytest.mark.parametrize(
    "shape, offsets, match",
    [
        ([1] * 65, [0, 4], "shape has 65 dimensions, more than the 64"),
        ([0] * 65, [0, 0], "shape has 65 dimensions, more than the 64"),
        ([0, 2**63], [0, 0], r"shape \[0, 9223372036854775808\] cannot be represented"),
        ([2**64 - 1, 0], [0, 0], r"shape \[18446744073709551615, 0\] cannot be represented"),
        ([0, 2**61], [0, 0], r"shape \[.*\] cannot be represented"),  # 2**63 bytes of float32
        ([0, 2**31, 2**31], [0, 0], r"shape \[.*\] cannot be represented"),
    ],
)
def test_shapes_numpy_cannot_represent_are_record_errors(tmp_path, shape, offsets, match):
    err = _load_bounded(
        _pack({"tensors": {"w": _tensor(shape=shape, offsets=offsets)}}, bytes(8)),
        "tensor 'w': " + match,
        tmp_path,
    )
    assert type(err) is rec.RecordError


def test_the_largest_representable_empty_shape_loads():
    loaded = rec.from_bytes(_pack({"tensors": {"w": _tensor(shape=[0, 2**60], offsets=[0, 0])}}))
    assert loaded["w"].shape == (0, 2**60) and loaded["w"].numpy().size == 0
    assert (
        rec.from_bytes(_pack({"tensors": {"w": _tensor(shape=[1] * 64, offsets=[0, 4])}}, bytes(4)))["w"].ndim
        == 64
    )


# ---- the data section must be exactly covered by the tensors (issue #30 item 4) ------------------
def _two_tensor_file() -> bytes:
    # "a" = 3 float32 (12 bytes, then 244 bytes of padding), "b" = 4 float32 at 256.
    return rec.to_bytes({"a": np.float32([1, 2, 3]), "b": np.float32([4, 5, 6, 7])})


def _data_start(data: bytes) -> int:
    return -(-(10 + int.from_bytes(data[6:10], "little")) // 256) * 256


def test_the_two_tensor_file_loads_as_written():
    loaded = rec.from_bytes(_two_tensor_file())
    assert loaded["a"].numpy().tolist() == [1, 2, 3] and loaded["b"].numpy().tolist() == [4, 5, 6, 7]


@pytest.mark.parametrize("extra", [b"\x00", bytes(256), b"\x7f" * 3], ids=["zero", "aligned", "three"])
def test_appended_bytes_are_refused(tmp_path, extra):
    data = _two_tensor_file()
    start = _data_start(data)
    err = _load_bounded(data + extra, "belong to no tensor", tmp_path)
    message = str(err)
    assert f"holds {256 + 16 + len(extra)} bytes (file bytes {start}..{len(data) + len(extra)})" in message
    assert "its tensors end at 272 (tensor 'b')" in message and f": {len(extra)} bytes" in message


@pytest.mark.parametrize("where", ["start of a", "middle of a", "padding", "start of b"])
def test_inserted_bytes_are_refused_instead_of_shifting_later_tensors(tmp_path, where):
    data = _two_tensor_file()
    start = _data_start(data)
    at = {"start of a": start, "middle of a": start + 6, "padding": start + 100, "start of b": start + 256}[
        where
    ]
    for inserted in (b"\x00" * 4, b"\x42" * 4, bytes(256)):
        _load_bounded(data[:at] + inserted + data[at:], r"(padding|belong to no tensor)", tmp_path)


def test_nonzero_byte_in_the_padding_names_tensor_and_offset(tmp_path):
    data = bytearray(_two_tensor_file())
    start = _data_start(data)
    data[start + 200] = 1  # inside the 244 bytes between "a" and "b"
    err = _load_bounded(
        bytes(data),
        rf"tensor 'b': alignment padding before data_offsets \(256, 272\) \(file bytes {start + 12}"
        rf"\.\.{start + 256}\) holds a non-zero byte at {start + 200}",
        tmp_path,
    )
    assert "inserted or overwritten" in str(err)


def test_nonzero_byte_before_the_data_section_is_refused(tmp_path):
    data = bytearray(_two_tensor_file())
    data[_data_start(data) - 1] = 9
    _load_bounded(bytes(data), "padding before the data section .* non-zero byte", tmp_path)


@pytest.mark.parametrize(
    "tensors, data, match",
    [
        (  # 8 unused bytes between two tensors
            {"a": _tensor(shape=[2], offsets=[0, 8]), "b": _tensor(shape=[2], offsets=[16, 24])},
            bytes(24),
            r"tensor 'b': data_offsets \(16, 24\) leave data bytes 8\.\.16 after the end of tensor 'a' "
            r"covered by no tensor; only zero padding up to the 256-byte boundary 256",
        ),
        (  # a whole aligned slot skipped
            {"a": _tensor(shape=[2], offsets=[0, 8]), "b": _tensor(shape=[2], offsets=[512, 520])},
            bytes(520),
            r"tensor 'b': data_offsets \(512, 520\) leave data bytes 8\.\.512",
        ),
        (  # nothing at the start of the section
            {"a": _tensor(shape=[2], offsets=[256, 264])},
            bytes(264),
            r"tensor 'a': data_offsets \(256, 264\) leave data bytes 0\.\.256 after the section start",
        ),
        (  # an empty tensor may not claim a gap either
            {"a": _tensor(shape=[2], offsets=[0, 8]), "e": _tensor(shape=[0], offsets=[100, 100])},
            bytes(100),
            r"tensor 'e': data_offsets \(100, 100\) leave data bytes 8\.\.100",
        ),
        (  # no tensors, yet a data section
            {},
            bytes(8),
            r"the data section holds 8 bytes .* but no tensor has bytes: 8 bytes belong to no tensor",
        ),
    ],
    ids=["gap", "skipped-slot", "leading-gap", "empty-in-gap", "no-tensors"],
)
def test_gaps_in_the_data_section_are_refused(tmp_path, tensors, data, match):
    _load_bounded(_pack({"tensors": tensors}, data), match, tmp_path)


def test_burn_layouts_still_load():
    # Tightly packed tensors, aligned ones, and an empty tensor at the next boundary (where
    # Burn's writer puts it, padding included) are all covered layouts.
    meta = {
        "tensors": {
            "a": _tensor(shape=[2], offsets=[0, 8]),
            "b": _tensor(shape=[2], offsets=[8, 16]),
            "c": _tensor(shape=[1], offsets=[256, 260]),
            "e": _tensor(shape=[0], offsets=[512, 512]),
        }
    }
    data = np.float32([1, 2, 3, 4]).tobytes() + bytes(240) + np.float32([5]).tobytes() + bytes(252)
    loaded = rec.from_bytes(_pack(meta, data))
    assert [loaded[n].numpy().tolist() for n in "abc"] == [[1, 2], [3, 4], [5]]
    saved = rec.to_bytes({"x": np.float32([1]), "empty": np.zeros(0, np.float32)})
    assert rec.from_bytes(saved)["empty"].shape == (0,)


def test_truncated_last_tensor_names_it(tmp_path):
    data = _two_tensor_file()
    _load_bounded(data[:-1], r"tensor 'b': data_offsets \(256, 272\) reach past the end", tmp_path)


def test_burn_0_19_layout_is_refused_with_its_reason(tmp_path):
    # Burn 0.19 packed the tensors right after the metadata, unaligned; format version 1 (and
    # Burn 0.20+) reads the data section from the next 256-byte boundary.
    meta = {"tensors": {"a": _tensor(shape=[3], offsets=[0, 12]), "b": _tensor(shape=[4], offsets=[12, 28])}}
    blob = cbor2.dumps(meta)
    data = struct.pack("<IHI", 0x4255524E, 1, len(blob)) + blob + np.float32([1, 2, 3, 4, 5, 6, 7]).tobytes()
    err = _load_bounded(data, "laid out as Burn 0.19 wrote burnpack files", tmp_path)
    assert f"packed from byte {10 + len(blob)}" in str(err) and "boundary 256" in str(err)
    # Other damage is not mistaken for it.
    assert "Burn 0.19" not in str(_load_bounded(_two_tensor_file() + bytes(3), "belong to no tensor"))
