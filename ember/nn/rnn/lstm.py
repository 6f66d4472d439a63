"""LSTM and bidirectional LSTM (Burn's ``Lstm``, ``BiLstm`` and ``LstmState``).

One step, with ``σ`` the gate activation (sigmoid), ``φ`` the cell activation (tanh) and ``ψ``
the hidden activation (tanh), each gate ``g`` computing ``x W_gx + b_gx + h W_gh + b_gh``::

    i = σ(input_gate)    f = σ(forget_gate)  (or 1 − i with input_forget)
    o = σ(output_gate)   c̃ = φ(cell_gate)
    c' = f·c + i·c̃       (clamped to ±clip when set)
    h' = o·ψ(c')

Parameter paths are Burn's: ``input_gate.input_transform.weight``, ``forget_gate``,
``output_gate``, ``cell_gate``; a BiLstm nests two under ``forward.`` and ``reverse.``. The
input projection of every gate and time step is one GEMM, and each step one more for the
recurrence (Burn does eight small ones per step).
"""

from __future__ import annotations

from dataclasses import field

from ember.nn.activation import ActivationConfig
from ember.nn.init import Initializer
from ember.nn.module import Module
from ember.nn.rnn.bidirectional import Bidirectional
from ember.nn.rnn.cell import RecurrentCell
from ember.nn.rnn.gate_controller import (
    GateController,
    gate_values,
    init_gates,
    project_gates,
    xavier_normal,
)
from ember.nn.rnn.recurrent_config import RecurrentConfig, activation_field
from ember.nn.rnn.sequence import check_input, check_state, initial_state, stack_steps, time_order
from ember.tensor.creation import zeros
from ember.tensor.ops.movement import stack
from ember.tensor.tensor import Tensor

__all__ = ["BiLstm", "BiLstmConfig", "Lstm", "LstmConfig", "LstmState"]


class LstmState:
    """The state of an LSTM: ``cell`` and ``hidden``, each ``[batch, d_hidden]`` (``[2, batch,
    d_hidden]`` for a BiLstm).

    Args:
        cell: the cell state.
        hidden: the hidden state (same shape).
    """

    __slots__ = ("cell", "hidden")

    def __init__(self, cell: Tensor, hidden: Tensor):
        if not isinstance(cell, Tensor) or not isinstance(hidden, Tensor):
            raise TypeError("LstmState: cell and hidden must be Tensors")
        if cell.shape != hidden.shape:
            raise ValueError(
                f"LstmState: cell {list(cell.shape)} and hidden {list(hidden.shape)} must have one shape"
            )
        self.cell = cell
        self.hidden = hidden

    @classmethod
    def initial(cls, shape, device=None, dtype=None) -> "LstmState":
        """A zero state of ``shape``."""
        cell = zeros(tuple(shape), dtype=dtype, device=device)
        return cls(cell, cell)

    @property
    def shape(self) -> tuple:
        return self.cell.shape

    @property
    def device(self):
        return self.cell.device

    def unpack(self) -> tuple[Tensor, Tensor]:
        """``(cell, hidden)``."""
        return self.cell, self.hidden

    def map_state(self, fn) -> "LstmState":
        """A state with ``fn`` applied to both tensors."""
        return LstmState(fn(self.cell), fn(self.hidden))

    @staticmethod
    def stack(states, dim: int = 0) -> "LstmState":
        """Stack several states along a new ``dim`` (a BiLstm's ``[2, batch, d_hidden]``)."""
        states = list(states)
        return LstmState(stack([s.cell for s in states], dim), stack([s.hidden for s in states], dim))

    def chunk(self, n: int, dim: int = 0) -> list["LstmState"]:
        """Split into ``n`` states along ``dim`` (the inverse of :meth:`stack`, dim kept)."""
        return [LstmState(c, h) for c, h in zip(self.cell.chunk(n, dim), self.hidden.chunk(n, dim))]

    def __repr__(self) -> str:
        return f"LstmState(shape={list(self.shape)}, dtype={self.cell.dtype}, device={self.cell.device})"


