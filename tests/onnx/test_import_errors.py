"""ember.onnx.load refuses what it cannot import with an error naming the file and the
problem, before building anything: a missing, truncated or corrupt file, an opset outside
ember's range, ops it does not implement (all of them at once, with their opsets), and a
missing ``onnx`` package."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ember  # noqa: E402
import ember.onnx  # noqa: E402
from ember.onnx import OnnxImportError  # noqa: E402
from ember.onnx.import_ops import MAX_OPSET, MIN_OPSET  # noqa: E402


def _save(
    tmp_path, nodes, opset=17, name="model.onnx", initializers=(), inputs=None, outputs=None, extra_opsets=()
):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "m"])
    graph = helper.make_graph(
        nodes, "g", inputs or [x], [y] if outputs is None else outputs, initializer=list(initializers)
    )
    opsets = [helper.make_opsetid("", opset), *extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets)
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())
    return path


def i64(*values):
    return np.array(values, dtype=np.int64)


def _mlp(tmp_path, opset=17):
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    return _save(tmp_path, nodes, opset, initializers=[w])


def test_a_valid_file_loads(tmp_path):
    module = ember.onnx.load(_mlp(tmp_path))
    x = np.array([[1, -2, 3], [0.5, 0, -1]], dtype=np.float32)
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    np.testing.assert_allclose(module(ember.tensor(x)).numpy(), np.maximum(x @ w, 0), rtol=1e-6)
    assert [n for n, _ in module.named_parameters()] == ["w"]


def test_external_data(tmp_path):
    w = numpy_helper.from_array(np.ones((3, 4), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        initializer=[w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "big.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, location="big.data", size_threshold=0)
    module = ember.onnx.load(path)
    np.testing.assert_array_equal(module(ember.ones(2, 3)).numpy(), np.full((2, 4), 3.0, np.float32))
    (tmp_path / "big.data").unlink()
    with pytest.raises(
        OnnxImportError, match=r"big\.onnx: the model's external data cannot be read.*big\.data"
    ):
        ember.onnx.load(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.onnx"):
        ember.onnx.load(tmp_path / "nope.onnx")


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.9, 0.97])
def test_truncated_file(tmp_path, keep):
    path = _mlp(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(OnnxImportError, match=r"model\.onnx") as info:
        ember.onnx.load(path)
    assert "truncated or corrupt" in str(info.value) or "checker" in str(info.value)


def test_corrupt_file(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"\xff\xfe not a protobuf at all \x00\x01" * 10)
    with pytest.raises(OnnxImportError, match=r"garbage\.onnx.*truncated or corrupt"):
        ember.onnx.load(path)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    with pytest.raises(OnnxImportError, match=r"empty\.onnx.*truncated or corrupt"):
        ember.onnx.load(path)


def test_a_graph_without_outputs(tmp_path):
    path = _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], outputs=[], name="no_outputs.onnx")
    with pytest.raises(OnnxImportError, match=r"no_outputs\.onnx: the graph declares no outputs"):
        ember.onnx.load(path)


def test_an_invalid_graph_fails_the_checker(tmp_path):
    # y is read from a value nothing produces
    path = _save(tmp_path, [helper.make_node("Relu", ["missing"], ["y"])], name="broken.onnx")
    with pytest.raises(OnnxImportError, match=r"broken\.onnx.*checker"):
        ember.onnx.load(path)


def test_opset_too_new(tmp_path):
    path = _mlp(tmp_path, opset=MAX_OPSET + 1)
    with pytest.raises(
        OnnxImportError, match=rf"model\.onnx: opset {MAX_OPSET + 1} \(ai\.onnx\) is too new.*{MAX_OPSET}"
    ):
        ember.onnx.load(path)


def test_opset_too_old(tmp_path):
    path = _mlp(tmp_path, opset=MIN_OPSET - 1)
    with pytest.raises(OnnxImportError, match=rf"opset {MIN_OPSET - 1} \(ai\.onnx\) is too old"):
        ember.onnx.load(path)


def test_every_unsupported_op_is_listed_at_once(tmp_path):
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Hardmax", ["a"], ["b"], name="hm1"),
        helper.make_node("Hardmax", ["b"], ["c"], name="hm2"),
        helper.make_node("LpNormalization", ["c"], ["d"], name="lp"),
        helper.make_node("FusedThing", ["d"], ["y"], name="ms", domain="com.example"),
    ]
    path = _save(tmp_path, nodes, extra_opsets=[helper.make_opsetid("com.example", 1)], name="many.onnx")
    with pytest.raises(OnnxImportError) as info:
        ember.onnx.load(path)
    text = str(info.value)
    assert text.startswith(f"{path}: 3 ONNX op(s) not supported")
    assert "Hardmax (domain ai.onnx, opset 17, op version 13): 2 node(s) 'hm1', 'hm2'" in text
    assert "LpNormalization (domain ai.onnx, opset 17, op version 1): 1 node(s) 'lp'" in text
    assert "FusedThing (domain com.example, opset 1, unknown to ONNX): 1 node(s) 'ms'" in text
    assert "Relu" not in text


def test_unsupported_settings_are_listed_with_the_ops(tmp_path):
    value = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.0], np.float32), "v"), numpy_helper.from_array(i64(0), "i"), [2]
    )
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["a"], name="reflect", mode="reflect"),
        helper.make_node("MaxPool", ["a"], ["b", "idx"], name="with_indices", kernel_shape=[1]),
        helper.make_node("Cast", ["b"], ["c"], name="to_string", to=TensorProto.STRING),
        helper.make_node("Constant", [], ["k"], name="sparse", sparse_value=value),
        helper.make_node("Hardmax", ["c"], ["y"], name="hm"),
    ]
    pads = numpy_helper.from_array(np.zeros(4, np.int64), "pads")
    path = _save(tmp_path, nodes, initializers=[pads], name="settings.onnx")
    with pytest.raises(OnnxImportError) as info:
        ember.onnx.load(path)
    text = str(info.value)
    assert text.startswith(f"{path}: 5 ONNX op(s) not supported")
    assert (
        "Pad (domain ai.onnx, opset 17, op version 13) with mode='reflect' (only 'constant'): 1 node(s) 'reflect'"
        in text
    )
    assert (
        "MaxPool (domain ai.onnx, opset 17, op version 12) with the Indices output: 1 node(s) 'with_indices'"
        in text
    )
    assert "Cast (domain ai.onnx, opset 17, op version 13) with to=STRING (no ember dtype)" in text
    assert (
        "Constant (domain ai.onnx, opset 17, op version 13) with graph or sparse attribute(s) ['sparse_value']"
        in text
    )
    assert "Hardmax" in text


def test_unsupported_element_type(tmp_path):
    s = numpy_helper.from_array(np.array(["a"], dtype=object), "s")
    path = _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], initializers=[s], name="strings.onnx")
    with pytest.raises(OnnxImportError, match=r"strings\.onnx: tensor 's'.*STRING has no ember dtype"):
        ember.onnx.load(path)


def test_a_node_error_names_the_node_and_shapes(tmp_path):
    shape = numpy_helper.from_array(np.array([5, -1], dtype=np.int64), "shape")
    path = _save(
        tmp_path,
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="bad_reshape")],
        initializers=[shape],
    )
    module = ember.onnx.load(path)
    with pytest.raises(OnnxImportError, match=r"Reshape node 'bad_reshape'.*cannot reshape \[2, 3\]"):
        module(ember.zeros(2, 3))


def test_reduction_axes_out_of_range(tmp_path):
    axes = numpy_helper.from_array(np.array([2], dtype=np.int64), "axes")
    path = _save(
        tmp_path, [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum")], initializers=[axes]
    )
    with pytest.raises(
        OnnxImportError, match=r"ReduceSum node 'sum'.*axes \[2\] are out of range for an input of rank 2"
    ):
        ember.onnx.load(path)(ember.zeros(2, 3))


def test_inputs_by_name_and_errors(tmp_path):
    module = ember.onnx.load(_mlp(tmp_path))
    assert module.input_names == ["x"] and module.output_names == ["y"]
    np.testing.assert_array_equal(module(x=ember.zeros(2, 3)).numpy(), np.zeros((2, 4), np.float32))
    with pytest.raises(TypeError, match=r"missing input\(s\) \['x'\]"):
        module()
    with pytest.raises(TypeError, match="unknown input 'z'"):
        module(z=ember.zeros(2, 3))


def test_without_onnx_the_error_names_the_extra(tmp_path, monkeypatch):
    path = _mlp(tmp_path)
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    with pytest.raises(ImportError, match=r'pip install "ember\[interop\]"'):
        ember.onnx.load(path)


def test_importing_ember_onnx_imports_no_onnx():
    code = "import sys, ember, ember.onnx; print(sorted(m for m in ('onnx', 'torch', 'onnxruntime') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
