"""ember.onnx.load on ONNX's recurrences LSTM, GRU and RNN: one-node graphs against ONNX Runtime
(directions, optional bias, initial states and sequence lengths, both layouts, GRU's
linear_before_reset, op versions 7, 14 and 22), PyTorch's exported nn.LSTM / nn.GRU / nn.RNN
(outputs and a training step), ember's own Lstm / Gru / Rnn exported and loaded back, and the
settings ember does not implement refused at load."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ember  # noqa: E402
import ember.onnx  # noqa: E402
from ember import nn  # noqa: E402
from ember.onnx.errors import OnnxImportError  # noqa: E402
from ember.optim import GradientsParams, SgdConfig  # noqa: E402

_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_INPUTS = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c"]


def _f32(rng, *shape):
    return (0.5 * rng.standard_normal(shape)).astype(np.float32)


def _values(
    op, *, directions=1, bias=True, initial=False, lens=None, seq=5, batch=3, d_in=4, hidden=6, seed=0
):
    """The node's inputs by name, in layout 0 (``[seq, batch, ...]``)."""
    rng = np.random.default_rng(seed)
    g = _GATES[op]
    values = {
        "X": _f32(rng, seq, batch, d_in),
        "W": _f32(rng, directions, g * hidden, d_in),
        "R": _f32(rng, directions, g * hidden, hidden),
    }
    if bias:
        values["B"] = _f32(rng, directions, 2 * g * hidden)
    if lens is not None:
        values["sequence_lens"] = np.array(lens, dtype=np.int32)
    if initial:
        values["initial_h"] = _f32(rng, directions, batch, hidden)
        if op == "LSTM":
            values["initial_c"] = _f32(rng, directions, batch, hidden)
    return values


def _to_layout1(name, value):
    """A layout-0 input or output as layout 1 (batch first)."""
    if name == "X":
        return value.transpose(1, 0, 2)
    if name == "Y":
        return value.transpose(2, 0, 1, 3)
    if name in ("initial_h", "initial_c", "Y_h", "Y_c"):
        return value.transpose(1, 0, 2)
    return value


def _model(op, values, layout=0, opset=14, direction=None, **attrs):
    """A one-node model of ``op`` (W, R and B as initializers, the others graph inputs) and its
    feeds; ``values`` are in layout 0, transposed here for ``layout`` 1."""
    values = {n: _to_layout1(n, v) for n, v in values.items()} if layout else dict(values)
    seq, batch = values["X"].shape[:2][:: -1 if layout else 1]
    directions, hidden = values["R"].shape[0], values["R"].shape[2]
    names = _INPUTS[: 7 if op == "LSTM" else 6]
    while names[-1] not in values:
        names.pop()
    weights = {"W", "R", "B"}
    outs = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    y = (seq, directions, batch, hidden)
    state = (directions, batch, hidden)
    shapes = [y, state, state]
    if layout:
        attrs["layout"] = 1
        shapes = [_to_layout1(n, np.empty(s)).shape for n, s in zip(outs, shapes)]
    direction = direction or ("bidirectional" if directions == 2 else "forward")
    inputs = [n if n in values else "" for n in names]
    node = helper.make_node(op, inputs, outs, hidden_size=hidden, direction=direction, **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for n, v in values.items() if n not in weights],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, s) for o, s in zip(outs, shapes)],
        initializer=[numpy_helper.from_array(v, n) for n, v in values.items() if n in weights],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model, {n: v for n, v in values.items() if n not in weights}


