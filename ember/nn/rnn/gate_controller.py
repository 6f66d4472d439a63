"""``GateController``: one gate of a recurrent cell (Burn's ``GateController``).

A gate is two linear maps, ``input_transform`` (``d_input -> d_output``) on the input and
``hidden_transform`` (``d_output -> d_output``) on the hidden state, so the record paths are
``<gate>.input_transform.weight``, ``<gate>.hidden_transform.bias``... as in Burn.

The cells never run the gates one by one: :func:`stacked_weights` lays the gates' weights side
by side so that one GEMM computes every gate (and, for the input side, every time step). The
other helpers here are the pieces the cells' configs share: their default initializer and
activations, and applying a gate activation to several stacked gates at once.
"""

from __future__ import annotations

from ember.nn.activation import ActivationConfig
from ember.nn.init import Initializer, XavierNormal
from ember.nn.linear import Linear, LinearConfig, LinearLayout
from ember.nn.module import Module
from ember.nn.rnn.sequence import project_steps
from ember.record.config import Config
from ember.tensor.creation import zeros_like
from ember.tensor.ops.movement import cat
from ember.tensor.tensor import Tensor

__all__ = [
    "GateController",
    "activation_config",
    "gate_values",
    "init_gates",
    "project_gates",
    "stacked_weights",
    "xavier_normal",
]


class GateController(Module):
    """``input_transform(x) + hidden_transform(h)``: the pre-activation of one gate.

    Args:
        input_transform: ``Linear(d_input, d_output)``.
        hidden_transform: ``Linear(d_output, d_output)``.
    """

    def __init__(self, input_transform: Linear, hidden_transform: Linear):
        _d_in, d_out = input_transform.weight.shape
        if hidden_transform.weight.shape != (d_out, d_out):
            raise ValueError(
                f"GateController: hidden_transform must be [{d_out}, {d_out}] (d_output of "
                f"input_transform), got {list(hidden_transform.weight.shape)}"
            )
        self.input_transform = input_transform
        self.hidden_transform = hidden_transform

    @classmethod
    def new(
        cls, d_input: int, d_output: int, bias: bool, initializer: Initializer, device=None, dtype=None
    ) -> "GateController":
        """Two fresh linears (row layout), both drawn from ``initializer``.

        Args:
            d_input: input features.
            d_output: hidden size.
            bias: give both linears a bias.
            initializer: for weights and biases.
            device: where to create them.
            dtype: float dtype (float32 by default).
        """

        def linear(d_in):
            return LinearConfig(d_in, d_output, bias, initializer, LinearLayout.Row).init(device, dtype)

        return cls(linear(d_input), linear(d_output))

    @property
    def d_input(self) -> int:
        return self.input_transform.weight.shape[0]

    @property
    def d_output(self) -> int:
        return self.input_transform.weight.shape[1]

    def gate_product(self, input: Tensor, hidden: Tensor) -> Tensor:
        """``input @ W_x + b_x + hidden @ W_h + b_h`` (Burn's ``gate_product``)."""
        return self.input_transform(input) + self.hidden_transform(hidden)


def stacked_weights(gates, side: str) -> tuple[Tensor, Tensor | None]:
    """The weights of ``gates``' ``side`` transforms side by side, and their biases.

    Args:
        gates: GateControllers of one cell, all ``d_output = H``.
        side: ``"input"`` (weights ``[d_input, G·H]``) or ``"hidden"`` (``[H, G·H]``).

    Returns:
        ``(weight, bias)`` with ``bias`` ``[G·H]`` (a gate without bias contributes zeros), or
        None when no gate has one.
    """
    linears = [g.input_transform if side == "input" else g.hidden_transform for g in gates]
    weights = [lin.weight.val() for lin in linears]
    weight = weights[0] if len(weights) == 1 else cat(weights, 1)
    if all(lin.bias is None for lin in linears):
        return weight, None
    zeros = [zeros_like(w[0]) for w in weights]
    biases = [z if lin.bias is None else lin.bias.val() for lin, z in zip(linears, zeros)]
    return weight, (biases[0] if len(biases) == 1 else cat(biases, 0))


def project_gates(gates, x: Tensor) -> tuple[list[Tensor], Tensor]:
    """The input side of ``gates`` (both biases included) for every step of batch-first ``x``,
    and their stacked hidden weights in ``x``'s dtype: ``(steps, w_h)``."""
    w_x, b_x = stacked_weights(gates, "input")
    w_h, b_h = stacked_weights(gates, "hidden")
    bias = b_h if b_x is None else (b_x if b_h is None else b_x + b_h)
    return project_steps(x, w_x, bias), w_h.to(x.dtype)


def activation_config(value, default: str) -> ActivationConfig:
    """An ``ActivationConfig`` from a config, a name, or None (the ``default`` name)."""
    if value is None:
        return ActivationConfig(default)
    if isinstance(value, ActivationConfig):
        return value
    if isinstance(value, (str, Config)):
        return ActivationConfig(value)
    raise TypeError(f"activation must be an ActivationConfig or a name such as 'tanh', got {value!r}")


def init_gates(config, n: int, device, dtype) -> list[GateController]:
    """``n`` fresh gates of a recurrent layer's config (``d_input``, ``d_hidden``, ``bias``,
    ``initializer``), once its sizes and ``clip`` are checked."""
    op = type(config).__name__
    if config.d_input <= 0 or config.d_hidden <= 0:
        raise ValueError(
            f"{op}: d_input and d_hidden must be positive, got {config.d_input} and {config.d_hidden}"
        )
    if config.clip is not None and not config.clip > 0:
        raise ValueError(f"{op}: clip must be positive (or None), got {config.clip}")
    return [
        GateController.new(config.d_input, config.d_hidden, config.bias, config.initializer, device, dtype)
        for _ in range(n)
    ]


def xavier_normal() -> Initializer:
    """Burn's default initializer of the recurrent layers: ``XavierNormal(gain=1)``."""
    return XavierNormal(gain=1.0)


def gate_values(activation: Module, pre: Tensor, n: int, size: int) -> list[Tensor]:
    """``activation`` of ``n`` gates stacked in ``pre [batch, n·size]``, one ``[batch, size]`` each.

    A parameter-free activation is element-wise, so it runs once over all the gates; one with
    parameters (per-channel PRelu) sees each gate alone, as in Burn.
    """
    if n == 1:
        return [activation(pre)]
    if not activation.parameters():
        return activation(pre).split(size, 1)
    return [activation(part) for part in pre.split(size, 1)]
