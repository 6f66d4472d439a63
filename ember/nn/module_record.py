"""Module records: parameter values keyed by dotted path, with their ``ParamId``s.

A :class:`ModuleRecord` is Burn's ``ModuleRecord``: a device-agnostic snapshot (host NumPy
arrays) of a module's parameters, saved as a burnpack ``.bpk`` file whose tensor names are
the parameter paths and whose descriptors carry the parameter ids. Loading checks every
path, shape and element kind first and changes nothing unless all of it fits; the error
lists each problem by path with what was expected and what the record holds.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ember.nn.module import Module, _group_matches, register_methods
from ember.nn.param import ParamId, _as_leaf
from ember.record import burnpack_reader, burnpack_writer
from ember.record import errors as record_errors
from ember.tensor import dtypes as dt
from ember.tensor.creation import tensor as make_tensor

__all__ = ["DTypePolicy", "ModuleRecord", "RecordEntry", "load_into", "save_module"]

RecordError = record_errors.RecordError


class DTypePolicy(enum.Enum):
    """Which dtype a loaded float parameter gets (Burn's ``DTypePolicy``)."""

    FromRecord = "FromRecord"  # the record's dtype (bfloat16 loads as float32)
    CastToModule = "CastToModule"  # the module parameter's current dtype


class RecordEntry(NamedTuple):
    """One saved parameter: its host array and its id (None when the file had none)."""

    array: Any
    param_id: ParamId | None


def _record_dtype(array) -> dt.DType:
    """The ember dtype a record array loads as (bfloat16 and narrow ints widen)."""
    np_dtype = np.dtype(getattr(array, "dtype", np.asarray(array).dtype))
    if np_dtype.kind == "f":
        return dt.dtype_from_numpy(np_dtype) if np_dtype.itemsize in (2, 4, 8) else dt.float32
    if np_dtype.kind in "iu":
        return dt.int32 if np_dtype.itemsize < 4 or np_dtype == np.int32 else dt.int64
    if np_dtype.kind == "b":
        return dt.bool_
    raise RecordError(f"record holds an array of unsupported dtype {np_dtype}")


def _shape_of(array) -> tuple:
    return tuple(int(s) for s in getattr(array, "shape", np.shape(array)))


def _dtype_name(array) -> str:
    name = getattr(array, "dtype_name", None)  # TensorView: the stored name ("bfloat16")
    return name if isinstance(name, str) else str(np.dtype(array.dtype))


class ModuleRecord(Mapping[str, RecordEntry]):
    """A snapshot of a module's parameters: path -> :class:`RecordEntry` (array, param_id).

    Build one with ``module.into_record()`` or :meth:`load`; apply it with
    ``module.load_record(record)``. The loading options are set with methods returning a
    modified copy, as in Burn: ``record.allow_partial().with_dtype_policy(...)``.

    Args:
        entries: path -> RecordEntry (or (array, param_id) pairs, or bare arrays).
        metadata: str -> str pairs stored with the file.
    """

    def __init__(self, entries: Mapping[str, Any] | None = None, metadata: Mapping[str, str] | None = None):
        self._entries: dict[str, RecordEntry] = {}
        for path, value in (entries or {}).items():
            self._entries[path] = _as_entry(path, value)
        self.metadata = dict(metadata or {})
        self.dtype_policy = DTypePolicy.FromRecord
        self._allow_partial = False
        self._allow_unused = False

    # ---- mapping -------------------------------------------------------------------------------
    def __getitem__(self, path: str) -> RecordEntry:
        try:
            return self._entries[path]
        except KeyError:
            raise KeyError(
                f"ModuleRecord has no tensor at path {path!r}; it holds {sorted(self._entries)}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return (
            f"ModuleRecord({len(self)} tensors, dtype_policy={self.dtype_policy.name}, "
            f"allow_partial={self._allow_partial}, allow_unused={self._allow_unused})"
        )

    # ---- options (copies) ------------------------------------------------------------------------
    def _copy(self, **changes) -> "ModuleRecord":
        out = ModuleRecord.__new__(ModuleRecord)
        out._entries = self._entries
        out.metadata = dict(self.metadata)
        out.dtype_policy = self.dtype_policy
        out._allow_partial = self._allow_partial
        out._allow_unused = self._allow_unused
        for key, value in changes.items():
            setattr(out, key, value)
        return out

    def allow_partial(self, allow: bool = True) -> "ModuleRecord":
        """A copy that lets module parameters be missing from the record (they keep their values)."""
        return self._copy(_allow_partial=bool(allow))

    def allow_unused(self, allow: bool = True) -> "ModuleRecord":
        """A copy that lets the record hold tensors the module does not have."""
        return self._copy(_allow_unused=bool(allow))

    def with_dtype_policy(self, policy: DTypePolicy | str) -> "ModuleRecord":
        """A copy loading float tensors per ``policy`` (FromRecord or CastToModule)."""
        return self._copy(dtype_policy=DTypePolicy(policy) if isinstance(policy, str) else policy)

    def cast_to_module_dtype(self) -> "ModuleRecord":
        return self.with_dtype_policy(DTypePolicy.CastToModule)

    @property
    def partial_allowed(self) -> bool:
        return self._allow_partial

    @property
    def unused_allowed(self) -> bool:
        return self._allow_unused

    def numpy(self) -> dict[str, np.ndarray]:
        """path -> a NumPy copy of each array."""
        return {path: np.array(e.array) for path, e in self._entries.items()}

    # ---- building ----------------------------------------------------------------------------------
    @classmethod
    def from_module(cls, module, group=None) -> "ModuleRecord":
        """Snapshot ``module``'s parameters (optionally only those matching ``group``)."""
        entries = {}
        for path, p in module.named_parameters():
            if not _group_matches(group, path, p.id):
                continue
            array = np.array(p.value.numpy(), copy=True)
            if p._save_transposed:
                array = np.ascontiguousarray(array.T)
            entries[path] = RecordEntry(array, p.id)
        return cls(entries)

    @classmethod
    def coerce(cls, record) -> "ModuleRecord":
        """Accept a ModuleRecord, an ``ember.record.Record`` or a plain mapping."""
        if isinstance(record, ModuleRecord):
            return record
        if isinstance(record, Mapping):
            return cls(record, getattr(record, "metadata", None))
        raise TypeError(
            f"load_record: expected a ModuleRecord, an ember.record.Record or a mapping "
            f"path -> array, got {type(record).__name__}"
        )

    # ---- files -----------------------------------------------------------------------------------------
    def _tensors(self) -> tuple[dict, dict]:
        tensors = {path: e.array for path, e in self._entries.items()}
        ids = {path: int(e.param_id) for path, e in self._entries.items() if e.param_id is not None}
        return tensors, ids

    def save(self, path: str | os.PathLike, metadata: Mapping[str, str] | None = None) -> Path:
        """Write a burnpack file (``.bpk`` appended when the path has no extension)."""
        tensors, ids = self._tensors()
        meta = {**self.metadata, **(metadata or {})}
        return burnpack_writer.save(path, tensors, meta or None, param_ids=ids)

    def to_bytes(self) -> bytes:
        """The burnpack container as bytes."""
        tensors, ids = self._tensors()
        return burnpack_writer.to_bytes(tensors, self.metadata or None, param_ids=ids)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "ModuleRecord":
        """Read a burnpack file (memory-mapped: values are read when loaded into a module)."""
        return cls(burnpack_reader.load(path))

    @classmethod
    def from_bytes(cls, data: bytes) -> "ModuleRecord":
        return cls(burnpack_reader.from_bytes(data))


def _as_entry(path: str, value) -> RecordEntry:
    if not isinstance(path, str):
        raise TypeError(f"ModuleRecord: paths must be str, got {type(path).__name__} {path!r}")
    if isinstance(value, RecordEntry):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        array, pid = value
        return RecordEntry(_host(array), None if pid is None else ParamId(int(pid)))
    pid = getattr(value, "param_id", None)  # an ember.record TensorView
    return RecordEntry(_host(value), None if pid is None else ParamId(int(pid)))


def _host(array):
    """Keep TensorViews (lazy) and arrays; turn tensors and lists into NumPy arrays."""
    if isinstance(array, np.ndarray) or hasattr(array, "dtype_name"):
        return array
    if hasattr(array, "numpy") and callable(array.numpy):
        return np.array(array.numpy(), copy=True)
    return np.asarray(array)


def load_into(module, record, strict: bool = True, dtype_policy=None):
    """Validate ``record`` against ``module`` and, if everything fits, load it (see
    ``Module.load_record``)."""
    rec = ModuleRecord.coerce(record)
    policy = (
        rec.dtype_policy
        if dtype_policy is None
        else (DTypePolicy(dtype_policy) if isinstance(dtype_policy, str) else dtype_policy)
    )
    allow_partial = rec.partial_allowed or not strict
    allow_unused = rec.unused_allowed or not strict
    remaining = dict(rec._entries)
    errors, missing, updates = [], [], []
    for path, p in module.named_parameters():
        entry = remaining.pop(path, None)
        if entry is None:
            missing.append(path)
            continue
        array = entry.array
        expected = tuple(reversed(p.shape)) if p._save_transposed else p.shape
        found = _shape_of(array)
        try:
            found_dtype = _record_dtype(array)
        except RecordError as exc:
            errors.append(f"{path}: {exc}")
            continue
        if found != expected:
            errors.append(
                f"{path}: shape mismatch, expected {list(expected)} ({p.dtype}) but the record "
                f"has {list(found)} ({_dtype_name(array)})"
            )
            continue
        if found_dtype.kind != p.dtype.kind:
            errors.append(
                f"{path}: dtype mismatch, expected a {p.dtype.kind} tensor ({p.dtype}) but the "
                f"record has {_dtype_name(array)}"
            )
            continue
        target = found_dtype if policy is DTypePolicy.FromRecord else p.dtype
        updates.append((p, array, target, entry.param_id))
    unused = sorted(remaining)
    problems = list(errors)
    if missing and not allow_partial:
        problems.append(f"missing from the record ({len(missing)}): {missing}")
    if unused and not allow_unused:
        problems.append(f"not in the module ({len(unused)}): {unused}")
    if problems:
        raise RecordError(
            f"load_record into {type(module).__name__}: "
            + "; ".join(problems)
            + ". Nothing was loaded."
            + _hint(missing, unused, allow_partial, allow_unused)
        )
    for p, array, target, pid in updates:
        host = np.asarray(array)
        if p._save_transposed:
            host = host.T
        value = make_tensor(host, dtype=target, device=p.device)
        p._value = _as_leaf(value, p._require_grad and target.is_float)
        if pid is not None:
            p.id = pid
    return module


def _hint(missing, unused, allow_partial, allow_unused) -> str:
    tips = []
    if missing and not allow_partial:
        tips.append("allow_partial")
    if unused and not allow_unused:
        tips.append("allow_unused")
    return f" (pass {' / '.join(tips)} or strict=False to accept this)" if tips else ""


def save_module(module, path: str | os.PathLike, metadata: Mapping[str, str] | None = None) -> Path:
    """Stream ``module``'s parameters into a burnpack file (one tensor on the host at a time)."""
    tensors, ids = {}, {}
    for p_path, p in module.named_parameters():
        value = p.value.detach()
        tensors[p_path] = np.ascontiguousarray(value.numpy().T) if p._save_transposed else value
        ids[p_path] = int(p.id)
    return burnpack_writer.save(path, tensors, dict(metadata) if metadata else None, param_ids=ids)


@register_methods
class _ModuleRecordMethods:
    """Module's record methods, registered from here: Module itself knows nothing of records."""

    def into_record(self, group=None):
        """A :class:`~ember.nn.module_record.ModuleRecord` snapshot: path -> (array, param_id).

        Args:
            group: record only parameters matching this group (``matches(path, param_id)``).
        """
        return ModuleRecord.from_module(self, group)

    def load_record(self, record, strict: bool = True, dtype_policy=None) -> "Module":
        """Load parameter values (and ids) from a record. In place; returns the module.

        Args:
            record: a ModuleRecord, an ``ember.record.Record`` (a loaded ``.bpk``), or a mapping
                path -> array / (array, param_id).
            strict: when False, missing and unused tensors are allowed (otherwise only when the
                record itself allows them, see ``ModuleRecord.allow_partial/allow_unused``).
            dtype_policy: ``DTypePolicy.FromRecord`` (default) or ``CastToModule``; overrides
                the record's policy when given.

        Raises:
            RecordError: listing every missing, unused or mismatched tensor by path; the module
                is left unchanged.
        """
        return load_into(self, record, strict=strict, dtype_policy=dtype_policy)

    def try_load_record(self, record, strict: bool = True, dtype_policy=None) -> "Module":
        """Same as :meth:`load_record` (kept for Burn's API name)."""
        return self.load_record(record, strict, dtype_policy)

    def save_file(self, path, metadata: dict | None = None):
        """Save the parameters to a burnpack file (``.bpk`` appended when there is no extension).

        Returns:
            The path written.
        """
        return save_module(self, path, metadata)

    def load_file(
        self,
        path,
        strict: bool = True,
        dtype_policy=None,
        allow_partial: bool | None = None,
        allow_unused: bool | None = None,
    ) -> "Module":
        """Load parameters from a burnpack file saved by :meth:`save_file` (or by Burn). In place.

        Args:
            path: the file (``.bpk`` tried when the path has no extension and does not exist).
            strict: as for :meth:`load_record`.
            dtype_policy: ``DTypePolicy.FromRecord`` or ``CastToModule``.
            allow_partial: allow parameters missing from the file.
            allow_unused: allow tensors of the file that the module lacks.
        """
        record = ModuleRecord.load(path)
        if allow_partial is not None:
            record = record.allow_partial(allow_partial)
        if allow_unused is not None:
            record = record.allow_unused(allow_unused)
        return self.load_record(record, strict=strict, dtype_policy=dtype_policy)
