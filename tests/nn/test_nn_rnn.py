"""Recurrent layers (Lstm, BiLstm, Gru, BiGru, Rnn, BiRnn): PyTorch with copied weights (values
and gradients, float64, every backend), NumPy references for the options PyTorch lacks,
central differences, Burn's parameter paths and record round trips, edge cases, and an LSTM
sequence classifier trained through SupervisedTraining."""

from __future__ import annotations

import io

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, params64
from helpers.train_steps import ClassificationSteps, FeatureBatcher

import ember
from ember import nn
from ember.nn.rnn.sequence import unbind_steps

B, T, D, H = 3, 5, 4, 6
LSTM_ORDER = ("input_gate", "forget_gate", "cell_gate", "output_gate")  # PyTorch's i, f, g, o
GRU_ORDER = ("reset_gate", "update_gate", "new_gate")  # PyTorch's r, z, n


def f64(a, device=DEV):
    return ember.tensor(np.asarray(a, dtype=np.float64), dtype="float64", device=device)


def _blocks(cell, gates, torch_module, suffix=""):
    """(ember Param, torch parameter, row slice, is_weight) for every gate linear."""
    for side, name in (("input_transform", "ih"), ("hidden_transform", "hh")):
        weight = getattr(torch_module, f"weight_{name}_l0{suffix}")
        bias = getattr(torch_module, f"bias_{name}_l0{suffix}", None)
        for k, gate in enumerate(gates):
            linear = getattr(getattr(cell, gate) if gate else cell.gate, side)
            rows = slice(k * H, (k + 1) * H)
            yield linear.weight, weight, rows, True
            if linear.bias is not None:
                yield linear.bias, bias, rows, False


def _copy_to_torch(torch, pairs):
    with torch.no_grad():
        for param, tp, rows, is_weight in pairs:
            value = param.numpy().T if is_weight else param.numpy()
            tp[rows] = torch.from_numpy(np.ascontiguousarray(value))


def _tie(torch, torch_module, gates, *cells):
    """Copy the gate weights of the ember cells (forward, then reverse when bidirectional) into
    ``torch_module``; returns their (ember, torch) parameter pairs for the gradient checks."""
    pairs = [
        pair
        for cell, suffix in zip(cells, ("", "_reverse"))
        for pair in _blocks(cell, gates, torch_module, suffix)
    ]
    _copy_to_torch(torch, pairs)
    return pairs


@pytest.fixture
def torch():
    """PyTorch, the oracle of the layers it has (the test skips without it)."""
    return pytest.importorskip("torch")


def _seeded(seed: int) -> np.random.Generator:
    """NumPy's generator for a test's data, with ember's seed (the layer's parameters) set to
    the same ``seed``."""
    ember.seed(seed)
    return np.random.default_rng(seed)


def _check_param_grads(grads, pairs):
    for param, tp, rows, is_weight in pairs:
        want = tp.grad[rows].numpy()
        got = grads.get(param.value).numpy()
        np.testing.assert_allclose(got.T if is_weight else got, want, rtol=1e-10, atol=1e-12)


def _torch_run(torch, module, x, state, upstream):
    xt = torch.from_numpy(x).requires_grad_()
    st = None if state is None else tuple(torch.from_numpy(s).requires_grad_() for s in state)
    out, final = module(xt, (st if st is None or len(st) > 1 else st[0]))
    final = final if isinstance(final, tuple) else (final,)
    loss = (out * torch.from_numpy(upstream[0])).sum() + sum(
        (f * torch.from_numpy(u)).sum() for f, u in zip(final, upstream[1:])
    )
    loss.backward()
    return (
        out.detach().numpy(),
        [f.detach().numpy() for f in final],
        xt.grad.numpy(),
        None if st is None else [s.grad.numpy() for s in st],
    )


def _first(out):
    """The outputs of a layer that returns them alone (Gru) or with the state (the others)."""
    return out if isinstance(out, ember.Tensor) else out[0]


def _ember_loss(out, finals, upstream, device):
    loss = (out * f64(upstream[0], device)).sum()
    for f, u in zip(finals, upstream[1:]):
        loss = loss + (f * f64(u, device)).sum()
    return loss


