"""``OptimizerRecord``: an optimizer's state as a burnpack (``.bpk``) file (Burn's layout).

Burn keys optimizer state per parameter, not per module path:

* tensors ``"{param_id}.{leaf}"`` (``param_id`` the decimal u64, e.g.
  ``"1234.momentum.moment_1"``), each stored with its ``param_id``;
* scalars ``"{param_id}.__rank"`` (``UInt``, the parameter's rank) and the state's own
  scalars such as ``"{param_id}.momentum.time"`` (``UInt``);
* metadata ``{"{param_id}": "dotted.param.path"}``, used to route a parameter to its group
  on load.

Files written here are read by Burn and vice versa (for the optimizers both have).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ember._deprecation import renamed_method
from ember.optim.burn_len import BurnLen
from ember.record import RecordError, TensorRecord
from ember.record import from_bytes as _from_bytes
from ember.record import load as _load
from ember.record import save as _save
from ember.record import to_bytes as _to_bytes

__all__ = ["RANK_KEY", "OptimizerRecord"]

RANK_KEY = "__rank"


class SavedAsRecord:
    """``save``/``load``/``to_bytes``/``from_bytes`` of an optimizer whose state is a record
    (:class:`~ember.optim.ModuleOptimizer`, :class:`~ember.optim.Lbfgs`): the class gives
    ``to_record()``, ``load_record(record)`` and ``_record_type``, the record's class."""

    _record_type: type

    def save(self, path: str | os.PathLike) -> Path:
        """Save the state as a burnpack file (``.bpk`` appended when there is no extension).

        Returns:
            The path written.
        """
        return self.to_record().save(path)

    def load(self, path: str | os.PathLike):
        """Load the state saved by :meth:`save` (or by Burn); returns ``self``."""
        return self.load_record(self._record_type.load(path))

    def to_bytes(self) -> bytes:
        """The state as burnpack bytes (Burn's ``into_bytes``)."""
        return self.to_record().to_bytes()

    into_bytes = renamed_method("into_bytes", "to_bytes")  # Burn's name, one release

    def from_bytes(self, data: bytes):
        """Load the state from burnpack bytes; returns ``self``."""
        return self.load_record(self._record_type.from_bytes(data))


class StateRecord(BurnLen):
    """An optimizer's state as a burnpack record: ``tensors`` and ``scalars`` (name -> value),
    written and read in Burn's layout. A subclass says what its file holds (``_payload``) and
    how to rebuild itself from a file read back (``_from_record``)."""

    tensors: dict[str, np.ndarray]
    scalars: dict[str, Any]

    def __len__(self) -> int:
        return len(self.tensors)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.tensors)} tensors, {len(self.scalars)} scalars)"

    def _payload(self) -> tuple[Mapping[str, Any], Mapping[str, str] | None, Mapping[str, Any]]:
        """``(tensors, metadata, scalars)`` as the burnpack writer takes them."""
        raise NotImplementedError

    @classmethod
    def _from_record(cls, record):
        """The record rebuilt from a burnpack file read back (what ``ember.record.load`` yields)."""
        raise NotImplementedError

    def save(self, path: str | os.PathLike) -> Path:
        """Write the record as a burnpack file (``.bpk`` appended when there is no extension).

        Returns:
            The path written.
        """
        return _save(path, *self._payload())

    def to_bytes(self) -> bytes:
        """The record as burnpack bytes (Burn's ``into_bytes``)."""
        return _to_bytes(*self._payload())

    into_bytes = renamed_method("into_bytes", "to_bytes")  # Burn's name, one release

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Read a record written by :meth:`save` (or by Burn's ``save`` of the same optimizer)."""
        with _load(path) as record:
            return cls._from_record(record)

    @classmethod
    def from_bytes(cls, data: bytes):
        """Parse burnpack bytes from :meth:`to_bytes`."""
        with _from_bytes(data) as record:
            return cls._from_record(record)


class OptimizerRecord(StateRecord):
    """Serialized optimizer state.

    Args:
        tensors: name -> NumPy array (a :class:`~ember.record.TensorRecord` carrying the
            parameter id is accepted too).
        scalars: name -> int / float / bool (:class:`~ember.record.UInt` for counters).
        paths: ``str(param_id)`` -> dotted parameter path.
        param_ids: name -> parameter id of each tensor (taken from the name's prefix when
            missing).
    """

    def __init__(
        self,
        tensors: Mapping[str, Any] | None = None,
        scalars: Mapping[str, Any] | None = None,
        paths: Mapping[str, str] | None = None,
        param_ids: Mapping[str, int] | None = None,
    ):
        self.tensors: dict[str, np.ndarray] = {}
        self.param_ids: dict[str, int] = {}
        for name, value in (tensors or {}).items():
            pid = None
            if isinstance(value, TensorRecord):
                value, pid = value.array, value.param_id
            if param_ids and name in param_ids:
                pid = param_ids[name]
            if pid is None:
                pid = _id_prefix(name)
            if pid is None:
                raise RecordError(
                    f"OptimizerRecord: tensor {name!r} has no parameter id; names "
                    "must read '<param_id>.<state leaf>'"
                )
            self.tensors[name] = np.asarray(value)
            self.param_ids[name] = int(pid)
        self.scalars: dict[str, Any] = dict(scalars or {})
        self.paths: dict[str, str] = dict(paths or {})

    # ---- burnpack -------------------------------------------------------------------------
    def _payload(self) -> tuple[dict, dict, dict]:
        tensors = {name: TensorRecord(array, self.param_ids[name]) for name, array in self.tensors.items()}
        return tensors, dict(self.paths), dict(self.scalars)

    @classmethod
    def _from_record(cls, record) -> "OptimizerRecord":
        tensors, ids = {}, {}
        for name, view in record.tensors.items():
            tensors[name] = view.numpy()  # a copy: the file's memory map is released after
            if view.param_id is not None:
                ids[name] = view.param_id
        return cls(tensors, record.scalars, record.metadata, ids)


def _id_prefix(name: str) -> int | None:
    head, dot, _ = name.partition(".")
    return int(head) if dot and head.isdigit() else None
