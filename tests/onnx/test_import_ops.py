"""Each op of ember.onnx's import table against ONNX Runtime on a one-node graph, on every
backend: inputs marked ``init`` are stored as initializers (host constants, or parameters when
float), the others are fed as graph inputs (data tensors)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper  # noqa: E402

import ember  # noqa: E402
import ember.onnx  # noqa: E402
from ember.onnx.import_ops import TABLE  # noqa: E402

R = np.random.default_rng(7)


def f32(*shape):
    return R.standard_normal(shape).astype(np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


def init(a):
    return ("init", a)


X = f32(2, 3, 4)
IMG = f32(2, 3, 7, 6)
IDS = np.array([[0, 2, -1], [1, 1, 0]], dtype=np.int64)

# id: (op, inputs, attrs, outputs, opset)
CASES = {
    "Add": ("Add", [X, f32(4)], {}, 1, 20),
    "Sub": ("Sub", [X, init(f32(3, 1))], {}, 1, 20),
    "Mul": ("Mul", [X, X], {}, 1, 20),
    "Div": ("Div", [X, f32(1, 4) + 3], {}, 1, 20),
    "Div-int": ("Div", [i64(7, -7, 7, -7, 6), i64(2, 2, -2, -2, 3)], {}, 1, 20),
    "Mod-int": ("Mod", [i64(7, -7, 7, -7), i64(3, 3, -3, -3)], {}, 1, 20),
    "Mod-fmod": ("Mod", [X, f32(4) + 3], {"fmod": 1}, 1, 20),
    "Pow": ("Pow", [np.abs(X) + 0.1, init(np.array(1.7, np.float32))], {}, 1, 20),
    "Sqrt": ("Sqrt", [np.abs(X)], {}, 1, 20),
    "Exp": ("Exp", [X], {}, 1, 20),
    "Log": ("Log", [np.abs(X) + 0.1], {}, 1, 20),
    "Erf": ("Erf", [X], {}, 1, 20),
    "Tanh": ("Tanh", [X], {}, 1, 20),
    "Sigmoid": ("Sigmoid", [X], {}, 1, 20),
    "Relu": ("Relu", [X], {}, 1, 20),
    "Neg": ("Neg", [X], {}, 1, 20),
    "Abs": ("Abs", [X], {}, 1, 20),
    "Reciprocal": ("Reciprocal", [X + 5], {}, 1, 20),
    "Floor": ("Floor", [X * 3], {}, 1, 20),
    "Ceil": ("Ceil", [X * 3], {}, 1, 20),
    "Round": ("Round", [np.array([0.5, 1.5, 2.5, -0.5, 1.2], np.float32)], {}, 1, 20),
    "Sign": ("Sign", [X], {}, 1, 20),
    "Sin": ("Sin", [X], {}, 1, 20),
    "Cos": ("Cos", [X], {}, 1, 20),
    "Gelu": ("Gelu", [X], {}, 1, 20),
    "Gelu-tanh": ("Gelu", [X], {"approximate": "tanh"}, 1, 20),
    "LeakyRelu": ("LeakyRelu", [X], {"alpha": 0.2}, 1, 20),
    "Elu": ("Elu", [X], {"alpha": 0.7}, 1, 20),
    "Softplus": ("Softplus", [X], {}, 1, 20),
    "HardSigmoid": ("HardSigmoid", [X], {"alpha": 0.3, "beta": 0.4}, 1, 20),
    "HardSwish": ("HardSwish", [X * 4], {}, 1, 20),
    "Mish": ("Mish", [X], {}, 1, 20),
    "Clip": ("Clip", [X, init(np.array(-0.5, np.float32)), init(np.array(0.7, np.float32))], {}, 1, 20),
    "Where": ("Where", [X > 0, X, f32(4)], {}, 1, 20),
    "Equal": ("Equal", [IDS, init(np.array(1, np.int64))], {}, 1, 20),
    "Less": ("Less", [X, f32(4)], {}, 1, 20),
    "LessOrEqual": ("LessOrEqual", [X, f32(4)], {}, 1, 20),
    "Greater": ("Greater", [X, f32(4)], {}, 1, 20),
    "GreaterOrEqual": ("GreaterOrEqual", [X, f32(4)], {}, 1, 20),
    "Not": ("Not", [X > 0], {}, 1, 20),
    "And": ("And", [X > 0, X < 0.5], {}, 1, 20),
    "Or": ("Or", [X > 0, X < -0.5], {}, 1, 20),
    "Xor": ("Xor", [X > 0, X < 0.5], {}, 1, 20),
    "IsNaN": ("IsNaN", [np.array([1.0, np.nan, np.inf], np.float32)], {}, 1, 20),
    "IsInf": ("IsInf", [np.array([1.0, -np.inf, np.inf], np.float32)], {"detect_positive": 0}, 1, 20),
    "Max": ("Max", [X, f32(4), f32(3, 1)], {}, 1, 20),
    "Min": ("Min", [X, f32(4)], {}, 1, 20),
    "Sum": ("Sum", [X, f32(4), X], {}, 1, 20),
    "Mean": ("Mean", [X, f32(4)], {}, 1, 20),
    "Cast": ("Cast", [X * 4], {"to": onnx.TensorProto.INT64}, 1, 20),
    "Cast-bool": ("Cast", [IDS], {"to": onnx.TensorProto.BOOL}, 1, 20),
    "CastLike": ("CastLike", [IDS, X], {}, 1, 20),
    "MatMul": ("MatMul", [X, init(f32(4, 5))], {}, 1, 20),
    "MatMul-1d": ("MatMul", [f32(3), X], {}, 1, 20),
    "Gemm": ("Gemm", [f32(3, 4), f32(5, 4), f32(5)], {"transB": 1, "alpha": 0.5, "beta": 2.0}, 1, 20),
    "Gemm-transA": ("Gemm", [f32(4, 3), f32(4, 5)], {"transA": 1}, 1, 20),
    "ReduceMean": ("ReduceMean", [X, init(i64(-1))], {}, 1, 20),
    "ReduceMean-attr": ("ReduceMean", [X], {"axes": [0, 2], "keepdims": 0}, 1, 17),
    "ReduceSum": ("ReduceSum", [X, init(i64(1))], {"keepdims": 0}, 1, 20),
    "ReduceSum-all": ("ReduceSum", [X], {}, 1, 20),
    "ReduceMax": ("ReduceMax", [X, init(i64(1, 2))], {}, 1, 20),
    "ReduceMin": ("ReduceMin", [X], {"keepdims": 0}, 1, 20),
    "ReduceProd": ("ReduceProd", [X, init(i64(0))], {}, 1, 20),
    "ReduceLogSumExp": ("ReduceLogSumExp", [X, init(i64(-1))], {}, 1, 20),
    "ArgMax": ("ArgMax", [X], {"axis": 1}, 1, 20),
    "ArgMin-last": (
        "ArgMin",
        [np.array([[1, 0, 3, 0]], np.float32)],
        {"axis": 1, "select_last_index": 1},
        1,
        20,
    ),
    "CumSum": ("CumSum", [X, init(np.array(2, np.int64))], {"exclusive": 1, "reverse": 1}, 1, 20),
    "Softmax": ("Softmax", [X], {"axis": 1}, 1, 20),
    "LogSoftmax": ("LogSoftmax", [X], {}, 1, 20),
    "LayerNormalization": ("LayerNormalization", [X, f32(4), f32(4)], {"epsilon": 1e-3}, 1, 20),
    "LayerNormalization-axis": ("LayerNormalization", [X, f32(3, 4)], {"axis": 1}, 3, 20),
    "BatchNormalization": ("BatchNormalization", [IMG, f32(3), f32(3), f32(3), np.abs(f32(3))], {}, 1, 20),
    "BatchNormalization-v14": (
        "BatchNormalization",
        [IMG, f32(3), f32(3), f32(3), np.abs(f32(3))],
        {},
        1,
        14,
    ),
    "Conv": ("Conv", [IMG, f32(4, 3, 3, 2), f32(4)], {"pads": [1, 0, 1, 1], "strides": [2, 1]}, 1, 20),
    "Conv-same-group": ("Conv", [IMG, f32(6, 1, 3, 3)], {"auto_pad": "SAME_UPPER", "group": 3}, 1, 20),
    "Conv-lower": ("Conv", [IMG, f32(2, 3, 2, 3)], {"auto_pad": "SAME_LOWER", "strides": [2, 2]}, 1, 20),
    "Conv-dilated": ("Conv", [IMG, f32(2, 3, 2, 3)], {"dilations": [2, 1], "pads": [0, 1, 2, 1]}, 1, 20),
    "Conv-1d": ("Conv", [f32(2, 3, 9), f32(4, 3, 3)], {"strides": [2]}, 1, 20),
    "MaxPool": ("MaxPool", [IMG], {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]}, 1, 20),
    "MaxPool-ceil": ("MaxPool", [IMG], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, 1, 20),
    "AveragePool": (
        "AveragePool",
        [IMG],
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        1,
        20,
    ),
    "AveragePool-incl": (
        "AveragePool",
        [IMG],
        {
            "kernel_shape": [3, 2],
            "strides": [2, 2],
            "pads": [1, 0, 1, 1],
            "count_include_pad": 1,
            "ceil_mode": 1,
        },
        1,
        20,
    ),
    "AveragePool-v11": ("AveragePool", [IMG], {"kernel_shape": [2, 3], "pads": [0, 1, 1, 1]}, 1, 17),
    "GlobalAveragePool": ("GlobalAveragePool", [IMG], {}, 1, 20),
    "GlobalMaxPool": ("GlobalMaxPool", [IMG], {}, 1, 20),
    "Shape": ("Shape", [X], {"start": 1}, 1, 20),
    "Size": ("Size", [X], {}, 1, 20),
    "Reshape": ("Reshape", [X, init(i64(0, -1))], {}, 1, 20),
    "Reshape-data-shape": ("Reshape", [X, i64(4, 6)], {}, 1, 20),
    "Flatten": ("Flatten", [X], {"axis": 2}, 1, 20),
    "Transpose": ("Transpose", [X], {"perm": [1, 2, 0]}, 1, 20),
    "Transpose-default": ("Transpose", [X], {}, 1, 20),
    "Unsqueeze": ("Unsqueeze", [X, init(i64(0, -1))], {}, 1, 20),
    "Squeeze": ("Squeeze", [f32(1, 3, 1), init(i64(-1))], {}, 1, 20),
    "Squeeze-all": ("Squeeze", [f32(1, 3, 1)], {}, 1, 20),
    "Expand": ("Expand", [f32(3, 1), init(i64(2, 1, 4))], {}, 1, 20),
    "Tile": ("Tile", [X, init(i64(1, 2, 1))], {}, 1, 20),
    "Concat": ("Concat", [X, f32(2, 1, 4), init(f32(2, 2, 4))], {"axis": -2}, 1, 20),
    "Split": ("Split", [X, init(i64(1, 3))], {"axis": 2}, 2, 20),
    "Split-even": ("Split", [f32(2, 7)], {"axis": 1, "num_outputs": 3}, 3, 20),
    "Slice": ("Slice", [X, init(i64(1, -3)), init(i64(100, 4)), init(i64(2, 1)), init(i64(2, 1))], {}, 1, 20),
    "Slice-reverse": (
        "Slice",
        [X, init(i64(-1)), init(i64(-(2**63) + 1)), init(i64(2)), init(i64(-2))],
        {},
        1,
        20,
    ),
    "Pad": ("Pad", [X, init(i64(0, 1, 2, 0, 0, 1)), init(np.array(1.5, np.float32))], {}, 1, 20),
    "Gather": ("Gather", [f32(3, 5), IDS], {"axis": 0}, 1, 20),
    "Gather-scalar": ("Gather", [X, init(np.array(-1, np.int64))], {"axis": 1}, 1, 20),
    "GatherElements": ("GatherElements", [f32(2, 3), IDS], {"axis": 1}, 1, 20),
    "ScatterElements": (
        "ScatterElements",
        [f32(2, 3), init(i64(2, 0, -2, 1, 2, 0).reshape(2, 3)), f32(2, 3)],
        {"axis": 1},
        1,
        18,
    ),
    "ScatterElements-add": (
        "ScatterElements",
        [f32(2, 3), IDS, f32(2, 3)],
        {"axis": 1, "reduction": "add"},
        1,
        18,
    ),
    "Trilu": ("Trilu", [f32(2, 4, 5), init(np.array(1, np.int64))], {"upper": 0}, 1, 20),
    "Identity": ("Identity", [X], {}, 1, 20),
    "Dropout": ("Dropout", [X, init(np.array(0.3, np.float32))], {}, 1, 20),
    "ConstantOfShape": (
        "ConstantOfShape",
        [init(i64(2, 3))],
        {"value": numpy_helper.from_array(np.array([7], np.int64))},
        1,
        20,
    ),
    "Range": (
        "Range",
        [init(np.array(1.0, np.float32)), init(np.array(4.0, np.float32)), init(np.array(0.7, np.float32))],
        {},
        1,
        20,
    ),
    "Constant": ("Constant", [], {"value_floats": [1.0, 2.5]}, 1, 20),
    # opsets 11 and 12: the forms that differ (2-D softmax, axes and split as attributes)
    "Softmax-v11": ("Softmax", [X], {}, 1, 11),
    "LogSoftmax-v11": ("LogSoftmax", [X], {"axis": 2}, 1, 11),
    "Squeeze-v11": ("Squeeze", [f32(1, 3, 1)], {"axes": [0]}, 1, 11),
    "Unsqueeze-v11": ("Unsqueeze", [X], {"axes": [1, -1]}, 1, 11),
    "Split-v11": ("Split", [X], {"axis": 2, "split": [3, 1]}, 2, 11),
    "ReduceSum-v11": ("ReduceSum", [X], {"axes": [1]}, 1, 11),
    "Dropout-v10": ("Dropout", [X], {"ratio": 0.2}, 1, 11),
    "Dropout-v12": ("Dropout", [X, init(np.array(0.3, np.float32))], {}, 1, 12),
    "Clip-v11": ("Clip", [X, init(np.array(-0.5, np.float32))], {}, 1, 11),
    "Gemm-v11": ("Gemm", [f32(3, 4), f32(4, 5), f32(3, 1)], {"alpha": 2.0}, 1, 11),
    "Reshape-v5": ("Reshape", [X, init(i64(4, -1))], {}, 1, 11),
    "Pow-v7": ("Pow", [np.abs(X) + 0.1, f32(4)], {}, 1, 11),
    "Max-v8": ("Max", [X, f32(4)], {}, 1, 11),
    "Cast-v9": ("Cast", [X * 4], {"to": onnx.TensorProto.INT32}, 1, 11),
    "Slice-v11": ("Slice", [X, init(i64(1)), init(i64(3)), init(i64(2))], {}, 1, 11),
    "Gather-v11": ("Gather", [f32(3, 5), IDS], {"axis": 0}, 1, 11),
    "ArgMax-v11": ("ArgMax", [X], {"axis": -1, "keepdims": 0}, 1, 11),
    "MaxPool-v11": ("MaxPool", [IMG], {"kernel_shape": [2, 2], "strides": [2, 2]}, 1, 11),
    "Expand-v8": ("Expand", [f32(3, 1), init(i64(2, 3, 4))], {}, 1, 11),
    "Mod-v10": ("Mod", [i64(7, -7), i64(3, 3)], {}, 1, 11),
    "Shape-v1": ("Shape", [X], {}, 1, 11),
    "Transpose-v1": ("Transpose", [X], {"perm": [2, 0, 1]}, 1, 11),
    "Sqrt-v6": ("Sqrt", [np.abs(X)], {}, 1, 11),
    "Erf-v9": ("Erf", [X], {}, 1, 11),
    # recurrences (more cases, layout 1 and sequence lengths in test_import_rnn.py)
    "LSTM": (
        "LSTM",
        [f32(5, 3, 4), init(f32(1, 24, 4)), init(f32(1, 24, 6)), init(f32(1, 48))],
        {"hidden_size": 6},
        3,
        20,
    ),
    "GRU": (
        "GRU",
        [f32(5, 3, 4), init(f32(2, 18, 4)), init(f32(2, 18, 6))],
        {"hidden_size": 6, "direction": "bidirectional", "linear_before_reset": 1},
        2,
        20,
    ),
    "RNN": (
        "RNN",
        [f32(5, 3, 4), init(f32(1, 6, 4)), init(f32(1, 6, 6)), init(f32(1, 12))],
        {"hidden_size": 6, "direction": "reverse"},
        2,
        11,
    ),
}


def _model(op, inputs, attrs, n_out, opset):
    graph_inputs, initializers, names, feeds = [], [], [], {}
    for i, item in enumerate(inputs):
        name = f"in{i}"
        names.append(name)
        if isinstance(item, tuple):
            initializers.append(numpy_helper.from_array(item[1], name))
        else:
            elem = helper.np_dtype_to_tensor_dtype(item.dtype)
            graph_inputs.append(helper.make_tensor_value_info(name, elem, item.shape))
            feeds[name] = item
    outs = [f"out{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, name="the_node", **attrs)
    graph = helper.make_graph(
        [node], "g", graph_inputs, [onnx.ValueInfoProto(name=o) for o in outs], initializer=initializers
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    # the outputs' types, as ONNX's shape inference finds them (ONNX Runtime wants them)
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    for out in model.graph.output:
        out.CopyFrom(inferred[out.name])
    return model, feeds


@pytest.mark.parametrize("case", list(CASES))
def test_op_matches_onnxruntime(case, device, tmp_path):
    model, feeds = _model(*CASES[case])
    path = tmp_path / f"{case}.onnx"
    path.write_bytes(model.SerializeToString())
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, feeds
    )
    module = ember.onnx.load(path, device=device)
    got = module(**{k: ember.tensor(v, device=device) for k, v in feeds.items()})
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape, case
        if e.dtype.kind == "f":
            assert g.dtype.is_float
            np.testing.assert_allclose(g.numpy(), e, rtol=1e-5, atol=1e-6, err_msg=case)
        else:
            np.testing.assert_array_equal(g.numpy(), e.astype(g.numpy().dtype), err_msg=case)
            assert g.numpy().dtype.kind == e.dtype.kind


def test_every_table_op_is_tested_here():
    tested = {c[0] for c in CASES.values()}
    assert set(TABLE) - tested == set()