def _check_against_torch(device, pairs, out, finals, upstream, want_out, want_finals, want_grads):
    """The outputs and final states equal PyTorch's, and so do the gradients of the loss that
    weights them by ``upstream``: of each ``(tensor, want)`` in ``want_grads`` and of the
    parameters tied in ``pairs``."""
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-12, atol=1e-13)
    for final, want in zip(finals, want_finals):
        np.testing.assert_allclose(final.numpy(), want, rtol=1e-12, atol=1e-13)
    grads = _ember_loss(out, finals, upstream, device).backward()
    for tensor, want in want_grads:
        np.testing.assert_allclose(grads.get(tensor).numpy(), want, rtol=1e-10, atol=1e-12)
    _check_param_grads(grads, pairs)


@pytest.mark.parametrize("seq, with_state", [(T, True), (20, False)])
def test_lstm_matches_torch(torch, device, seq, with_state):
    rng = _seeded(0)
    lstm = nn.LstmConfig(D, H, bias=True).init(device, "float64")
    ref = torch.nn.LSTM(D, H, batch_first=True).double()
    pairs = _tie(torch, ref, LSTM_ORDER, lstm)
    x = rng.standard_normal((B, seq, D))
    state = [rng.standard_normal((1, B, H)) for _ in range(2)] if with_state else None  # torch: (h, c)
    upstream = [
        rng.standard_normal((B, seq, H)),
        rng.standard_normal((1, B, H)),
        rng.standard_normal((1, B, H)),
    ]
    want_out, (want_h, want_c), want_gx, want_gs = _torch_run(torch, ref, x, state, upstream)

    xe = f64(x, device).require_grad()
    init = None
    if with_state:
        init = nn.LstmState(f64(state[1][0], device).require_grad(), f64(state[0][0], device).require_grad())
    out, final = lstm(xe, init)
    assert isinstance(final, nn.LstmState) and final.shape == (B, H)
    state_grads = [(init.hidden, want_gs[0][0]), (init.cell, want_gs[1][0])] if with_state else []
    _check_against_torch(
        device,
        pairs,
        out,
        [final.hidden, final.cell],
        [upstream[0], upstream[1][0], upstream[2][0]],
        want_out,
        [want_h[0], want_c[0]],
        [(xe, want_gx), *state_grads],
    )


def test_bilstm_matches_torch(torch, device):
    rng = _seeded(1)
    bilstm = nn.BiLstmConfig(D, H, bias=True).init(device, "float64")
    ref = torch.nn.LSTM(D, H, batch_first=True, bidirectional=True).double()
    pairs = _tie(torch, ref, LSTM_ORDER, bilstm.forward_lstm, bilstm.reverse)
    x = rng.standard_normal((B, T, D))
    state = [rng.standard_normal((2, B, H)) for _ in range(2)]
    upstream = [
        rng.standard_normal((B, T, 2 * H)),
        rng.standard_normal((2, B, H)),
        rng.standard_normal((2, B, H)),
    ]
    want_out, (want_h, want_c), want_gx, want_gs = _torch_run(torch, ref, x, state, upstream)

    xe = f64(x, device).require_grad()
    init = nn.LstmState(f64(state[1], device).require_grad(), f64(state[0], device).require_grad())
    out, final = bilstm(xe, init)
    assert out.shape == (B, T, 2 * H) and final.shape == (2, B, H)
    _check_against_torch(
        device,
        pairs,
        out,
        [final.hidden, final.cell],
        upstream,
        want_out,
        [want_h, want_c],
        [(xe, want_gx), (init.hidden, want_gs[0]), (init.cell, want_gs[1])],
    )


