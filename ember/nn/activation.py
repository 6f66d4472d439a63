"""Activation modules (Burn's ``burn_nn::activation``) and ``ActivationConfig`` to pick one by name.

Each module calls the function of the same name in :mod:`ember.nn.functional` (or a tensor op).
Those with settings have a ``...Config`` whose defaults are Burn's. The two with parameters,
:class:`PRelu` and :class:`SwiGlu`, live in :mod:`ember.nn.activation_learned` and are
re-exported here.
Burn's ``lambda`` settings are spelled ``lambd`` here (``lambda`` is a Python keyword).
At kinks, ±0 and NaN the gradients are PyTorch's (README, "A tour of the API": gradients at kinks).
"""

from __future__ import annotations

from typing import Union

from ember._deprecation import renamed_globals
from ember.nn import functional as F
from ember.nn.activation_learned import PRelu, PReluConfig, SwiGlu, SwiGluConfig
from ember.nn.container import Identity
from ember.nn.module import Module
from ember.record.config import Config
from ember.tensor.creation import rand
from ember.tensor.grad_mode import is_grad_enabled
from ember.tensor.ops.elementwise import leaky_relu, relu, sigmoid, silu, where
from ember.tensor.ops.nn import gelu, softmax
from ember.tensor.tensor import Tensor

__all__ = [
    "ActivationConfig",
    "Celu",
    "CeluConfig",
    "Elu",
    "EluConfig",
    "Gelu",
    "Glu",
    "HardShrink",
    "HardShrinkConfig",
    "HardSigmoid",
    "HardSigmoidConfig",
    "HardSwish",
    "Hardtanh",
    "HardtanhConfig",
    "LeakyRelu",
    "LeakyReluConfig",
    "LogSigmoid",
    "Mish",
    "PRelu",
    "PReluConfig",
    "RRelu",
    "RReluConfig",
    "Relu",
    "Relu6",
    "Selu",
    "Shrink",
    "ShrinkConfig",
    "Sigmoid",
    "Silu",
    "SoftShrink",
    "SoftShrinkConfig",
    "Softmax",
    "Softplus",
    "SoftplusConfig",
    "Softsign",
    "SwiGlu",
    "SwiGluConfig",
    "Tanh",
    "Tanhshrink",
    "Threshold",
    "ThresholdConfig",
    "ThresholdedRelu",
    "ThresholdedReluConfig",
]


# ---- parameter-free, no settings -------------------------------------------------------------
class Gelu(Module):
    """GELU ``x·Φ(x)``; with ``approximate=True`` its tanh approximation.

    Args:
        approximate: use the tanh approximation (Burn's ``Gelu::new_approximate``).
    """

    def __init__(self, approximate: bool = False):
        self.approximate = bool(approximate)

    @classmethod
    def new_approximate(cls) -> "Gelu":
        """The tanh approximation (Burn's name)."""
        return cls(approximate=True)

    def forward(self, x: Tensor) -> Tensor:
        return gelu(x, "tanh" if self.approximate else "none")


class Relu(Module):
    """``max(x, 0)``."""

    def forward(self, x: Tensor) -> Tensor:
        return relu(x)


class Relu6(Module):
    """``min(max(x, 0), 6)``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu6(x)


class Silu(Module):
    """``x·sigmoid(x)`` (a.k.a. swish)."""

    def forward(self, x: Tensor) -> Tensor:
        return silu(x)


class Tanh(Module):
    """``tanh(x)``."""

    def forward(self, x: Tensor) -> Tensor:
        return x.tanh()


class Sigmoid(Module):
    """``1 / (1 + exp(−x))``."""

    def forward(self, x: Tensor) -> Tensor:
        return sigmoid(x)


class LogSigmoid(Module):
    """``log(sigmoid(x)) = −softplus(−x)``, finite for any x."""

    def forward(self, x: Tensor) -> Tensor:
        return F.log_sigmoid(x)


class HardSwish(Module):
    """``x · max(0, min(1, x/6 + 1/2))``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hard_swish(x)


