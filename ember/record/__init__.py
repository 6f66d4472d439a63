"""Records: Burn-compatible burnpack (``.bpk``) files, safetensors interop and ``Config``.

- :func:`save` / :func:`load` (and :func:`to_bytes` / :func:`from_bytes`) read and write
  Burn's burnpack container byte for byte; :class:`Record` is what loading returns.
- :func:`save_safetensors` / :func:`load_safetensors` do the same for safetensors files,
  optionally converting PyTorch ``state_dict`` layouts with :class:`PyTorchAdapter`.
- :class:`Config` is the dataclass base for JSON-saved configuration objects.
"""

from .atomic import atomic_path, atomic_write_bytes, atomic_writer
from .burnpack_format import ALIGNMENT, EXTENSION, MAX_METADATA_SIZE, MAX_TENSOR_COUNT, MAX_TENSOR_SIZE
from .burnpack_reader import Record, from_bytes, load
from .burnpack_writer import save, to_bytes
from .config import Config, ConfigError
from .entries import TensorRecord, TensorView, UInt
from .errors import RecordError
from .pytorch_adapter import PyTorchAdapter
from .safetensors_io import load_safetensors, safetensors_from_bytes, safetensors_to_bytes, save_safetensors

__all__ = [
    "ALIGNMENT",
    "EXTENSION",
    "MAX_METADATA_SIZE",
    "MAX_TENSOR_COUNT",
    "MAX_TENSOR_SIZE",
    "Config",
    "ConfigError",
    "PyTorchAdapter",
    "Record",
    "RecordError",
    "TensorRecord",
    "TensorView",
    "UInt",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_writer",
    "from_bytes",
    "load",
    "load_safetensors",
    "safetensors_from_bytes",
    "safetensors_to_bytes",
    "save",
    "save_safetensors",
    "to_bytes",
]
