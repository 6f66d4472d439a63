"""Read and write safetensors files through the ``safetensors`` package (NumPy API, no torch).

Loading returns the same :class:`Record` type as :func:`ember.record.load`, so code that
consumes records does not care which format a checkpoint came in. An optional adapter
(``adapter="pytorch"`` or a :class:`PyTorchAdapter`) converts PyTorch ``state_dict`` naming
and layout to ember's on load, and back on save; ``remap`` renames keys with regular
expressions on the file side (applied to the file's keys before the adapter on load, and to
the adapter's output on save).

bfloat16 tensors are supported both ways (the NumPy API of ``safetensors`` has no bfloat16,
so a file holding them is read whole and decoded with ``safetensors.deserialize``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .atomic import atomic_path
from .burnpack_reader import Record, shape_problem
from .burnpack_writer import materialize
from .dtypes import SAFETENSORS_NAMES, StorageDType, storage_dtype
from .entries import TensorView
from .errors import RecordError
from .pytorch_adapter import apply_plan, resolve_adapter

__all__ = ["load_safetensors", "safetensors_from_bytes", "safetensors_to_bytes", "save_safetensors"]

Remap = Sequence[tuple[str, str]]
_MAX_HEADER = 100_000_000  # the safetensors library's own limit on the JSON header


def _safetensors():
    try:
        import safetensors
    except ImportError:  # pragma: no cover - the package is a dependency
        raise ImportError(
            "safetensors support needs the 'safetensors' package: pip install safetensors"
        ) from None
    return safetensors


def _remap(names: Mapping[str, Any], remap: Remap | None, where: str) -> dict[str, Any]:
    if not remap:
        return dict(names)
    rules = [(re.compile(pattern), repl) for pattern, repl in remap]
    out: dict[str, Any] = {}
    for key, value in names.items():
        new = key
        for pattern, repl in rules:
            new = pattern.sub(repl, new)
        if new in out:
            raise RecordError(f"{where}: remap sends '{key}' to '{new}', which another key already produced")
        out[new] = value
    return out


def _views(raw: Mapping[str, tuple[Any, np.ndarray]]) -> dict[str, TensorView]:
    views = {}
    for name, (storage, array) in raw.items():
        array = array.view()
        array.flags.writeable = False
        views[name] = TensorView(name, storage, array)
    return views


def _decode(entries, where: str) -> dict[str, tuple[Any, np.ndarray]]:
    """(name, dtype, shape, raw bytes-like) tuples -> name -> (storage, array)."""
    out = {}
    for name, dtype, shape, data in entries:
        storage = SAFETENSORS_NAMES.get(dtype)
        if storage is None:
            raise RecordError(
                f"{where}: tensor '{name}': safetensors dtype {dtype} is not "
                f"supported; expected one of {sorted(SAFETENSORS_NAMES)}"
            )
        _check_shape(where, name, dtype, shape)
        try:
            array = np.frombuffer(data, dtype=storage.storage).reshape(shape)
        except ValueError as exc:
            raise RecordError(f"{where}: tensor '{name}': cannot read {dtype} {list(shape)}: {exc}") from None
        out[name] = (storage, array)
    return out


def _check_shape(where: str, name: str, dtype: str, shape) -> None:
    storage = SAFETENSORS_NAMES.get(dtype)
    problem = shape_problem(tuple(shape), storage.itemsize if storage is not None else 1)
    if problem is not None:
        raise RecordError(f"{where}: tensor '{name}': {problem} ({dtype})")


def _adapt(
    pairs: dict[str, tuple[StorageDType, np.ndarray]], adapter: Any, to_ember: bool
) -> dict[str, tuple[StorageDType, np.ndarray]]:
    """Apply an adapter's plan to name -> (storage, raw array) pairs.

    Working on the raw storage keeps bfloat16 tensors (uint16 bit patterns) exact.
    """
    adapter = resolve_adapter(adapter)
    if adapter is None:
        return pairs
    ndims = {k: a.ndim for k, (_, a) in pairs.items()}
    plan = adapter.plan_to_ember(ndims) if to_ember else adapter.plan_to_pytorch(ndims)
    return apply_plan(
        plan,
        pairs,
        transpose=lambda pair: (pair[0], np.swapaxes(pair[1], 0, 1)),
        create=lambda name: (storage_dtype("int64"), np.zeros((), np.int64)),
    )


def _finish_load(
    raw: dict, metadata: dict | None, adapter: Any, remap: Remap | None, where: str, path: Path | None
) -> Record:
    raw = _adapt(_remap(raw, remap, where), adapter, to_ember=True)
    return Record(_views(raw), metadata or {}, {}, path)


def load_safetensors(path: str | os.PathLike, adapter: Any = None, *, remap: Remap | None = None) -> Record:
    r"""Load a safetensors file as a :class:`Record`.

    Args:
        path: the ``.safetensors`` file.
        adapter: None, ``"pytorch"`` or a :class:`PyTorchAdapter` to convert PyTorch
            naming/layout (Linear ``[out, in]`` -> ``[in, out]``, norm ``weight``/``bias`` ->
            ``gamma``/``beta``, ``num_batches_tracked`` dropped).
        remap: ``[(regex, replacement), ...]`` applied in order to every key before the
            adapter, e.g. ``[(r"^model\.", "")]``.

    Returns:
        A record with the tensors and the file's str -> str metadata (no param ids).

    Raises:
        RecordError: unsupported dtypes, invalid files, or colliding names.
    """
    st = _safetensors()
    path = Path(path)
    where = f"safetensors file '{path}'"
    if not path.exists():
        raise FileNotFoundError(f"{where} does not exist")
    with open(path, "rb") as file:
        size = int.from_bytes(file.read(8), "little")
        if size <= min(_MAX_HEADER, os.fstat(file.fileno()).st_size - 8):
            _refuse_repeated_keys(file.read(size), where)
    try:
        with st.safe_open(str(path), framework="np") as handle:
            metadata = handle.metadata()
            dtypes = {}
            for k in handle.offset_keys():
                piece = handle.get_slice(k)
                dtypes[k] = piece.get_dtype()
                _check_shape(where, k, dtypes[k], piece.get_shape())  # before NumPy sees it
            native = {k for k, d in dtypes.items() if d in SAFETENSORS_NAMES and d != "BF16"}
            raw = {}
            for k in native:
                try:
                    raw[k] = (SAFETENSORS_NAMES[dtypes[k]], handle.get_tensor(k))
                except ValueError as exc:
                    raise RecordError(f"{where}: tensor '{k}': {exc}") from None
    except st.SafetensorError as exc:
        raise RecordError(f"{where}: {exc}") from None
    if len(native) < len(dtypes):  # bfloat16 (or unsupported) tensors: decode raw bytes
        entries = st.deserialize(path.read_bytes())
        raw.update(
            _decode(((k, v["dtype"], v["shape"], v["data"]) for k, v in entries if k not in native), where)
        )
    raw = {k: raw[k] for k in dtypes}  # file order
    return _finish_load(raw, metadata, adapter, remap, where, path)


def safetensors_from_bytes(data: bytes, adapter: Any = None, *, remap: Remap | None = None) -> Record:
    """Parse safetensors bytes as a :class:`Record` (see :func:`load_safetensors`).

    Args:
        data: the complete file content.
        adapter: None, ``"pytorch"`` or a :class:`PyTorchAdapter`.
        remap: ``[(regex, replacement), ...]`` applied to keys before the adapter.
    """
    st = _safetensors()
    where = "safetensors <bytes>"
    size = int.from_bytes(bytes(data[:8]), "little")
    if size <= min(_MAX_HEADER, len(data) - 8):
        _refuse_repeated_keys(bytes(data[8 : 8 + size]), where)
    try:
        entries = st.deserialize(bytes(data))
    except st.SafetensorError as exc:
        raise RecordError(f"{where}: {exc}") from None
    raw = _decode(((k, v["dtype"], v["shape"], v["data"]) for k, v in entries), where)
    metadata = _header_metadata(data)
    return _finish_load(raw, metadata, adapter, remap, where, None)


def _refuse_repeated_keys(header: bytes, where: str) -> None:
    """Refuse a header that gives a key twice (a tensor name, or a field of one entry): the
    library keeps one of the two without a word, so the file would load as something other
    than what it declares. Other malformations are left to the library's own errors."""
    import json

    def unique(items: list) -> dict:
        result = dict(items)
        if len(result) != len(items):
            seen: set = set()
            repeated = sorted({key for key, _ in items if key in seen or seen.add(key)})
            raise RecordError(f"{where}: the header gives {repeated[:5]} twice")
        return result

    try:
        json.loads(header.decode("utf-8"), object_pairs_hook=unique)
    except RecordError:
        raise
    except (ValueError, RecursionError):  # not UTF-8, not JSON, absurdly deep: the library
        return  # says so in its own words


