"""TransformerEncoder.forward_first_token: the last layer computes position 0 only. Its output
and every gradient equal those of ``forward(...)[:, 0]``, packed or not, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.gradcheck import check_grads, params64

import ember
from ember import nn
from ember.nn.token_packing import TokenPacking

B, S, D = 4, 7, 16


def _masks():
    """Padding masks by name: none, random lengths, position 0 padded (left padding), every
    position real, every position padded."""
    lengths = np.array([7, 3, 1, 5])
    ragged = np.arange(S)[None, :] >= lengths[:, None]
    left = ragged.copy()
    left[3, :2] = True
    return {
        "none": None,
        "ragged": ragged,
        "left": left,
        "full": np.zeros((B, S), bool),
        "empty": np.ones((B, S), bool),
    }


def _grads(enc, x, mask, first: bool):
    xx = x.require_grad()
    inp = nn.TransformerEncoderInput(xx)
    if mask is not None:
        inp = inp.mask_pad(ember.tensor(mask, device=x.device))
    y = enc.forward_first_token(inp) if first else enc(inp)[:, 0]
    w = np.random.default_rng(1).standard_normal(y.shape)
    grads = (y * ember.tensor(w, dtype=y.dtype, device=y.device)).sum().backward()
    params = {p: grads.get(t) for p, t in enc.named_parameters()}
    return y.numpy(), {p: g.numpy() for p, g in params.items() if g is not None}, grads.get(xx).numpy()


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("quiet", [False, True])
@pytest.mark.parametrize("mask_name", list(_masks()))
def test_first_token_equals_the_whole_encoders_position_0(device, norm_first, quiet, mask_name):
    dev = ember.Device(device)
    ember.seed(0)
    enc = nn.TransformerEncoderConfig(D, 32, 4, 3, dropout=0.0, norm_first=norm_first, quiet_softmax=quiet)
    enc = enc.init(dev, ember.float64)
    x = ember.randn(B, S, D, dtype=ember.float64, device=dev)
    mask = _masks()[mask_name]
    y_first, g_first, gx_first = _grads(enc, x, mask, first=True)
    y_all, g_all, gx_all = _grads(enc, x, mask, first=False)
    assert y_first.shape == (B, D)
    np.testing.assert_allclose(y_first, y_all, rtol=1e-12, atol=1e-12)
    assert g_first.keys() == g_all.keys()
    for path in g_all:
        np.testing.assert_allclose(g_first[path], g_all[path], rtol=1e-10, atol=1e-12, err_msg=path)
    np.testing.assert_allclose(gx_first, gx_all, rtol=1e-10, atol=1e-12)


def test_without_token_packing_padded_positions_are_computed_as_forward_does():
    ember.seed(0)
    enc = nn.TransformerEncoderConfig(D, 32, 4, 2, dropout=0.0).init(dtype=ember.float64)
    enc.skip_padding = False
    x = ember.randn(B, S, D, dtype=ember.float64)
    inp = nn.TransformerEncoderInput(x).mask_pad(ember.tensor(_masks()["left"]))
    want = enc(inp)[:, 0].numpy()
    assert np.abs(want[3]).sum() > 0  # Burn's semantics: a padded position is computed too
    np.testing.assert_allclose(enc.forward_first_token(inp).numpy(), want, rtol=1e-12, atol=1e-12)


def test_the_last_layer_computes_position_0_only(monkeypatch):
    """The feed-forward of the last layer sees one row per sequence; the others see them all."""
    seen = []
    original = nn.PositionWiseFeedForward.forward

    def spy(self, x):
        seen.append(int(np.prod(x.shape[:-1])))
        return original(self, x)

    monkeypatch.setattr(nn.PositionWiseFeedForward, "forward", spy)
    enc = nn.TransformerEncoderConfig(D, 32, 4, 3, dropout=0.0).init()
    x = ember.randn(B, S, D)
    enc.forward_first_token(nn.TransformerEncoderInput(x))
    assert seen == [B * S, B * S, B]
    seen.clear()
    mask = _masks()["ragged"]
    enc.forward_first_token(nn.TransformerEncoderInput(x).mask_pad(ember.tensor(mask)))
    assert seen == [int((~mask).sum())] * 2 + [B]  # packed real tokens, then one row each


def test_an_attention_mask_or_no_layer_computes_every_position():
    enc = nn.TransformerEncoderConfig(D, 32, 4, 2, dropout=0.0).init(dtype=ember.float64)
    x = ember.randn(2, 5, D, dtype=ember.float64)
    inp = nn.TransformerEncoderInput(x).mask_attn(nn.generate_autoregressive_mask(2, 5))
    np.testing.assert_allclose(enc.forward_first_token(inp).numpy(), enc(inp)[:, 0].numpy(), rtol=1e-12)
    empty = nn.TransformerEncoderConfig(D, 32, 4, 0).init(dtype=ember.float64)
    np.testing.assert_array_equal(empty.forward_first_token(x).numpy(), x.numpy()[:, 0])


def test_first_token_gradients_against_finite_differences():
    ember.seed(0)
    enc = nn.TransformerEncoderConfig(8, 16, 2, 2, dropout=0.0, norm_first=True).init()
    params = params64(enc)
    x = ember.randn(3, 5, 8, dtype=ember.float64).require_grad()
    mask = ember.tensor(np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0], [1, 0, 0, 0, 1]], bool))
    w = ember.tensor(np.random.default_rng(2).standard_normal((3, 8)))

    def loss():
        return (enc.forward_first_token(nn.TransformerEncoderInput(x).mask_pad(mask)) * w).sum()

    check_grads(loss, [x, *params], n_dirs=2)


def test_token_packing_firsts():
    m = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 1]], bool)
    packing = TokenPacking(ember.tensor(m))
    x = ember.randn(3, 3, 2)
    firsts = packing.firsts(packing.pack(x)).numpy()
    assert firsts.shape == (3, 1, 2)
    np.testing.assert_array_equal(firsts[[0, 2], 0], x.numpy()[[0, 2], 0])
    assert not firsts[1].any()  # position 0 of row 1 is padding
    with pytest.raises(ValueError, match=r"TokenPacking\.firsts: expected a tensor of shape \[5\]"):
        packing.firsts(ember.randn(3, 2))