ORT_CASES = {
    "lstm": ("LSTM", {}),
    "lstm-v7-nobias": ("LSTM", {"opset": 11, "bias": False}),
    "lstm-bidirectional-initial": ("LSTM", {"directions": 2, "initial": True}),
    "lstm-reverse-layout1-initial": ("LSTM", {"direction": "reverse", "layout": 1, "initial": True}),
    "lstm-bidirectional-layout1-v22": ("LSTM", {"directions": 2, "layout": 1, "opset": 22}),
    "lstm-lengths-bidirectional": ("LSTM", {"directions": 2, "initial": True, "lens": [5, 2, 0]}),
    "lstm-input-forget": ("LSTM", {"input_forget": 1, "initial": True}),
    "gru-lbr0": ("GRU", {"linear_before_reset": 0}),
    "gru-lbr1": ("GRU", {"linear_before_reset": 1}),
    "gru-lbr1-nobias-initial": ("GRU", {"linear_before_reset": 1, "bias": False, "initial": True}),
    "gru-bidirectional-lbr1-layout1": ("GRU", {"directions": 2, "linear_before_reset": 1, "layout": 1}),
    "gru-reverse-lbr0-initial-v22": ("GRU", {"direction": "reverse", "initial": True, "opset": 22}),
    "gru-v7-bidirectional-initial": ("GRU", {"opset": 11, "directions": 2, "initial": True}),
    "gru-lengths-lbr1": ("GRU", {"linear_before_reset": 1, "lens": [3, 5, 1], "directions": 2}),
    "rnn": ("RNN", {}),
    "rnn-v7-reverse-nobias": ("RNN", {"opset": 11, "direction": "reverse", "bias": False}),
    "rnn-bidirectional-initial-layout1": ("RNN", {"directions": 2, "initial": True, "layout": 1}),
    "rnn-lengths-layout1-v22": ("RNN", {"layout": 1, "lens": [4, 5, 2], "opset": 22, "initial": True}),
}


_VALUE_ARGS = {"directions", "bias", "initial", "lens"}


@pytest.mark.parametrize("case", list(ORT_CASES))
def test_one_node_matches_onnxruntime(case, device, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    op, kwargs = ORT_CASES[case]
    values = _values(op, **{k: v for k, v in kwargs.items() if k in _VALUE_ARGS})
    attrs = {k: v for k, v in kwargs.items() if k not in _VALUE_ARGS}
    model, feeds = _model(op, values, **attrs)
    # ONNX Runtime runs layout 0 only: a layout-1 node is checked against its layout-0 twin
    layout = attrs.pop("layout", 0)
    twin, twin_feeds = _model(op, values, **attrs)
    expected = ort.InferenceSession(twin.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, twin_feeds
    )
    names = ["Y", "Y_h", "Y_c"]
    if layout:
        expected = [_to_layout1(n, e) for n, e in zip(names, expected)]
    path = tmp_path / "rnn.onnx"
    path.write_bytes(model.SerializeToString())
    got = ember.onnx.load(path, device=device)(
        **{k: ember.tensor(v, device=device) for k, v in feeds.items()}
    )
    assert len(got) == len(expected)
    for name, g, e in zip(names, got, expected):
        assert g.shape == e.shape, name
        np.testing.assert_allclose(g.numpy(), e, rtol=0, atol=1e-5, err_msg=f"{case} {name}")


# ---- PyTorch's nn.LSTM / nn.GRU / nn.RNN, exported by its TorchScript exporter --------------------
def _torch_model(name):
    torch = pytest.importorskip("torch")

    class Recurrent(torch.nn.Module):
        """A recurrent layer and every result it gives (its output and final states)."""

        def __init__(self, layer):
            super().__init__()
            self.layer = layer

        def forward(self, x, h0):
            if isinstance(self.layer, torch.nn.LSTM):
                out, (h, c) = self.layer(x, (h0, 0.5 * h0))
                return out, h, c
            out, h = self.layer(x, h0)
            return out, h

    layers = {
        # two layers, both directions, batch first (Transposes, Slices and Concats around the ops)
        "LSTM": lambda: torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True),
        "GRU": lambda: torch.nn.GRU(4, 6, bidirectional=True),  # linear_before_reset=1
        "GRU-2layers-batch-first": lambda: torch.nn.GRU(4, 6, num_layers=2, batch_first=True),
        "RNN": lambda: torch.nn.RNN(4, 6, num_layers=2, bidirectional=True),
        "RNN-nobias": lambda: torch.nn.RNN(4, 6, bias=False, batch_first=True),
    }
    torch.manual_seed(0)
    return Recurrent(layers[name]()).eval()


def _torch_inputs(model, rng):
    layer = model.layer
    states = layer.num_layers * (2 if layer.bidirectional else 1)
    x = (0.5 * rng.standard_normal((3, 5, 4) if layer.batch_first else (5, 3, 4))).astype(np.float32)
    return x, (0.5 * rng.standard_normal((states, 3, 6))).astype(np.float32)


