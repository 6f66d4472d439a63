"""The basic (Elman) RNN and its bidirectional form (Burn's ``Rnn``, ``BiRnn``, ``RnnState``).

One step: ``h' = act(x W_x + b_x + h W_h + b_h)`` (act = tanh by default), clamped to ±clip
when set. Parameter paths are Burn's: ``gate.input_transform.weight``,
``gate.hidden_transform.bias``...; a BiRnn nests two under ``forward.`` and ``reverse.``.
"""

from __future__ import annotations

from dataclasses import field

from ember.nn.activation import ActivationConfig
from ember.nn.init import Initializer
from ember.nn.module import Module
from ember.nn.rnn.bidirectional import Bidirectional
from ember.nn.rnn.gate_controller import (
    GateController,
    activation_config,
    init_gates,
    stacked_weights,
    xavier_normal,
)
from ember.nn.rnn.sequence import check_input, check_state, project_steps, stack_steps
from ember.record.config import Config
from ember.tensor.creation import zeros
from ember.tensor.ops.movement import stack
from ember.tensor.tensor import Tensor

__all__ = ["BiRnn", "BiRnnConfig", "Rnn", "RnnConfig", "RnnState"]


class RnnState:
    """The state of an RNN: ``hidden`` ``[batch, d_hidden]`` (``[2, batch, d_hidden]`` for a BiRnn).

    Args:
        hidden: the hidden state.
    """

    __slots__ = ("hidden",)

    def __init__(self, hidden: Tensor):
        if not isinstance(hidden, Tensor):
            raise TypeError(f"RnnState: hidden must be a Tensor, got {type(hidden).__name__}")
        self.hidden = hidden

    def __repr__(self) -> str:
        return f"RnnState(shape={list(self.hidden.shape)}, dtype={self.hidden.dtype}, device={self.hidden.device})"


class RnnConfig(Config):
    """Configuration of :class:`Rnn`.

    Args:
        d_input: input features.
        d_hidden: hidden size.
        bias: biases in both linears.
        initializer: weights and biases (XavierNormal(gain=1)).
        batch_first: ``[batch, seq, features]`` layout (else seq first).
        reverse: run from the end of the sequence (outputs stay in time order).
        clip: clamp the hidden state to ``[−clip, clip]`` after each step, or None.
        hidden_activation: the cell's non-linearity (tanh).
    """

    d_input: int
    d_hidden: int
    bias: bool
    initializer: Initializer = field(default_factory=xavier_normal)
    batch_first: bool = True
    reverse: bool = False
    clip: float | None = None
    hidden_activation: ActivationConfig = field(default_factory=lambda: ActivationConfig("tanh"))

    def __post_init__(self):
        self.hidden_activation = activation_config(self.hidden_activation, "tanh")

    def init(self, device=None, dtype=None) -> "Rnn":
        """Build the gate on ``device`` (float ``dtype``)."""
        (gate,) = init_gates(self, 1, device, dtype)
        return Rnn(
            gate, self.batch_first, self.reverse, self.clip, self.hidden_activation.init(device, dtype)
        )


