"""An imported OnnxModule is an ordinary ember module: parameters under the file's initializer
names (``::`` and ``/`` included), records saved and loaded, moved with ``to``, copied with
``valid``; integer initializers are constants, not parameters."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ember  # noqa: E402
import ember.onnx  # noqa: E402

W = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
B = np.array([0.5, -1.0, 0.25, 2.0], dtype=np.float32)


def _model(tmp_path):
    inits = [
        numpy_helper.from_array(W, "onnx::MatMul_7"),
        numpy_helper.from_array(B, "/layer/bias"),
        numpy_helper.from_array(np.array([-1, 2], dtype=np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "onnx::MatMul_7"], ["h"]),
        helper.make_node("Add", ["h", "/layer/bias"], ["a"]),
        helper.make_node("Reshape", ["a", "shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["m", 2])],
        initializer=inits,
    )
    path = tmp_path / "m.onnx"
    path.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    return path


def _expected(x):
    return (x @ W + B).reshape(-1, 2)


X = np.array([[1.0, -2.0, 0.5]], dtype=np.float32)


def test_parameters_are_the_float_initializers(tmp_path):
    module = ember.onnx.load(_model(tmp_path))
    params = dict(module.named_parameters())
    assert list(params) == ["onnx::MatMul_7", "/layer/bias"]  # "shape" (int64) is a constant
    assert all(p.is_require_grad() for p in params.values())
    np.testing.assert_array_equal(params["onnx::MatMul_7"].numpy(), W)
    np.testing.assert_allclose(module(ember.tensor(X)).numpy(), _expected(X), rtol=1e-6)
    assert [n.op_type for n in module.nodes] == ["MatMul", "Add", "Reshape"]


def test_records_round_trip(tmp_path):
    module = ember.onnx.load(_model(tmp_path))
    module.save_file(tmp_path / "weights")
    other = ember.onnx.load(_model(tmp_path)).map_parameters(lambda path, t: t * 0)
    assert not np.allclose(other(ember.tensor(X)).numpy(), _expected(X))
    other.load_file(tmp_path / "weights")
    np.testing.assert_allclose(other(ember.tensor(X)).numpy(), _expected(X), rtol=1e-6)


def test_to_valid_and_device_mismatch(tmp_path):
    module = ember.onnx.load(_model(tmp_path), device="cpu")
    moved = module.clone().to("reference")
    assert moved.devices() == [ember.tensor(0.0, device="reference").device]
    got = moved(ember.tensor(X, device="reference"))
    assert got.device == moved.devices()[0]
    np.testing.assert_allclose(got.numpy(), _expected(X), rtol=1e-6)
    frozen = module.valid()
    assert not any(p.is_require_grad() for p in frozen.parameters())
    assert not frozen(ember.tensor(X)).is_require_grad()
    with pytest.raises(ValueError, match=r"input 'x' is on cpu but the parameters are on reference"):
        moved(ember.tensor(X, device="cpu"))


def _constant_graph(tmp_path, shape_values):
    """y = reshape(x * k, shape + 0): k a Constant node, shape an int initializer."""
    k = numpy_helper.from_array(np.array(2.0, np.float32), "k_value")
    nodes = [
        helper.make_node("Constant", [], ["k"], name="k", value=k),
        helper.make_node("Add", ["shape", "zero"], ["shape2"], name="shape_plus_zero"),
        helper.make_node("Mul", ["x", "k"], ["a"], name="times_k"),
        helper.make_node("Reshape", ["a", "shape2"], ["y"], name="reshape"),
    ]
    inits = [
        numpy_helper.from_array(np.array(shape_values, np.int64), "shape"),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
        initializer=inits,
    )
    path = tmp_path / "c.onnx"
    path.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    return path


def test_constant_nodes_run_once_at_load(tmp_path, monkeypatch):
    from ember.onnx import graph_module

    module = ember.onnx.load(_constant_graph(tmp_path, [3, 2]))
    assert [n.name for n in module.nodes] == ["times_k", "reshape"]  # Constant and Add folded
    copies = []
    real = graph_module._tensor
    monkeypatch.setattr(graph_module, "_tensor", lambda a, d: copies.append(a.shape) or real(a, d))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(3):
        np.testing.assert_array_equal(module(ember.tensor(x)).numpy(), (2 * x).reshape(3, 2))
    assert copies == [()]  # k is copied to the device once, not once per call


def test_an_error_in_a_constant_node_is_raised_at_load(tmp_path):
    from ember.onnx import OnnxImportError

    path = _constant_graph(tmp_path, [4, 2])  # 6 elements cannot be [4, 2], but x is data: at call
    module = ember.onnx.load(path)
    with pytest.raises(OnnxImportError, match=r"Reshape node 'reshape'.*cannot reshape \[2, 3\]"):
        module(ember.tensor(np.zeros((2, 3), np.float32)))
    nodes = [
        helper.make_node("Reshape", ["c", "shape"], ["d"], name="folded"),  # constants only: at load
        helper.make_node("Add", ["x", "d"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(np.arange(3, dtype=np.int64), "c"),
        numpy_helper.from_array(np.array([2, 2], np.int64), "shape"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.INT64, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2, 2])],
        initializer=inits,
    )
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    with pytest.raises(OnnxImportError, match=r"Reshape node 'folded'.*cannot reshape \[3\]"):
        ember.onnx.load(bad)


def test_nodes_are_ordered_by_their_inputs():
    # (the checker refuses unsorted files; the importer orders nodes itself all the same)
    from ember.onnx import OnnxImportError
    from ember.onnx.load import _topological
    from ember.onnx.node import OnnxNode

    def node(name, inputs, outputs):
        return OnnxNode("Add", name, inputs, outputs, {}, None)

    c, a, b = (
        node("c", ["a_out", "b_out"], ["c_out"]),
        node("a", ["x"], ["a_out"]),
        node("b", ["a_out", ""], ["b_out"]),
    )
    assert [n.name for n in _topological("f.onnx", [c, a, b], {"x"})] == ["a", "b", "c"]
    with pytest.raises(
        OnnxImportError, match=r"f\.onnx: node 'c' \(Add\) reads 'b_out', which nothing produces"
    ):
        _topological("f.onnx", [c, a], {"x"})
    loop = [node("p", ["q_out"], ["p_out"]), node("q", ["p_out"], ["q_out"])]
    with pytest.raises(OnnxImportError, match=r"node 'p' \(Add\) is part of a cycle"):
        _topological("f.onnx", loop, set())
