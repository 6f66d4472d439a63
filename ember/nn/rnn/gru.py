"""GRU and bidirectional GRU (Burn's ``Gru``, ``BiGru``).

One step, with ``σ`` the gate activation (sigmoid) and ``φ`` the hidden activation (tanh), and
``X_g = x W_gx + b_gx``, ``H_g = h W_gh + b_gh`` the two halves of gate ``g``::

    z = σ(X_update + H_update)      r = σ(X_reset + H_reset)
    n = φ(X_new + r·H_new)                     (reset_after, the default: PyTorch's GRU)
    n = φ(X_new + (r·h) W_new_h + b_new_h)     (reset_after=False: the paper's v3)
    h' = (1 − z)·n + z·h                       (clamped to ±clip when set)

Parameter paths are Burn's: ``update_gate``, ``reset_gate``, ``new_gate``, each with
``input_transform`` and ``hidden_transform``; a BiGru nests two under ``forward.``/``reverse.``.
As Burn, ``Gru.forward`` returns the outputs only (the final state is the last output);
:meth:`Gru.forward_with_state` returns both.
"""

from __future__ import annotations

from dataclasses import field

from ember.nn.activation import ActivationConfig
from ember.nn.init import Initializer
from ember.nn.module import Module
from ember.nn.rnn.bidirectional import Bidirectional
from ember.nn.rnn.cell import RecurrentCell
from ember.nn.rnn.gate_controller import GateController, gate_values, init_gates, xavier_normal
from ember.nn.rnn.recurrent_config import RecurrentConfig, activation_field
from ember.nn.rnn.sequence import (
    check_input,
    check_state,
    initial_state,
    project_steps,
    stack_steps,
    time_order,
)
from ember.tensor.creation import zeros
from ember.tensor.ops.movement import cat, stack
from ember.tensor.tensor import Tensor

__all__ = ["BiGru", "BiGruConfig", "Gru", "GruConfig"]


def _bias_sum(*linears):
    """The sum of the linears' biases (None when none has one)."""
    biases = [lin.bias.val() for lin in linears if lin.bias is not None]
    if not biases:
        return None
    return biases[0] if len(biases) == 1 else biases[0] + biases[1]


def _side_by_side(biases, size: int, like: Tensor):
    """Optional ``[size]`` biases concatenated, zeros for the missing ones (None if all are)."""
    if all(b is None for b in biases):
        return None
    return cat(
        [
            zeros(size, dtype=like.dtype, device=like.device) if b is None else b.to(like.dtype)
            for b in biases
        ],
        0,
    )


class GruConfig(RecurrentConfig):
    """Configuration of :class:`Gru`.

    Args:
        d_input: input features.
        d_hidden: hidden size.
        bias: biases in every gate's two linears.
        reset_after: apply the reset gate after the hidden weights (True, PyTorch's GRU and
            the paper's v1) or before them (False, v3).
        initializer: weights and biases (XavierNormal(gain=1)).
        gate_activation: of the update and reset gates (sigmoid).
        hidden_activation: of the new (candidate) gate (tanh).
        clip: clamp the hidden state to ``[−clip, clip]`` after each step, or None.
    """

    reset_after: bool = True
    initializer: Initializer = field(default_factory=xavier_normal)
    gate_activation: ActivationConfig = activation_field("sigmoid")
    hidden_activation: ActivationConfig = activation_field("tanh")
    clip: float | None = None

    def init(self, device=None, dtype=None) -> "Gru":
        """Build the three gates on ``device`` (float ``dtype``)."""
        return Gru(
            *init_gates(self, 3, device, dtype),
            self.reset_after,
            self.gate_activation.init(device, dtype),
            self.hidden_activation.init(device, dtype),
            self.clip,
        )