class LstmConfig(RecurrentConfig):
    """Configuration of :class:`Lstm`.

    Args:
        d_input: input features.
        d_hidden: hidden (and cell) size.
        bias: biases in every gate's two linears.
        initializer: weights and biases (XavierNormal(gain=1), as Burn).
        batch_first: inputs and outputs are ``[batch, seq, features]`` (else seq first).
        reverse: run over the sequence from its end (outputs stay in time order).
        clip: clamp the cell state to ``[−clip, clip]`` after each step, or None.
        input_forget: couple the forget gate to the input gate, ``f = 1 − i``
            (``forget_gate`` is then unused).
        gate_activation: of the input, forget and output gates (sigmoid).
        cell_activation: of the candidate cell (tanh).
        hidden_activation: applied to the cell before the output gate (tanh).
    """

    initializer: Initializer = field(default_factory=xavier_normal)
    batch_first: bool = True
    reverse: bool = False
    clip: float | None = None
    input_forget: bool = False
    gate_activation: ActivationConfig = activation_field("sigmoid")
    cell_activation: ActivationConfig = activation_field("tanh")
    hidden_activation: ActivationConfig = activation_field("tanh")

    def init(self, device=None, dtype=None) -> "Lstm":
        """Build the four gates on ``device`` (float ``dtype``, float32 by default)."""
        return Lstm(
            *init_gates(self, 4, device, dtype),
            batch_first=self.batch_first,
            reverse=self.reverse,
            clip=self.clip,
            input_forget=self.input_forget,
            gate_activation=self.gate_activation.init(device, dtype),
            cell_activation=self.cell_activation.init(device, dtype),
            hidden_activation=self.hidden_activation.init(device, dtype),
        )