class Rnn(Module):
    """A unidirectional basic RNN.

    Args:
        gate: the GateController.
        batch_first: ``[batch, seq, features]`` layout.
        reverse: process the sequence from its last step.
        clip: hidden-state clamp, or None.
        hidden_activation: the non-linearity (tanh by default).
    """

    def __init__(
        self,
        gate: GateController,
        batch_first: bool = True,
        reverse: bool = False,
        clip: float | None = None,
        hidden_activation: Module | None = None,
    ):
        self.gate = gate
        self.d_hidden = gate.d_output
        self.batch_first = bool(batch_first)
        self.reverse = bool(reverse)
        self.clip = None if clip is None else float(clip)
        self.hidden_activation = hidden_activation or ActivationConfig("tanh").init()

    @property
    def d_input(self) -> int:
        return self.gate.d_input

    def forward(self, x: Tensor, state: RnnState | None = None) -> tuple[Tensor, RnnState]:
        """Run over the sequence.

        Args:
            x: ``[batch, seq, d_input]`` (seq first when not batch_first).
            state: the initial state (``hidden [batch, d_hidden]``), zeros when None.

        Returns:
            ``(output, state)``: every step's hidden state ``[batch, seq, d_hidden]`` and the
            final :class:`RnnState`.
        """
        check_input("Rnn", x, self.d_input)
        if not self.batch_first:
            x = x.swap_dims(0, 1)
        if state is not None and not isinstance(state, RnnState):
            raise TypeError(f"Rnn: state must be an RnnState, got {type(state).__name__}")
        out, hidden = self.run(x, None if state is None else state.hidden, self.reverse)
        return (out if self.batch_first else out.swap_dims(0, 1)), RnnState(hidden)

    def run(self, x: Tensor, hidden: Tensor | None, reverse: bool) -> tuple[Tensor, Tensor]:
        """The recurrence on batch-first ``x`` in the given direction."""
        batch, seq, _ = x.shape
        size = self.d_hidden
        w_x, b_x = stacked_weights([self.gate], "input")
        w_h, b_h = stacked_weights([self.gate], "hidden")
        bias = b_h if b_x is None else (b_x if b_h is None else b_x + b_h)
        steps = project_steps(x, w_x, bias)
        w_h = w_h.to(x.dtype)
        if hidden is None:
            hidden = zeros(batch, size, dtype=x.dtype, device=x.device)
        else:
            check_state("Rnn", "state.hidden", hidden, (batch, size))
            hidden = hidden.to(x.dtype)
        outputs = [None] * seq
        for t in range(seq - 1, -1, -1) if reverse else range(seq):
            hidden = self.hidden_activation(steps[t] + hidden @ w_h)
            if self.clip is not None:
                hidden = hidden.clamp(-self.clip, self.clip)
            outputs[t] = hidden
        return stack_steps(outputs, batch, size, x), hidden

    def extra_repr(self) -> dict:
        return {
            "d_input": self.d_input,
            "d_hidden": self.d_hidden,
            "bias": self.gate.input_transform.bias is not None,
        }


class BiRnnConfig(Config):
    """Configuration of :class:`BiRnn`.

    Args:
        d_input: input features.
        d_hidden: hidden size of each direction.
        bias: biases in the linears.
        initializer: XavierNormal(gain=1).
        batch_first: ``[batch, seq, features]`` layout.
        clip: hidden-state clamp, or None.
        hidden_activation: tanh.
    """

    d_input: int
    d_hidden: int
    bias: bool
    initializer: Initializer = field(default_factory=xavier_normal)
    batch_first: bool = True
    clip: float | None = None
    hidden_activation: ActivationConfig = field(default_factory=lambda: ActivationConfig("tanh"))

    def __post_init__(self):
        self.hidden_activation = activation_config(self.hidden_activation, "tanh")

    def init(self, device=None, dtype=None) -> "BiRnn":
        base = RnnConfig(
            self.d_input,
            self.d_hidden,
            self.bias,
            self.initializer,
            batch_first=True,
            clip=self.clip,
            hidden_activation=self.hidden_activation,
        )
        return BiRnn(base.init(device, dtype), base.init(device, dtype), self.batch_first)


class BiRnn(Bidirectional):
    """A bidirectional basic RNN; the forward direction's record path is ``forward`` (Burn's
    field), reached in Python as :attr:`forward_rnn`.

    Args:
        forward: the forward-direction :class:`Rnn`.
        reverse: the reverse-direction :class:`Rnn`.
        batch_first: ``[batch, seq, features]`` layout.
    """

    def __init__(self, forward: Rnn, reverse: Rnn, batch_first: bool = True):
        super().__init__(forward, reverse, batch_first)

    @property
    def forward_rnn(self) -> Rnn:
        return self._forward

    def forward(self, x: Tensor, state: RnnState | None = None) -> tuple[Tensor, RnnState]:
        """Run both directions.

        Args:
            x: ``[batch, seq, d_input]`` (seq first when not batch_first).
            state: initial ``hidden [2, batch, d_hidden]`` (forward, reverse), or None.

        Returns:
            ``(output [batch, seq, 2·d_hidden], RnnState(hidden [2, batch, d_hidden]))``.
        """
        return self._run(x, state)

    def _split_state(self, state, batch: int) -> tuple[Tensor, Tensor]:
        if not isinstance(state, RnnState):
            raise TypeError(f"BiRnn: state must be an RnnState, got {type(state).__name__}")
        check_state("BiRnn", "state.hidden", state.hidden, (2, batch, self.d_hidden))
        return state.hidden[0], state.hidden[1]

    def _stack_states(self, forward: Tensor, reverse: Tensor) -> RnnState:
        return RnnState(stack([forward, reverse], 0))
