"""Recurrent layers (Burn's ``burn_nn::modules::rnn``): LSTM, GRU and the basic RNN, each with a
bidirectional form. Batch-first by default; the initial state is optional; every layer returns
the outputs of all steps and the final state (``Gru.forward`` returns the outputs only, as
Burn's; use ``Gru.forward_with_state``).

    from ember import nn

    lstm = nn.LstmConfig(d_input=8, d_hidden=16, bias=True).init()
    output, state = lstm(x)          # x [batch, seq, 8] -> [batch, seq, 16], LstmState(cell, hidden)
"""

from ember.nn.rnn.basic import BiRnn, BiRnnConfig, Rnn, RnnConfig, RnnState
from ember.nn.rnn.gate_controller import GateController
from ember.nn.rnn.gru import BiGru, BiGruConfig, Gru, GruConfig
from ember.nn.rnn.lstm import BiLstm, BiLstmConfig, Lstm, LstmConfig, LstmState

__all__ = [
    "BiGru",
    "BiGruConfig",
    "BiLstm",
    "BiLstmConfig",
    "BiRnn",
    "BiRnnConfig",
    "GateController",
    "Gru",
    "GruConfig",
    "Lstm",
    "LstmConfig",
    "LstmState",
    "Rnn",
    "RnnConfig",
    "RnnState",
]
