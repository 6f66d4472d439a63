"""Activations with learnt parameters: :class:`PRelu` (its slopes) and :class:`SwiGlu` (two linears).

Parameter paths match Burn's: ``alpha`` for PRelu, ``linear_inner.weight`` / ``linear_outer.weight``
(and biases) for SwiGlu.
"""

from __future__ import annotations

from dataclasses import field

from ember.nn import functional as F
from ember.nn.init import Constant, Initializer, default_linear_initializer
from ember.nn.linear import Linear, LinearConfig, LinearLayout
from ember.nn.module import Module
from ember.nn.param import Param
from ember.record.config import Config
from ember.tensor.op_functions import swiglu
from ember.tensor.tensor import Tensor

__all__ = ["PRelu", "PReluConfig", "SwiGlu", "SwiGluConfig"]


# ---- with parameters -------------------------------------------------------------------------
class PReluConfig(Config):
    """Configuration of :class:`PRelu`.

    Args:
        num_parameters: 1 (one shared slope) or the number of channels (dim 1 of the input).
        alpha: initial value of every slope (0.25).
    """

    num_parameters: int = 1
    alpha: float = 0.25

    def init(self, device=None, dtype=None) -> "PRelu":
        if self.num_parameters <= 0:
            raise ValueError(f"PReluConfig: num_parameters must be positive, got {self.num_parameters}")
        return PRelu(Constant(self.alpha).init((self.num_parameters,), device, dtype), self.alpha)


class PRelu(Module):
    """``x`` for x ≥ 0, ``alpha·x`` otherwise, with learnt slopes ``alpha``: one shared, or
    one per channel (dim 1 of the input).

    Args:
        alpha: Param ``[num_parameters]``.
        alpha_value: the initial slope (kept for display, as Burn).
    """

    def __init__(self, alpha: Param, alpha_value: float = 0.25):
        if alpha.ndim != 1:
            raise ValueError(
                f"PRelu: alpha must be a 1-D Param [num_parameters], got shape {list(alpha.shape)}"
            )
        self.alpha = alpha
        self.alpha_value = float(alpha_value)

    def forward(self, x: Tensor) -> Tensor:
        return F.prelu(x, self.alpha.val())

    def extra_repr(self) -> dict:
        return {"num_parameters": self.alpha.shape[0], "alpha_value": self.alpha_value}


class SwiGluConfig(Config):
    """Configuration of :class:`SwiGlu`.

    Args:
        d_input: input size.
        d_output: output size.
        bias: biases on both linears (False, as Burn).
        initializer: of both linears (KaimingUniform(1/√3)).
        layout: weight layout of both linears in records.
    """

    d_input: int
    d_output: int
    bias: bool = False
    initializer: Initializer = field(default_factory=default_linear_initializer)
    layout: LinearLayout = LinearLayout.Row

    def init(self, device=None, dtype=None) -> "SwiGlu":
        linear = LinearConfig(self.d_input, self.d_output, self.bias, self.initializer, self.layout)
        return SwiGlu(linear.init(device, dtype), linear.init(device, dtype))


class SwiGlu(Module):
    """``silu(linear_inner(x)) · linear_outer(x)``: ``[..., d_input] -> [..., d_output]``.

    Args:
        linear_inner: the gated branch (through SiLU).
        linear_outer: the linear branch.
    """

    def __init__(self, linear_inner: Linear, linear_outer: Linear):
        self.linear_inner = linear_inner
        self.linear_outer = linear_outer

    def forward(self, x: Tensor) -> Tensor:
        return swiglu(self.linear_inner(x), self.linear_outer(x))  # the gate in one fused kernel

    def extra_repr(self) -> dict:
        d_input, d_output = self.linear_inner.weight.shape
        return {"d_input": d_input, "d_output": d_output, "bias": self.linear_inner.bias is not None}