class Gru(RecurrentCell):
    """A unidirectional, batch-first GRU; see the module docstring for one step.

    Args:
        update_gate, reset_gate, new_gate: the three GateControllers.
        reset_after: where the reset gate applies.
        gate_activation: of the update and reset gates (sigmoid).
        hidden_activation: of the new gate (tanh).
        clip: hidden-state clamp, or None.
    """

    GATES = ("update_gate", "reset_gate", "new_gate")

    def __init__(
        self,
        update_gate: GateController,
        reset_gate: GateController,
        new_gate: GateController,
        reset_after: bool = True,
        gate_activation: Module | None = None,
        hidden_activation: Module | None = None,
        clip: float | None = None,
    ):
        self.update_gate = update_gate
        self.reset_gate = reset_gate
        self.new_gate = new_gate
        self.d_hidden = update_gate.d_output
        self.reset_after = bool(reset_after)
        self.gate_activation = gate_activation or ActivationConfig("sigmoid").init()
        self.hidden_activation = hidden_activation or ActivationConfig("tanh").init()
        self.clip = None if clip is None else float(clip)

    def forward(self, x: Tensor, state: Tensor | None = None) -> Tensor:
        """Run over the sequence (Burn's signature: the outputs only).

        Args:
            x: ``[batch, seq, d_input]``.
            state: the initial hidden state ``[batch, d_hidden]``, zeros when None.

        Returns:
            The hidden state of every step, ``[batch, seq, d_hidden]``.
        """
        return self.forward_with_state(x, state)[0]

    def forward_with_state(self, x: Tensor, state: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Like :meth:`forward`, also returning the final hidden state ``[batch, d_hidden]``
        (the initial state for an empty sequence)."""
        check_input("Gru", x, self.d_input)
        return self.run(x, state, reverse=False)

    def run(self, x: Tensor, state: Tensor | None, reverse: bool) -> tuple[Tensor, Tensor]:
        """The recurrence on ``x [batch, seq, d_input]`` in the given direction."""
        batch, seq, _ = x.shape
        size = self.d_hidden
        w_x = cat([g.input_transform.weight.val() for g in self.gates], 1)
        w_h = cat([g.hidden_transform.weight.val() for g in self.gates], 1).to(x.dtype)
        new_in, new_hidden = self.new_gate.input_transform, self.new_gate.hidden_transform
        # the hidden bias of the new gate stays inside the reset product when reset_after
        b_x = _side_by_side(
            [
                _bias_sum(self.update_gate.input_transform, self.update_gate.hidden_transform),
                _bias_sum(self.reset_gate.input_transform, self.reset_gate.hidden_transform),
                _bias_sum(new_in) if self.reset_after else _bias_sum(new_in, new_hidden),
            ],
            size,
            x,
        )
        b_new_h = _bias_sum(new_hidden) if self.reset_after else None
        steps = project_steps(x, w_x, b_x)
        hidden = initial_state("Gru", "state", state, batch, size, x)
        w_zr, w_new = (
            (w_h, None) if self.reset_after else (w_h.narrow(1, 0, 2 * size), w_h.narrow(1, 2 * size, size))
        )
        outputs = [None] * seq
        for t in time_order(seq, reverse):
            step = steps[t]
            h_part = hidden @ w_zr
            z, r = gate_values(
                self.gate_activation, step.narrow(1, 0, 2 * size) + h_part.narrow(1, 0, 2 * size), 2, size
            )
            if self.reset_after:
                h_new = h_part.narrow(1, 2 * size, size)
                if b_new_h is not None:
                    h_new = h_new + b_new_h.to(x.dtype)
                candidate = self.hidden_activation(step.narrow(1, 2 * size, size) + r * h_new)
            else:
                candidate = self.hidden_activation(step.narrow(1, 2 * size, size) + (r * hidden) @ w_new)
            hidden = (1.0 - z) * candidate + z * hidden
            if self.clip is not None:
                hidden = hidden.clamp(-self.clip, self.clip)
            outputs[t] = hidden
        return stack_steps(outputs, batch, size, x), hidden

    def extra_repr(self) -> dict:
        return {**super().extra_repr(), "reset_after": self.reset_after}


class BiGruConfig(RecurrentConfig):
    """Configuration of :class:`BiGru`.

    Args:
        d_input: input features.
        d_hidden: hidden size of each direction.
        bias: biases in the gates.
        reset_after: as :class:`GruConfig` (True).
        initializer: XavierNormal(gain=1).
        batch_first: ``[batch, seq, features]`` layout (else seq first).
        gate_activation: sigmoid.
        hidden_activation: tanh.
        clip: hidden-state clamp, or None.
    """

    reset_after: bool = True
    initializer: Initializer = field(default_factory=xavier_normal)
    batch_first: bool = True
    gate_activation: ActivationConfig = activation_field("sigmoid")
    hidden_activation: ActivationConfig = activation_field("tanh")
    clip: float | None = None

    def init(self, device=None, dtype=None) -> "BiGru":
        return BiGru(*self.directions(GruConfig, device, dtype), self.batch_first)


class BiGru(Bidirectional):
    """A bidirectional GRU; the forward direction's record path is ``forward`` (Burn's field),
    reached in Python as :attr:`forward_gru`.

    Args:
        forward: the forward-direction :class:`Gru`.
        reverse: the reverse-direction :class:`Gru`.
        batch_first: ``[batch, seq, features]`` layout.
    """

    # its own constructor, so that one called with sizes names BiGruConfig (config_hint.py)
    def __init__(self, forward: Gru, reverse: Gru, batch_first: bool = True):
        super().__init__(forward, reverse, batch_first)

    @property
    def forward_gru(self) -> Gru:
        return self._forward

    def _split_state(self, state, batch: int) -> tuple[Tensor, Tensor]:
        check_state("BiGru", "state", state, (2, batch, self.d_hidden))
        return state[0], state[1]

    def _stack_states(self, forward: Tensor, reverse: Tensor) -> Tensor:
        return stack([forward, reverse], 0)