def _header_metadata(data: bytes) -> dict[str, str]:
    import json

    size = int.from_bytes(bytes(data[:8]), "little")
    header = json.loads(bytes(data[8 : 8 + size]))
    return dict(header.get("__metadata__") or {})


def _specs(
    tensors: Mapping[str, Any],
    metadata: Mapping[str, str] | None,
    adapter: Any,
    remap: Remap | None,
    where: str,
):
    if not isinstance(tensors, Mapping):
        raise RecordError(
            f"{where}: tensors must be a mapping of name -> array, got {type(tensors).__name__}"
        )
    if metadata is not None and not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise RecordError(f"{where}: metadata must map str -> str")
    st = _safetensors()
    stored = {}
    for name, value in tensors.items():
        try:
            stored[name] = materialize(name, value)
        except RecordError as exc:
            raise RecordError(f"{where}: {exc}") from None
    stored = _remap(_adapt(stored, adapter, to_ember=False), remap, where)
    keep_alive, specs = [], {}
    for name, (storage, array) in stored.items():
        array = np.asarray(array, order="C")
        keep_alive.append(array)
        specs[name] = st.TensorSpec(
            dtype=storage.name, shape=list(array.shape), data_ptr=array.ctypes.data, data_len=array.nbytes
        )
    return st, specs, keep_alive


