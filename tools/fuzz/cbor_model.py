"""CBOR as the fuzzer sees it: an encoder that can also write what no valid writer would,
and a small decoder that is the oracle's own reading of a file's metadata.

The encoder takes plain Python values plus a few markers: `Pairs` (a map written from a
list of key/value pairs, so keys may repeat or be of any type), `Tagged`, `Indefinite`
(indefinite-length string, array or map) and `Wide` (an integer written with a longer
argument than needed). The decoder follows RFC 8949 as Burn's reader (serde + ciborium)
does: tags are skipped, definite and indefinite lengths are accepted; it refuses what a
careful reader must refuse (truncation, a break outside an indefinite item, reserved
additional-information values, non-UTF-8 text, and map keys that repeat).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

__all__ = ["CborFormatError", "Indefinite", "Pairs", "Tagged", "Wide", "decode", "encode"]


@dataclass(frozen=True)
class Pairs:
    """A map written from `(key, value)` pairs, in order (duplicates allowed)."""

    items: tuple


@dataclass(frozen=True)
class Tagged:
    tag: int
    value: Any


@dataclass(frozen=True)
class Indefinite:
    """An indefinite-length text string, byte string, array (list) or map (`Pairs`)."""

    value: Any


@dataclass(frozen=True)
class Wide:
    """An integer (>= 0 or < 0) whose argument is written on `width` bytes (1, 2, 4, 8)."""

    value: int
    width: int = 8


class CborFormatError(ValueError):
    """The bytes are not one well-formed CBOR item (in the oracle's reading)."""


_WIDTH_INFO = {1: 24, 2: 25, 4: 26, 8: 27}


def _head(major: int, value: int, width: int | None = None) -> bytes:
    if width is None:
        if value < 24:
            return bytes([(major << 5) | value])
        width = 1 if value < 1 << 8 else 2 if value < 1 << 16 else 4 if value < 1 << 32 else 8
    return bytes([(major << 5) | _WIDTH_INFO[width]]) + value.to_bytes(width, "big")


def _encode_int(value: int, width: int | None = None) -> bytes:
    if value >= 0:
        if value >= 1 << 64:  # a bignum (tag 2), as a generic encoder would write it
            body = value.to_bytes((value.bit_length() + 7) // 8, "big")
            return _head(6, 2) + _head(2, len(body)) + body
        return _head(0, value, width)
    magnitude = -1 - value
    if magnitude >= 1 << 64:
        body = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "big")
        return _head(6, 3) + _head(2, len(body)) + body
    return _head(1, magnitude, width)


def encode(value: Any) -> bytes:
    """Encode `value` (see the module docstring for the markers)."""
    out: list[bytes] = []
    _encode_into(out, value)
    return b"".join(out)


def _encode_into(out: list[bytes], value: Any) -> None:
    if value is None:
        out.append(b"\xf6")
    elif value is True:
        out.append(b"\xf5")
    elif value is False:
        out.append(b"\xf4")
    elif isinstance(value, Wide):
        out.append(_encode_int(value.value, value.width))
    elif isinstance(value, int):
        out.append(_encode_int(value))
    elif isinstance(value, float):
        out.append(b"\xfb" + struct.pack(">d", value))
    elif isinstance(value, bytes):
        out.append(_head(2, len(value)) + value)
    elif isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        out.append(_head(3, len(data)) + data)
    elif isinstance(value, (list, tuple)):
        out.append(_head(4, len(value)))
        for item in value:
            _encode_into(out, item)
    elif isinstance(value, dict):
        _encode_into(out, Pairs(tuple(value.items())))
    elif isinstance(value, Pairs):
        out.append(_head(5, len(value.items)))
        for key, item in value.items:
            _encode_into(out, key)
            _encode_into(out, item)
    elif isinstance(value, Tagged):
        out.append(_head(6, value.tag))
        _encode_into(out, value.value)
    elif isinstance(value, Indefinite):
        inner = value.value
        if isinstance(inner, str):
            out.append(b"\x7f")
            data = inner.encode("utf-8")
            for start in range(0, len(data), 3):  # split on byte boundaries: may cut a char
                out.append(_head(3, len(data[start : start + 3])) + data[start : start + 3])
        elif isinstance(inner, bytes):
            out.append(b"\x5f" + _head(2, len(inner)) + inner)
        elif isinstance(inner, (list, tuple)):
            out.append(b"\x9f")
            for item in inner:
                _encode_into(out, item)
        else:
            pairs = inner if isinstance(inner, Pairs) else Pairs(tuple(dict(inner).items()))
            out.append(b"\xbf")
            for key, item in pairs.items:
                _encode_into(out, key)
                _encode_into(out, item)
        out.append(b"\xff")
    else:
        raise TypeError(f"cannot encode {type(value).__name__}")


# -- decoding (the oracle) --------------------------------------------------------------------

_BREAK = object()
_MAX_DEPTH = 256


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            raise CborFormatError(f"truncated: {n} bytes wanted at {self.pos}")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def head(self) -> tuple[int, int, int | None]:
        first = self.take(1)[0]
        major, info = first >> 5, first & 0x1F
        if info < 24:
            return major, info, info
        if info in (24, 25, 26, 27):
            return major, info, int.from_bytes(self.take(1 << (info - 24)), "big")
        if info == 31:
            return major, info, None
        raise CborFormatError(f"reserved additional information {info}")

    def item(self, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise CborFormatError("nested too deeply")
        major, info, arg = self.head()
        if major == 0:
            return self._definite(arg)
        if major == 1:
            return -1 - self._definite(arg)
        if major in (2, 3):
            if arg is None:
                parts = []
                while True:
                    part_major, _, part_arg = self.head()
                    if part_major == 7 and part_arg is None:
                        break
                    if part_major != major or part_arg is None:
                        raise CborFormatError("bad chunk in an indefinite string")
                    parts.append(self.take(part_arg))
                raw = b"".join(parts)
            else:
                raw = self.take(arg)
            if major == 2:
                return raw
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                raise CborFormatError("text is not UTF-8") from None
        if major == 4:
            items = []
            while True if arg is None else len(items) < arg:
                value = self.item(depth + 1)
                if value is _BREAK:
                    if arg is None:
                        break
                    raise CborFormatError("break inside a definite array")
                items.append(value)
            return items
        if major == 5:
            result: dict = {}
            count = 0
            while True if arg is None else count < arg:
                key = self.item(depth + 1)
                if key is _BREAK:
                    if arg is None:
                        break
                    raise CborFormatError("break inside a definite map")
                value = self.item(depth + 1)
                if value is _BREAK:
                    raise CborFormatError("break in place of a map value")
                try:
                    hash(key)
                except TypeError:
                    key = ("unhashable", repr(key))
                if key in result:
                    raise CborFormatError(f"map key {key!r} repeats")
                result[key] = value
                count += 1
            return result
        if major == 6:
            self._definite(arg)
            return self.item(depth + 1)  # tags are skipped, as serde's deserializer does
        # major 7: simple values and floats
        if arg is None:
            return _BREAK
        if info == 25:
            return struct.unpack(">e", arg.to_bytes(2, "big"))[0]
        if info == 26:
            return struct.unpack(">f", arg.to_bytes(4, "big"))[0]
        if info == 27:
            return struct.unpack(">d", arg.to_bytes(8, "big"))[0]
        return {20: False, 21: True, 22: None}.get(arg, ("simple", arg))

    @staticmethod
    def _definite(arg: int | None) -> int:
        if arg is None:
            raise CborFormatError("indefinite length on an integer or tag")
        return arg


def decode(data: bytes) -> Any:
    """Decode exactly one CBOR item filling `data`."""
    reader = _Reader(bytes(data))
    value = reader.item()
    if value is _BREAK:
        raise CborFormatError("a lone break")
    if reader.pos != len(reader.data):
        raise CborFormatError(f"{len(reader.data) - reader.pos} stray bytes after the item")
    return value
