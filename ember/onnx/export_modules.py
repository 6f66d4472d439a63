"""Modules exported whole, as one ONNX op: recurrent layers as ``LSTM`` / ``GRU`` / ``RNN``.

Traced op by op, a recurrent layer unrolls into one set of ops per time step, so its sequence
length is fixed in the graph. ONNX has the recurrences as ops: an ``Lstm``, ``Gru`` or ``Rnn`` whose
configuration the op expresses (its default activations, no clip) is exported as that op, its
weights laid out from the parameters by graph nodes (the initializers stay the parameters),
and its sequence axis can be dynamic. Any other configuration is traced op by op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ember.nn.activation import Sigmoid, Tanh
from ember.nn.rnn.basic import Rnn
from ember.nn.rnn.gru import Gru
from ember.nn.rnn.lstm import Lstm


class WholeModule(NamedTuple):
    """How a module is exported whole: its tensor inputs from the forward's arguments (None
    for one not given), its tensor results, and the emitter of its ONNX nodes."""

    inputs: Callable
    outputs: Callable
    emit: Callable


def whole_module_export(module) -> WholeModule | None:
    """The whole-module export of ``module``, or None to trace it op by op."""
    if (
        type(module) is Lstm
        and _default_activations(module, "gate", "cell", "hidden")
        and module.clip is None
    ):
        return _LSTM
    if type(module) is Gru and _default_activations(module, "gate", "hidden") and module.clip is None:
        return _GRU
    if type(module) is Rnn and _default_activations(module, "hidden") and module.clip is None:
        return _RNN
    return None


def _default_activations(module, *kinds) -> bool:
    wanted = {"gate": Sigmoid, "cell": Tanh, "hidden": Tanh}
    return all(type(getattr(module, f"{kind}_activation")) is wanted[kind] for kind in kinds)


def _gate_matrices(g, params: dict, gates: list[str], side: str) -> str:
    """``[1, G·H, d]``: each gate's ``side`` weight ``[d, H]`` transposed, stacked in ``gates`` order."""
    parts = [
        g.node("Transpose", [g.value(params[f"{gate}.{side}_transform.weight"])], perm=[1, 0])
        for gate in gates
    ]
    return g.node("Unsqueeze", [g.node("Concat", parts, axis=0), g.const(np.array([0]))])


def _gate_biases(g, params: dict, gates: list[str], size: int, dtype) -> str:
    """``[1, 2·G·H]``: the input biases of ``gates`` then their hidden biases (zeros where absent)."""
    parts = []
    for side in ("input", "hidden"):
        for gate in gates:
            ref = params.get(f"{gate}.{side}_transform.bias")
            parts.append(g.const(np.zeros(size, dtype=dtype)) if ref is None else g.value(ref))
    return g.node("Unsqueeze", [g.node("Concat", parts, axis=0), g.const(np.array([0]))])


def _state(g, ref) -> str:
    """An initial state ``[batch, H]`` as ONNX's ``[1, batch, H]``, or ``""`` for zeros."""
    return "" if ref is None else g.node("Unsqueeze", [g.value(ref), g.const(np.array([0]))])


def _lstm_inputs(x, state=None):
    return (x, None, None) if state is None else (x, state.hidden, state.cell)


def _lstm_outputs(result):
    out, state = result
    return (out, state.cell, state.hidden)


def _seq_major(g, x: str, batch_first: bool) -> str:
    """The input as ONNX's recurrences take it (layout 0, which ONNX Runtime runs): ``[seq, batch, d]``."""
    return g.node("Transpose", [x], perm=[1, 0, 2]) if batch_first else x


def _outputs_from(g, y: str, batch_first: bool) -> str:
    """ONNX's ``Y [seq, 1, batch, H]`` as the module's output (batch first when it is)."""
    out = g.node("Squeeze", [y, g.const(np.array([1]))])
    return g.node("Transpose", [out], perm=[1, 0, 2]) if batch_first else out


def _emit_lstm(g, module, x, h0, c0, params):
    size = module.d_hidden
    gates = ["input_gate", "output_gate", "forget_gate", "cell_gate"]  # ONNX's i, o, f, c
    y, y_h, y_c = g.node(
        "LSTM",
        [
            _seq_major(g, g.value(x), module.batch_first),
            _gate_matrices(g, params, gates, "input"),
            _gate_matrices(g, params, gates, "hidden"),
            _gate_biases(g, params, gates, size, g.dtype(x)),
            "",
            _state(g, h0),
            _state(g, c0),
        ],
        outputs=3,
        hidden_size=size,
        direction="reverse" if module.reverse else "forward",
        input_forget=int(module.input_forget),
    )
    first = g.const(np.array([0]))  # the final states are [1, batch, H]
    return [
        _outputs_from(g, y, module.batch_first),
        g.node("Squeeze", [y_c, first]),
        g.node("Squeeze", [y_h, first]),
    ]


def _gru_inputs(x, state=None):
    return (x, state)


def _gru_outputs(result):
    return (result,)


def _emit_gru(g, module, x, h0, params):
    size = module.d_hidden
    gates = ["update_gate", "reset_gate", "new_gate"]  # ONNX's z, r, h
    y, _ = g.node(
        "GRU",
        [
            _seq_major(g, g.value(x), True),  # ember's Gru is batch first
            _gate_matrices(g, params, gates, "input"),
            _gate_matrices(g, params, gates, "hidden"),
            _gate_biases(g, params, gates, size, g.dtype(x)),
            "",
            _state(g, h0),
        ],
        outputs=2,
        hidden_size=size,
        linear_before_reset=int(module.reset_after),
    )
    return [_outputs_from(g, y, True)]


def _rnn_inputs(x, state=None):
    return (x, None if state is None else state.hidden)


def _rnn_outputs(result):
    out, state = result
    return (out, state.hidden)


def _emit_rnn(g, module, x, h0, params):
    y, y_h = g.node(
        "RNN",
        [
            _seq_major(g, g.value(x), module.batch_first),
            _gate_matrices(g, params, ["gate"], "input"),
            _gate_matrices(g, params, ["gate"], "hidden"),
            _gate_biases(g, params, ["gate"], module.d_hidden, g.dtype(x)),
            "",
            _state(g, h0),
        ],
        outputs=2,
        hidden_size=module.d_hidden,
        direction="reverse" if module.reverse else "forward",
    )
    return [_outputs_from(g, y, module.batch_first), g.node("Squeeze", [y_h, g.const(np.array([0]))])]


_LSTM = WholeModule(_lstm_inputs, _lstm_outputs, _emit_lstm)
_RNN = WholeModule(_rnn_inputs, _rnn_outputs, _emit_rnn)
_GRU = WholeModule(_gru_inputs, _gru_outputs, _emit_gru)


def emit_module(g, module, call) -> list:
    """Emit a module exported whole (a recorded call ``module``)."""
    _, inputs, params = call.args
    return whole_module_export(module).emit(g, module, *inputs, params)
