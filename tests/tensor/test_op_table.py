"""The op table (ember/core/op_table.py) against the code it declares: every rule op has its
VJP rule and saves what the table says, every op its reference implementation, dtype rule,
Tensor methods and top-level functions, and the generated sources (op_methods.py,
op_functions.py) are what the table generates."""

from __future__ import annotations

import ast
import inspect
import pydoc
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import nn
from ember.core import op_table as table
from ember.kernels import backend as contract
from ember.kernels.reference import ReferenceBackend
from ember.tensor import op_codegen
from ember.tensor.op_methods import OpMethods
from ember.tensor.tensor import Tensor
from ember.tensor.vjp import VJP

DEV = "reference"
OPS = table.OPS
ELEMENTWISE = (table.UNARY, table.BINARY)


def _leaf(values, dtype=ember.float64):
    return ember.tensor(values, dtype=dtype, device=DEV).require_grad()


# ---- the generated sources -----------------------------------------------------------------------
def test_generated_sources_are_what_the_table_generates():
    for path, text in op_codegen.outputs().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} is stale: run python ember/tensor/op_codegen.py and commit the result"
        )


def test_codegen_writes_atomically_and_check_reports_stale_files(tmp_path, monkeypatch, capsys):
    methods, functions = tmp_path / "op_methods.py", tmp_path / "op_functions.py"
    monkeypatch.setattr(op_codegen, "METHODS_FILE", methods)
    monkeypatch.setattr(op_codegen, "FUNCTIONS_FILE", functions)
    assert op_codegen.main(["--check"]) == 1  # missing files are stale
    assert op_codegen.main([]) == 0
    assert methods.read_text() == op_codegen.render_methods() and op_codegen.main(["--check"]) == 0
    functions.write_text(functions.read_text() + "# edited by hand\n")
    capsys.readouterr()
    assert op_codegen.main(["--check"]) == 1
    assert "op_functions.py is stale: run python ember/tensor/op_codegen.py" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "op_functions.py",
        "op_methods.py",
    ]  # no temp files left


def test_codegen_refuses_functions_without_docstring_or_with_foreign_annotations():
    undocumented = table.BY_NAME["sum"]._replace(
        function="ops.indexing.narrow_index", methods=("narrow_index",)
    )
    with pytest.raises(ValueError, match=r"ops.indexing.narrow_index \(op 'sum'\) has no docstring"):
        op_codegen._form(undocumented, "narrow_index", True)
    with pytest.raises(
        ValueError, match=r"annotation 'Device' of tensor._to_device\(device\) uses \['Device'\]"
    ):
        op_codegen.signature("tensor._to_device")
    with pytest.raises(ValueError, match="defines no function 'no_such_op'"):
        op_codegen.signature("ops.movement.no_such_op")