def test_gru_and_bigru_match_torch(torch, device):
    rng = _seeded(2)
    gru = nn.GruConfig(D, H, bias=True).init(device, "float64")
    ref = torch.nn.GRU(D, H, batch_first=True).double()
    pairs = _tie(torch, ref, GRU_ORDER, gru)
    x = rng.standard_normal((B, T, D))
    h0 = rng.standard_normal((1, B, H))
    upstream = [rng.standard_normal((B, T, H)), rng.standard_normal((1, B, H))]
    want_out, (want_h,), want_gx, (want_gh,) = _torch_run(torch, ref, x, [h0], upstream)
    xe, he = f64(x, device).require_grad(), f64(h0[0], device).require_grad()
    out = gru(xe, he)  # Burn's signature: the outputs only
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-12, atol=1e-13)
    out, final = gru.forward_with_state(xe, he)
    _check_against_torch(
        device,
        pairs,
        out,
        [final],
        [upstream[0], upstream[1][0]],
        want_out,
        [want_h[0]],
        [(xe, want_gx), (he, want_gh[0])],
    )

    bigru = nn.BiGruConfig(D, H, bias=True, batch_first=False).init(device, "float64")
    ref = torch.nn.GRU(D, H, bidirectional=True).double()  # seq first
    pairs = _tie(torch, ref, GRU_ORDER, bigru.forward_gru, bigru.reverse)
    x = rng.standard_normal((T, B, D))
    upstream = [rng.standard_normal((T, B, 2 * H)), rng.standard_normal((2, B, H))]
    want_out, (want_h,), want_gx, _ = _torch_run(torch, ref, x, None, upstream)
    xe = f64(x, device).require_grad()
    out, final = bigru(xe)
    _check_against_torch(device, pairs, out, [final], upstream, want_out, [want_h], [(xe, want_gx)])


@pytest.mark.parametrize("activation, nonlinearity", [("tanh", "tanh"), ("relu", "relu")])
def test_rnn_and_birnn_match_torch(torch, device, activation, nonlinearity):
    rng = _seeded(3)
    rnn = nn.RnnConfig(D, H, bias=True, hidden_activation=activation).init(device, "float64")
    ref = torch.nn.RNN(D, H, batch_first=True, nonlinearity=nonlinearity).double()
    pairs = _tie(torch, ref, (None,), rnn)
    x = rng.standard_normal((B, T, D))
    upstream = [rng.standard_normal((B, T, H)), rng.standard_normal((1, B, H))]
    want_out, (want_h,), want_gx, _ = _torch_run(torch, ref, x, None, upstream)
    xe = f64(x, device).require_grad()
    out, final = rnn(xe)
    _check_against_torch(
        device,
        pairs,
        out,
        [final.hidden],
        [upstream[0], upstream[1][0]],
        want_out,
        [want_h[0]],
        [(xe, want_gx)],
    )

    birnn = nn.BiRnnConfig(D, H, bias=False, hidden_activation=activation).init(device, "float64")
    ref = torch.nn.RNN(
        D, H, batch_first=True, nonlinearity=nonlinearity, bias=False, bidirectional=True
    ).double()
    pairs = _tie(torch, ref, (None,), birnn.forward_rnn, birnn.reverse)
    h0 = rng.standard_normal((2, B, H))
    upstream = [rng.standard_normal((B, T, 2 * H)), rng.standard_normal((2, B, H))]
    want_out, (want_h,), want_gx, (want_gh,) = _torch_run(torch, ref, x, [h0], upstream)
    xe, he = f64(x, device).require_grad(), f64(h0, device).require_grad()
    out, final = birnn(xe, nn.RnnState(he))
    _check_against_torch(device, pairs, out, [final.hidden], upstream, want_out, [want_h], [(he, want_gh)])


# ---- NumPy references for the options PyTorch does not have ------------------------------------
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _gate(cell, name, x, h):
    gate = getattr(cell, name)
    lin_x, lin_h = gate.input_transform, gate.hidden_transform
    out = x @ lin_x.weight.numpy() + h @ lin_h.weight.numpy()
    for lin in (lin_x, lin_h):
        if lin.bias is not None:
            out = out + lin.bias.numpy()
    return out


def _lstm_numpy(lstm, x, reverse=False, clip=None, input_forget=False):
    b, t, _ = x.shape
    h = c = np.zeros((b, lstm.d_hidden))
    out = np.zeros((b, t, lstm.d_hidden))
    for s in range(t - 1, -1, -1) if reverse else range(t):
        i = _sigmoid(_gate(lstm, "input_gate", x[:, s], h))
        f = 1 - i if input_forget else _sigmoid(_gate(lstm, "forget_gate", x[:, s], h))
        o = _sigmoid(_gate(lstm, "output_gate", x[:, s], h))
        c = f * c + i * np.tanh(_gate(lstm, "cell_gate", x[:, s], h))
        c = c if clip is None else np.clip(c, -clip, clip)
        h = o * np.tanh(c)
        out[:, s] = h
    return out, h, c


