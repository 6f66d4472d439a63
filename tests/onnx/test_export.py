"""ember.onnx.export: exported models run in ONNX Runtime and give ember's outputs (float32,
within 1e-5 max abs), at the example's shape and at other batch and sequence sizes."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from helpers.text_model import padded_tokens, tiny_text_model

import ember
from ember import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from ember.onnx.export_graph import ExportError  # noqa: E402

TOL = 1e-5


def _run(path, feeds: dict) -> list:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def _ember(fn, *inputs) -> list:
    out = fn(*inputs)
    return [t.numpy() for t in (out if isinstance(out, (tuple, list)) else (out,))]


def _check(model, inputs, path, *, fn=None, dynamic_axes=None, others=(), opset=17):
    """Export ``model`` on ``inputs`` and compare ONNX Runtime with ember there and on each
    input tuple of ``others`` (other dynamic sizes)."""
    proto = ember.onnx.export(fn or model, inputs, path, dynamic_axes=dynamic_axes, opset=opset)
    onnx.checker.check_model(proto)
    infer = model.valid()
    call = getattr(infer, fn.__name__) if fn is not None else infer
    names = [i.name for i in proto.graph.input]
    for case in (inputs, *others):
        case = case if isinstance(case, tuple) else (case,)
        got = _run(path, {n: t.numpy() for n, t in zip(names, case)})
        want = _ember(call, *case)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, atol=TOL, rtol=0)
    return proto


def _x(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


class _Mlp(nn.Module):
    def __init__(self):
        self.hidden = nn.LinearConfig(6, 16).init()
        self.out = nn.LinearConfig(16, 3).init()

    def forward(self, x):
        return self.out(ember.relu(self.hidden(x)))


class _Cnn(nn.Module):
    def __init__(self):
        self.conv1 = nn.Conv2dConfig((3, 8), (3, 3), padding=(1, 1)).init()
        self.pool = nn.MaxPool2dConfig((2, 2)).init()
        self.conv2 = nn.Conv2dConfig((8, 4), (3, 3)).init()
        self.avg = nn.AdaptiveAvgPool2dConfig((1, 1)).init()
        self.head = nn.LinearConfig(4, 5).init()

    def forward(self, x):
        h = self.avg(ember.relu(self.conv2(self.pool(ember.relu(self.conv1(x))))))
        return self.head(h.reshape(h.shape[0], 4))


def test_mlp_dynamic_batch(tmp_path):
    proto = _check(_Mlp(), _x(4, 6), tmp_path / "mlp.onnx", others=(_x(7, 6, seed=1), _x(2, 6, seed=2)))
    # weights are initializers under their dotted paths; the batch axis is symbolic
    assert {"hidden.weight", "hidden.bias", "out.weight", "out.bias"} <= {
        i.name for i in proto.graph.initializer
    }
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_cnn_conv_pool(tmp_path):
    _check(_Cnn(), _x(2, 3, 8, 8), tmp_path / "cnn.onnx", others=(_x(5, 3, 8, 8, seed=3),))


def test_static_shapes_reject_nothing_and_keep_dims(tmp_path):
    proto = ember.onnx.export(_Mlp(), _x(4, 6), tmp_path / "s.onnx", dynamic_axes={})
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 4


def _tokens(b, s, seed=0):
    tokens, mask = padded_tokens(b, s, seed)
    return ember.tensor(tokens), ember.tensor(mask)


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_example_transformer_dynamic_batch_and_seq(tmp_path, pooling):
    model = tiny_text_model(pooling)
    axes = {"tokens": {0: "batch", 1: "seq"}, "mask_pad": {0: "batch", 1: "seq"}}
    proto = ember.onnx.export(
        model.logits,
        _tokens(3, 8),
        tmp_path / "tc.onnx",
        dynamic_axes=axes,
        input_names=["tokens", "mask_pad"],
    )
    infer = model.valid()
    for b, s in ((3, 8), (2, 5), (6, 12), (1, 1)):
        tokens, mask = _tokens(b, s, seed=b * s)
        got = _run(tmp_path / "tc.onnx", {"tokens": tokens.numpy(), "mask_pad": mask.numpy()})[0]
        np.testing.assert_allclose(got, infer.logits(tokens, mask).numpy(), atol=TOL, rtol=0)
    dims = [d.dim_param for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "seq"]
    # the initializers are the parameters, under their paths; scales and shapes are Constant nodes
    assert sorted(i.name for i in proto.graph.initializer) == sorted(n for n, _ in model.named_parameters())


def test_attention_with_key_padding_mask(tmp_path):
    mha = nn.MultiHeadAttentionConfig(16, 4).init()

    class _SelfAttention(nn.Module):
        def __init__(self):
            self.mha = mha

        def forward(self, x, mask):
            return self.mha(nn.MhaInput.self_attn(x).mask_pad(mask)).context

    x = _x(2, 6, 16)
    mask = ember.tensor(np.array([[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0]], bool))
    other_mask = ember.tensor(np.array([[0, 0, 1]] * 3, bool))
    axes = {0: {0: "batch", 1: "seq"}, 1: {0: "batch", 1: "seq"}}
    _check(
        _SelfAttention(),
        (x, mask),
        tmp_path / "mha.onnx",
        dynamic_axes=axes,
        others=((_x(3, 3, 16, seed=4), other_mask),),
    )


# ---- errors ------------------------------------------------------------------------------------
class _Sorter(nn.Module):
    def forward(self, x):
        return ember.sort(x, dim=-1)[0]


class _WithSorter(nn.Module):
    def __init__(self):
        self.first = nn.LinearConfig(6, 6).init()
        self.inner = _Sorter()

    def forward(self, x):
        return self.inner(self.first(x))


def test_unexportable_op_names_op_and_module_path(tmp_path):
    with pytest.raises(ExportError, match=r"op sort in module 'inner' \(_Sorter\).*sort"):
        ember.onnx.export(_WithSorter(), _x(3, 6), tmp_path / "bad.onnx")
    assert not (tmp_path / "bad.onnx").exists()


def test_backend_restored_after_export_and_after_failure(tmp_path):
    from ember.kernels import registry
    from ember.tensor.device import Device, as_device

    prop = Device.__dict__["backend"]

    device = as_device("cpu")
    before = device.backend
    ember.onnx.export(_Mlp(), _x(4, 6), tmp_path / "m.onnx")
    model = _WithSorter()
    with pytest.raises(ExportError):
        ember.onnx.export(model, _x(3, 6), tmp_path / "bad.onnx")
    assert device.backend is before
    assert registry._BACKENDS[("cpu", None)] is before
    assert Device.__dict__["backend"] is prop
    assert all("forward" not in vars(m) for _, m in model.named_modules())
    assert type(ember.relu(_x(2, 2))._device.backend) is type(before)  # ops run untraced again


class _Branchy(nn.Module):
    def forward(self, x):
        return ember.relu(x) if x.shape[0] > 3 else ember.tanh(x)


def test_shape_dependent_branch_is_rejected_with_dynamic_axes(tmp_path):
    with pytest.raises(ExportError, match="runs other ops when the dynamic axes \\(batch\\) change size"):
        ember.onnx.export(_Branchy(), _x(4, 6), tmp_path / "b.onnx")
    # static shapes export the branch taken
    _check(_Branchy(), _x(4, 6), tmp_path / "b.onnx", dynamic_axes={})


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"model": "not a module"}, TypeError, "model must be an ember.nn.Module"),
        (
            {"example_inputs": (np.zeros((2, 6), np.float32),)},
            TypeError,
            "example input 0 must be an ember.Tensor",
        ),
        ({"example_inputs": ()}, ValueError, "example_inputs is empty"),
        ({"opset": 11}, ValueError, "opset must be an int from 17 to 21, got 11"),
        ({"dynamic_axes": {"nope": {0: "b"}}}, ValueError, "dynamic_axes names input 'nope'"),
        (
            {"dynamic_axes": {0: {2: "b"}}},
            ValueError,
            "dynamic axis 2 of input 0 is out of range for its shape",
        ),
        ({"dynamic_axes": {0: {1: ""}}}, ValueError, "dynamic axis 1 of input 0 needs a name"),
        ({"example_inputs": _x(1, 6)}, ValueError, "dynamic axis 'batch' .* has size 1 in the example"),
        ({"input_names": ["a", "b"]}, ValueError, "input_names must be 1 distinct non-empty strings"),
        (
            {"input_names": ["x"], "output_names": ["x"]},
            ValueError,
            r"\['x'\] named both an input and an output",
        ),
        ({"input_names": ["out.bias"]}, ValueError, r"input name\(s\) \['out.bias'\] are parameter paths"),
        (
            {"output_names": ["hidden.weight"]},
            ValueError,
            r"output name\(s\) \['hidden.weight'\] are parameter",
        ),
    ],
)
def test_bad_arguments(tmp_path, kwargs, error, match):
    args = {"model": _Mlp(), "example_inputs": _x(2, 6), "path": tmp_path / "x.onnx"} | kwargs
    with pytest.raises(error, match=match):
        ember.onnx.export(args.pop("model"), args.pop("example_inputs"), args.pop("path"), **args)


def test_missing_onnx_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r'pip install "ember\[interop\]"'):
        ember.onnx.export(_Mlp(), _x(2, 6), tmp_path / "x.onnx")


def test_importing_ember_onnx_imports_neither_onnx_nor_onnxruntime():
    import subprocess

    code = "import sys, ember, ember.onnx; print(sorted({'onnx', 'onnxruntime', 'torch'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


class _Reductions(nn.Module):
    """Reductions and element-wise ops whose ONNX form changes with the opset (axes as an
    attribute before 18, as an input from 18) or that ONNX composes (log1p, floor-div, ...)."""

    def __init__(self):
        self.norm = nn.RmsNormConfig(6).init()

    def forward(self, x):
        parts = [
            ember.max(x, dim=1, keepdim=True),
            ember.min(x, dim=1, keepdim=True),
            ember.prod(x, dim=1, keepdim=True),
            ember.logsumexp(x, dim=1, keepdim=True),
            ember.mean(x, dim=0, keepdim=True).expand(x.shape[0], 6),
            (x > 0).any(dim=1, keepdim=True).float(),
            (x > -3).all(dim=1, keepdim=True).float(),
            ember.argmax(x, dim=1, keepdim=True).float(),
            ember.cumsum(x, dim=1),
            ember.log1p(x.abs()),
            ember.expm1(x),
            ember.floor_divide(x, 0.7),
            ember.remainder(x, 0.7),
            ember.isfinite(x).float(),
            self.norm(x),
            ember.softmax(x, dim=-1),
            ember.log_softmax(x, dim=-1),
            x.flip(1),
            ember.pad(x, (1, 2)),
        ]
        return ember.cat(parts, dim=1)


@pytest.mark.parametrize("opset", [17, 18, 21])
def test_opsets_and_reductions(tmp_path, opset):
    proto = _check(_Reductions(), _x(4, 6), tmp_path / "r.onnx", opset=opset, others=(_x(7, 6, seed=5),))
    assert proto.opset_import[0].version == opset


def test_other_threads_are_not_recorded():
    import threading

    from ember.onnx.export_trace import Trace, tracing

    x, y = _x(2, 4), _x(3, 3)
    result = {}

    def other():
        result["exp"] = ember.exp(y).numpy()  # computes while the main thread traces

    trace = Trace([x._data], {}, {})
    with tracing(_Mlp(), trace):
        ember.relu(x)
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert [(c.method, c.args[0]) for c in trace.calls] == [("unary", "relu")]
    np.testing.assert_allclose(result["exp"], np.exp(y.numpy()), rtol=1e-6)


def test_export_traces_on_every_backend(tmp_path, device):
    """The trace records whichever backend computes the forward; the graphs agree."""
    model = _Cnn().to(device)
    x = _x(2, 3, 8, 8)
    proto = ember.onnx.export(model, x.to(device), tmp_path / "cnn.onnx")
    got = _run(tmp_path / "cnn.onnx", {"input_0": _x(4, 3, 8, 8, seed=9).numpy()})[0]
    want = model.valid()(_x(4, 3, 8, 8, seed=9).to(device)).numpy()
    np.testing.assert_allclose(got, want, atol=TOL, rtol=0)
    assert "conv1.weight" in {i.name for i in proto.graph.initializer}


class _Returns(nn.Module):
    """Returns its input, a parameter no op reads and a computed value (three graph outputs)."""

    def __init__(self):
        self.layer = nn.LinearConfig(4, 2).init()
        self.table = nn.LinearConfig(2, 3).init()

    def forward(self, x):
        return x, self.table.weight.val(), self.layer(x)


def test_outputs_that_are_inputs_or_parameters(tmp_path):
    proto = _check(_Returns(), _x(3, 4), tmp_path / "r.onnx", others=(_x(5, 4, seed=2),))
    assert [o.name for o in proto.graph.output] == ["output_0", "output_1", "output_2"]


def test_forward_failing_at_resized_axes_says_which_sizes(tmp_path):
    # seq 12 is the position table's size and batch 2 cannot shrink: the other traces grow
    # both, and 14 tokens exceed the table
    model = tiny_text_model()
    axes = {0: {0: "batch", 1: "seq"}, 1: {0: "batch", 1: "seq"}}
    with pytest.raises(
        ExportError, match=r"fails when the dynamic axes are resized \(batch=3, seq=14.*batch >= 4, seq >= 6"
    ):
        ember.onnx.export(model.logits, _tokens(2, 12), tmp_path / "t.onnx", dynamic_axes=axes)
    # batch 4 lets every trace shrink: the export works at the table's full length
    ember.onnx.export(model.logits, _tokens(4, 12), tmp_path / "t.onnx", dynamic_axes=axes)


class _MaskedEncoder(nn.Module):
    def __init__(self):
        self.encoder = nn.TransformerEncoderConfig(8, 16, 2, 2).init()

    def forward(self, x, mask):
        return self.encoder(nn.TransformerEncoderInput(x).mask_pad(mask))


def test_masked_encoder_output_matches_at_padded_positions_too(tmp_path):
    """ember's encoder runs its layers on the real tokens only and leaves padded positions 0
    (token packing, picked on the host); the graph computes every position and zeroes the
    padded ones as ember does; a batch with no real token keeps what the layers compute."""
    x = _x(3, 5, 8)
    mask = np.zeros((3, 5), bool)
    mask[0, 3:] = True
    mask[2, 1:] = True
    axes = {0: {0: "batch", 1: "seq"}, 1: {0: "batch", 1: "seq"}}
    others = (
        (_x(2, 7, 8, seed=3), ember.tensor(np.array([[0, 0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 1, 1, 1]], bool))),
        (_x(2, 4, 8, seed=4), ember.tensor(np.ones((2, 4), bool))),  # every position padding
        (_x(2, 4, 8, seed=5), ember.tensor(np.zeros((2, 4), bool))),  # none
    )
    _check(_MaskedEncoder(), (x, ember.tensor(mask)), tmp_path / "enc.onnx", dynamic_axes=axes, others=others)


class _Recurrent(nn.Module):
    """A recurrent layer with an initial state built from the input; every result it gives."""

    def __init__(self, layer):
        self.layer = layer

    def forward(self, x, h0):
        from ember.nn.rnn.basic import RnnState
        from ember.nn.rnn.lstm import LstmState

        if isinstance(self.layer, nn.rnn.Gru):
            return self.layer(x, h0)  # its forward gives the outputs only
        if isinstance(self.layer, nn.rnn.Lstm):
            out, state = self.layer(x, LstmState(h0 * 0.5, h0))
            return out, state.cell, state.hidden
        out, state = self.layer(x, RnnState(h0))
        return out, state.hidden


@pytest.mark.parametrize(
    "make",
    [
        lambda: nn.LstmConfig(4, 5, True).init(),
        lambda: nn.LstmConfig(4, 5, False, batch_first=False, reverse=True).init(),
        lambda: nn.LstmConfig(4, 5, True, input_forget=True).init(),
        lambda: nn.GruConfig(4, 5, True).init(),
        lambda: nn.GruConfig(4, 5, True, reset_after=False).init(),
        lambda: nn.RnnConfig(4, 5, True).init(),
        lambda: nn.RnnConfig(4, 5, True, reverse=True).init(),
    ],
    ids=[
        "lstm",
        "lstm_seq_first_reverse_nobias",
        "lstm_input_forget",
        "gru",
        "gru_reset_before",
        "rnn",
        "rnn_reverse",
    ],
)
def test_recurrent_layers_as_onnx_ops_with_dynamic_sequence(tmp_path, make):
    layer = make()
    seq_axis, batch_axis = (1, 0) if getattr(layer, "batch_first", True) else (0, 1)
    shape = [0, 0, 4]
    shape[seq_axis], shape[batch_axis] = 6, 3

    def case(seq, batch, seed):
        s = list(shape)
        s[seq_axis], s[batch_axis] = seq, batch
        return _x(*s, seed=seed), _x(batch, 5, seed=seed + 1)

    axes = {0: {batch_axis: "batch", seq_axis: "seq"}, 1: {0: "batch"}}
    proto = _check(
        _Recurrent(layer),
        case(6, 3, 0),
        tmp_path / "rnn.onnx",
        dynamic_axes=axes,
        others=(case(9, 2, 2), case(2, 4, 4)),
    )
    assert {n.op_type for n in proto.graph.node} & {"LSTM", "GRU", "RNN"}
    assert sorted(i.name for i in proto.graph.initializer) == sorted(
        f"layer.{n}" for n, _ in layer.named_parameters()
    )
