"""A small CBOR (RFC 8949) encoder and a bounded decoder for burnpack metadata.

The encoder reproduces what Burn's writer emits through serde + ciborium 0.2, so a file
written here is byte-identical to the one Burn writes for the same content:

- integers and lengths use the shortest argument encoding;
- every array, map and string has a definite length (ciborium never writes indefinite ones);
- a float is written as half, single or double precision, whichever is the shortest that
  gives back the exact same bits;
- maps keep the insertion order of the Python dict (callers insert struct fields in
  declaration order and ``BTreeMap`` entries sorted by key, as serde does).

The decoder is for untrusted input: nesting depth, the total number of decoded items and
every declared length are checked against fixed limits and against the bytes actually
left before anything is allocated for them, and a map that repeats a key is refused (serde
refuses repeated struct fields; elsewhere one of the two values would be dropped unseen).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

__all__ = ["MAX_DEPTH", "MAX_ITEMS", "CborError", "Decoder", "encode"]

MAX_DEPTH = 128  # same recursion limit as Burn's reader (MAX_CBOR_RECURSION_DEPTH)
MAX_ITEMS = 5_000_000  # decoded items per blob; 100k tensors need about 2M

_POS, _NEG, _BYTES, _TEXT, _ARRAY, _MAP, _TAG, _OTHER = range(8)
_BREAK = object()


class CborError(ValueError):
    """Malformed or over-limit CBOR; the caller adds the file and field to the message."""


# --------------------------------------------------------------------------- encoding


def _head(major: int, value: int) -> bytes:
    if value < 24:
        return bytes([(major << 5) | value])
    if value < 1 << 8:
        return bytes([(major << 5) | 24, value])
    if value < 1 << 16:
        return bytes([(major << 5) | 25]) + value.to_bytes(2, "big")
    if value < 1 << 32:
        return bytes([(major << 5) | 26]) + value.to_bytes(4, "big")
    if value < 1 << 64:
        return bytes([(major << 5) | 27]) + value.to_bytes(8, "big")
    raise CborError(f"integer argument {value} does not fit in 64 bits")


def _encode_float(value: float) -> bytes:
    bits = struct.pack(">d", value)
    with np.errstate(over="ignore", invalid="ignore"):
        half = np.array(value, dtype=np.float64).astype(np.float16)
    if struct.pack(">d", float(half)) == bits:
        return b"\xf9" + half.astype(">f2").tobytes()
    try:
        single = struct.pack(">f", value)
    except OverflowError:  # finite but beyond single precision
        single = None
    if single is not None and struct.pack(">d", struct.unpack(">f", single)[0]) == bits:
        return b"\xfa" + single
    return b"\xfb" + bits


def _encode_into(out: list[bytes], obj: Any) -> None:
    # bool before int: bool is a subclass of int.
    if obj is None:
        out.append(b"\xf6")
    elif obj is True:
        out.append(b"\xf5")
    elif obj is False:
        out.append(b"\xf4")
    elif isinstance(obj, int):
        out.append(_head(_POS, obj) if obj >= 0 else _head(_NEG, -1 - obj))
    elif isinstance(obj, float):
        out.append(_encode_float(obj))
    elif isinstance(obj, str):
        raw = obj.encode("utf-8")
        out.append(_head(_TEXT, len(raw)))
        out.append(raw)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        raw = bytes(obj)
        out.append(_head(_BYTES, len(raw)))
        out.append(raw)
    elif isinstance(obj, (list, tuple)):
        out.append(_head(_ARRAY, len(obj)))
        for item in obj:
            _encode_into(out, item)
    elif isinstance(obj, dict):
        out.append(_head(_MAP, len(obj)))
        for key, value in obj.items():
            _encode_into(out, key)
            _encode_into(out, value)
    else:
        raise CborError(f"cannot encode {type(obj).__name__} value {obj!r} as CBOR")


def encode(obj: Any) -> bytes:
    """Encode ``obj`` (None, bool, int, float, str, bytes, list/tuple, dict) as CBOR.

    Args:
        obj: the value; dict entries are written in iteration order.

    Returns:
        The encoded bytes.
    """
    out: list[bytes] = []
    try:
        _encode_into(out, obj)
    except UnicodeEncodeError as exc:
        raise CborError(f"string is not valid UTF-8: {exc}") from None
    return b"".join(out)


# --------------------------------------------------------------------------- decoding


class Decoder:
    """Bounded, position-tracking CBOR decoder over a bytes-like buffer.

    Besides :meth:`item` (decode one whole data item), it exposes :meth:`head` and
    :meth:`at_break` so a caller can walk a large map entry by entry and check its declared
    length before decoding it.

    Args:
        data: the encoded bytes (bytes, bytearray, memoryview or mmap slice).
        max_depth: deepest allowed nesting of arrays, maps and tags.
        max_items: most data items decoded over the decoder's lifetime.
    """

    def __init__(self, data, max_depth: int = MAX_DEPTH, max_items: int = MAX_ITEMS):
        self.data = memoryview(data).cast("B")
        self.pos = 0
        self.max_depth = max_depth
        self.max_items = max_items
        self.items_left = max_items

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos

    def _take(self, n: int) -> memoryview:
        if n > self.remaining:
            raise CborError(
                f"truncated CBOR: needs {n} more bytes at offset {self.pos}, only {self.remaining} left"
            )
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def _count(self, n: int = 1) -> None:
        self.items_left -= n
        if self.items_left < 0:
            raise CborError(
                f"CBOR metadata holds too many items (limit {self.max_items:,}; corrupt or hostile input)"
            )

    def head(self) -> tuple[int, int, int | None]:
        """Read an initial byte and its argument.

        Returns:
            ``(major, additional_info, argument)``; the argument is None for the
            indefinite-length marker (additional info 31) and for simple/float heads it is
            the raw bits.
        """
        if self.remaining < 1:
            raise CborError(f"truncated CBOR: expected a data item at offset {self.pos}")
        first = self.data[self.pos]
        self.pos += 1
        major, info = first >> 5, first & 0x1F
        if info < 24:
            return major, info, info
        if info <= 27:
            size = 1 << (info - 24)
            return major, info, int.from_bytes(self._take(size), "big")
        if info == 31:
            if major in (_POS, _NEG, _TAG):
                raise CborError(f"invalid indefinite length for major type {major} at offset {self.pos - 1}")
            return major, info, None
        raise CborError(f"reserved additional information {info} at offset {self.pos - 1}")

    def at_break(self) -> bool:
        """Consume a break marker (0xFF) if one is next; used inside indefinite containers."""
        if self.remaining >= 1 and self.data[self.pos] == 0xFF:
            self.pos += 1
            return True
        return False

    def check_length(self, length: int, per_item: int, what: str) -> None:
        """Refuse a declared length that the remaining bytes cannot possibly hold."""
        if length * per_item > self.remaining:
            raise CborError(
                f"{what} declares {length} entries but only {self.remaining} "
                f"bytes remain at offset {self.pos}"
            )

    def item(self, depth: int = 0) -> Any:
        """Decode one complete data item (tags are read and dropped)."""
        if depth > self.max_depth:
            raise CborError(f"CBOR nesting deeper than {self.max_depth} levels")
        self._count()
        major, info, arg = self.head()
        if major == _POS:
            return arg
        if major == _NEG:
            return -1 - arg
        if major in (_BYTES, _TEXT):
            raw = self._string(major, arg)
            if major == _BYTES:
                return raw
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                raise CborError(f"invalid UTF-8 text string before offset {self.pos}") from None
        if major == _ARRAY:
            if arg is None:
                out = []
                while not self.at_break():
                    out.append(self.item(depth + 1))
                return out
            self.check_length(arg, 1, "array")
            return [self.item(depth + 1) for _ in range(arg)]
        if major == _MAP:
            if arg is not None:
                self.check_length(arg, 2, "map")
            result: dict = {}
            count = 0
            while (not self.at_break()) if arg is None else (count < arg):
                key = self.item(depth + 1)
                try:
                    hash(key)
                except TypeError:
                    raise CborError(f"unhashable CBOR map key of type {type(key).__name__}") from None
                if key in result:  # RFC 8949 5.6: not valid; which value would count?
                    raise CborError(f"map key {key!r:.60} appears twice (before offset {self.pos})")
                result[key] = self.item(depth + 1)
                count += 1
            return result
        if major == _TAG:
            return self.item(depth + 1)
        return self._simple(info, arg)

    def _string(self, major: int, arg: int | None) -> bytes:
        if arg is not None:
            return bytes(self._take(arg))
        parts = []
        while not self.at_break():
            self._count()
            sub_major, _, sub_arg = self.head()
            if sub_major != major or sub_arg is None:
                raise CborError(f"malformed indefinite-length string chunk at offset {self.pos}")
            parts.append(bytes(self._take(sub_arg)))
        return b"".join(parts)

    def _simple(self, info: int, arg: int | None) -> Any:
        if info == 20:
            return False
        if info == 21:
            return True
        if info in (22, 23):  # null, undefined
            return None
        if info == 25:
            return float(np.frombuffer(arg.to_bytes(2, "big"), dtype=">f2")[0])
        if info == 26:
            return struct.unpack(">f", arg.to_bytes(4, "big"))[0]
        if info == 27:
            return struct.unpack(">d", arg.to_bytes(8, "big"))[0]
        if arg is None:
            raise CborError(f"unexpected break marker before offset {self.pos}")
        raise CborError(f"unsupported CBOR simple value {arg} before offset {self.pos}")
