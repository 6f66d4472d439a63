"""PyTorch itself for the ``torch`` backend: the import with its error, devices and dtypes."""

from __future__ import annotations

import numpy as np
import torch

from ember.core import dtypes as dt

TORCH_DTYPES = {
    dt.float16: torch.float16,
    dt.float32: torch.float32,
    dt.float64: torch.float64,
    dt.int32: torch.int32,
    dt.int64: torch.int64,
    dt.bool_: torch.bool,
}
"""Each ember dtype's PyTorch dtype."""

EMBER_DTYPES = {t: d for d, t in TORCH_DTYPES.items()}
"""Each PyTorch dtype ember has, to its ember dtype."""

HOST_DTYPES = {t: d.numpy for d, t in TORCH_DTYPES.items()}
"""Each PyTorch dtype ember has, to its NumPy dtype."""


def torch_device(kind: str, index: int | None) -> torch.device:
    """The PyTorch device of an ember device kind: ``torch`` (the CPU), ``torch:cuda`` (with
    its index) or ``torch:mps``; an error that says why when this machine lacks it."""
    if kind == "torch":
        return torch.device("cpu")
    if kind == "torch:cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if not 0 <= (index or 0) < count:
            raise ValueError(
                f"Device('torch:cuda:{index or 0}'): PyTorch sees {count} CUDA device(s) here"
                + ("" if count else " (a CPU-only build, or no GPU)")
            )
        return torch.device("cuda", index or 0)
    if kind == "torch:mps":
        if not torch.backends.mps.is_available():
            raise ValueError("Device('torch:mps'): PyTorch's MPS (Apple Metal) backend is not available here")
        return torch.device("mps")
    raise ValueError(f"no torch device of kind {kind!r}; expected 'torch', 'torch:cuda' or 'torch:mps'")


def as_host_array(array: np.ndarray) -> np.ndarray:
    """``array`` in a layout ``torch.from_numpy`` shares without copying: writeable (a read-only
    buffer would be written by the optimizers' in-place updates), native byte order, no
    negative strides; copied only when it is not."""
    if array.flags.writeable and array.dtype.isnative and all(s >= 0 for s in array.strides):
        return array
    return np.array(array, dtype=array.dtype.newbyteorder("="), copy=True)
