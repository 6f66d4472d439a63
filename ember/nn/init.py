"""Parameter initializers (Burn's ``Initializer`` enum, one config class per variant).

Each initializer is a :class:`~ember.record.config.Config`, so a module config that holds
one saves it as ``{"KaimingUniform": {"gain": 0.577…, "fan_out_only": false}}``. Random
initializers draw from the device's generator, so :func:`ember.seed` makes them repeatable.

Fan-based initializers need ``fan_in`` / ``fan_out``; layers pass them (Linear: d_input and
d_output; Conv: channels/groups × kernel elements), as Burn's ``init_with`` does:

* ``KaimingUniform(gain, fan_out_only)``: U(−a, a), a = √3 · gain / √fan
* ``KaimingNormal(gain, fan_out_only)``: N(0, gain / √fan)
* ``XavierUniform(gain)``: U(−a, a), a = √3 · gain · √(2 / (fan_in + fan_out))
* ``XavierNormal(gain)``: N(0, gain · √(2 / (fan_in + fan_out)))
"""

from __future__ import annotations

import math

from ember.nn.param import Param
from ember.record.config import Config
from ember.tensor import dtypes as dt
from ember.tensor.creation import full, rand, randn
from ember.tensor.tensor import Tensor

__all__ = [
    "Constant",
    "Initializer",
    "KaimingNormal",
    "KaimingUniform",
    "Normal",
    "Ones",
    "Uniform",
    "XavierNormal",
    "XavierUniform",
    "Zeros",
    "default_linear_initializer",
]


class Initializer(Config):
    """Base class of the initializers: ``init`` makes a Param, ``init_tensor`` a Tensor."""

    def init_tensor(
        self, shape, device=None, dtype=None, fan_in: int | None = None, fan_out: int | None = None
    ) -> Tensor:
        """A tensor of ``shape`` filled by this initializer.

        Args:
            shape: the tensor's shape.
            device: where to create it (the default device when None).
            dtype: a float dtype (float32 when None).
            fan_in: inputs feeding each output unit (Kaiming/Xavier).
            fan_out: outputs fed by each input unit (Kaiming with ``fan_out_only``, Xavier).
        """
        dtype = dt.dtype(dtype or dt.default_float)
        if not dtype.is_float:
            raise TypeError(
                f"{type(self).__name__}.init_tensor: parameters are float tensors, got dtype {dtype}"
            )
        shape = tuple(int(s) for s in shape)
        return self._draw(shape, device, dtype, fan_in, fan_out)

    def init(
        self,
        shape,
        device=None,
        dtype=None,
        fan_in: int | None = None,
        fan_out: int | None = None,
        require_grad: bool = True,
    ) -> Param:
        """A new trainable :class:`Param` (fresh id) filled by this initializer.

        Args:
            shape: the parameter's shape.
            device: where to create it.
            dtype: a float dtype (float32 when None).
            fan_in: inputs feeding each output unit (Kaiming/Xavier).
            fan_out: outputs fed by each input unit.
            require_grad: whether the parameter is trainable.
        """
        return Param(self.init_tensor(shape, device, dtype, fan_in, fan_out), None, require_grad)

    def _draw(self, shape, device, dtype, fan_in, fan_out) -> Tensor:
        raise NotImplementedError(
            f"{type(self).__name__} is abstract; use Constant, Ones, Zeros, Uniform, "
            f"Normal, KaimingUniform, KaimingNormal, XavierUniform or XavierNormal"
        )

    def _fan(self, which: str, fan) -> int:
        if fan is None:
            raise ValueError(
                f"{type(self).__name__}: needs {which}; layers pass it, or call "
                f"init(shape, ..., fan_in=..., fan_out=...)"
            )
        if fan <= 0:
            raise ValueError(f"{type(self).__name__}: {which} must be positive, got {fan}")
        return int(fan)


class Constant(Initializer):
    """Every element equals ``value``."""

    value: float = 0.0

    def _draw(self, shape, device, dtype, fan_in, fan_out):
        return full(shape, float(self.value), dtype=dtype, device=device)


class Ones(Initializer):
    """Every element is 1."""

    def _draw(self, shape, device, dtype, fan_in, fan_out):
        return full(shape, 1.0, dtype=dtype, device=device)


class Zeros(Initializer):
    """Every element is 0."""

    def _draw(self, shape, device, dtype, fan_in, fan_out):
        return full(shape, 0.0, dtype=dtype, device=device)


class Uniform(Initializer):
    """Uniform samples in [min, max)."""

    min: float = 0.0
    max: float = 1.0

    def __post_init__(self):
        if not self.min < self.max:
            raise ValueError(f"Uniform: need min < max, got [{self.min}, {self.max})")

    def _draw(self, shape, device, dtype, fan_in, fan_out):
        return rand(shape, dtype=dtype, device=device, low=float(self.min), high=float(self.max))


class Normal(Initializer):
    """Normal samples N(mean, std²)."""

    mean: float = 0.0
    std: float = 1.0

    def __post_init__(self):
        if self.std < 0:
            raise ValueError(f"Normal: std must be >= 0, got {self.std}")

    def _draw(self, shape, device, dtype, fan_in, fan_out):
        return randn(shape, dtype=dtype, device=device, mean=float(self.mean), std=float(self.std))


class KaimingUniform(Initializer):
    """U(−a, a) with a = √3 · gain / √fan (fan = fan_out if ``fan_out_only`` else fan_in)."""

    gain: float = 1.0 / math.sqrt(3.0)
    fan_out_only: bool = False

    def _draw(self, shape, device, dtype, fan_in, fan_out):
        fan = self._fan("fan_out", fan_out) if self.fan_out_only else self._fan("fan_in", fan_in)
        a = math.sqrt(3.0) * self.gain / math.sqrt(fan)
        return rand(shape, dtype=dtype, device=device, low=-a, high=a)


class KaimingNormal(Initializer):
    """N(0, (gain / √fan)²) (fan = fan_out if ``fan_out_only`` else fan_in)."""

    gain: float = 1.0
    fan_out_only: bool = False

    def _draw(self, shape, device, dtype, fan_in, fan_out):
        fan = self._fan("fan_out", fan_out) if self.fan_out_only else self._fan("fan_in", fan_in)
        return randn(shape, dtype=dtype, device=device, mean=0.0, std=self.gain / math.sqrt(fan))


class XavierUniform(Initializer):
    """U(−a, a) with a = √3 · gain · √(2 / (fan_in + fan_out))."""

    gain: float = 1.0

    def _draw(self, shape, device, dtype, fan_in, fan_out):
        a = (
            math.sqrt(3.0)
            * self.gain
            * math.sqrt(2.0 / (self._fan("fan_in", fan_in) + self._fan("fan_out", fan_out)))
        )
        return rand(shape, dtype=dtype, device=device, low=-a, high=a)


class XavierNormal(Initializer):
    """N(0, σ²) with σ = gain · √(2 / (fan_in + fan_out))."""

    gain: float = 1.0

    def _draw(self, shape, device, dtype, fan_in, fan_out):
        std = self.gain * math.sqrt(2.0 / (self._fan("fan_in", fan_in) + self._fan("fan_out", fan_out)))
        return randn(shape, dtype=dtype, device=device, mean=0.0, std=std)


def default_linear_initializer() -> Initializer:
    """Burn's default for Linear/Conv/attention weights: KaimingUniform(gain=1/√3), i.e.
    U(±1/√fan_in)."""
    return KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)