class Mish(Module):
    """``x · tanh(softplus(x))``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(x)


class Selu(Module):
    """``scale·x`` for x > 0, ``scale·α·(exp(x) − 1)`` otherwise (α ≈ 1.6733, scale ≈ 1.0507)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.selu(x)


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.softsign(x)


class Tanhshrink(Module):
    """``x − tanh(x)``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanhshrink(x)


class Softmax(Module):
    """Softmax along ``dim``.

    Args:
        dim: the normalised dim (last by default).
    """

    def __init__(self, dim: int = -1):
        self.dim = int(dim)

    def forward(self, x: Tensor) -> Tensor:
        return softmax(x, self.dim)


class Glu(Module):
    """Gated linear unit ``a · sigmoid(b)`` over the two halves of ``dim`` (halves that dim).

    Burn keeps it out of ``ActivationConfig`` because it changes the shape.

    Args:
        dim: the split dim (negative counts from the end).
    """

    def __init__(self, dim: int):
        self.dim = int(dim)

    def forward(self, x: Tensor) -> Tensor:
        return F.glu(x, self.dim)

    def extra_repr(self) -> dict:
        return {"dim": self.dim}


# ---- with settings ---------------------------------------------------------------------------
class LeakyReluConfig(Config):
    """Configuration of :class:`LeakyRelu`.

    Args:
        negative_slope: slope for x < 0 (0.01).
    """

    negative_slope: float = 0.01

    def init(self, device=None, dtype=None) -> "LeakyRelu":
        return LeakyRelu(self.negative_slope)


class LeakyRelu(Module):
    """``x`` for x > 0, ``negative_slope·x`` otherwise (the gradient at 0 is ``negative_slope``).

    Args:
        negative_slope: slope for x < 0.
    """

    def __init__(self, negative_slope: float = 0.01):
        self.negative_slope = float(negative_slope)

    def forward(self, x: Tensor) -> Tensor:
        return leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> dict:
        return {"negative_slope": self.negative_slope}


class EluConfig(Config):
    """Configuration of :class:`Elu`.

    Args:
        alpha: scale of the negative branch (1.0).
    """

    alpha: float = 1.0

    def init(self, device=None, dtype=None) -> "Elu":
        return Elu(self.alpha)


class Elu(Module):
    """``x`` for x > 0, ``alpha·(exp(x) − 1)`` otherwise.

    Args:
        alpha: scale of the negative branch.
    """

    def __init__(self, alpha: float = 1.0):
        self.alpha = float(alpha)

    def forward(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha)

    def extra_repr(self) -> dict:
        return {"alpha": self.alpha}


class CeluConfig(Config):
    """Configuration of :class:`Celu`.

    Args:
        alpha: the CELU alpha (1.0); must not be 0.
    """

    alpha: float = 1.0

    def init(self, device=None, dtype=None) -> "Celu":
        return Celu(self.alpha)


class Celu(Module):
    """``max(0, x) + min(0, alpha·(exp(x/alpha) − 1))``.

    Args:
        alpha: the CELU alpha (not 0).
    """

    def __init__(self, alpha: float = 1.0):
        if alpha == 0:
            raise ValueError("Celu: alpha must not be 0 (it divides the input)")
        self.alpha = float(alpha)

    def forward(self, x: Tensor) -> Tensor:
        return F.celu(x, self.alpha)

    def extra_repr(self) -> dict:
        return {"alpha": self.alpha}


class HardSigmoidConfig(Config):
    """Configuration of :class:`HardSigmoid`.

    Args:
        alpha: slope (0.2).
        beta: offset (0.5).
    """

    alpha: float = 0.2
    beta: float = 0.5

    def init(self, device=None, dtype=None) -> "HardSigmoid":
        return HardSigmoid(self.alpha, self.beta)


class HardSigmoid(Module):
    """``max(0, min(1, alpha·x + beta))``.

    Args:
        alpha: slope.
        beta: offset.
    """

    def __init__(self, alpha: float = 0.2, beta: float = 0.5):
        self.alpha = float(alpha)
        self.beta = float(beta)

    def forward(self, x: Tensor) -> Tensor:
        return F.hard_sigmoid(x, self.alpha, self.beta)

    def extra_repr(self) -> dict:
        return {"alpha": self.alpha, "beta": self.beta}


class HardtanhConfig(Config):
    """Configuration of :class:`Hardtanh`.

    Args:
        min_val: lower end of the linear range (−1).
        max_val: upper end of the linear range (1).
    """

    min_val: float = -1.0
    max_val: float = 1.0

    def init(self, device=None, dtype=None) -> "Hardtanh":
        return Hardtanh(self.min_val, self.max_val)


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)``.

    Args:
        min_val: lower bound.
        max_val: upper bound (>= min_val).
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0):
        if not min_val <= max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must be <= max_val ({max_val})")
        self.min_val = float(min_val)
        self.max_val = float(max_val)

    def forward(self, x: Tensor) -> Tensor:
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self) -> dict:
        return {"min_val": self.min_val, "max_val": self.max_val}


class SoftplusConfig(Config):
    """Configuration of :class:`Softplus`.

    Args:
        beta: sharpness (1.0).
    """

    beta: float = 1.0

    def init(self, device=None, dtype=None) -> "Softplus":
        return Softplus(self.beta)


class Softplus(Module):
    """``log(1 + exp(beta·x)) / beta``, computed stably (linear where beta·x > 20).

    Args:
        beta: sharpness (non-zero).
    """

    def __init__(self, beta: float = 1.0):
        if beta == 0:
            raise ValueError("Softplus: beta must not be 0 (the result is divided by it)")
        self.beta = float(beta)

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x, self.beta)

    def extra_repr(self) -> dict:
        return {"beta": self.beta}


class ThresholdedReluConfig(Config):
    """Configuration of :class:`ThresholdedRelu`.

    Args:
        alpha: the threshold (1.0).
    """

    alpha: float = 1.0

    def init(self, device=None, dtype=None) -> "ThresholdedRelu":
        return ThresholdedRelu(self.alpha)


class ThresholdedRelu(Module):
    """``x`` where x > alpha, 0 elsewhere.

    Args:
        alpha: the threshold.
    """

    def __init__(self, alpha: float = 1.0):
        self.alpha = float(alpha)

    def forward(self, x: Tensor) -> Tensor:
        return F.thresholded_relu(x, self.alpha)

    def extra_repr(self) -> dict:
        return {"alpha": self.alpha}


class ThresholdConfig(Config):
    """Configuration of :class:`Threshold` (no defaults, as in Burn).

    Args:
        threshold: inputs <= threshold are replaced.
        value: the replacement.
    """

    threshold: float
    value: float

    def init(self, device=None, dtype=None) -> "Threshold":
        return Threshold(self.threshold, self.value)


class Threshold(Module):
    """``x`` where x > threshold, ``value`` elsewhere.

    Args:
        threshold: the threshold.
        value: the replacement value.
    """

    def __init__(self, threshold: float, value: float):
        self.threshold = float(threshold)
        self.value = float(value)

    def forward(self, x: Tensor) -> Tensor:
        return F.threshold(x, self.threshold, self.value)

    def extra_repr(self) -> dict:
        return {"threshold": self.threshold, "value": self.value}


class HardShrinkConfig(Config):
    """Configuration of :class:`HardShrink`.

    Args:
        lambd: half-width of the zeroed band (0.5; Burn's ``lambda``).
    """

    lambd: float = 0.5

    def init(self, device=None, dtype=None) -> "HardShrink":
        return HardShrink(self.lambd)


class HardShrink(Module):
    """``x`` where |x| > lambd, 0 elsewhere.

    Args:
        lambd: half-width of the zeroed band.
    """

    def __init__(self, lambd: float = 0.5):
        self.lambd = float(lambd)

    def forward(self, x: Tensor) -> Tensor:
        return F.hard_shrink(x, self.lambd)

    def extra_repr(self) -> dict:
        return {"lambd": self.lambd}


class SoftShrinkConfig(Config):
    """Configuration of :class:`SoftShrink`.

    Args:
        lambd: half-width of the zeroed band and the shift (0.5; Burn's ``lambda``).
    """

    lambd: float = 0.5

    def init(self, device=None, dtype=None) -> "SoftShrink":
        return SoftShrink(self.lambd)


class SoftShrink(Module):
    """``x − lambd`` where x > lambd, ``x + lambd`` where x < −lambd, 0 elsewhere.

    Args:
        lambd: half-width of the zeroed band and the shift.
    """

    def __init__(self, lambd: float = 0.5):
        self.lambd = float(lambd)

    def forward(self, x: Tensor) -> Tensor:
        return F.soft_shrink(x, self.lambd)

    def extra_repr(self) -> dict:
        return {"lambd": self.lambd}


class ShrinkConfig(Config):
    """Configuration of :class:`Shrink` (ONNX's Shrink).

    Args:
        lambd: half-width of the zeroed band (0.5; Burn's ``lambda``).
        bias: the shift applied outside it (0.5).
    """

    lambd: float = 0.5
    bias: float = 0.5

    def init(self, device=None, dtype=None) -> "Shrink":
        return Shrink(self.lambd, self.bias)


class Shrink(Module):
    """``x − bias`` where x > lambd, ``x + bias`` where x < −lambd, 0 elsewhere.

    Args:
        lambd: half-width of the zeroed band.
        bias: the shift outside it.
    """

    def __init__(self, lambd: float = 0.5, bias: float = 0.5):
        self.lambd = float(lambd)
        self.bias = float(bias)

    def forward(self, x: Tensor) -> Tensor:
        return F.shrink(x, self.lambd, self.bias)

    def extra_repr(self) -> dict:
        return {"lambd": self.lambd, "bias": self.bias}


class RReluConfig(Config):
    """Configuration of :class:`RRelu`.

    Args:
        lower: lower end of the sampled slope range (1/8).
        upper: upper end (1/3); ``lower <= upper``.
    """

    lower: float = 0.125
    upper: float = 1.0 / 3.0

    def init(self, device=None, dtype=None) -> "RRelu":
        return RRelu(self.lower, self.upper)


class RRelu(Module):
    """Randomized leaky ReLU: while training (and recording gradients, like :class:`Dropout`)
    each element <= 0 is scaled by its own slope drawn from U[lower, upper); otherwise
    the fixed slope ``(lower + upper) / 2`` is used.

    Args:
        lower: lower end of the slope range.
        upper: upper end.
    """

    def __init__(self, lower: float = 0.125, upper: float = 1.0 / 3.0):
        if not lower <= upper:
            raise ValueError(f"RRelu: lower bound ({lower}) must be <= upper bound ({upper})")
        self.lower = float(lower)
        self.upper = float(upper)

    def forward(self, x: Tensor) -> Tensor:
        if not (self._training and is_grad_enabled()) or self.lower == self.upper:
            return leaky_relu(x, (self.lower + self.upper) / 2.0)
        slope = rand(x.shape, dtype=x.dtype, device=x.device, low=self.lower, high=self.upper)
        return where(x <= 0.0, x * slope, x)  # x = 0 takes its slope as gradient (PyTorch's)

    def extra_repr(self) -> dict:
        return {"lower": self.lower, "upper": self.upper}


# ---- ActivationConfig: Burn's enum, by name --------------------------------------------------
_WITH_OPTIONS = {
    "prelu": PReluConfig,
    "leaky_relu": LeakyReluConfig,
    "swiglu": SwiGluConfig,
    "hard_sigmoid": HardSigmoidConfig,
    "softplus": SoftplusConfig,
    "elu": EluConfig,
    "celu": CeluConfig,
    "thresholded_relu": ThresholdedReluConfig,
    "hard_shrink": HardShrinkConfig,
    "soft_shrink": SoftShrinkConfig,
    "shrink": ShrinkConfig,
}
_PLAIN = (
    "identity",
    "gelu",
    "gelu_approximate",
    "relu",
    "silu",
    "selu",
    "sigmoid",
    "tanh",
    "hard_swish",
    "softsign",
)
_KINDS = _PLAIN + tuple(_WITH_OPTIONS)
# every spelling reduced to lower case without separators: "GeluApproximate", "gelu-approximate"...
_BY_COMPACT = {k.replace("_", ""): k for k in _KINDS} | {"swish": "silu"}

ActivationOptions = Union[
    PReluConfig,
    LeakyReluConfig,
    SwiGluConfig,
    HardSigmoidConfig,
    SoftplusConfig,
    EluConfig,
    CeluConfig,
    ThresholdedReluConfig,
    HardShrinkConfig,
    SoftShrinkConfig,
    ShrinkConfig,
]


class ActivationConfig(Config):
    """Which activation a layer uses (Burn's ``ActivationConfig`` enum, by name).

    ``ActivationConfig("elu", options=EluConfig(alpha=0.5))`` and
    ``ActivationConfig(EluConfig(alpha=0.5))`` are the same; a kind with settings and no
    ``options`` takes its Burn defaults (``swiglu`` has none: its sizes must be given).

    Args:
        kind: ``identity``, ``gelu``, ``gelu_approximate``, ``relu``, ``leaky_relu``, ``silu``,
            ``selu``, ``sigmoid``, ``tanh``, ``hard_swish``, ``softsign``, ``prelu``, ``swiglu``,
            ``hard_sigmoid``, ``softplus``, ``elu``, ``celu``, ``thresholded_relu``,
            ``hard_shrink``, ``soft_shrink``, ``shrink`` (Burn's CamelCase names work too), or
            one of those kinds' configs.
        negative_slope: slope of ``leaky_relu`` for x < 0 when ``options`` is None.
        options: the kind's config (``EluConfig``, ``PReluConfig``...), or None.
    """

    kind: str = "gelu"
    negative_slope: float = 0.01
    options: ActivationOptions | None = None

    def __post_init__(self):
        if isinstance(self.kind, Config):
            self.options, self.kind = (
                self.kind,
                next(
                    (k for k, cls in _WITH_OPTIONS.items() if type(self.kind) is cls),
                    type(self.kind).__name__,
                ),
            )
        if not isinstance(self.kind, str):
            raise TypeError(
                f"ActivationConfig: kind must be a name or an activation config, got {self.kind!r}"
            )
        key = _BY_COMPACT.get(self.kind.lower().replace("-", "").replace("_", ""))
        if key is None:
            raise ValueError(
                f"ActivationConfig: unknown activation {self.kind!r}; expected one of {list(_KINDS)}"
            )
        self.kind = key
        expected = _WITH_OPTIONS.get(key)
        if self.options is not None and type(self.options) is not expected:
            want = f"a {expected.__name__}" if expected else "no options"
            raise ValueError(f"ActivationConfig: {key!r} takes {want}, got {type(self.options).__name__}")
        if key == "swiglu" and self.options is None:
            raise ValueError("ActivationConfig: 'swiglu' needs options=SwiGluConfig(d_input, d_output)")

    def init(self, device=None, dtype=None) -> Module:
        """Build the activation module (PRelu and SwiGlu parameters on ``device``, ``dtype``)."""
        if self.kind in _WITH_OPTIONS:
            options = self.options
            if options is None and self.kind == "leaky_relu":
                options = LeakyReluConfig(self.negative_slope)
            elif options is None:
                options = _WITH_OPTIONS[self.kind]()
            return options.init(device, dtype)
        return {
            "identity": Identity,
            "gelu": Gelu,
            "gelu_approximate": Gelu.new_approximate,
            "relu": Relu,
            "silu": Silu,
            "selu": Selu,
            "sigmoid": Sigmoid,
            "tanh": Tanh,
            "hard_swish": HardSwish,
            "softsign": Softsign,
        }[self.kind]()


# The names before the acronym rule (README, "Names"), kept one release: each use warns.
__getattr__ = renamed_globals(__name__, {"SiLU": "Silu", "GLU": "Glu"})
