"""Read burnpack (``.bpk``) containers written by Burn or by :func:`ember.record.save`.

A file is memory-mapped; only its header and CBOR metadata are read and validated up front,
and each tensor is a zero-copy view whose pages are read when first touched. Everything a
hostile file could lie about is checked before it is used: the magic and version, the
metadata size (at most 100 MB, and no more than the file holds), the tensor count (at most
100,000, checked on the map's declared length before any entry is decoded), each tensor's
dtype, shape (at most 64 dims that NumPy can represent), byte range (inside the data section,
at most 10 GB, exactly ``prod(shape) * itemsize`` bytes, and shared with no other tensor),
the CBOR itself (depth, item count, lengths), and the layout: the data section is exactly
covered by the tensors' byte ranges plus the zero alignment padding between them, so bytes
inserted into or appended to a file are refused rather than loaded as shifted values.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from . import burnpack_format as fmt
from .cbor import CborError, Decoder
from .dtypes import storage_from_burn
from .entries import TensorView, UInt
from .errors import RecordError

__all__ = ["Record", "from_bytes", "load"]

_U64 = 1 << 64
_I64 = 1 << 63
_MAX_NDIM = 64  # NumPy's limit
_DESCRIPTOR_FIELDS = ("dtype", "shape", "data_offsets", "param_id")


def shape_problem(shape, itemsize: int) -> str | None:
    """Why no NumPy array can have ``shape`` (dims of ``itemsize`` bytes), or None.

    More than 64 dims, or non-zero dims spanning 2**63 bytes or more (an empty tensor needs
    0 bytes whatever its other dims, but NumPy cannot represent those)."""
    if len(shape) > _MAX_NDIM:
        return f"shape has {len(shape)} dimensions, more than the {_MAX_NDIM} an array can have"
    nonzero = 1
    for d in shape:
        nonzero *= d if d else 1
    if nonzero * itemsize >= _I64:
        return f"shape {list(shape)} cannot be represented: its non-zero dimensions span 2**63 bytes or more"
    return None


def _packed_from(ordered: list, data_start: int, size: int) -> bool:
    """Whether the tensors (sorted by start) fill bytes ``data_start..size`` back to back,
    with no padding: Burn 0.19's layout, before tensors were 256-byte aligned."""
    reach = 0
    for _, desc in ordered:
        if desc["end"] == desc["start"] and desc["start"] <= reach:
            continue
        if desc["start"] != reach:
            return False
        reach = desc["end"]
    return data_start + reach == size


def _exact_float(value: Any) -> bool:
    """Whether an integer stands for a float exactly (a Float scalar written as an integer
    must not change value on the way in)."""
    if type(value) is not int:
        return False
    try:
        return float(value) == value
    except OverflowError:
        return False


class Record(Mapping[str, TensorView]):
    """A loaded burnpack (or safetensors) file.

    It is a read-only mapping name -> :class:`TensorView`, in the order the tensors are
    stored in the file, with the file's other contents as attributes.

    Attributes:
        tensors: name -> :class:`TensorView`; ``view.numpy()`` copies the values out.
        param_ids: name -> Burn ``ParamId`` for the tensors that carry one.
        metadata: the str -> str metadata map.
        scalars: str -> int, float or bool (``UInt`` for Burn's unsigned variant).
        path: the file read, or None for in-memory data.
    """

    def __init__(
        self,
        tensors: dict[str, TensorView],
        metadata: dict[str, str] | None = None,
        scalars: dict[str, Any] | None = None,
        path: Path | None = None,
        source: Any = None,
    ):
        self.tensors = tensors
        self.param_ids = {n: v.param_id for n, v in tensors.items() if v.param_id is not None}
        self.metadata = dict(metadata or {})
        self.scalars = dict(scalars or {})
        self.path = path
        self._source = source  # keeps the memory map alive for the views

    def __getitem__(self, name: str) -> TensorView:
        try:
            return self.tensors[name]
        except KeyError:
            where = f" in '{self.path}'" if self.path else ""
            raise KeyError(
                f"no tensor named {name!r}{where}; the record holds {len(self.tensors)} tensors"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)

    def numpy(self) -> dict[str, np.ndarray]:
        """Copy every tensor out: name -> new NumPy array (bfloat16 widened to float32)."""
        return {name: view.numpy() for name, view in self.tensors.items()}

    def close(self) -> None:
        """Release the memory map once no view returned by this record is still in use.

        Views stay valid as long as they are referenced; closing only drops this record's
        own reference, so the map is unmapped when the last view is garbage collected.
        """
        self.tensors = {}
        self._source = None

    def __enter__(self) -> "Record":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        where = f" from '{self.path}'" if self.path else ""
        return (
            f"Record({len(self.tensors)} tensors, {len(self.metadata)} metadata, "
            f"{len(self.scalars)} scalars{where})"
        )


