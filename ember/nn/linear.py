"""Linear (fully connected) layer: ``y = x @ W + b`` with ``W: [d_input, d_output]``."""

from __future__ import annotations

import enum
from dataclasses import field

from ember.nn.init import Initializer, default_linear_initializer
from ember.nn.module import Module
from ember.nn.param import Param
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.nn import linear
from ember.tensor.tensor import Tensor

__all__ = ["Linear", "LinearConfig", "LinearLayout"]


class LinearLayout(enum.Enum):
    """How the weight is laid out in record files (in memory it is always ``[d_in, d_out]``).

    ``Row``: ``[d_input, d_output]`` (Burn's default). ``Col``: ``[d_output, d_input]``, the
    PyTorch ``nn.Linear`` layout, for files shared with PyTorch-style checkpoints.
    """

    Row = "Row"
    Col = "Col"


class LinearConfig(Config):
    """Configuration of :class:`Linear`.

    Args:
        d_input: size of each input sample.
        d_output: size of each output sample.
        bias: learn an additive bias.
        initializer: for the weight and bias; default KaimingUniform(gain=1/√3), i.e.
            U(±1/√d_input).
        layout: the weight's layout in records.
    """

    d_input: int
    d_output: int
    bias: bool = True
    initializer: Initializer = field(default_factory=default_linear_initializer)
    layout: LinearLayout = LinearLayout.Row

    def init(self, device=None, dtype=None) -> "Linear":
        """Build the layer on ``device`` with float ``dtype`` (float32 by default)."""
        if self.d_input <= 0 or self.d_output <= 0:
            raise ValueError(
                f"LinearConfig: d_input and d_output must be positive, got {self.d_input} and {self.d_output}"
            )
        weight = self.initializer.init(
            (self.d_input, self.d_output), device, dtype, fan_in=self.d_input, fan_out=self.d_output
        )
        weight._save_transposed = self.layout is LinearLayout.Col
        bias = None
        if self.bias:
            bias = self.initializer.init(
                (self.d_output,), device, dtype, fan_in=self.d_input, fan_out=self.d_output
            )
        return Linear(weight, bias)


class Linear(Module):
    """Applies ``x @ weight + bias`` over the last dim: ``[..., d_input] -> [..., d_output]``.

    Args:
        weight: Param ``[d_input, d_output]``.
        bias: Param ``[d_output]`` or None.
    """

    def __init__(self, weight: Param, bias: Param | None = None):
        if weight.ndim != 2:
            raise ValueError(f"Linear: weight must be [d_input, d_output], got {shape_str(weight.shape)}")
        if bias is not None and bias.shape != (weight.shape[1],):
            raise ValueError(f"Linear: bias must be [{weight.shape[1]}], got {shape_str(bias.shape)}")
        self.weight = weight
        self.bias = bias

    def forward(self, x: Tensor) -> Tensor:
        """Args:
            x: ``[..., d_input]``.

        Returns:
            ``[..., d_output]``.
        """
        w = self.weight.val()
        d_in = w.shape[0]
        if not isinstance(x, Tensor):
            raise TypeError(f"Linear: expected a Tensor input, got {type(x).__name__}")
        if x.ndim == 0 or x.shape[-1] != d_in:
            raise ValueError(f"Linear: input of shape {shape_str(x.shape)} does not end with d_input={d_in}")
        return linear(x, w, None if self.bias is None else self.bias.val())

    def extra_repr(self) -> dict:
        d_in, d_out = self.weight.shape
        return {"d_input": d_in, "d_output": d_out, "bias": self.bias is not None}
