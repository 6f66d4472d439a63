"""``RecurrentCell``: what the unidirectional recurrent layers (Rnn, Gru, Lstm) share.

Each names its gates, in record order, in ``GATES``; the sizes and the repr come from the first
one, since every gate of a cell has the same sizes and the same bias setting.
"""

from __future__ import annotations

from ember.nn.module import Module
from ember.nn.rnn.gate_controller import GateController

__all__ = ["RecurrentCell"]


class RecurrentCell(Module):
    """Base of the recurrent cells; a subclass lists its gate attributes in ``GATES``."""

    GATES: tuple[str, ...] = ()

    @property
    def gates(self) -> tuple[GateController, ...]:
        """The cell's gates, in ``GATES`` order."""
        return tuple(getattr(self, name) for name in self.GATES)

    @property
    def d_input(self) -> int:
        return self.gates[0].d_input

    def extra_repr(self) -> dict:
        return {
            "d_input": self.d_input,
            "d_hidden": self.d_hidden,
            "bias": self.gates[0].input_transform.bias is not None,
        }
