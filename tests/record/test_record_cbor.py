"""The CBOR codec against cbor2 as an independent oracle."""

import math

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.record.cbor import CborError, Decoder, encode

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_encode_agrees_with_cbor2_and_round_trips(value):
    data = encode(value)
    assert cbor2.loads(data) == value
    assert Decoder(data).item() == value


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False))
def test_floats_use_the_shortest_exact_width_like_ciborium(value):
    data = encode(value)
    # cbor2's canonical mode applies the same shortest-exact rule (half/single/double).
    assert data == cbor2.dumps(value, canonical=True)
    decoded = Decoder(data).item()
    assert decoded == value and math.copysign(1, decoded) == math.copysign(1, value)


def test_nan_and_infinities_are_half_precision():
    assert encode(float("nan")).hex() == "f97e00"
    assert encode(float("inf")).hex() == "f97c00"
    assert encode(-0.0).hex() == "f98000"


def test_decoder_reads_what_other_encoders_may_write():
    # cbor2 writes indefinite-length strings/containers when streaming; accept them.
    assert Decoder(bytes.fromhex("7f61616162ff")).item() == "ab"
    assert Decoder(bytes.fromhex("9f0102ff")).item() == [1, 2]
    assert Decoder(bytes.fromhex("c11a514b67b0")).item() == 1363896240  # tag dropped


@pytest.mark.parametrize(
    "hexdata, match",
    [
        ("7f01ff", "malformed indefinite-length string"),
        ("62ff", "truncated"),
        ("a18001", "unhashable"),
        ("f8ff", "unsupported CBOR simple value"),
        ("ff", "unexpected break"),
        ("1f", "invalid indefinite length"),
    ],
)
def test_malformed_input(hexdata, match):
    with pytest.raises(CborError, match=match):
        Decoder(bytes.fromhex(hexdata)).item()


def test_item_budget():
    with pytest.raises(CborError, match="too many items"):
        Decoder(encode(list(range(100))), max_items=50).item()
