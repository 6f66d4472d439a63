"""Mutations the fuzzer applies: byte-level damage, changes to decoded metadata trees, and
page-level damage to SQLite files.

Every function takes a `random.Random` and returns new data plus a short description of what
it did, so a finding can be explained without re-running it. The format-aware parts (which
fields of a header to touch, where pages start) are here too; which mutations each file
format gets, and how often, is decided in `targets`.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

__all__ = [
    "INTERESTING_INTS",
    "havoc",
    "mutate_tree",
    "sqlite_page_damage",
    "truncate_at",
]

INTERESTING_INTS = (
    0,
    1,
    2,
    3,
    7,
    8,
    255,
    256,
    257,
    4095,
    4096,
    65535,
    65536,
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**53,
    2**62,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    10**30,
    -1,
    -2,
    -(2**31),
    -(2**63),
    -(2**63) - 1,
)
_INTERESTING_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x18, 0x19, 0x1A, 0x1B, 0x1F, 0x20, 0x3F)


# -- bytes ------------------------------------------------------------------------------------


def _flip_bits(rng: random.Random, data: bytearray, start: int, end: int) -> str:
    count = rng.choice((1, 1, 2, 4, 8))
    for _ in range(count):
        position = rng.randrange(start, end)
        data[position] ^= 1 << rng.randrange(8)
    return f"flip {count} bit(s) in [{start}, {end})"


def _set_bytes(rng: random.Random, data: bytearray, start: int, end: int) -> str:
    position = rng.randrange(start, end)
    width = min(rng.choice((1, 1, 2, 4, 8)), end - position)
    value = rng.choice(_INTERESTING_BYTES) if rng.random() < 0.5 else rng.randrange(256)
    data[position : position + width] = bytes([value]) * width
    return f"set {width} byte(s) at {position} to 0x{value:02x}"


def _insert_bytes(rng: random.Random, data: bytearray, start: int, end: int) -> str:
    position = rng.randrange(start, end + 1)
    chunk = bytes(rng.randrange(256) for _ in range(rng.choice((1, 1, 2, 7, 64))))
    data[position:position] = chunk
    return f"insert {len(chunk)} byte(s) at {position}"


def _delete_bytes(rng: random.Random, data: bytearray, start: int, end: int) -> str:
    position = rng.randrange(start, end)
    width = min(rng.choice((1, 1, 2, 8, 64)), end - position)
    del data[position : position + width]
    return f"delete {width} byte(s) at {position}"


def _copy_chunk(rng: random.Random, data: bytearray, start: int, end: int) -> str:
    source = rng.randrange(start, end)
    target = rng.randrange(start, end)
    width = min(rng.choice((2, 4, 16, 64)), end - source, end - target)
    data[target : target + width] = data[source : source + width]
    return f"copy {width} byte(s) from {source} to {target}"


_BYTE_OPS: tuple[Callable[..., str], ...] = (
    _flip_bits,
    _flip_bits,
    _set_bytes,
    _set_bytes,
    _insert_bytes,
    _delete_bytes,
    _copy_chunk,
)


def havoc(
    rng: random.Random, data: bytes, start: int = 0, end: int | None = None, rounds: int | None = None
) -> tuple[bytes, str]:
    """One to a few byte-level mutations inside `[start, end)` of `data`."""
    out = bytearray(data)
    end = len(out) if end is None else min(end, len(out))
    notes = []
    for _ in range(rounds or rng.choice((1, 1, 1, 2, 3))):
        if end <= start:
            break
        op = rng.choice(_BYTE_OPS)
        before = len(out)
        notes.append(op(rng, out, start, end))
        end = max(start, end + len(out) - before)
    return bytes(out), "; ".join(notes)


def truncate_at(rng: random.Random, data: bytes, points: list[int]) -> tuple[bytes, str]:
    """Cut `data` at one of `points` (boundaries worth testing), nearby, or anywhere."""
    choice = rng.random()
    if points and choice < 0.6:
        cut = rng.choice(points) + rng.choice((-1, 0, 0, 1))
    else:
        cut = rng.randrange(len(data))
    cut = max(0, min(cut, len(data) - 1))
    return data[:cut], f"truncate to {cut} of {len(data)} bytes"


# -- decoded metadata trees ---------------------------------------------------------------------


def _paths(tree: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys / indices) into nested dicts and lists, the root included."""
    found = [prefix]
    if isinstance(tree, dict):
        for key, value in tree.items():
            found.extend(_paths(value, prefix + (key,)))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            found.extend(_paths(value, prefix + (index,)))
    return found