def save_safetensors(
    path: str | os.PathLike,
    tensors: Mapping[str, Any],
    metadata: Mapping[str, str] | None = None,
    adapter: Any = None,
    *,
    remap: Remap | None = None,
) -> Path:
    """Atomically write a safetensors file.

    Args:
        path: destination (written as given; no extension is added).
        tensors: name -> NumPy array, ember Tensor, :class:`TensorView` or
            :class:`TensorRecord` (``dtype="bfloat16"`` stores bfloat16).
        metadata: str -> str pairs for the header's ``__metadata__``.
        adapter: None, ``"pytorch"`` or a :class:`PyTorchAdapter` to write PyTorch
            naming/layout (``gamma``/``beta`` -> ``weight``/``bias``, Linear transposed,
            ``num_batches_tracked`` added for batch norms).
        remap: ``[(regex, replacement), ...]`` applied to the final keys.

    Returns:
        The path written.

    Raises:
        RecordError: unsupported values or colliding names (nothing is written).
    """
    path = Path(path)
    where = f"safetensors file '{path}'"
    st, specs, keep_alive = _specs(tensors, metadata, adapter, remap, where)
    with atomic_path(path) as scratch:
        st.serialize_file(specs, str(scratch), metadata=dict(metadata) if metadata else None)
    del keep_alive  # the specs hold raw pointers into these arrays until here
    return path


def safetensors_to_bytes(
    tensors: Mapping[str, Any],
    metadata: Mapping[str, str] | None = None,
    adapter: Any = None,
    *,
    remap: Remap | None = None,
) -> bytes:
    """Serialize tensors to safetensors bytes (see :func:`save_safetensors`).

    Args:
        tensors: name -> array-like.
        metadata: str -> str pairs.
        adapter: None, ``"pytorch"`` or a :class:`PyTorchAdapter`.
        remap: ``[(regex, replacement), ...]`` applied to the final keys.
    """
    st, specs, keep_alive = _specs(tensors, metadata, adapter, remap, "safetensors <bytes>")
    out = bytes(st.serialize(specs, metadata=dict(metadata) if metadata else None))
    del keep_alive
    return out