def test_lstm_options_match_numpy():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((B, T, D)) * 2
    for options in ({"reverse": True}, {"clip": 0.3}, {"input_forget": True}, {"batch_first": False}):
        ember.seed(4)
        lstm = nn.LstmConfig(D, H, bias=True, **options).init(DEV, "float64")
        inp = x.transpose(1, 0, 2) if options.get("batch_first") is False else x
        out, final = lstm(f64(inp))
        options.pop("batch_first", None)
        want, h, c = _lstm_numpy(lstm, x, **options)
        got = out.numpy().transpose(1, 0, 2) if not lstm.batch_first else out.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(final.hidden.numpy(), h, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(final.cell.numpy(), c, rtol=1e-12, atol=1e-13)


def test_gru_reset_before_and_clip_match_numpy():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((B, T, D)) * 2
    ember.seed(5)
    gru = nn.GruConfig(D, H, bias=True, reset_after=False, clip=0.5).init(DEV, "float64")
    h = np.zeros((B, H))
    want = np.zeros((B, T, H))
    new = gru.new_gate
    for s in range(T):
        z = _sigmoid(_gate(gru, "update_gate", x[:, s], h))
        r = _sigmoid(_gate(gru, "reset_gate", x[:, s], h))
        n = np.tanh(
            x[:, s] @ new.input_transform.weight.numpy()
            + new.input_transform.bias.numpy()
            + (r * h) @ new.hidden_transform.weight.numpy()
            + new.hidden_transform.bias.numpy()
        )
        h = np.clip((1 - z) * n + z * h, -0.5, 0.5)
        want[:, s] = h
    np.testing.assert_allclose(gru(f64(x)).numpy(), want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize(
    "build",
    [
        lambda: nn.LstmConfig(3, 4, bias=True, clip=0.8, input_forget=True).init(DEV),
        lambda: nn.BiLstmConfig(3, 4, bias=False).init(DEV),
        lambda: nn.GruConfig(3, 4, bias=True, reset_after=False).init(DEV),
        lambda: nn.BiGruConfig(3, 4, bias=True).init(DEV),
        lambda: nn.RnnConfig(3, 4, bias=True, reverse=True).init(DEV),
    ],
    ids=["lstm", "bilstm", "gru_reset_before", "bigru", "rnn_reverse"],
)
def test_gradients_match_central_differences(build):
    ember.seed(6)
    layer = build()
    params64(layer)
    # with input_forget the forget gate is unused (as in Burn): it gets no gradient
    skip = "forget_gate" if getattr(layer, "input_forget", False) else "-"
    params = [p.value for path, p in layer.named_parameters() if skip not in path]
    x = ember.randn(2, 4, 3, device=DEV, dtype="float64").require_grad()
    w = ember.randn(*_first(layer(x)).shape, device=DEV, dtype="float64")
    check_grads(lambda: (_first(layer(x)) * w).sum(), [x] + params)


# ---- Burn's layout: parameter paths, records, configs -----------------------------------------
def test_parameter_paths_are_burns():
    lstm = nn.LstmConfig(3, 4, bias=True).init(DEV)
    paths = [p for p, _ in lstm.named_parameters()]
    assert paths[:4] == [
        "input_gate.input_transform.weight",
        "input_gate.input_transform.bias",
        "input_gate.hidden_transform.weight",
        "input_gate.hidden_transform.bias",
    ]
    assert {p.split(".")[0] for p in paths} == {"input_gate", "forget_gate", "output_gate", "cell_gate"}
    assert lstm.input_gate.input_transform.weight.shape == (3, 4)  # Burn's row layout [d_input, d_hidden]
    assert lstm.input_gate.hidden_transform.weight.shape == (4, 4)
    bi = nn.BiLstmConfig(3, 4, bias=False).init(DEV)
    assert [p for p, _ in bi.named_parameters()][:2] == [
        "forward.input_gate.input_transform.weight",
        "forward.input_gate.hidden_transform.weight",
    ]
    assert sum(p.startswith("reverse.") for p, _ in bi.named_parameters()) == 8
    gru = nn.GruConfig(3, 4, bias=True).init(DEV)
    assert {p.split(".")[0] for p, _ in gru.named_parameters()} == {"update_gate", "reset_gate", "new_gate"}
    rnn = nn.BiRnnConfig(3, 4, bias=True).init(DEV)
    assert next(p for p, _ in rnn.named_parameters()) == "forward.gate.input_transform.weight"
    assert isinstance(bi.forward_lstm, nn.Lstm) and callable(bi.forward)


@pytest.mark.parametrize(
    "build",
    [
        lambda d: nn.LstmConfig(3, 4, bias=True).init(d),
        lambda d: nn.BiLstmConfig(3, 4, bias=True).init(d),
        lambda d: nn.GruConfig(3, 4, bias=True).init(d),
        lambda d: nn.BiRnnConfig(3, 4, bias=True).init(d),
    ],
    ids=["lstm", "bilstm", "gru", "birnn"],
)
def test_record_round_trip(tmp_path, device, build):
    ember.seed(7)
    layer = build(device)
    x = ember.randn(2, 3, 3, device=device)
    path = layer.save_file(tmp_path / "rnn.bpk")
    ember.seed(8)
    other = build(device)
    before = other(x)
    other.load_file(path)
    after, want = _first(other(x)), _first(layer(x))
    assert not np.allclose(_first(before).numpy(), want.numpy())
    np.testing.assert_array_equal(after.numpy(), want.numpy())
    assert [(p, q.id) for p, q in other.named_parameters()] == [
        (p, q.id) for p, q in layer.named_parameters()
    ]


def test_configs_round_trip_through_json(tmp_path):
    config = nn.LstmConfig(
        3,
        4,
        bias=False,
        clip=2.0,
        gate_activation="hard_sigmoid",
        hidden_activation=nn.ActivationConfig("leaky_relu", negative_slope=0.2),
    )
    loaded = nn.LstmConfig.load(config.save(tmp_path / "lstm.json"))
    assert loaded == config and loaded.initializer == nn.XavierNormal(gain=1.0)
    lstm = loaded.init(DEV)
    assert isinstance(lstm.gate_activation, nn.HardSigmoid) and lstm.hidden_activation.negative_slope == 0.2
    assert nn.GruConfig.from_json(nn.GruConfig(2, 3, True).to_json()).reset_after is True
    assert nn.BiRnnConfig(2, 3, True).hidden_activation == nn.ActivationConfig("tanh")


# ---- edge cases and errors ----------------------------------------------------------------------
def test_empty_and_single_step_sequences(device):
    ember.seed(9)
    lstm = nn.LstmConfig(D, H, bias=True).init(device, "float64")
    init = nn.LstmState(
        ember.randn(2, H, device=device, dtype="float64"), ember.randn(2, H, device=device, dtype="float64")
    )
    out, final = lstm(ember.zeros(2, 0, D, device=device, dtype="float64"), init)
    assert out.shape == (2, 0, H)
    np.testing.assert_array_equal(final.hidden.numpy(), init.hidden.numpy())
    out, final = nn.BiLstmConfig(D, H, bias=True).init(device)(ember.zeros(1, 0, D, device=device))
    assert out.shape == (1, 0, 2 * H) and final.shape == (2, 1, H)
    assert nn.GruConfig(D, H, bias=True).init(device)(ember.zeros(2, 0, D, device=device)).shape == (2, 0, H)
    # one step, batch 1: the output is the final hidden state
    x = ember.randn(1, 1, D, device=device, dtype="float64")
    out, final = lstm(x)
    np.testing.assert_array_equal(out.numpy()[:, 0], final.hidden.numpy())
    gru = nn.GruConfig(D, H, bias=False).init(device, "float64")
    out, last = gru.forward_with_state(x)
    np.testing.assert_array_equal(out.numpy()[:, -1], last.numpy())


def test_unbind_steps_matches_direct_slices():
    rng = np.random.default_rng(10)
    data = rng.standard_normal((40, 2, 3))  # more steps than the direct path takes: two-level slicing
    up = rng.standard_normal((40, 2, 3))
    x = f64(data).require_grad()
    steps = unbind_steps(x, 0)
    assert len(steps) == 40 and all(s.shape == (2, 3) for s in steps)
    np.testing.assert_array_equal(np.stack([s.numpy() for s in steps]), data)
    total = steps[0].sum() * 0.0
    for s, u in zip(steps, up):
        total = total + (s * f64(u)).sum()
    np.testing.assert_array_equal(total.backward().get(x).numpy(), up)
    assert [s.shape for s in unbind_steps(f64(data), 1)] == [(40, 3)] * 2  # no grad: direct slices


def test_bad_inputs_raise_clear_errors():
    lstm = nn.LstmConfig(D, H, bias=True).init(DEV)
    with pytest.raises(
        ValueError, match=r"Lstm: input must be \[batch, seq_length, d_input=4\].*\[3, 5, 7\]"
    ):
        lstm(ember.zeros(3, 5, 7, device=DEV))
    with pytest.raises(ValueError, match=r"Lstm: input must be"):
        lstm(ember.zeros(5, 4, device=DEV))
    with pytest.raises(TypeError, match="Lstm: expected a float input"):
        lstm(ember.zeros(3, 5, 4, dtype="int64", device=DEV))
    with pytest.raises(ValueError, match=r"state.cell must be \[3, 6\].*got \[2, 6\]"):
        lstm(ember.zeros(3, 5, 4, device=DEV), nn.LstmState.initial((2, H), DEV))
    with pytest.raises(TypeError, match="state must be an LstmState"):
        lstm(ember.zeros(3, 5, 4, device=DEV), ember.zeros(3, H, device=DEV))
    with pytest.raises(ValueError, match=r"BiGru: state must be \[2, 3, 6\]"):
        nn.BiGruConfig(D, H, bias=True).init(DEV)(
            ember.zeros(3, 5, 4, device=DEV), ember.zeros(3, H, device=DEV)
        )
    with pytest.raises(ValueError, match="d_input and d_hidden must be positive"):
        nn.GruConfig(0, 3, True).init()
    with pytest.raises(ValueError, match="clip must be positive"):
        nn.RnnConfig(2, 3, True, clip=0.0).init()
    with pytest.raises(ValueError, match="must have one shape"):
        nn.LstmState(ember.zeros(2, 3), ember.zeros(3, 3))


# ---- training ------------------------------------------------------------------------------------
class LstmClassifier(ClassificationSteps, nn.Module):
    """The last hidden state of an LSTM, then a linear layer over the classes."""

    def __init__(self, device=None):
        self.lstm = nn.LstmConfig(2, 12, bias=True).init(device)
        self.head = nn.LinearConfig(12, 2).init(device)
        self.loss = nn.CrossEntropyLossConfig().init()

    def forward(self, x):
        _, state = self.lstm(x)
        return self.head(state.hidden)

    def forward_classification(self, batch):
        from ember.train import ClassificationOutput

        x, y = batch
        logits = self(x)
        return ClassificationOutput(self.loss(logits, y), logits, y)


def _sequences(n, seed):
    # the class is the sign of the first step's first feature, so it has to be remembered
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6, 2)).astype(np.float32)
    return [(x[i], int(x[i, 0, 0] > 0)) for i in range(n)]