def _get(tree: Any, path: tuple) -> Any:
    for step in path:
        tree = tree[step]
    return tree


def _replacement(rng: random.Random, old: Any, vocabulary: tuple) -> Any:
    """A new value for a node: an interesting neighbour of the old one or something else."""
    roll = rng.random()
    if isinstance(old, bool):
        return rng.choice((not old, 0, 1, None, "true"))
    if isinstance(old, int) and roll < 0.6:
        return rng.choice(
            (
                old + 1,
                old - 1,
                old * 2,
                old + 256,
                old - 256,
                old ^ (1 << rng.randrange(64)),
                rng.choice(INTERESTING_INTS),
            )
        )
    if isinstance(old, str) and roll < 0.6:
        return rng.choice(vocabulary + ("", old + old, old[:-1], old.lower(), "\u00e9" + old))
    if isinstance(old, list) and roll < 0.6:
        mutated = list(old)
        action = rng.randrange(5)
        if action == 0 and mutated:
            mutated.pop(rng.randrange(len(mutated)))
        elif action == 1:
            mutated.insert(rng.randrange(len(mutated) + 1), rng.choice(INTERESTING_INTS))
        elif action == 2 and mutated:
            mutated = mutated[::-1]
        elif action == 3:
            mutated = mutated + mutated
        else:
            mutated = [1] * rng.choice((65, 100))
        return mutated
    if isinstance(old, dict) and roll < 0.6:
        mutated = dict(old)
        if mutated and rng.random() < 0.5:
            mutated.pop(rng.choice(list(mutated)))
        else:
            mutated[rng.choice(vocabulary + ("extra", ""))] = rng.choice((0, "x", [], {}))
        return mutated
    return rng.choice(
        (
            None,
            0,
            -1,
            1.5,
            float("nan"),
            float("inf"),
            "",
            "x",
            b"\x00",
            [],
            {},
            [0],
            {"a": 1},
            rng.choice(INTERESTING_INTS),
            rng.choice(vocabulary),
        )
    )


def mutate_tree(rng: random.Random, tree: Any, vocabulary: tuple = ()) -> tuple[Any, str]:
    """Replace, delete or duplicate one node of a JSON/CBOR-like tree (a deep copy)."""
    tree = copy.deepcopy(tree)
    paths = _paths(tree)
    path = rng.choice(paths[1:] or paths)
    if not path:
        return _replacement(rng, tree, vocabulary), "replace the root"
    parent = _get(tree, path[:-1])
    key = path[-1]
    old = parent[key]
    action = rng.random()
    if action < 0.12 and isinstance(parent, dict):
        del parent[key]
        return tree, f"delete {list(path)}"
    if action < 0.2 and isinstance(parent, dict):
        name = key if isinstance(key, str) else "k"
        new_key = rng.choice(vocabulary + (name + "_", "", name.upper()))
        parent[new_key] = copy.deepcopy(old)
        return tree, f"copy {list(path)} to key {new_key!r}"
    new = _replacement(rng, old, vocabulary)
    parent[key] = new
    return tree, f"set {list(path)} from {old!r:.40} to {new!r:.40}"


# -- SQLite pages -------------------------------------------------------------------------------


def _page_size(data: bytes) -> int:
    size = int.from_bytes(data[16:18], "big") if len(data) >= 18 else 4096
    size = 65536 if size == 1 else size
    return size if size >= 512 and size & (size - 1) == 0 else 4096