def _torch_export(model, inputs, path, opset):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
        # dynamo=False: the TorchScript exporter; the default one needs onnxscript
        torch.onnx.export(
            model, tuple(torch.from_numpy(a) for a in inputs), str(path), dynamo=False,
            input_names=["x", "h0"], opset_version=opset,
        )  # fmt: skip


TORCH_CASES = ["LSTM", "GRU", "GRU-2layers-batch-first", "RNN", "RNN-nobias"]


@pytest.mark.torch
@pytest.mark.parametrize("name", TORCH_CASES)
@pytest.mark.parametrize("opset", [14, 20])
def test_pytorch_recurrences_match_and_train(name, opset, device, tmp_path):
    """Outputs within 1e-5 of PyTorch; then one SGD step on each side: the exported weights are
    PyTorch's rearranged (gates reordered, biases concatenated), a linear map, so equal gradients
    give equal models after the step, which is compared."""
    torch = pytest.importorskip("torch")
    model = _torch_model(name)
    inputs = _torch_inputs(model, np.random.default_rng(1))
    _torch_export(model, inputs, tmp_path / "m.onnx", opset)
    imported = ember.onnx.load(tmp_path / "m.onnx", device=device)
    assert {n.op_type for n in imported.nodes} & {"LSTM", "GRU", "RNN"}

    def ember_outputs():
        return imported(*(ember.tensor(a, device=device) for a in inputs))

    with torch.no_grad():
        expected = [t.numpy() for t in model(*(torch.from_numpy(a) for a in inputs))]
    got = ember_outputs()
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(g.numpy(), e, rtol=0, atol=1e-5)

    weights = [
        np.random.default_rng(2 + i).standard_normal(e.shape).astype(np.float32)
        for i, e in enumerate(expected)
    ]
    lr = 0.5
    model.train()
    loss = sum(
        (o * torch.from_numpy(w)).sum()
        for o, w in zip(model(*(torch.from_numpy(a) for a in inputs)), weights)
    )
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
        stepped = [t.numpy() for t in model(*(torch.from_numpy(a) for a in inputs))]

    ember_loss = sum((o * ember.tensor(w, device=device)).sum() for o, w in zip(got, weights))
    grads = GradientsParams.from_grads(ember_loss.backward(), imported)
    assert len(grads) == len(list(imported.named_parameters()))  # every weight gets a gradient
    SgdConfig().init().step(lr, imported, grads)
    after = ember_outputs()
    for g, e, before in zip(after, stepped, expected):
        assert np.abs(e - before).max() > 1e-2  # the step moves the outputs
        np.testing.assert_allclose(g.numpy(), e, rtol=0, atol=1e-5)


