"""Devices: where a tensor's data lives and which backend computes on it."""

from __future__ import annotations

from ember.kernels import registry

_KINDS = ("cpu", "reference", "cuda") + registry.TORCH_KINDS


class Device:
    """A compute device: ``Device("cpu")`` (Numba kernels, the default),
    ``Device("reference")`` (pure NumPy, the specification), ``Device("cuda:N")`` (CuPy), or
    PyTorch's kernels: ``Device("torch")`` (the CPU), ``Device("torch:cuda:N")``,
    ``Device("torch:mps")``.
    """

    __slots__ = ("_backend", "index", "kind")

    def __init__(self, spec: "str | Device" = "cpu", index: int | None = None):
        if isinstance(spec, Device):
            spec, index = spec.kind, spec.index if index is None else index
        if not isinstance(spec, str):
            raise TypeError(f"Device: expected a string like 'cpu', 'reference' or 'cuda:0', got {spec!r}")
        kind, idx = _split(spec.strip().lower())
        if kind not in _KINDS:
            raise ValueError(
                f"Device: unknown device {spec!r}; expected 'cpu', 'reference', 'cuda[:N]', "
                "'torch', 'torch:cuda[:N]' or 'torch:mps'"
            )
        if idx:
            if not idx.isdigit():
                raise ValueError(f"Device: bad device index in {spec!r}")
            index = int(idx)
        if kind not in registry.INDEXED_KINDS:
            if index not in (None, 0):
                raise ValueError(f"Device: {kind} has a single device, got index {index}")
            index = None
        elif index is None:
            index = 0
        self.kind = kind
        self.index = index
        self._backend = None

    @property
    def backend(self):
        """The backend computing on this device (loaded on first use)."""
        if self._backend is None:
            self._backend = registry.get_backend(self)
        return self._backend

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = Device(other)
        return isinstance(other, Device) and self.kind == other.kind and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.kind, self.index))

    def __str__(self) -> str:
        return f"{self.kind}:{self.index}" if self.index is not None else self.kind

    def __repr__(self) -> str:
        return f"Device('{self}')"

    def __reduce__(self):
        return (Device, (str(self),))


def _split(spec: str) -> tuple[str, str]:
    """``(kind, index text)`` of a device string: ``cuda:1`` -> ``("cuda", "1")``,
    ``torch:cuda:1`` -> ``("torch:cuda", "1")``, ``torch:mps`` -> ``("torch:mps", "")``."""
    if spec == "torch" or spec.startswith("torch:"):
        _, _, rest = spec.partition(":")
        backend, _, idx = rest.partition(":")
        return ("torch:" + backend if backend else "torch"), idx
    kind, _, idx = spec.partition(":")
    return kind.strip(), idx


_default_device = Device("cpu")


def default_device() -> Device:
    return _default_device


def set_default_device(device: "str | Device") -> None:
    """Set the device used when a creation function is given none."""
    global _default_device
    _default_device = as_device(device)


_CACHE: dict = {}


def as_device(device) -> Device:
    """Normalise ``None`` / a string / a Device into a (shared) Device object."""
    if device is None:
        return _default_device
    if isinstance(device, Device):
        key = (device.kind, device.index)
    else:
        d = Device(device)
        key = (d.kind, d.index)
    cached = _CACHE.get(key)
    if cached is None:
        cached = _CACHE[key] = Device(device)
    return cached
