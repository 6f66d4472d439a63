"""The encoder runs its layers on the real tokens only (ember.nn.token_packing): on those tokens
the outputs and every gradient equal the padded computation's, on every CPU backend."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.devices import cpu_available

import ember
from ember import nn
from ember.kernels.reference import unique_rows
from ember.nn.token_packing import TokenPacking

BACKENDS = ["reference"] + (["cpu"] if cpu_available() else [])


def _mask(device, trailing):
    m = np.zeros((3, 7), bool)
    m[1, 4:] = True
    m[2, 1:] = True  # a single real token
    if trailing:
        m[:, 5:] = True  # the last columns pad every row: attention runs on a span of 5
    return m, ember.tensor(m, device=device)


def _run(enc, x, mask, weights):
    xx = x.require_grad()
    y = enc(nn.TransformerEncoderInput(xx).mask_pad(mask))
    grads = (y * weights).sum().backward()
    return y.numpy(), {p: grads.get(t).numpy() for p, t in enc.named_parameters()}, grads.get(xx).numpy()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("quiet", [False, True])
@pytest.mark.parametrize("trailing", [False, True])
def test_packed_encoder_equals_padded_on_real_tokens(backend, norm_first, quiet, trailing):
    dev = ember.Device(backend)
    ember.seed(0)
    enc = nn.TransformerEncoderConfig(
        16, 32, 4, 2, dropout=0.0, norm_first=norm_first, quiet_softmax=quiet
    ).init(dev, ember.float64)
    x = ember.randn(3, 7, 16, dtype=ember.float64, device=dev)
    m, mask = _mask(dev, trailing)
    w = np.random.default_rng(1).standard_normal((3, 7, 16)) * (~m)[..., None]  # loss on real tokens
    weights = ember.tensor(w, dtype=ember.float64, device=dev)
    y_packed, g_packed, gx_packed = _run(enc, x, mask, weights)
    enc.skip_padding = False
    y_full, g_full, gx_full = _run(enc, x, mask, weights)
    np.testing.assert_allclose(y_packed[~m], y_full[~m], rtol=1e-12, atol=1e-12)
    assert not y_packed[m].any()  # padded positions come out as 0
    for path in g_full:
        np.testing.assert_allclose(g_packed[path], g_full[path], rtol=1e-10, atol=1e-12, err_msg=path)
    np.testing.assert_allclose(gx_packed, gx_full, rtol=1e-10, atol=1e-12)


def _count_packed(monkeypatch):
    calls = []
    original = nn.TransformerEncoderLayer.forward_packed

    def spy(self, *args):
        calls.append(1)
        return original(self, *args)

    monkeypatch.setattr(nn.TransformerEncoderLayer, "forward_packed", spy)
    return calls


def test_encoder_packs_only_when_it_changes_nothing(monkeypatch):
    calls = _count_packed(monkeypatch)
    enc = nn.TransformerEncoderConfig(8, 16, 2, 2, dropout=0.0).init()
    x = ember.randn(2, 5, 8)
    pad = ember.tensor(np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0]], bool))
    enc(nn.TransformerEncoderInput(x).mask_pad(pad))
    assert len(calls) == 2  # packed: one call per layer
    calls.clear()
    enc(nn.TransformerEncoderInput(x).mask_pad(ember.zeros(2, 5, dtype=ember.bool)))  # nothing padded
    enc(nn.TransformerEncoderInput(x))  # no mask
    enc(nn.TransformerEncoderInput(x).mask_pad(pad).mask_attn(nn.generate_autoregressive_mask(2, 5)))
    for layer in enc.layers:
        layer.mha.min_float = -10.0  # padded keys would get a small weight: not exact any more
    enc(nn.TransformerEncoderInput(x).mask_pad(pad))
    assert calls == []


def test_token_packing_round_trip_and_errors():
    m = np.array([[0, 1, 1], [0, 0, 1]], bool)
    packing = TokenPacking(ember.tensor(m))
    assert (packing.batch, packing.seq, packing.count) == (2, 3, 3)
    assert packing.fraction == pytest.approx(0.5)
    x = ember.randn(2, 3, 4)
    h = packing.pack(x)
    np.testing.assert_array_equal(h.numpy(), x.numpy()[~m])
    back = packing.unpack(h).numpy()
    np.testing.assert_array_equal(back[~m], x.numpy()[~m])
    assert not back[m].any()
    assert packing.span == 2  # column 2 pads both rows
    trailing = TokenPacking(ember.tensor(np.array([[0, 0, 1, 1], [0, 1, 1, 1]], bool)))
    assert trailing.span == 2 and trailing.span_mask.shape == (2, 2)
    y = ember.randn(2, 2, 3)
    np.testing.assert_array_equal(trailing.unpack_span(trailing.pack_span(y)).numpy()[1, 1], 0)
    np.testing.assert_array_equal(trailing.pack_span(y).numpy(), y.numpy()[[0, 0, 1], [0, 1, 0]])
    with pytest.raises(ValueError, match=r"TokenPacking\.unpack: expected a tensor of shape \[3\]"):
        packing.unpack(ember.randn(4, 4))
    with pytest.raises(ValueError, match="TokenPacking: mask_pad must be a \\[batch, seq\\] bool tensor"):
        TokenPacking(ember.zeros(2, 3))


def test_index_add_fast_path_is_exact_and_only_for_unique_rows():
    assert unique_rows(np.array([3, 0, 2]), 4)
    assert not unique_rows(np.array([1, 1]), 4)  # repeats accumulate: np.add.at
    assert not unique_rows(np.array([-1, 2]), 4)
    assert not unique_rows(np.array([[0, 1]]), 4)
    be = ember.Device("reference").backend
    values = np.arange(12.0).reshape(3, 4)
    for rows in (np.array([2, 0, 3]), np.array([1, 1, 3])):
        expected = np.zeros((5, 4))
        np.add.at(expected, rows, values)
        np.testing.assert_array_equal(be.index_add(np.zeros((5, 4)), rows, values), expected)