def test_the_table_is_data_and_well_formed():
    tree = ast.parse(Path(table.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert imported <= {"__future__", "typing"}, f"op_table.py must import nothing heavy, imports {imported}"
    assert len(table.BY_NAME) == len(OPS), "op names must be unique"
    kinds = {
        table.UNARY,
        table.BINARY,
        table.REDUCE,
        table.ARG_REDUCE,
        table.PRIMITIVE,
        table.FUSED,
        table.POINTWISE,
        table.COMPOSED,
    }
    for op in OPS:
        assert op.kind in kinds and op.grad in (table.RULE, table.THROUGH, table.NONE), op
        assert op.dtype in table.DTYPE_RULES, op
        assert op.grad == table.RULE or not op.saves, f"{op.name}: only an op with a rule saves anything"
        assert (op.kind == table.COMPOSED) == (not op.backend), f"{op.name}: backend methods iff not composed"
        assert op.methods or op.written or op.top_level, f"{op.name}: neither a method nor a function"
        if op.kind in ELEMENTWISE + (table.POINTWISE,):
            assert op.doc, f"{op.name}: the generated element-wise forms take their docstring from the table"
        if op.kind == table.POINTWISE:
            assert op.backend == (op.name, op.name + "_backward") and op.saves, op


# ---- autodiff ------------------------------------------------------------------------------------
def test_every_rule_op_has_a_vjp_rule_and_every_rule_an_op():
    with_rule = {op.name for op in OPS if op.grad == table.RULE}
    assert with_rule - set(VJP) == set(), "ops declared with a rule but without one in vjp.py"
    assert set(VJP) - with_rule == set(), "rules in vjp.py for ops the table does not declare with one"


_X = [[0.5, 1.5, 2.0], [1.0, 2.5, 3.0]]
_IDX = [[0], [2]]


def _ints(values, d):
    return ember.tensor(values, device=d)


# One call per op that records its own node, on the device ``d`` (the unary, binary and reduce
# kinds are built by _recording_call); test_..._agree_on_each_rule_op runs them on every backend.
_RECORDING = {
    "where": lambda x, d: ember.where(x > 1.0, x, 0.0),
    "clamp": lambda x, d: x.clamp(min=1.0),
    "softplus": lambda x, d: x.softplus(2.0, 3.0),
    "silu": lambda x, d: x.silu(),
    "cumsum": lambda x, d: x.cumsum(1),
    "cast": lambda x, d: x.to(ember.float32),
    "to_device": lambda x, d: x.to("reference" if d != "reference" else "cpu"),
    "reshape": lambda x, d: x.reshape(3, 2),
    "permute": lambda x, d: x.permute(1, 0),
    "expand": lambda x, d: x.reshape(2, 1, 3).expand(2, 4, 3),
    "repeat": lambda x, d: x.repeat(2, 1),
    "flip": lambda x, d: x.flip(0),
    "cat": lambda x, d: ember.cat([x, x], 0),
    "pad": lambda x, d: x.pad((1, 1)),
    "index": lambda x, d: x[0],
    "index_put": lambda x, d: x.index_put((0,), 5.0),
    "gather": lambda x, d: x.gather(1, _ints(_IDX, d)),
    "scatter_add": lambda x, d: x.scatter_add(1, _ints(_IDX, d), ember.ones(2, 1, device=d)),
    "index_select": lambda x, d: x.index_select(1, _ints([0, 2], d)),
    "matmul": lambda x, d: x @ x.T,
    "linear": lambda x, d: ember.linear(x, x.T, ember.ones(2, device=d)),
    "softmax": lambda x, d: x.softmax(-1),
    "log_softmax": lambda x, d: x.log_softmax(-1),
    "gelu": lambda x, d: x.gelu(),
    "layer_norm": lambda x, d: ember.layer_norm(
        x, ember.ones(3, device=d) * 1.5, ember.zeros(3, device=d) + 0.5
    ),
    "rms_norm": lambda x, d: ember.rms_norm(x, ember.ones(3, device=d) * 1.5),
    "cross_entropy": lambda x, d: ember.cross_entropy_per_sample(x, _ints([0, 2], d), 0.1),
    "embedding": lambda x, d: ember.embedding(x, _ints([1, 0, 1], d)),
    "embedding_bag": lambda x, d: ember.embedding_bag(x, _ints([[0, 1], [1, 1]], d), mode="sum"),
    "dropout": lambda x, d: ember.dropout(x, 0.5),
    "attention": lambda x, d: ember.attention(*(x.reshape(1, 1, 2, 3),) * 3),
}


def _recording_call(op):
    if op.name in _RECORDING:
        return _RECORDING[op.name]
    if op.kind == table.UNARY:
        return lambda x, d: getattr(x, op.methods[0])()
    if op.kind == table.BINARY:
        return lambda x, d: getattr(x, op.methods[0])(x * 0.5 + 1.0)
    if op.kind == table.REDUCE:
        return lambda x, d: getattr(x, op.methods[0])(1)
    if op.kind == table.POINTWISE:  # the first operand x, the others made from it
        return lambda x, d: getattr(ember, op.top_level[0])(
            x, *(x * 0.5 + i for i in range(1, len(op.saves)))
        )
    raise AssertionError(f"test_op_table: add a call recording {op.name!r} to _RECORDING")


_RULE_OPS = [op for op in OPS if op.grad == table.RULE]


@pytest.mark.parametrize("op", _RULE_OPS, ids=lambda op: op.name)
def test_each_rule_op_records_its_node_with_what_the_table_says_it_saves(op):
    out = _recording_call(op)(_leaf(_X), DEV)
    node = out._node
    assert node is not None and node.op == op.name, f"the call for {op.name!r} recorded {node}"
    saved = () if node.ctx is None else tuple(vars(node.ctx))
    assert sorted(saved) == sorted(op.saves), f"{op.name} saves {saved}, the table says {op.saves}"


def _forward_backward(op, device):
    ember.seed(7)  # dropout: the same seed, so the same mask on every backend
    x = ember.tensor(_X, dtype=ember.float64, device=device).require_grad()
    out = _recording_call(op)(x, device)
    seed = np.linspace(-1.0, 1.0, out.numel).reshape(out.shape)
    grad = out.backward(ember.tensor(seed, dtype=out.dtype, device=out.device))[x]
    return out.numpy().astype(np.float64), grad.numpy()


@pytest.mark.parametrize("op", [op for op in _RULE_OPS if op.name != "to_device"], ids=lambda op: op.name)
def test_every_backend_agrees_with_the_reference_on_each_rule_op(op, other_device):
    """Forward and backward of every op with a rule, on each backend against the reference
    (the fused kernels included: a new op is checked on every backend from its table row and
    its entry in _RECORDING)."""
    want, want_grad = _forward_backward(op, DEV)
    got, got_grad = _forward_backward(op, other_device)
    np.testing.assert_allclose(
        got, want, rtol=1e-6, atol=1e-9, err_msg=f"{op.name} forward on {other_device}"
    )
    np.testing.assert_allclose(
        got_grad, want_grad, rtol=1e-6, atol=1e-9, err_msg=f"{op.name} backward on {other_device}"
    )


# ---- backends ----------------------------------------------------------------------------------------
def _primitive_arrays(kind, name):
    a = np.array([[0.5, 1.5, 2.0], [1.0, 2.5, 3.0]], np.float64)
    b = np.array([2.0, 0.5, 2.0])
    if table.BY_NAME[name].dtype == table.LOGICAL:
        return (a > 1.0, b > 1.0) if kind == table.BINARY else (a > 1.0,)
    return (a, b) if kind == table.BINARY else (a,)


def _run_primitive(backend, kind, name, arrays):
    if kind == table.UNARY:
        return backend.unary(name, *arrays)
    if kind == table.BINARY:
        return backend.binary(name, *arrays)
    if kind == table.REDUCE:
        return backend.reduce(name, arrays[0], (1,), False)
    return backend.arg_reduce(name, arrays[0], 1, False)


_PRIMITIVE_OPS = [
    (kind, name)
    for kind, names in (
        (table.UNARY, contract.UNARY_OPS),
        (table.BINARY, contract.BINARY_OPS),
        (table.REDUCE, contract.REDUCE_OPS),
        (table.ARG_REDUCE, table.names(table.ARG_REDUCE)),
    )
    for name in names
]


def test_backend_op_lists_are_the_tables_and_the_reference_computes_every_op():
    assert table.names(table.UNARY) == contract.UNARY_OPS and "exp" in contract.UNARY_OPS
    assert (
        table.names(table.BINARY) == contract.BINARY_OPS and table.names(table.REDUCE) == contract.REDUCE_OPS
    )
    ref = ReferenceBackend(0)
    for kind, name in _PRIMITIVE_OPS:
        out = _run_primitive(ref, kind, name, _primitive_arrays(kind, name))
        assert out.shape == ((2,) if kind in (table.REDUCE, table.ARG_REDUCE) else (2, 3)), name
    for op in OPS:
        for method in op.backend:
            assert callable(getattr(ReferenceBackend, method, None)), (
                f"{op.name}: the reference backend has no {method!r}"
            )


def test_every_backend_agrees_with_the_reference_on_the_op_lists(other_device):
    from ember.tensor.device import as_device

    ref, other = ReferenceBackend(0), as_device(other_device).backend
    for kind, name in _PRIMITIVE_OPS:
        arrays = _primitive_arrays(kind, name)
        want = _run_primitive(ref, kind, name, arrays)
        got = other.to_host(_run_primitive(other, kind, name, [other.from_host(a) for a in arrays]))
        assert got.dtype == want.dtype, f"{name} on {other_device}: dtype {got.dtype}, reference {want.dtype}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-7, err_msg=f"{name} on {other_device}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{name} on {other_device}")


# ---- dtype rules --------------------------------------------------------------------------------
_F32, _I32, _BOOL = ember.float32, ember.int32, ember.bool_


def _expected_dtype(op, given):
    """The dtype ``op`` gives for operands of dtype ``given`` by its rule, or TypeError."""
    rule = op.dtype
    if rule == table.LOGICAL:
        return _BOOL if (given is _BOOL or op.kind == table.UNARY) else TypeError
    if given is _BOOL and op.kind in ELEMENTWISE:
        return _BOOL if (op.kind == table.BINARY and rule == table.BOOL) else TypeError  # math rejects bools
    if rule == table.BOOL:
        return _BOOL
    if rule == table.INT64:
        return ember.int64
    if rule == table.COUNT and given is _BOOL:
        return ember.int64
    if rule in (table.FLOAT, table.PROMOTE_FLOAT) and given is not _F32:
        return ember.float32  # the default float dtype
    return given


_DTYPE_CALLS = {"cumsum": lambda t: t.cumsum(0)}
_DTYPE_OPS = [
    op
    for op in OPS
    if op.kind in ELEMENTWISE + (table.REDUCE, table.ARG_REDUCE) or op.function.startswith("ops.reduction.")
]


@pytest.mark.parametrize("given", [_F32, _I32, _BOOL], ids=str)
@pytest.mark.parametrize("op", _DTYPE_OPS, ids=lambda op: op.name)
def test_dtype_rules(op, given):
    t = ember.tensor([[1, 2, 3], [3, 2, 1]], device=DEV).to(given)
    if op.name in _DTYPE_CALLS:
        call = _DTYPE_CALLS[op.name]
    elif op.kind == table.BINARY:
        call = lambda t: getattr(t, op.methods[0])(t)
    else:
        call = lambda t: getattr(t, op.methods[0])()
    want = _expected_dtype(op, given)
    if want is TypeError:
        with pytest.raises(TypeError, match=op.name):
            call(t)
    else:
        assert call(t).dtype is want, f"{op.name}({given}): rule {op.dtype!r} ({table.DTYPE_RULES[op.dtype]})"


# ---- methods ------------------------------------------------------------------------------------
def test_every_op_has_the_methods_and_functions_the_table_lists():
    for op in OPS:
        for name in op.methods + op.reflected:
            assert name in vars(OpMethods), f"{op.name}: no generated method {name!r}"
            assert name not in vars(Tensor), f"{op.name}: {name!r} is both generated and written in tensor.py"
        for name in op.written:
            assert name in vars(Tensor), f"{op.name}: tensor.py writes no {name!r}"
        for name in op.top_level:
            assert callable(getattr(ember, name, None)) and name in ember.__all__, (
                f"{op.name}: no ember.{name}"
            )


def test_methods_are_real_definitions_with_signatures_and_docstrings():
    assert "def exp(self) -> Tensor:" in inspect.getsource(Tensor.exp)
    assert (
        str(inspect.signature(Tensor.sum))
        == "(self, dim: 'int | tuple | list | None' = None, keepdim: 'bool' = False) -> 'Tensor'"
    )
    text = pydoc.render_doc(Tensor.argmax, renderer=pydoc.plaintext)
    assert "argmax(self, dim: 'int | None' = None, keepdim: 'bool' = False)" in text
    assert "Index of the maximum along ``dim``" in text
    assert "def __add__(self, other)" in inspect.getsource(Tensor.__add__)
    assert Tensor.__sub__ is OpMethods.sub and Tensor.view is OpMethods.reshape  # aliases, not wrappers
    for name, attr in vars(OpMethods).items():
        if callable(attr):
            assert attr.__doc__, f"OpMethods.{name} has no docstring"


# ---- top-level functions -----------------------------------------------------------------------------
_T = [[0.5, -1.5, 2.0], [1.0, 2.5, -3.0]]
_MASK = [[True, False, False], [False, True, False]]

# Arguments after the tensor, for the ops whose top-level function and method take more than it.
_ARGS = {
    "reshape": (3, 2),
    "permute": (1, 0),
    "swap_dims": (0, 1),
    "unsqueeze": (0,),
    "squeeze": (None,),
    "narrow": (1, 0, 2),
    "flip": (0,),
    "split": (1, 0),
    "chunk": (2, 1),
    "pad": ((1, 1),),
    "gather": (1, ember.tensor(_IDX, device=DEV)),
    "take_along_dim": (ember.tensor(_IDX, device=DEV), 1),
    "scatter_add": (1, ember.tensor(_IDX, device=DEV), ember.ones(2, 1, device=DEV)),
    "index_select": (1, ember.tensor([0, 2], device=DEV)),
    "index_put": ((0,), 5.0),
    "topk": (2,),
    "cumsum": (1,),
    "clamp": (-1.0, 1.0),
    "mask_fill": (ember.tensor(_MASK, device=DEV), 0.0),
    "one_hot": (3,),
    "sum": (1,),
    "argmax": (1,),
    "argmin": (0,),
    "logsumexp": (1,),
}


def _arrays(value) -> list:
    """The NumPy arrays of a tensor, or of the tensors of a list/tuple of them."""
    return [a for v in value for a in _arrays(v)] if isinstance(value, (list, tuple)) else [value.numpy()]


@pytest.mark.parametrize("op", [op for op in OPS if op.methods and op.top_level], ids=lambda op: op.name)
def test_top_level_functions_equal_the_methods(op):
    t = ember.tensor(np.abs(_T) if op.kind in ELEMENTWISE else _T, device=DEV)  # logs and roots of positives
    if op.name == "one_hot":
        t = ember.tensor([0, 2, 1], device=DEV)
    elif op.dtype == table.LOGICAL:
        t = t > 0
    args = _ARGS.get(op.name, (t,) if op.kind == table.BINARY else ())
    if op.kind == table.POINTWISE:
        args = tuple(t * 0.5 + i for i in range(1, len(op.saves)))
    if op.name == "matmul":
        args = (t.T,)
    got = getattr(ember, op.top_level[0])(t, *args)
    want = getattr(t, op.methods[0])(*args)
    assert type(got) is type(want) and len(_arrays(got)) == len(_arrays(want))
    for g, w in zip(_arrays(got), _arrays(want), strict=True):
        np.testing.assert_array_equal(
            g, w, err_msg=f"ember.{op.top_level[0]} and Tensor.{op.methods[0]} differ"
        )


def test_argmax_and_friends_as_functions():
    t = ember.tensor([[1.0, 5.0, 3.0], [7.0, 2.0, 9.0]], device=DEV)
    assert ember.argmax(t, 1).tolist() == [1, 2] and ember.argmin(t, dim=0).tolist() == [0, 1, 0]
    assert ember.sum(t).item() == 27.0 and ember.max(t, 1).tolist() == [5.0, 9.0]
    assert ember.mean(t, 0, keepdim=True).shape == (1, 3)
    np.testing.assert_allclose(ember.sqrt(ember.abs(-t)).numpy(), np.sqrt(t.numpy()), rtol=1e-6)
    assert ember.transpose(t).shape == (3, 2) and ember.reshape(t, 3, 2).shape == (3, 2)
    assert ember.where(t > 4, t, 0.0).tolist() == [[0.0, 5.0, 0.0], [7.0, 0.0, 9.0]]


def test_top_level_functions_take_params_and_differentiate_them():
    p = nn.Param.from_tensor(ember.tensor([[0.5, -1.0], [2.0, 1.5]], device=DEV))
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device=DEV)
    v = p.value.numpy()
    np.testing.assert_allclose(ember.exp(p).numpy(), np.exp(v), rtol=1e-6)
    np.testing.assert_allclose(ember.matmul(x, p).numpy(), x.numpy() @ v, rtol=1e-6)
    np.testing.assert_allclose(ember.maximum(p, x).numpy(), np.maximum(v, x.numpy()))
    np.testing.assert_allclose(ember.clamp(x, max=p).numpy(), np.minimum(x.numpy(), v))
    np.testing.assert_allclose(ember.cat([p, x], 0).numpy(), np.concatenate([v, x.numpy()]))
    np.testing.assert_allclose(ember.where(x > 2, p, 0.0).numpy(), np.where(x.numpy() > 2, v, 0.0))
    assert ember.argmax(p, 1).tolist() == [0, 0]
    grads = ember.sum(ember.exp(p) * x).backward()
    np.testing.assert_allclose(grads[p].numpy(), np.exp(v) * x.numpy(), rtol=1e-6)


def test_the_top_level_functions_of_before_the_table_remain():
    before = [
        "argsort",
        "attention",
        "cat",
        "chunk",
        "clamp",
        "cross_entropy_per_sample",
        "dropout",
        "embedding",
        "embedding_bag",
        "flatten",
        "gather",
        "gelu",
        "index_put",
        "index_select",
        "layer_norm",
        "leaky_relu",
        "log_softmax",
        "logsumexp",
        "mask_fill",
        "matmul",
        "one_hot",
        "pad",
        "quiet_softmax",
        "relu",
        "rms_norm",
        "scatter_add",
        "sigmoid",
        "silu",
        "softmax",
        "softplus",
        "sort",
        "split",
        "stack",
        "take_along_dim",
        "topk",
        "where",
    ]
    assert set(before) <= set(ember.__all__)
    assert len(ember.__all__) == len(set(ember.__all__))
