"""Backend registry: one backend instance per device, created lazily on first use.

Loading is lazy so that ``import ember`` needs neither Numba, CuPy nor a GPU.
"""

from __future__ import annotations

_BACKENDS: dict = {}
_SEED: list = [None]


def get_backend(device):
    key = (device.kind, device.index)
    backend = _BACKENDS.get(key)
    if backend is None:
        backend = _BACKENDS[key] = _create(device)
    return backend


def _create(device):
    if device.kind in ("reference", "cpu"):
        from ember.kernels.host_memory import tune_allocator

        tune_allocator()
    if device.kind == "reference":
        from ember.kernels.reference import ReferenceBackend

        return ReferenceBackend(_SEED[0])
    if device.kind == "cpu":
        from ember.kernels.cpu.backend import CpuBackend

        return CpuBackend(_SEED[0])
    if device.kind == "cuda":
        from ember.kernels.cuda.backend import CudaBackend

        return CudaBackend(device.index, _SEED[0])
    raise ValueError(f"no backend for device {device}")


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
    from ember.tensor.device import Device

    for name, state in states.items():
        backend = get_backend(Device(name))
        bit_generator = getattr(getattr(backend, "generator", None), "bit_generator", None)
        if bit_generator is None:
            raise ValueError(f"set_rng_states: the {name} backend has no host generator to restore")
        bit_generator.state = state