@pytest.mark.torch
def test_pytorch_relu_rnn_is_refused_at_load(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.RNN(4, 6, nonlinearity="relu").eval()
    rng = np.random.default_rng(0)
    inputs = (rng.standard_normal((5, 3, 4)).astype(np.float32), np.zeros((1, 3, 6), np.float32))
    _torch_export(model, inputs, tmp_path / "relu.onnx", 17)
    with pytest.raises(
        OnnxImportError, match=r"RNN \(domain ai\.onnx, opset 17, op version 14\) with activations=\['Relu'\]"
    ):
        ember.onnx.load(tmp_path / "relu.onnx")


# ---- ember's Lstm / Gru / Rnn, exported by ember.onnx.export and loaded back ----------------------
class _Recurrent(nn.Module):
    """A recurrent layer with an initial state built from the input; every result it gives."""

    def __init__(self, layer):
        self.layer = layer

    def forward(self, x, h0):
        from ember.nn.rnn.basic import RnnState
        from ember.nn.rnn.lstm import LstmState

        if isinstance(self.layer, nn.rnn.Gru):
            return self.layer(x, h0)
        if isinstance(self.layer, nn.rnn.Lstm):
            out, state = self.layer(x, LstmState(h0 * 0.5, h0))
            return out, state.cell, state.hidden
        out, state = self.layer(x, RnnState(h0))
        return out, state.hidden


EMBER_LAYERS = {
    "lstm": lambda: nn.LstmConfig(4, 5, True).init(),
    "lstm_seq_first_reverse_nobias": lambda: nn.LstmConfig(
        4, 5, False, batch_first=False, reverse=True
    ).init(),
    "lstm_input_forget": lambda: nn.LstmConfig(4, 5, True, input_forget=True).init(),
    "gru": lambda: nn.GruConfig(4, 5, True).init(),
    "gru_reset_before": lambda: nn.GruConfig(4, 5, True, reset_after=False).init(),
    "rnn": lambda: nn.RnnConfig(4, 5, True).init(),
    "rnn_reverse_seq_first": lambda: nn.RnnConfig(4, 5, True, batch_first=False, reverse=True).init(),
}


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name", list(EMBER_LAYERS))
def test_ember_recurrences_round_trip(name, device, tmp_path):
    ember.seed(5)
    layer = EMBER_LAYERS[name]()
    model = _Recurrent(layer)
    batch_first = getattr(layer, "batch_first", True)

    def case(seq, batch, seed):
        x = _x(batch, seq, 4, seed=seed) if batch_first else _x(seq, batch, 4, seed=seed)
        return x, _x(batch, 5, seed=seed + 1)

    seq_axis, batch_axis = (1, 0) if batch_first else (0, 1)
    axes = {0: {batch_axis: "batch", seq_axis: "seq"}, 1: {0: "batch"}}
    ember.onnx.export(
        model, tuple(ember.tensor(a) for a in case(6, 3, 0)), tmp_path / "r.onnx", dynamic_axes=axes
    )
    imported = ember.onnx.load(tmp_path / "r.onnx", device=device)
    assert {n.op_type for n in imported.nodes} & {"LSTM", "GRU", "RNN"}
    assert {f"layer.{n}" for n, _ in layer.named_parameters()} == {n for n, _ in imported.named_parameters()}
    infer = model.valid()
    for seq, batch, seed in ((6, 3, 0), (9, 2, 2), (1, 4, 4)):  # the sequence and batch are dynamic
        inputs = case(seq, batch, seed)
        want = infer(*(ember.tensor(a) for a in inputs))
        want = want if isinstance(want, tuple) else (want,)
        got = imported(*(ember.tensor(a, device=device) for a in inputs))
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-5, rtol=0)


# ---- settings ember does not implement ---------------------------------------------------------
@pytest.mark.parametrize(
    "op, attrs, extra, listed",
    [
        ("LSTM", {"clip": 3.0}, {}, "with clip=3.0"),
        ("GRU", {"activations": ["Relu", "Tanh"]}, {}, "with activations=['Relu', 'Tanh'] (only the defaults ['sigmoid', 'tanh'])"),
        ("RNN", {"activations": ["Tanh", "Relu"]}, {"directions": 2}, "with activations=['Tanh', 'Relu']"),
        ("LSTM", {}, {"peepholes": True}, "with peepholes (input P)"),
    ],
)  # fmt: skip
def test_unsupported_settings_are_refused_at_load(op, attrs, extra, listed, tmp_path):
    peepholes = extra.pop("peepholes", False)
    values = _values(op, initial=True, **extra)
    if peepholes:
        values["P"] = _f32(np.random.default_rng(0), 1, 18)
    model, _ = _model(op, values, **attrs)
    if peepholes:
        model.graph.node[0].input.append("P")
    path = tmp_path / "bad.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(OnnxImportError) as info:
        ember.onnx.load(path)
    assert f"{op} (domain ai.onnx, opset 14, op version 14) {listed}" in str(info.value)


def test_bad_weight_shapes_name_the_node_and_shapes(tmp_path):
    values = _values("GRU")
    values["R"] = values["R"][:, :, :5]  # H from R's last dim no longer fits W's gate rows
    model, feeds = _model("GRU", values)
    path = tmp_path / "bad.onnx"
    path.write_bytes(model.SerializeToString())
    module = ember.onnx.load(path)
    with pytest.raises(
        OnnxImportError,
        match=r"ONNX GRU node .*expected W \[1, 15, 4\] and R \[1, 15, 5\].*got W \[1, 18, 4\] and R \[1, 18, 5\]",
    ):
        module(**{k: ember.tensor(v) for k, v in feeds.items()})