class Lstm(RecurrentCell):
    """A unidirectional LSTM over a whole sequence; see the module docstring for one step.

    Args:
        input_gate, forget_gate, output_gate, cell_gate: the four GateControllers.
        batch_first: ``[batch, seq, features]`` layout (else ``[seq, batch, features]``).
        reverse: process the sequence from its last step.
        clip: cell-state clamp, or None.
        input_forget: ``f = 1 − i``.
        gate_activation, cell_activation, hidden_activation: activation modules (sigmoid,
            tanh, tanh by default).
    """

    GATES = ("input_gate", "forget_gate", "output_gate", "cell_gate")

    def __init__(
        self,
        input_gate: GateController,
        forget_gate: GateController,
        output_gate: GateController,
        cell_gate: GateController,
        batch_first: bool = True,
        reverse: bool = False,
        clip: float | None = None,
        input_forget: bool = False,
        gate_activation: Module | None = None,
        cell_activation: Module | None = None,
        hidden_activation: Module | None = None,
    ):
        self.input_gate = input_gate
        self.forget_gate = forget_gate
        self.output_gate = output_gate
        self.cell_gate = cell_gate
        self.d_hidden = input_gate.d_output
        self.batch_first = bool(batch_first)
        self.reverse = bool(reverse)
        self.clip = None if clip is None else float(clip)
        self.input_forget = bool(input_forget)
        self.gate_activation = gate_activation or ActivationConfig("sigmoid").init()
        self.cell_activation = cell_activation or ActivationConfig("tanh").init()
        self.hidden_activation = hidden_activation or ActivationConfig("tanh").init()

    def forward(self, x: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        """Run over the sequence.

        Args:
            x: ``[batch, seq, d_input]`` (``[seq, batch, d_input]`` when not batch_first).
            state: the initial state (``[batch, d_hidden]`` each), zeros when None.

        Returns:
            ``(output, state)``: the hidden state of every step ``[batch, seq, d_hidden]``
            (seq first when not batch_first) and the final :class:`LstmState`.
        """
        check_input("Lstm", x, self.d_input)
        if not self.batch_first:
            x = x.swap_dims(0, 1)
        out, final = self.run(x, state, self.reverse)
        return (out if self.batch_first else out.swap_dims(0, 1)), final

    def run(self, x: Tensor, state: LstmState | None, reverse: bool) -> tuple[Tensor, LstmState]:
        """The recurrence on batch-first ``x`` in the given direction (Burn's ``forward_iter``)."""
        batch, seq, _ = x.shape
        size = self.d_hidden
        sigmoid_gates = (
            [self.input_gate, self.output_gate]
            if self.input_forget
            else [self.input_gate, self.forget_gate, self.output_gate]
        )
        gates = sigmoid_gates + [self.cell_gate]
        steps, w_h = project_gates(gates, x)
        if state is None:
            cell = hidden = zeros(batch, size, dtype=x.dtype, device=x.device)
        else:
            if not isinstance(state, LstmState):
                raise TypeError(f"Lstm: state must be an LstmState, got {type(state).__name__}")
            cell = initial_state("Lstm", "state.cell", state.cell, batch, size, x)
            hidden = state.hidden.to(x.dtype)
        n_sig = len(sigmoid_gates)
        outputs = [None] * seq
        for t in time_order(seq, reverse):
            pre = steps[t] + hidden @ w_h
            values = gate_values(self.gate_activation, pre.narrow(1, 0, n_sig * size), n_sig, size)
            candidate = self.cell_activation(pre.narrow(1, n_sig * size, size))
            if self.input_forget:
                i, o = values
                f = 1.0 - i
            else:
                i, f, o = values
            cell = f * cell + i * candidate
            if self.clip is not None:
                cell = cell.clamp(-self.clip, self.clip)
            hidden = o * self.hidden_activation(cell)
            outputs[t] = hidden
        return stack_steps(outputs, batch, size, x), LstmState(cell, hidden)


class BiLstmConfig(RecurrentConfig):
    """Configuration of :class:`BiLstm` (the fields of :class:`LstmConfig` but ``reverse``).

    Args:
        d_input: input features.
        d_hidden: hidden size of each direction.
        bias: biases in the gates.
        initializer: XavierNormal(gain=1).
        batch_first: ``[batch, seq, features]`` layout.
        clip: cell-state clamp, or None.
        input_forget: ``f = 1 − i``.
        gate_activation, cell_activation, hidden_activation: sigmoid, tanh, tanh.
    """

    initializer: Initializer = field(default_factory=xavier_normal)
    batch_first: bool = True
    clip: float | None = None
    input_forget: bool = False
    gate_activation: ActivationConfig = activation_field("sigmoid")
    cell_activation: ActivationConfig = activation_field("tanh")
    hidden_activation: ActivationConfig = activation_field("tanh")

    def init(self, device=None, dtype=None) -> "BiLstm":
        """Two LSTMs (batch-first inside; the BiLstm converts the layout)."""
        return BiLstm(*self.directions(LstmConfig, device, dtype), self.batch_first)


class BiLstm(Bidirectional):
    """A bidirectional LSTM: one LSTM forward in time, one backward, outputs concatenated.

    The forward-direction LSTM sits under the record path ``forward`` (Burn's field name); in
    Python it is :attr:`forward_lstm`, since ``forward`` is the method.

    Args:
        forward: the forward-direction :class:`Lstm`.
        reverse: the reverse-direction :class:`Lstm`.
        batch_first: ``[batch, seq, features]`` layout.
    """

    # its own constructor, so that one called with sizes names BiLstmConfig (config_hint.py)
    def __init__(self, forward: Lstm, reverse: Lstm, batch_first: bool = True):
        super().__init__(forward, reverse, batch_first)

    @property
    def forward_lstm(self) -> Lstm:
        return self._forward

    def _split_state(self, state, batch: int) -> tuple[LstmState, LstmState]:
        if not isinstance(state, LstmState):
            raise TypeError(f"BiLstm: state must be an LstmState, got {type(state).__name__}")
        check_state("BiLstm", "state.cell", state.cell, (2, batch, self.d_hidden))
        return LstmState(state.cell[0], state.hidden[0]), LstmState(state.cell[1], state.hidden[1])

    def _stack_states(self, forward: LstmState, reverse: LstmState) -> LstmState:
        return LstmState.stack([forward, reverse], 0)
