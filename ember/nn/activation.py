"""Activation modules (Burn's ``burn_nn::activation``) and ``ActivationConfig`` to pick one by name.

Each module calls the function of the same name in :mod:`ember.nn.functional` (or a tensor op).
Those with settings have a ``...Config`` whose defaults are Burn's; the settings are public
attributes, which the default ``Module.extra_repr`` displays. The modules live by family
and are re-exported here: rectifiers (:mod:`ember.nn.activation_rectifier`), squashing ones
(:mod:`ember.nn.activation_squashing`), shrinkage (:mod:`ember.nn.activation_shrink`), gated
ones (:mod:`ember.nn.activation_gated`), and the two with parameters, :class:`PRelu` and
:class:`SwiGlu` (:mod:`ember.nn.activation_learned`).
Burn's ``lambda`` settings are spelled ``lambd`` here (``lambda`` is a Python keyword).
At kinks, ±0 and NaN the gradients are PyTorch's (README, "A tour of the API": gradients at kinks).
"""

from __future__ import annotations

from typing import Union

from ember._deprecation import renamed_globals
from ember.nn.activation_gated import Gelu, Glu, HardSwish, Mish, Silu
from ember.nn.activation_learned import PRelu, PReluConfig, SwiGlu, SwiGluConfig
from ember.nn.activation_rectifier import (
    Celu,
    CeluConfig,
    Elu,
    EluConfig,
    LeakyRelu,
    LeakyReluConfig,
    Relu,
    Relu6,
    RRelu,
    RReluConfig,
    Selu,
    Softplus,
    SoftplusConfig,
    Threshold,
    ThresholdConfig,
    ThresholdedRelu,
    ThresholdedReluConfig,
)
from ember.nn.activation_shrink import (
    HardShrink,
    HardShrinkConfig,
    Shrink,
    ShrinkConfig,
    SoftShrink,
    SoftShrinkConfig,
    Tanhshrink,
)
from ember.nn.activation_squashing import (
    HardSigmoid,
    HardSigmoidConfig,
    Hardtanh,
    HardtanhConfig,
    LogSigmoid,
    Sigmoid,
    Softmax,
    Softsign,
    Tanh,
)
from ember.nn.container import Identity
from ember.nn.module import Module
from ember.record.config import Config

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