class _Parser:
    """Validates one container held in ``buf`` (a memoryview over a map or bytes)."""

    def __init__(self, buf: memoryview, where: str):
        self.buf = buf
        self.where = where

    def fail(self, message: str, tensor: str | None = None) -> RecordError:
        subject = f"tensor '{tensor}': " if tensor is not None else ""
        return RecordError(f"{self.where}: {subject}{message}")

    def parse(self) -> tuple[dict[str, TensorView], dict[str, str], dict[str, Any]]:
        size = len(self.buf)
        if size < fmt.HEADER_SIZE:
            raise self.fail(f"only {size} bytes; a burnpack header needs {fmt.HEADER_SIZE}")
        magic, version, meta_size = fmt.unpack_header(bytes(self.buf[: fmt.HEADER_SIZE]))
        if magic != fmt.MAGIC:
            raise self.fail(f"not a burnpack file (magic 0x{magic:08X}, expected 0x{fmt.MAGIC:08X})")
        if version > fmt.VERSION:
            raise self.fail(f"format version {version} is newer than the supported version {fmt.VERSION}")
        if meta_size > fmt.MAX_METADATA_SIZE:
            raise self.fail(
                f"metadata size {meta_size} exceeds the limit of "
                f"{fmt.MAX_METADATA_SIZE} bytes (corrupt or hostile file)"
            )
        if fmt.HEADER_SIZE + meta_size > size:
            raise self.fail(
                f"header claims {meta_size} bytes of metadata but the file has "
                f"only {size - fmt.HEADER_SIZE} after the header (truncated?)"
            )
        decoder = Decoder(self.buf[fmt.HEADER_SIZE : fmt.HEADER_SIZE + meta_size])
        data_start = fmt.data_section_start(meta_size)
        try:
            descriptors, metadata, scalars = self._metadata(decoder)
        except CborError as exc:
            raise self.fail(f"malformed CBOR metadata: {exc}") from None
        data_size = max(size - data_start, 0)
        # File (data offset) order: saving a loaded record back reproduces the same layout.
        ordered = sorted(descriptors.items(), key=lambda kv: (kv[1]["start"], kv[0]))
        # Validate every descriptor before creating any view onto the buffer.
        try:
            for name, desc in ordered:
                self._check_range(name, desc, data_size)
            self._check_disjoint(ordered)
            self._check_padding(fmt.HEADER_SIZE + meta_size, min(data_start, size), "before the data section")
            self._check_coverage(ordered, data_start, data_size)
        except RecordError as exc:
            unaligned = fmt.HEADER_SIZE + meta_size
            if unaligned != data_start and _packed_from(ordered, unaligned, size):
                raise RecordError(
                    f"{exc}. The file is laid out as Burn 0.19 wrote burnpack files: its tensors packed "
                    f"from byte {unaligned}, right after the metadata, where format version 1 now "
                    f"starts the data section at the 256-byte boundary {data_start} (Burn 0.20 and "
                    "later read it there too); load it with Burn 0.19 and save it as safetensors, which "
                    "ember.record.load_safetensors reads"
                ) from None
            raise
        tensors = {name: self._view(name, desc, data_start) for name, desc in ordered}
        return tensors, metadata, scalars

    # -- metadata structure --------------------------------------------------------------

    def _map_entries(self, decoder: Decoder, what: str, limit: int | None = None):
        """Yield the raw keys of a CBOR map one by one, checking its declared length."""
        major, _, count = decoder.head()
        if major != 5:
            raise self.fail(f"{what} must be a CBOR map (major type {major} found)")
        if count is not None:
            if limit is not None and count > limit:
                raise self.fail(
                    f"{what} declares {count} entries, over the limit of {limit} (corrupt or hostile file)"
                )
            decoder.check_length(count, 2, what)
        seen = 0
        while (not decoder.at_break()) if count is None else seen < count:
            seen += 1
            if limit is not None and seen > limit:
                raise self.fail(f"{what} holds more than {limit} entries (corrupt or hostile file)")
            key = decoder.item(1)
            if not isinstance(key, str):
                raise self.fail(f"{what} has a non-text key {key!r}")
            yield key

    def _metadata(self, decoder: Decoder):
        descriptors: dict[str, dict] = {}
        metadata: dict[str, str] = {}
        scalars: dict[str, Any] = {}
        found = set()
        for field in self._map_entries(decoder, "top-level metadata"):
            if field in found:
                raise self.fail(f"duplicate metadata field '{field}'")
            found.add(field)
            if field == "tensors":
                for name in self._map_entries(decoder, "tensors map", fmt.MAX_TENSOR_COUNT):
                    if name in descriptors:
                        raise self.fail("duplicate tensor name", name)
                    descriptors[name] = self._descriptor(decoder.item(1), name)
            elif field == "metadata":
                value = decoder.item(1)
                if not isinstance(value, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in value.items()
                ):
                    raise self.fail("'metadata' must map text to text")
                metadata = value
            elif field == "scalars":
                value = decoder.item(1)
                if not isinstance(value, dict):
                    raise self.fail("'scalars' must be a map")
                scalars = {key: self._scalar(key, v) for key, v in value.items()}
            else:
                decoder.item(1)  # unknown fields are skipped, as serde does
        if "tensors" not in found:
            raise self.fail("metadata has no 'tensors' field")
        if decoder.remaining:
            raise self.fail(f"{decoder.remaining} stray bytes after the CBOR metadata")
        return descriptors, metadata, scalars

    def _uint(self, value: Any, what: str, name: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _U64:
            raise self.fail(f"{what} must be an unsigned 64-bit integer, got {value!r}", name)
        return value

    def _descriptor(self, raw: Any, name: str) -> dict:
        if not isinstance(raw, dict):
            raise self.fail(f"descriptor must be a map, got {type(raw).__name__}", name)
        for required in _DESCRIPTOR_FIELDS[:3]:
            if required not in raw:
                raise self.fail(f"descriptor is missing '{required}'", name)
        try:
            storage = storage_from_burn(raw["dtype"])
        except ValueError as exc:
            raise self.fail(str(exc), name) from None
        shape = raw["shape"]
        if not isinstance(shape, list):
            raise self.fail(f"shape must be a list, got {shape!r}", name)
        shape = tuple(self._uint(d, "shape dimension", name) for d in shape)
        offsets = raw["data_offsets"]
        if not isinstance(offsets, list) or len(offsets) != 2:
            raise self.fail(f"data_offsets must be a pair, got {offsets!r}", name)
        start, end = (self._uint(o, "data offset", name) for o in offsets)
        param_id = raw.get("param_id")
        if param_id is not None:
            param_id = self._uint(param_id, "param_id", name)
        return {"storage": storage, "shape": shape, "start": start, "end": end, "param_id": param_id}

    def _scalar(self, key: Any, raw: Any) -> Any:
        if not isinstance(key, str):
            raise self.fail(f"scalar key {key!r} is not text")
        if isinstance(raw, dict) and len(raw) == 1:
            ((variant, value),) = raw.items()
            if variant == "Bool" and isinstance(value, bool):
                return value
            if variant == "Float" and (type(value) is float or _exact_float(value)):
                return float(value)
            if variant == "Int" and type(value) is int and -_I64 <= value < _I64:
                return value
            if variant == "UInt" and type(value) is int and 0 <= value < _U64:
                return UInt(value)
        raise self.fail(f'scalar \'{key}\' must be {{"Int"|"UInt"|"Float"|"Bool": value}}, got {raw!r}')

    # -- tensor views --------------------------------------------------------------------

    def _check_range(self, name: str, desc: dict, data_size: int) -> None:
        storage, shape = desc["storage"], desc["shape"]
        start, end = desc["start"], desc["end"]
        if len(shape) > _MAX_NDIM:
            raise self.fail(shape_problem(shape, storage.itemsize), name)
        if end < start:
            raise self.fail(f"data_offsets ({start}, {end}) end before they start", name)
        length = end - start
        if length > fmt.MAX_TENSOR_SIZE:
            raise self.fail(
                f"{length} bytes exceed the limit of {fmt.MAX_TENSOR_SIZE} bytes "
                "per tensor (corrupt or hostile file)",
                name,
            )
        expected = int(np.prod(shape, dtype=object)) * storage.itemsize
        if expected != length:
            raise self.fail(
                f"shape {list(shape)} of {storage.name} needs {expected} bytes but "
                f"data_offsets ({start}, {end}) span {length}",
                name,
            )
        if end > data_size:
            raise self.fail(
                f"data_offsets ({start}, {end}) reach past the end of the data "
                f"section ({data_size} bytes; file truncated or corrupt)",
                name,
            )
        problem = shape_problem(shape, storage.itemsize)  # left: empty tensors of huge dims
        if problem is not None:
            raise self.fail(f"{problem} ({storage.name})", name)

    def _check_disjoint(self, ordered: list) -> None:
        """No two tensors may share bytes (``ordered`` is sorted by start offset); empty
        tensors hold no bytes and may sit anywhere."""
        previous, reach = None, 0
        for name, desc in ordered:
            start, end = desc["start"], desc["end"]
            if start == end:
                continue
            if start < reach:
                raise self.fail(
                    f"data_offsets ({start}, {end}) overlap those of tensor "
                    f"'{previous}', which reach {reach}",
                    name,
                )
            previous, reach = name, end

    def _check_padding(self, begin: int, end: int, where: str, tensor: str | None = None) -> None:
        """Alignment padding (file bytes ``begin..end``) is written as zeros; anything else
        there means the bytes were shifted by an insertion or overwritten."""
        chunk = bytes(self.buf[begin:end])
        rest = chunk.lstrip(b"\0")
        if rest:
            at = begin + len(chunk) - len(rest)
            raise self.fail(
                f"alignment padding {where} (file bytes {begin}..{end}) holds a non-zero byte "
                f"at {at}: bytes were inserted or overwritten (corrupt file)",
                tensor,
            )

    def _check_coverage(self, ordered: list, data_start: int, data_size: int) -> None:
        """The data section must be exactly its tensors' bytes: each tensor starts where the
        previous one ends or at the next 256-byte boundary after it (the zero padding Burn's
        writer inserts), and the section ends where the last tensor does. Extra bytes,
        inserted or appended, would otherwise load every later tensor from shifted bytes."""
        previous, reach = None, 0
        for name, desc in ordered:
            start, end = desc["start"], desc["end"]
            if start <= reach and start == end:
                continue  # an empty tensor holds no bytes (overlaps were refused before)
            if start not in (reach, fmt.align(reach)):
                after = f"the end of tensor '{previous}'" if previous is not None else "the section start"
                raise self.fail(
                    f"data_offsets ({start}, {end}) leave data bytes {reach}..{start} after "
                    f"{after} covered by no tensor; only zero padding up to the "
                    f"{fmt.ALIGNMENT}-byte boundary {fmt.align(reach)} may lie between tensors "
                    "(corrupt or hand-edited file)",
                    name,
                )
            self._check_padding(
                data_start + reach, data_start + start, f"before data_offsets ({start}, {end})", name
            )
            previous, reach = name, end
        if data_size != reach:
            covered = (
                f"its tensors end at {reach} (tensor '{previous}')" if previous else "no tensor has bytes"
            )
            raise self.fail(
                f"the data section holds {data_size} bytes (file bytes {data_start}..{data_start + data_size}) "
                f"but {covered}: {data_size - reach} bytes belong to no tensor (inserted, which shifts "
                "the tensors stored after them, or appended)"
            )

    def _view(self, name: str, desc: dict, data_start: int) -> TensorView:
        storage, shape, start = desc["storage"], desc["shape"], desc["start"]
        length = desc["end"] - start
        count = length // storage.itemsize
        try:
            raw = (
                np.frombuffer(self.buf, dtype=storage.storage, count=count, offset=data_start + start)
                if count
                else np.empty(0, dtype=storage.storage)
            )
            raw = raw.reshape(shape)
        except (ValueError, TypeError, MemoryError) as exc:  # the checks above should leave none
            raise self.fail(
                f"cannot view {length} bytes as {storage.name} {list(shape)}: {exc}", name
            ) from None
        raw.flags.writeable = False
        return TensorView(name, storage, raw, desc["param_id"])


def from_bytes(data: bytes | bytearray | memoryview) -> Record:
    """Parse burnpack bytes (e.g. from :func:`to_bytes`).

    The returned views share memory with ``data``; keep it unmodified while they are used.

    Args:
        data: the complete container.

    Raises:
        RecordError: the bytes are not a valid, in-limits burnpack container.
    """
    buf = memoryview(data).cast("B")
    tensors, metadata, scalars = _Parser(buf, "burnpack <bytes>").parse()
    return Record(tensors, metadata, scalars, None, data)


def load(path: str | os.PathLike) -> Record:
    """Open a burnpack file lazily (memory-mapped); tensors are read when touched.

    If ``path`` has no extension and does not exist, ``path.bpk`` is tried. Views stay
    valid after the file is replaced (ember's writers always replace atomically), but not
    if another program truncates the file in place while they are in use.

    Args:
        path: the file to read.

    Raises:
        FileNotFoundError: the file does not exist.
        RecordError: the file is not a valid, in-limits burnpack container.
    """
    resolved = fmt.resolve_read_path(path)
    where = f"burnpack file '{resolved}'"
    with open(resolved, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > fmt.MAX_FILE_SIZE:
            raise RecordError(f"{where}: {size} bytes exceed the limit of {fmt.MAX_FILE_SIZE}")
        if size < fmt.HEADER_SIZE:
            raise RecordError(f"{where}: only {size} bytes; a burnpack header needs {fmt.HEADER_SIZE}")
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    tensors, metadata, scalars = _Parser(memoryview(mapped), where).parse()
    return Record(tensors, metadata, scalars, resolved, mapped)
