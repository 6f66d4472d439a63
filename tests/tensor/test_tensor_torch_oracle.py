"""PyTorch as an independent oracle: forward values and gradients (with the same random seed
gradient) of a broad selection of ops, in float64, on every backend.

Burn and ember fill padded attention scores with -1e4 instead of adding -inf; the SDPA
comparison therefore passes an additive -1e4 mask, which gives the same weights (exp of about
-1e4 underflows to exactly 0 either way) as long as a row keeps one unpadded key.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.torch

RTOL, ATOL = 1e-10, 1e-12


def _check(device, ember_fn, torch_fn, *arrays, seed=0):
    """Run both functions on the same float64 inputs (int arrays are passed as index tensors)
    and compare the outputs and the gradients of every float input."""
    e_in, t_in, diff = [], [], []
    for i, a in enumerate(arrays):
        if a.dtype.kind == "f":
            e_in.append(ember.tensor(a, dtype=ember.float64, device=device).require_grad())
            t_in.append(torch.tensor(a, dtype=torch.float64, requires_grad=True))
            diff.append(i)
        elif a.dtype.kind == "b":
            e_in.append(ember.tensor(a, device=device))
            t_in.append(torch.tensor(a))
        else:
            e_in.append(ember.tensor(a.astype(np.int64), device=device))
            t_in.append(torch.tensor(a.astype(np.int64)))
    e_out = ember_fn(*e_in)
    t_out = torch_fn(*t_in)
    np.testing.assert_allclose(
        e_out.numpy(), t_out.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg="forward differs from torch"
    )
    u = np.random.default_rng(seed).standard_normal(tuple(t_out.shape))
    grads = e_out.backward(ember.tensor(u, dtype=ember.float64, device=device))
    t_grads = torch.autograd.grad(t_out, [t_in[i] for i in diff], torch.tensor(u), allow_unused=True)
    for i, tg in zip(diff, t_grads):
        eg = grads.get(e_in[i])
        want = np.zeros(arrays[i].shape) if tg is None else tg.numpy()
        got = np.zeros(arrays[i].shape) if eg is None else eg.numpy()
        np.testing.assert_allclose(
            got, want, rtol=1e-9, atol=1e-11, err_msg=f"gradient of input {i} differs from torch"
        )


@pytest.fixture
def r():
    return np.random.default_rng(7)


def test_matmul(device, r):
    _check(device, lambda a, b: a @ b, torch.matmul, r.standard_normal((2, 3, 4)), r.standard_normal((4, 5)))
    _check(
        device,
        lambda a, b: a @ b,
        torch.matmul,
        r.standard_normal((2, 1, 3, 4)),
        r.standard_normal((3, 4, 2)),
    )
    _check(device, lambda a, b: a @ b, torch.matmul, r.standard_normal(4), r.standard_normal((2, 4, 3)))


@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax_log_softmax(device, r, dim):
    x = r.standard_normal((3, 4, 5)) * 3
    _check(device, lambda t: ember.softmax(t, dim), lambda t: torch.softmax(t, dim), x)
    _check(device, lambda t: ember.log_softmax(t, dim), lambda t: torch.log_softmax(t, dim), x)


def test_layer_norm(device, r):
    x, g, b = r.standard_normal((2, 3, 6)) * 2, r.standard_normal(6), r.standard_normal(6)
    _check(
        device,
        lambda t, gg, bb: ember.layer_norm(t, gg, bb, eps=1e-5),
        lambda t, gg, bb: F.layer_norm(t, (6,), gg, bb, eps=1e-5),
        x,
        g,
        b,
    )
    _check(device, lambda t: ember.layer_norm(t), lambda t: F.layer_norm(t, (6,)), x)


def test_rms_norm(device, r):
    x, g = r.standard_normal((3, 6)), r.standard_normal(6)
    _check(
        device,
        lambda t, gg: ember.rms_norm(t, gg, eps=1e-5),
        lambda t, gg: F.rms_norm(t, (6,), gg, eps=1e-5),
        x,
        g,
    )


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(device, r, approximate):
    _check(
        device,
        lambda t: ember.gelu(t, approximate),
        lambda t: F.gelu(t, approximate=approximate),
        r.standard_normal((4, 8)) * 3,
    )


def test_activations(device, r):
    x = r.standard_normal((4, 6)) * 2 + 0.01
    _check(device, ember.silu, F.silu, x)
    _check(device, ember.softplus, F.softplus, x)
    _check(device, lambda t: t.sigmoid() * t.erf(), lambda t: torch.sigmoid(t) * torch.erf(t), x)
    _check(device, lambda t: ember.leaky_relu(t, 0.2), lambda t: F.leaky_relu(t, 0.2), x)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_cross_entropy(device, r, smoothing):
    logits, targets = r.standard_normal((6, 5)) * 2, np.array([0, 4, 2, 2, 1, 3])
    _check(
        device,
        lambda z, t: ember.cross_entropy_per_sample(z, t, smoothing),
        lambda z, t: F.cross_entropy(z, t, label_smoothing=smoothing, reduction="none"),
        logits,
        targets,
    )
    _check(
        device,
        lambda z, t: ember.cross_entropy_per_sample(z, t, smoothing).mean(),
        lambda z, t: F.cross_entropy(z, t, label_smoothing=smoothing),
        logits,
        targets,
    )


@pytest.mark.parametrize("masked", [False, True], ids=["nomask", "mask"])
def test_attention_vs_sdpa(device, r, masked):
    b, h, sq, sk, d = 2, 3, 4, 5, 8
    q, k, v = (
        r.standard_normal((b, h, sq, d)),
        r.standard_normal((b, h, sk, d)),
        r.standard_normal((b, h, sk, d)),
    )
    pad = np.zeros((b, sk), dtype=bool)
    if masked:
        pad[0, 3:] = True
        pad[1, 4] = True

    def ours(qq, kk, vv, m):
        return ember.attention(qq, kk, vv, mask_pad=m if masked else None)

    def theirs(qq, kk, vv, m):
        additive = torch.where(m[:, None, None, :], -1.0e4, 0.0).to(torch.float64)
        return F.scaled_dot_product_attention(qq, kk, vv, attn_mask=additive if masked else None)

    _check(device, ours, theirs, q, k, v, pad)


def test_attention_custom_scale_vs_sdpa(device, r):
    q, k, v = (
        r.standard_normal((1, 2, 3, 4)),
        r.standard_normal((1, 2, 6, 4)),
        r.standard_normal((1, 2, 6, 4)),
    )
    _check(
        device,
        lambda a, bb, c: ember.attention(a, bb, c, scale=0.7),
        lambda a, bb, c: F.scaled_dot_product_attention(a, bb, c, scale=0.7),
        q,
        k,
        v,
    )


def test_gather_scatter_index_select(device, r):
    x = r.standard_normal((3, 5))
    idx = r.integers(0, 5, (3, 4))
    _check(device, lambda t, i: ember.gather(t, 1, i), lambda t, i: torch.gather(t, 1, i), x, idx)
    idx0 = r.integers(0, 3, (2, 5))
    _check(device, lambda t, i: t.gather(0, i), lambda t, i: torch.gather(t, 0, i), x, idx0)
    src = r.standard_normal((3, 6))
    sidx = r.integers(0, 5, (3, 6))
    _check(
        device,
        lambda t, i, s: ember.scatter_add(t, 1, i, s),
        lambda t, i, s: t.scatter_add(1, i, s),
        x,
        sidx,
        src,
    )
    sel = np.array([4, 0, 4, 2])
    _check(device, lambda t, i: ember.index_select(t, 1, i), lambda t, i: torch.index_select(t, 1, i), x, sel)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_logsumexp_var_std(device, r, dim):
    x = r.standard_normal((3, 4, 5))
    _check(device, lambda t: t.cumsum(dim), lambda t: torch.cumsum(t, dim), x)
    _check(device, lambda t: t.logsumexp(dim), lambda t: torch.logsumexp(t, dim), x)
    _check(device, lambda t: t.var(dim, keepdim=True), lambda t: torch.var(t, dim, keepdim=True), x)
    _check(device, lambda t: t.std(dim), lambda t: torch.std(t, dim), x)
    _check(device, lambda t: t.var((0, 2), correction=0), lambda t: torch.var(t, (0, 2), correction=0), x)


def test_pad(device, r):
    x = r.standard_normal((2, 3, 4))
    for pads, value in (((1, 2), 0.0), ((0, 1, 2, 0), -3.0), ((1, 1, 1, 1, 1, 1), 0.5)):
        _check(device, lambda t: ember.pad(t, pads, value), lambda t: F.pad(t, pads, value=value), x)


def test_reductions_and_movement(device, r):
    x = r.uniform(0.5, 1.5, (3, 4))
    _check(device, lambda t: t.prod(1), lambda t: torch.prod(t, 1), x)
    _check(device, lambda t: t.max(0), lambda t: torch.amax(t, 0), x)
    _check(device, lambda t: t.repeat(2, 1, 3), lambda t: t.repeat(2, 1, 3), x)
    _check(device, lambda t: t.flip((0, 1)), lambda t: torch.flip(t, (0, 1)), x)
    _check(device, lambda t: ember.stack([t, t * 2], 1), lambda t: torch.stack([t, t * 2], 1), x)
