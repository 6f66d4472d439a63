"""Every backend agrees with ``reference`` on the same inputs: forward values and gradients,
fused kernels included, and dropout masks bit for bit (they share one counter-based hash).

Shapes/dtypes are few on purpose: each distinct (dtype, rank) compiles new Numba code.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.numeric import tol

import ember

FLOATS = [ember.float16, ember.float32, ember.float64]
MASK = np.array([[False, False, True, True, True], [False, False, False, False, False]])


def _qkv(r, queries=3, keys=5):
    """Attention inputs q, k, v drawn in that order: (batch 2, heads 2, length, head dim 8)."""
    return [r.standard_normal((2, 2, n, 8)) for n in (queries, keys, keys)]


def _run(device, fn, arrays, dtype, seed_grad=0):
    """Forward ``fn`` on ``device`` and backward a fixed random seed gradient; returns the
    output and the gradient of every float input, as NumPy arrays."""
    ins, leaves = [], []
    for a in arrays:
        if a.dtype.kind == "f":
            t = ember.tensor(a, dtype=dtype, device=device).require_grad()
            leaves.append(t)
        else:
            t = ember.tensor(a, device=device)
        ins.append(t)
    out = fn(*ins)
    u = np.random.default_rng(seed_grad).standard_normal(out.shape)
    grads = out.backward(ember.tensor(u, dtype=out.dtype, device=device))
    return out.numpy(), [grads.get(t).numpy() if grads.get(t) is not None else None for t in leaves]


def _agree(other, fn, arrays, dtype, scale=1.0):
    rtol, atol = tol(dtype)
    want, want_g = _run("reference", fn, arrays, dtype)
    got, got_g = _run(other, fn, arrays, dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(
        got, want, rtol=rtol, atol=atol * scale, err_msg="forward differs from reference"
    )
    for i, (g, w) in enumerate(zip(got_g, want_g)):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(
                g, w, rtol=rtol, atol=atol * scale, err_msg=f"gradient of input {i} differs from reference"
            )


def _rng():
    return np.random.default_rng(42)


FUSED = {
    "softmax": (lambda x: ember.softmax(x, -1), lambda r: [r.standard_normal((4, 3, 17)) * 3]),
    "softmax_dim1": (lambda x: ember.softmax(x, 1), lambda r: [r.standard_normal((4, 3, 17))]),
    "log_softmax": (lambda x: ember.log_softmax(x, -1), lambda r: [r.standard_normal((4, 3, 17)) * 3]),
    "quiet_softmax": (lambda x: ember.quiet_softmax(x, -1), lambda r: [r.standard_normal((4, 3, 17))]),
    "layer_norm": (lambda x: ember.layer_norm(x), lambda r: [r.standard_normal((4, 3, 32)) * 2 + 1]),
    "layer_norm_affine": (
        lambda x, g, b: ember.layer_norm(x, g, b),
        lambda r: [r.standard_normal((4, 3, 32)) + 1, r.standard_normal(32), r.standard_normal(32)],
    ),
    "rms_norm": (lambda x: ember.rms_norm(x), lambda r: [r.standard_normal((4, 3, 32))]),
    "rms_norm_gamma": (
        lambda x, g: ember.rms_norm(x, g),
        lambda r: [r.standard_normal((4, 3, 32)), r.standard_normal(32)],
    ),
    "gelu": (lambda x: ember.gelu(x), lambda r: [r.standard_normal((4, 3, 32)) * 3]),
    "gelu_tanh": (lambda x: ember.gelu(x, "tanh"), lambda r: [r.standard_normal((4, 3, 32)) * 3]),
    "erf": (lambda x: x.erf(), lambda r: [r.standard_normal((4, 3, 32)) * 2]),
    "cross_entropy": (
        lambda z, t: ember.cross_entropy_per_sample(z, t),
        lambda r: [r.standard_normal((9, 7)) * 3, r.integers(0, 7, 9)],
    ),
    "cross_entropy_smooth": (
        lambda z, t: ember.cross_entropy_per_sample(z, t, 0.1),
        lambda r: [r.standard_normal((9, 7)) * 3, r.integers(0, 7, 9)],
    ),
    "embedding": (
        lambda w, i: ember.embedding(w, i),
        lambda r: [r.standard_normal((11, 8)), r.integers(0, 11, (3, 5))],
    ),
    "attention": (
        lambda q, k, v: ember.attention(q, k, v),
        _qkv,
    ),
    "attention_mask": (
        lambda q, k, v, m: ember.attention(q, k, v, mask_pad=m),
        lambda r: [*_qkv(r), MASK],
    ),
    "attention_quiet_mask": (
        lambda q, k, v, m: ember.attention(q, k, v, mask_pad=m, quiet=True),
        lambda r: [*_qkv(r), MASK],
    ),
    "attention_long": (
        lambda q, k, v, m: ember.attention(q, k, v, mask_pad=m, quiet=True),
        lambda r: [
            *_qkv(r, queries=70, keys=70),
            np.arange(140).reshape(2, 70) % 9 == 0,
        ],
    ),
    # non-contiguous and broadcast (stride-0) inputs, as multi-head attention produces them
    "softmax_broadcast": (
        lambda x: ember.softmax(x.expand(3, 4, 17), -1),
        lambda r: [r.standard_normal((1, 4, 17))],
    ),
    "layer_norm_strided": (
        lambda x, g, b: ember.layer_norm(x.transpose(0, 2), g, b),
        lambda r: [r.standard_normal((32, 3, 4)), r.standard_normal(32), r.standard_normal(32)],
    ),
    "rms_norm_strided": (lambda x: ember.rms_norm(x[:, ::2]), lambda r: [r.standard_normal((4, 6, 32))]),
    "gelu_strided": (
        lambda x: ember.gelu(x.T, "tanh") + ember.gelu(x.T),
        lambda r: [r.standard_normal((32, 12)) * 2],
    ),
    "cross_entropy_strided": (
        lambda z, t: ember.cross_entropy_per_sample(z.T, t, 0.2),
        lambda r: [r.standard_normal((7, 9)) * 3, r.integers(0, 7, 9)],
    ),
    "embedding_strided_ids": (
        lambda w, i: ember.embedding(w, i.T),
        lambda r: [r.standard_normal((11, 8)), r.integers(0, 11, (5, 3))],
    ),
    "attention_heads_split": (
        lambda q, k, v, m: ember.attention(
            q.swap_dims(1, 2), k.swap_dims(1, 2), v.swap_dims(1, 2), mask_pad=m
        ),
        lambda r: [
            r.standard_normal((2, 3, 2, 8)),
            r.standard_normal((2, 5, 2, 8)),
            r.standard_normal((2, 5, 2, 8)),
            MASK,
        ],
    ),
}

PRIMITIVES = {
    "arith": (
        lambda a, b: (a * b + a / (b.abs() + 1) - b**2).exp(),
        lambda r: [r.standard_normal((3, 1, 5)), r.standard_normal((4, 5)) * 0.5],
    ),
    "unary_chain": (
        lambda a: a.tanh().sigmoid().log1p().sqrt() + a.sin() * a.cos() + ember.silu(a) + ember.softplus(a),
        lambda r: [r.standard_normal((6, 7))],
    ),
    "reductions": (
        lambda a: a.sum(1) + a.mean(1) + a.var(1) + a.max(1) + a.logsumexp(1) + a.std(1),
        lambda r: [r.standard_normal((5, 9))],
    ),
    "matmul": (lambda a, b: a @ b, lambda r: [r.standard_normal((2, 3, 16)), r.standard_normal((16, 4))]),
    "indexing": (
        lambda a, i: a.gather(1, i) + a[:, 1:5] + a.index_select(1, i[0]),
        lambda r: [r.standard_normal((3, 6)), r.integers(0, 6, (3, 4))],
    ),
    "movement": (
        lambda a: ember.cat([a.T, a.flip(1).T], 0).pad((1, 1)).cumsum(0),
        lambda r: [r.standard_normal((3, 4))],
    ),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(FUSED))
def test_fused_ops_agree_with_reference(other_device, name, dtype):
    fn, make = FUSED[name]
    _agree(other_device, fn, make(_rng()), dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(PRIMITIVES))
def test_primitives_agree_with_reference(other_device, name, dtype):
    fn, make = PRIMITIVES[name]
    _agree(other_device, fn, make(_rng()), dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_dropout_masks_bit_identical(other_device, dtype):
    x = _rng().standard_normal((7, 33)).astype(dtype.numpy)
    ref = ember.tensor(x, device="reference")
    oth = ember.tensor(x, device=other_device)
    rb, ob = ref.device.backend, oth.device.backend
    for p, seed in ((0.1, 1), (0.5, 2**40 + 3), (0.8, 2**63 - 25)):
        want = np.asarray(rb.dropout(ref._data, p, seed))
        got = np.asarray(ob.to_host(ob.dropout(oth._data, p, seed)))
        np.testing.assert_array_equal(got == 0, want == 0)
        np.testing.assert_allclose(got, want, rtol=tol(dtype)[0], atol=0)
        back = np.asarray(ob.to_host(ob.dropout_backward(oth._data, p, seed)))
        np.testing.assert_array_equal(back == 0, want == 0)
    # through the public op: the same ember.seed gives the same mask on both backends
    ember.seed(77)
    a = ember.dropout(ref, 0.3).numpy()
    ember.seed(77)
    b = ember.dropout(oth, 0.3).numpy()
    np.testing.assert_array_equal(a == 0, b == 0)
    np.testing.assert_allclose(b, a, rtol=tol(dtype)[0])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("quiet", [False, True], ids=["softmax", "quiet"])
def test_attention_dropout_agrees(other_device, quiet, dtype):
    r = _rng()
    arrays = [
        r.standard_normal((2, 2, 3, 8)),
        r.standard_normal((2, 2, 5, 8)),
        r.standard_normal((2, 2, 5, 8)),
        MASK,
    ]

    def fn(q, k, v, m):
        ember.seed(1234)
        return ember.attention(q, k, v, mask_pad=m, quiet=quiet, dropout_p=0.2)

    _agree(other_device, fn, arrays, dtype)


def test_random_numbers_follow_the_seed_on_each_backend(other_device):
    for dev in ("reference", other_device):
        ember.seed(5)
        a = ember.randn(50, device=dev).numpy()
        ember.seed(5)
        np.testing.assert_array_equal(ember.randn(50, device=dev).numpy(), a)
