"""Backend registry: one backend instance per device, created lazily on first use.

Loading is lazy so that ``import ember`` needs neither Numba, CuPy nor a GPU.
"""

from __future__ import annotations

TORCH_KINDS = ("torch", "torch:cuda", "torch:mps")
"""The device kinds of the ``torch`` backend (PyTorch on the CPU, a CUDA GPU, Apple's MPS)."""

INDEXED_KINDS = ("cuda", "torch:cuda")
"""The device kinds that take an index (``cuda:0``, ``torch:cuda:1``)."""

_BACKENDS: dict = {}
_SEED: list = [None]


def get_backend(device):
    """The backend of ``device`` (an :class:`ember.Device`, or anything with its ``kind`` and
    ``index``), created on first use."""
    return _backend(device.kind, device.index)


def _backend(kind: str, index: int | None):
    key = (kind, index)
    backend = _BACKENDS.get(key)
    if backend is None:
        backend = _BACKENDS[key] = _create(kind, index)
    return backend


def _create(kind: str, index: int | None):
    if kind in ("reference", "cpu"):
        from ember.kernels.host_memory import tune_allocator  # late: ctypes.util, subprocess

        tune_allocator()
    if kind == "reference":
        from ember.kernels.reference import ReferenceBackend  # late: backends load on first use

        return ReferenceBackend(_SEED[0])
    if kind == "cpu":
        from ember.kernels.cpu.backend import CpuBackend  # late: Numba

        return CpuBackend(_SEED[0])
    if kind == "cuda":
        from ember.kernels.cuda.backend import CudaBackend  # late: CuPy

        return CudaBackend(index, _SEED[0])
    if kind in TORCH_KINDS:
        from ember.kernels.torch.backend import TorchBackend  # late: torch

        return TorchBackend(kind, index, _SEED[0])
    raise ValueError(
        f"no backend for device kind {kind!r}; expected 'reference', 'cpu', 'cuda', 'torch', "
        "'torch:cuda' or 'torch:mps'"
    )


def seed_all(seed: int) -> None:
    """Seed every backend (those created later too): same seed, same numbers on a backend."""
    _SEED[0] = seed
    for backend in _BACKENDS.values():
        backend.seed(seed)


def rng_states() -> dict[str, dict]:
    """The generator state of every host backend created so far, by device name, as
    JSON-ready dictionaries (checkpoints store them so a resumed run draws the same numbers)."""
    states = {}
    for (kind, index), backend in _BACKENDS.items():
        bit_generator = getattr(getattr(backend, "generator", None), "bit_generator", None)
        state = getattr(bit_generator, "state", None)
        if isinstance(state, dict):  # NumPy generators; CuPy's keep their state on the GPU
            states[kind if index is None else f"{kind}:{index}"] = state
    return states


def set_rng_states(states: dict[str, dict]) -> None:
    """Restore what :func:`rng_states` returned (creating the backends it names)."""
    for name, state in states.items():
        kind, index = _parse_name(name)
        backend = _backend(kind, index)
        bit_generator = getattr(getattr(backend, "generator", None), "bit_generator", None)
        if bit_generator is None:
            raise ValueError(f"set_rng_states: the {name} backend has no host generator to restore")
        bit_generator.state = state


def _parse_name(name: str) -> tuple[str, int | None]:
    """``(kind, index)`` of a device name :func:`rng_states` writes: ``cpu``, ``cuda:0``,
    ``torch``, ``torch:cuda:1``, ``torch:mps``."""
    head, _, tail = name.rpartition(":")
    kind, index = (head, int(tail)) if tail.isdigit() else (name, None)
    known = ("reference", "cpu", "cuda") + TORCH_KINDS
    if kind not in known or (kind in INDEXED_KINDS) != (index is not None):
        raise ValueError(
            f"set_rng_states: bad device name {name!r}; expected 'cpu', 'reference', 'cuda:N', "
            "'torch', 'torch:cuda:N' or 'torch:mps'"
        )
    return kind, index
