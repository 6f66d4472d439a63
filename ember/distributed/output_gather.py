"""Exact metrics in data-parallel training: the step outputs of every rank merged on rank 0.

Each rank sends the tensors of its step output (a ``ClassificationOutput`` and the like) to
rank 0, which rebuilds the output a single process would have produced for the whole step:
per-sample fields (leading dimension = the rank's item count: scores, targets, per-sample
losses) are concatenated in rank order — which is the global batch order — and batch
aggregates (a scalar mean loss) are averaged weighted by the ranks' item counts. Every metric
then runs unchanged on rank 0 and aggregates exactly as in one process: counts are summed,
never means of means; whole-epoch metrics such as AUROC see every sample.

Outputs travel as raw array bytes with a small integer header (no pickling). A rank holding
no real item in the step (see :mod:`~ember.distributed.sampler`) sends nothing that counts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ember.tensor import Tensor
from ember.tensor.creation import from_numpy

from .communicator import Communicator

__all__ = ["gather_output", "merge_fields"]

_DTYPES = tuple(
    np.dtype(name)
    for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
)
_MAX_DIMS = 8
_FIELD_WORDS = 3 + _MAX_DIMS  # present, dtype, ndim, dims


def _tensor_field_names(item: Any) -> tuple[str, ...]:
    names = getattr(item, "_tensor_fields", None)
    if names:
        return tuple(names)
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return tuple(
            f.name
            for f in dataclasses.fields(item)
            if _is_array_like(getattr(item, f.name)) or getattr(item, f.name) is None
        )
    raise TypeError(
        f"DistributedDataParallel: cannot merge step outputs of type {type(item).__name__} across ranks "
        "for exact metrics; return a dataclass output such as ember.train.ClassificationOutput"
    )


def _is_array_like(value: Any) -> bool:
    return isinstance(value, (Tensor, np.ndarray))


def _host(value: Any) -> np.ndarray:
    array = value.detach().numpy() if isinstance(value, Tensor) else np.asarray(value)
    return np.ascontiguousarray(array)


def _encode(count: int, arrays: list[np.ndarray | None]) -> bytes:
    header = np.zeros(2 + _FIELD_WORDS * len(arrays), dtype=np.int64)
    header[0], header[1] = count, len(arrays)
    for i, array in enumerate(arrays):
        if array is None:
            continue
        if array.ndim > _MAX_DIMS or array.dtype not in _DTYPES:
            raise TypeError(
                f"gather_output: field {i} has dtype {array.dtype} and {array.ndim} dims; expected at most "
                f"{_MAX_DIMS} dims of {[str(d) for d in _DTYPES]}"
            )
        at = 2 + _FIELD_WORDS * i
        header[at : at + 3] = (1, _DTYPES.index(array.dtype), array.ndim)
        header[at + 3 : at + 3 + array.ndim] = array.shape
    return header.tobytes() + b"".join(a.tobytes() for a in arrays if a is not None)


def _decode(blob: bytes) -> tuple[int, list[np.ndarray | None]]:
    count, n = (int(v) for v in np.frombuffer(blob, dtype=np.int64, count=2))
    header = np.frombuffer(blob, dtype=np.int64, count=2 + _FIELD_WORDS * n)
    offset = header.nbytes
    arrays: list[np.ndarray | None] = []
    for i in range(n):
        at = 2 + _FIELD_WORDS * i
        present, kind, ndim = (int(v) for v in header[at : at + 3])
        if not present:
            arrays.append(None)
            continue
        shape = tuple(int(v) for v in header[at + 3 : at + 3 + ndim])
        dtype = _DTYPES[kind]
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        arrays.append(
            np.frombuffer(blob, dtype=dtype, count=size // dtype.itemsize, offset=offset).reshape(shape)
        )
        offset += size
    return count, arrays


def merge_fields(name: str, parts: list[tuple[int, np.ndarray | None]]) -> np.ndarray | None:
    """One field of the whole step from the ranks' ``(item count, array)`` parts.

    Args:
        name: the field (for messages).
        parts: per rank holding real items, in rank order, its count and its array.

    Returns:
        The concatenation (per-sample fields) or the count-weighted mean (batch aggregates).

    Raises:
        ValueError: the ranks' arrays cannot form one batch (a field missing on some ranks, or
            per-sample fields whose trailing dimensions differ).
    """
    arrays = [a for _, a in parts]
    if all(a is None for a in arrays):
        return None
    if any(a is None for a in arrays):
        raise ValueError(f"gather_output: field {name!r} is None on some ranks only")
    per_sample = all(a.ndim >= 1 and a.shape[0] == n for n, a in parts)
    if per_sample:
        trailing = {a.shape[1:] for a in arrays}
        if len(trailing) > 1:
            raise ValueError(
                f"gather_output: field {name!r} has shapes {[list(a.shape) for a in arrays]} on the ranks; "
                "per-sample fields must agree beyond the batch dimension (pad to one length)"
            )
        return np.concatenate(arrays, axis=0)
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(
            f"gather_output: field {name!r} is a batch aggregate of different shapes "
            f"{[list(a.shape) for a in arrays]} on the ranks"
        )
    counts = np.array([n for n, _ in parts], dtype=np.float64)
    total = sum(n * a.astype(np.float64) for (n, _), a in zip(parts, arrays))
    return (total / counts.sum()).astype(arrays[0].dtype)


def gather_output(communicator: Communicator, item: Any, count: int, root: int = 0) -> Any:
    """The step output of all ranks, merged, on ``root``; None on the other ranks.

    Args:
        communicator: the run's communicator.
        item: this rank's synced step output (a dataclass of tensors such as
            ``ClassificationOutput``).
        count: how many real items this rank held in the step (0: its output is ignored).
        root: the rank receiving the merged output.
    """
    names = _tensor_field_names(item)
    values = [getattr(item, name) for name in names]
    blobs = communicator.gather_bytes(_encode(count, [None if v is None else _host(v) for v in values]), root)
    if blobs is None:
        return None
    decoded = [_decode(blob) for blob in blobs]
    merged = {}
    for i, (name, value) in enumerate(zip(names, values)):
        parts = [(n, arrays[i]) for n, arrays in decoded if n > 0]
        array = merge_fields(name, parts)
        merged[name] = _like(value, array)
    return dataclasses.replace(item, **merged)


def _like(template: Any, array: np.ndarray | None) -> Any:
    """``array`` as a tensor on ``template``'s device when ``template`` is a tensor."""
    if array is None or not isinstance(template, Tensor):
        return array

    return from_numpy(np.ascontiguousarray(array), template.device)