def test_lstm_sequence_classifier_trains_with_supervised_training(tmp_path):
    from ember.data import DataLoaderBuilder, InMemDataset
    from ember.optim import AdamConfig
    from ember.train import Learner, SupervisedTraining
    from ember.train.logger import read_aggregate
    from ember.train.metric import AccuracyMetric, LossMetric
    from ember.train.renderer import CliMetricsRenderer

    train = (
        DataLoaderBuilder(FeatureBatcher()).batch_size(16).shuffle(3).build(InMemDataset(_sequences(128, 0)))
    )
    valid = DataLoaderBuilder(FeatureBatcher()).batch_size(32).build(InMemDataset(_sequences(64, 1)))
    ember.seed(0)
    result = (
        SupervisedTraining(tmp_path, train, valid)
        .metrics(AccuracyMetric(), LossMetric())
        .num_epochs(6)
        .renderer(CliMetricsRenderer(stream=io.StringIO()))
        .launch(Learner(LstmClassifier(), AdamConfig().init(), 2e-2))
    )
    assert result.epochs_trained == 6
    losses = [read_aggregate(tmp_path / "valid" / f"epoch-{e}" / "Loss.log") for e in range(1, 7)]
    accuracy = read_aggregate(tmp_path / "valid" / "epoch-6" / "Accuracy.log")
    assert losses[-1] < 0.5 * losses[0], losses
    assert accuracy >= 80.0, accuracy  # chance is 50 %
