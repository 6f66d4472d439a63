"""Constants and layout rules of Burn's burnpack (``.bpk``) container, format version 1.

Layout (all integers little-endian)::

    header    10 bytes   magic u32 = 0x4255524E ("NRUB" on disk), version u16 = 1,
                         metadata_size u32
    metadata  CBOR map   {"tensors": {name: {"dtype", "shape", "data_offsets",
                                             "param_id"?}},
                          "metadata"?: {str: str}, "scalars"?: {str: {"Int"|"UInt"|
                                                                       "Float"|"Bool": v}}}
    padding   zeros up to the next multiple of 256 (the data section start)
    data      each tensor's raw bytes start at a multiple of 256 relative to the data
              section (hence of the file); ``data_offsets`` are relative to the data section

These mirror ``crates/burn-pack/src/base.rs`` in tracel-ai/burn, including the limits a
reader enforces on untrusted files.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

__all__ = [
    "ALIGNMENT",
    "EXTENSION",
    "HEADER_SIZE",
    "MAGIC",
    "MAX_FILE_SIZE",
    "MAX_METADATA_SIZE",
    "MAX_TENSOR_COUNT",
    "MAX_TENSOR_SIZE",
    "VERSION",
    "align",
    "data_section_start",
    "pack_header",
    "resolve_read_path",
    "resolve_write_path",
]

MAGIC = 0x4255524E
VERSION = 1
HEADER_SIZE = 10
ALIGNMENT = 256
MAX_METADATA_SIZE = 100 * 1024 * 1024
MAX_TENSOR_COUNT = 100_000
MAX_TENSOR_SIZE = 10 * 1024 * 1024 * 1024
MAX_FILE_SIZE = 100 * 1024 * 1024 * 1024
EXTENSION = ".bpk"

_HEADER = struct.Struct("<IHI")


def pack_header(metadata_size: int, version: int = VERSION, magic: int = MAGIC) -> bytes:
    """The 10-byte header for a metadata blob of ``metadata_size`` bytes."""
    return _HEADER.pack(magic, version, metadata_size)


def unpack_header(raw: bytes) -> tuple[int, int, int]:
    """Split 10 header bytes into ``(magic, version, metadata_size)``."""
    return _HEADER.unpack(raw)


def align(offset: int) -> int:
    """Round ``offset`` up to the next multiple of :data:`ALIGNMENT`."""
    return -(-offset // ALIGNMENT) * ALIGNMENT


def data_section_start(metadata_size: int) -> int:
    """Absolute file offset of the (aligned) tensor data section."""
    return align(HEADER_SIZE + metadata_size)


def resolve_write_path(path: str | os.PathLike) -> Path:
    """Append ``.bpk`` when ``path`` has no extension, as Burn's writer does."""
    p = Path(path)
    return p.with_name(p.name + EXTENSION) if not p.suffix else p


def resolve_read_path(path: str | os.PathLike) -> Path:
    """Try ``path`` + ``.bpk`` when ``path`` has no extension and does not exist."""
    p = Path(path)
    if not p.suffix and not p.exists():
        return p.with_name(p.name + EXTENSION)
    return p