# Fields of SQLite's 100-byte database header worth damaging: (offset, width).
_HEADER_FIELDS = (
    (16, 2),
    (18, 1),
    (19, 1),
    (20, 1),
    (21, 1),
    (22, 1),
    (23, 1),
    (24, 4),
    (28, 4),
    (32, 4),
    (36, 4),
    (40, 4),
    (44, 4),
    (48, 4),
    (52, 4),
    (56, 4),
    (60, 4),
    (64, 4),
    (68, 4),
    (92, 4),
    (96, 4),
)


def _page_header_offset(number: int) -> int:
    return 100 if number == 0 else 0  # page 1 starts with the database header


def sqlite_page_damage(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """One page-level damage: copy/swap/zero pages, b-tree page header or cell damage,
    database-header fields, truncation or extension."""
    size = _page_size(data)
    pages = max(1, len(data) // size)
    out = bytearray(data)

    def page(number: int) -> slice:
        return slice(number * size, (number + 1) * size)

    kind = rng.randrange(10)
    if kind == 0 and pages > 1:
        source, target = rng.sample(range(pages), 2)
        out[page(target)] = data[page(source)]
        return bytes(out), f"copy page {source + 1} over page {target + 1}"
    if kind == 1 and pages > 1:
        first, second = rng.sample(range(pages), 2)
        out[page(first)], out[page(second)] = data[page(second)], data[page(first)]
        return bytes(out), f"swap pages {first + 1} and {second + 1}"
    if kind == 2:
        number = rng.randrange(pages)
        out[page(number)] = bytes(size)
        return bytes(out), f"zero page {number + 1}"
    if kind in (3, 4):  # the b-tree page header: type, freeblock, cell count, content start...
        number = rng.randrange(pages)
        base = number * size + _page_header_offset(number)
        offset = base + rng.randrange(12)
        if rng.random() < 0.5:
            out[offset] ^= 1 << rng.randrange(8)
        else:
            out[offset] = rng.choice((0x00, 0x01, 0x02, 0x05, 0x0A, 0x0D, 0xFF, rng.randrange(256)))
        return bytes(out), f"damage b-tree header byte {offset - base} of page {number + 1}"
    if kind == 5:  # a cell: pointer array entry or the start of the cell (sizes, rowid, header)
        number = rng.randrange(pages)
        base = number * size + _page_header_offset(number)
        cells = int.from_bytes(out[base + 3 : base + 5], "big")
        header = 12 if out[base] in (0x02, 0x05) else 8
        if cells and rng.random() < 0.5:
            slot = base + header + 2 * rng.randrange(min(cells, (size - header) // 2))
            pointer = int.from_bytes(out[slot : slot + 2], "big")
            if 0 < pointer < size - 8 and rng.random() < 0.7:
                cell = number * size + pointer + rng.randrange(8)
                out[cell] ^= 1 << rng.randrange(8)
                return bytes(out), f"flip a bit at byte {cell - number * size} (a cell) of page {number + 1}"
            out[slot + rng.randrange(2)] ^= 1 << rng.randrange(8)
            return bytes(out), f"flip a bit in a cell pointer of page {number + 1}"
        spot = number * size + rng.randrange(size)
        out[spot] ^= 1 << rng.randrange(8)
        return bytes(out), f"flip a bit at byte {spot - number * size} of page {number + 1}"
    if kind == 6:
        offset, width = rng.choice(_HEADER_FIELDS)
        value = rng.choice((0, 1, 2, 0xFF, rng.randrange(1 << (8 * width)), pages, pages + 1, pages - 1))
        value &= (1 << (8 * width)) - 1
        out[offset : offset + width] = value.to_bytes(width, "big")
        return bytes(out), f"set database header field at {offset} ({width} bytes) to {value}"
    if kind == 7:
        cut = rng.choice(
            (rng.randrange(1, pages) * size if pages > 1 else size // 2, rng.randrange(len(data)))
        )
        return bytes(out[:cut]), f"truncate to {cut} of {len(data)} bytes"
    if kind == 8:
        extra = rng.choice((bytes(size), data[page(rng.randrange(pages))], bytes(rng.randrange(1, 100))))
        return bytes(out) + extra, f"append {len(extra)} bytes"
    spot, note = havoc(rng, data)
    return spot, note
