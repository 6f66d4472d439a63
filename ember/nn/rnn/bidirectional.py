"""The shared body of :class:`BiLstm`, :class:`BiGru` and :class:`BiRnn`: run one cell forward in
time and one reversed, concatenate their outputs feature-wise (forward half first) and stack
their final states along a new leading dim ``[2, batch, d_hidden]``.

Each bidirectional layer only says how its state splits into the two directions and how two
final states stack back (an ``LstmState`` pair, a tensor, an ``RnnState``). The forward cell
sits under the record path ``forward`` (Burn's field name); ``forward`` being the method, the
Python attribute is private and each layer exposes it under its own name.
"""

from __future__ import annotations

from typing import Any

from ember.nn.module import Module
from ember.nn.rnn.sequence import check_input
from ember.tensor.ops.movement import cat
from ember.tensor.tensor import Tensor

__all__ = ["Bidirectional"]


class Bidirectional(Module):
    """Base of the bidirectional recurrent layers.

    Args:
        forward: the forward-direction cell (with ``run(x, state, reverse)``, ``d_input``
            and ``d_hidden``).
        reverse: the reverse-direction cell, of the same sizes.
        batch_first: ``[batch, seq, features]`` layout (else seq first).
    """

    def __init__(self, forward: Module, reverse: Module, batch_first: bool = True):
        if forward.d_hidden != reverse.d_hidden or forward.d_input != reverse.d_input:
            raise ValueError(
                f"{type(self).__name__}: both directions must have the same d_input and d_hidden"
            )
        self._forward = forward
        self.reverse = reverse
        self.d_hidden = forward.d_hidden
        self.batch_first = bool(batch_first)

    def _items(self):
        yield "forward", self._forward
        yield from super()._items()

    def _split_state(self, state: Any, batch: int) -> tuple[Any, Any]:
        """The (forward, reverse) initial states held in ``state`` (checked)."""
        raise NotImplementedError

    def _stack_states(self, forward: Any, reverse: Any) -> Any:
        """The two final states as one ``[2, batch, d_hidden]`` state."""
        raise NotImplementedError

    def forward(self, x: Tensor, state: Any = None) -> tuple[Tensor, Any]:
        """Run both directions.

        Args:
            x: ``[batch, seq, d_input]`` (seq first when not batch_first).
            state: the initial states of the two directions stacked ``[2, batch, d_hidden]``
                (forward, reverse) in the layer's state type, zeros when None.

        Returns:
            ``(output, state)``: ``[batch, seq, 2·d_hidden]`` (forward half first) and the final
            states, stacked as the initial ones.
        """
        check_input(type(self).__name__, x, self._forward.d_input)
        if not self.batch_first:
            x = x.swap_dims(0, 1)
        fwd_state = rev_state = None
        if state is not None:
            fwd_state, rev_state = self._split_state(state, x.shape[0])
        out_f, final_f = self._forward.run(x, fwd_state, reverse=False)
        out_r, final_r = self.reverse.run(x, rev_state, reverse=True)
        out = cat([out_f, out_r], 2)
        return (out if self.batch_first else out.swap_dims(0, 1)), self._stack_states(final_f, final_r)

    def extra_repr(self) -> dict:
        return {"d_input": self._forward.d_input, "d_hidden": self.d_hidden, "batch_first": self.batch_first}
