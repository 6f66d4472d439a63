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
from ember.nn.rnn.cell import RecurrentCell
from ember.nn.rnn.gate_controller import GateController, init_gates, project_gates, xavier_normal
from ember.nn.rnn.recurrent_config import RecurrentConfig, activation_field
from ember.nn.rnn.sequence import check_input, check_state, initial_state, stack_steps, time_order
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


class RnnConfig(RecurrentConfig):
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

    initializer: Initializer = field(default_factory=xavier_normal)
    batch_first: bool = True
    reverse: bool = False
    clip: float | None = None
    hidden_activation: ActivationConfig = activation_field("tanh")

    def init(self, device=None, dtype=None) -> "Rnn":
        """Build the gate on ``device`` (float ``dtype``)."""
        (gate,) = init_gates(self, 1, device, dtype)
        return Rnn(
            gate, self.batch_first, self.reverse, self.clip, self.hidden_activation.init(device, dtype)
        )


class Rnn(RecurrentCell):
    """A unidirectional basic RNN.

    Args:
        gate: the GateController.
        batch_first: ``[batch, seq, features]`` layout.
        reverse: process the sequence from its last step.
        clip: hidden-state clamp, or None.
        hidden_activation: the non-linearity (tanh by default).
    """

    GATES = ("gate",)

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
        steps, w_h = project_gates(self.gates, x)
        hidden = initial_state("Rnn", "state.hidden", hidden, batch, size, x)
        outputs = [None] * seq
        for t in time_order(seq, reverse):
            hidden = self.hidden_activation(steps[t] + hidden @ w_h)
            if self.clip is not None:
                hidden = hidden.clamp(-self.clip, self.clip)
            outputs[t] = hidden
        return stack_steps(outputs, batch, size, x), hidden


class BiRnnConfig(RecurrentConfig):
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

    initializer: Initializer = field(default_factory=xavier_normal)
    batch_first: bool = True
    clip: float | None = None
    hidden_activation: ActivationConfig = activation_field("tanh")

    def init(self, device=None, dtype=None) -> "BiRnn":
        return BiRnn(*self.directions(RnnConfig, device, dtype), self.batch_first)


class BiRnn(Bidirectional):
    """A bidirectional basic RNN; the forward direction's record path is ``forward`` (Burn's
    field), reached in Python as :attr:`forward_rnn`.

    Args:
        forward: the forward-direction :class:`Rnn`.
        reverse: the reverse-direction :class:`Rnn`.
        batch_first: ``[batch, seq, features]`` layout.
    """

    # its own constructor, so that one called with sizes names BiRnnConfig (config_hint.py)
    def __init__(self, forward: Rnn, reverse: Rnn, batch_first: bool = True):
        super().__init__(forward, reverse, batch_first)

    @property
    def forward_rnn(self) -> Rnn:
        return self._forward

    def _split_state(self, state, batch: int) -> tuple[Tensor, Tensor]:
        if not isinstance(state, RnnState):
            raise TypeError(f"BiRnn: state must be an RnnState, got {type(state).__name__}")
        check_state("BiRnn", "state.hidden", state.hidden, (2, batch, self.d_hidden))
        return state.hidden[0], state.hidden[1]

    def _stack_states(self, forward: Tensor, reverse: Tensor) -> RnnState:
        return RnnState(stack([forward, reverse], 0))
