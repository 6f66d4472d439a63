"""The one table of ONNX ops ember imports: (op type, range of op versions) -> implementation.

An ONNX op's meaning is fixed by its *version* (the ``since_version`` of its schema in the
file's opset), so an entry lists the versions its function implements; ``ember.onnx.load``
resolves every node's version and refuses the file, listing every op it lacks, before
building anything. ``static`` names the inputs the function needs as host int64 arrays
(shapes, axes, bounds): the graph reads them on the host, not as data tensors.
``frozen`` names float inputs that are statistics, not weights: an initializer feeding them
becomes a parameter that does not require grad. ``unsupported`` tells, from the attributes
alone, a setting of the op that ember does not implement (a ``Pad`` mode), so that the file
is refused at load with the missing ops rather than when that node runs.

Only the default domain (``ai.onnx``) is implemented, for opsets ``MIN_OPSET``..``MAX_OPSET``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ember.onnx import import_math as m
from ember.onnx import import_nn as nn
from ember.onnx import import_rnn as rnn
from ember.onnx import import_shape as s

__all__ = ["MAX_OPSET", "MIN_OPSET", "TABLE", "OpSpec", "lookup"]

MIN_OPSET = 11
MAX_OPSET = 22


@dataclass(frozen=True)
class OpSpec:
    fn: Callable
    static: tuple = ()
    frozen: tuple = ()
    unsupported: Callable | None = None  # node -> a description of what it lacks, or None


def _e(fn, static=(), frozen=(), unsupported=None) -> OpSpec:
    return OpSpec(fn, tuple(static), tuple(frozen), unsupported)


# op type -> [(first version, last version, spec)]; versions are schema since_versions
TABLE: dict[str, list] = {
    # element-wise
    "Add": [(7, 14, _e(m.add))],
    "Sub": [(7, 14, _e(m.sub))],
    "Mul": [(7, 14, _e(m.mul))],
    "Div": [(7, 14, _e(m.div))],
    "Mod": [(10, 13, _e(m.mod))],
    "Pow": [(7, 15, _e(m.pow_))],
    "Sqrt": [(6, 13, _e(m.sqrt))],
    "Exp": [(6, 13, _e(m.exp))],
    "Log": [(6, 13, _e(m.log))],
    "Erf": [(9, 13, _e(m.erf))],
    "Tanh": [(6, 13, _e(m.tanh))],
    "Sigmoid": [(6, 13, _e(m.sigmoid))],
    "Relu": [(6, 14, _e(m.relu))],
    "Neg": [(6, 13, _e(m.neg))],
    "Abs": [(6, 13, _e(m.abs_))],
    "Reciprocal": [(6, 13, _e(m.reciprocal))],
    "Floor": [(6, 13, _e(m.floor))],
    "Ceil": [(6, 13, _e(m.ceil))],
    "Round": [(11, 22, _e(m.round_))],
    "Sign": [(9, 13, _e(m.sign))],
    "Sin": [(7, 22, _e(m.sin))],
    "Cos": [(7, 22, _e(m.cos))],
    "Gelu": [(20, 20, _e(m.gelu, unsupported=m.gelu_unsupported))],
    "LeakyRelu": [(6, 16, _e(m.leaky_relu))],
    "Elu": [(6, 22, _e(m.elu))],
    "Softplus": [(1, 22, _e(m.softplus))],
    "HardSigmoid": [(6, 22, _e(m.hard_sigmoid))],
    "HardSwish": [(14, 22, _e(m.hard_swish))],
    "Mish": [(18, 22, _e(m.mish))],
    "Clip": [(11, 13, _e(m.clip, static=(1, 2)))],
    "Where": [(9, 16, _e(m.where))],
    "Equal": [(11, 19, _e(m.equal))],
    "Less": [(9, 13, _e(m.less))],
    "LessOrEqual": [(12, 16, _e(m.less_equal))],
    "Greater": [(9, 13, _e(m.greater))],
    "GreaterOrEqual": [(12, 16, _e(m.greater_equal))],
    "Not": [(1, 1, _e(m.not_))],
    "And": [(7, 7, _e(m.and_))],
    "Or": [(7, 7, _e(m.or_))],
    "Xor": [(7, 7, _e(m.xor))],
    "IsNaN": [(9, 20, _e(m.is_nan))],
    "IsInf": [(10, 20, _e(m.is_inf))],
    "Max": [(8, 13, _e(m.max_))],
    "Min": [(8, 13, _e(m.min_))],
    "Sum": [(8, 13, _e(m.sum_))],
    "Mean": [(8, 13, _e(m.mean))],
    "Cast": [(9, 21, _e(s.cast, unsupported=s.cast_unsupported))],
    "CastLike": [(15, 21, _e(s.cast_like))],
    # matrices, reductions, normalisation
    "MatMul": [(9, 13, _e(m.matmul))],
    "Gemm": [(11, 13, _e(m.gemm))],
    "ReduceMean": [(11, 18, _e(m.reduce_mean, static=(1,)))],
    "ReduceSum": [(11, 13, _e(m.reduce_sum, static=(1,)))],
    "ReduceMax": [(11, 20, _e(m.reduce_max, static=(1,)))],
    "ReduceMin": [(11, 20, _e(m.reduce_min, static=(1,)))],
    "ReduceProd": [(11, 18, _e(m.reduce_prod, static=(1,)))],
    "ReduceLogSumExp": [(11, 18, _e(m.reduce_log_sum_exp, static=(1,)))],
    "ArgMax": [(11, 13, _e(m.arg_max))],
    "ArgMin": [(11, 13, _e(m.arg_min))],
    "CumSum": [(11, 14, _e(m.cum_sum, static=(1,)))],
    "Softmax": [(1, 11, _e(m.softmax_2d)), (13, 13, _e(m.softmax))],
    "LogSoftmax": [(1, 11, _e(m.log_softmax_2d)), (13, 13, _e(m.log_softmax))],
    "LayerNormalization": [(17, 17, _e(m.layer_normalization))],
    "BatchNormalization": [
        (9, 15, _e(m.batch_normalization, frozen=(3, 4), unsupported=m.batch_norm_unsupported))
    ],
    # convolution and pooling
    "Conv": [(11, 22, _e(nn.conv, unsupported=nn.pads_unsupported))],
    "MaxPool": [(11, 22, _e(nn.max_pool, unsupported=nn.max_pool_unsupported))],
    "AveragePool": [(11, 22, _e(nn.average_pool, unsupported=nn.pads_unsupported))],
    "GlobalAveragePool": [(1, 22, _e(nn.global_average_pool))],
    "GlobalMaxPool": [(1, 22, _e(nn.global_max_pool))],
    # recurrences (versions 7, 14: layout, 22: more dtypes); sequence_lens is read on the host
    "LSTM": [(7, 22, _e(rnn.lstm, static=(4,), unsupported=rnn.rnn_unsupported))],
    "GRU": [(7, 22, _e(rnn.gru, static=(4,), unsupported=rnn.rnn_unsupported))],
    "RNN": [(7, 22, _e(rnn.rnn, static=(4,), unsupported=rnn.rnn_unsupported))],
    # shapes, movement, indexing, values
    "Shape": [(1, 21, _e(s.shape))],
    "Size": [(1, 21, _e(s.size))],
    "Reshape": [(5, 21, _e(s.reshape, static=(1,)))],
    "Flatten": [(11, 21, _e(s.flatten))],
    "Transpose": [(1, 21, _e(s.transpose))],
    "Unsqueeze": [(11, 21, _e(s.unsqueeze, static=(1,)))],
    "Squeeze": [(11, 21, _e(s.squeeze, static=(1,)))],
    "Expand": [(8, 13, _e(s.expand, static=(1,)))],
    "Tile": [(6, 13, _e(s.tile, static=(1,)))],
    "Concat": [(11, 13, _e(s.concat))],
    "Split": [(11, 18, _e(s.split, static=(1,)))],
    "Slice": [(11, 13, _e(s.slice_, static=(1, 2, 3, 4)))],
    "Pad": [(11, 21, _e(s.pad, static=(1, 2, 3), unsupported=s.pad_unsupported))],
    "Gather": [(11, 13, _e(s.gather))],
    "GatherElements": [(11, 13, _e(s.gather_elements))],
    "ScatterElements": [(11, 18, _e(s.scatter_elements, unsupported=s.scatter_unsupported))],
    "Trilu": [(14, 14, _e(s.trilu, static=(1,)))],
    "Identity": [(1, 21, _e(s.identity))],
    "Dropout": [(10, 22, _e(s.dropout, static=(1, 2)))],
    "Constant": [(11, 21, _e(s.constant, unsupported=s.constant_unsupported))],
    "ConstantOfShape": [(9, 21, _e(s.constant_of_shape, static=(0,)))],
    "Range": [(11, 11, _e(s.range_, static=(0, 1, 2)))],
}


def lookup(op_type: str, domain: str, version: int) -> OpSpec | None:
    """The implementation of ``op_type`` at schema version ``version``, or None."""
    if domain not in ("", "ai.onnx"):
        return None
    for first, last, spec in TABLE.get(op_type, ()):
        if first <= version <= last:
            return spec
    return None
