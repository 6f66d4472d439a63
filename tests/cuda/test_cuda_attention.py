"""The fused attention kernels against a materialised NumPy attention (float64).

Covers every head-dimension specialisation (Dh padded to 32, 64, 128), Sq != Sk, tiles
that straddle the sequence ends, padding masks, quiet softmax and dropout on the
pre-softmax scores, forward and backward, in float32, float16 and float64.
"""

from __future__ import annotations

import contextlib
import math
import types

import cuda_host_emulator
import numpy as np
import pytest
from cuda_numpy_reference import DTYPES, assert_close, keep_mask, rounded

from ember.kernels import cuda as K

RNG = np.random.default_rng(77)


def _on_device(xp, *arrays):
    """The host arrays ``arrays`` on the device under test, in order."""
    return [xp.asarray(a) for a in arrays]


def _scores(q, k, mask, scale, p, seed):
    s = q @ np.swapaxes(k, -1, -2) * scale
    if p > 0:
        keep = keep_mask(s.size, p, seed).reshape(s.shape)
        s = np.where(keep, s * (1.0 / (1.0 - p)), 0.0)
    else:
        keep = np.ones(s.shape, dtype=bool)
    if mask is not None:
        s = np.where(mask[:, None, None, :], -1.0e4, s)
    return s, keep


def attention_ref(q, k, v, mask, scale, quiet, p, seed):
    s, _ = _scores(q, k, mask, scale, p, seed)
    m = s.max(-1, keepdims=True)
    if quiet:
        m = np.maximum(m, 0.0)
        lse = m + np.log(np.exp(s - m).sum(-1, keepdims=True) + np.exp(-m))
    else:
        lse = m + np.log(np.exp(s - m).sum(-1, keepdims=True))
    w = np.exp(s - lse)
    return w @ v, lse[..., 0]


def attention_backward_ref(dout, q, k, v, out, lse, mask, scale, p, seed):
    s, keep = _scores(q, k, mask, scale, p, seed)
    w = np.exp(s - lse[..., None])
    dv = np.swapaxes(w, -1, -2) @ dout
    dw = dout @ np.swapaxes(v, -1, -2)
    ds = w * (dw - (dout * out).sum(-1, keepdims=True))
    if mask is not None:
        ds = np.where(mask[:, None, None, :], 0.0, ds)
    if p > 0:
        ds = np.where(keep, ds * (1.0 / (1.0 - p)), 0.0)
    ds = ds * scale
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, dv


# (B, H, Sq, Sk, Dh, masked, quiet, dropout_p)
CASES = [
    (2, 2, 37, 45, 40, True, False, 0.0),  # Dh 40 -> 64, two key tiles, partial last tile
    (1, 3, 20, 33, 16, True, True, 0.2),  # Dh 16 -> 32, quiet, dropout, mask
    (2, 1, 9, 70, 100, False, True, 0.0),  # Dh 100 -> 128 (4 threads per row)
    (1, 2, 33, 17, 32, True, False, 0.5),  # Sq > Sk, 32 = Dh exactly
    (1, 1, 130, 5, 64, False, False, 0.0),  # more query rows than one block holds
]


def _inputs(b, h, sq, sk, dh, masked, dtype):
    q, q64 = rounded(RNG.standard_normal((b, h, sq, dh)), dtype)
    k, k64 = rounded(RNG.standard_normal((b, h, sk, dh)), dtype)
    v, v64 = rounded(RNG.standard_normal((b, h, sk, dh)), dtype)
    mask = None
    if masked:
        mask = RNG.random((b, sk)) < 0.3
        mask[:, 0] = False  # keep one real key per row (an all-masked row is tested apart)
    return (q, q64), (k, k64), (v, v64), mask


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "case",
    CASES,
    ids=lambda c: (
        "x".join(str(int(a)) for a in c[:5])
        + ("-mask" if c[5] else "")
        + ("-quiet" if c[6] else "")
        + (f"-p{c[7]}" if c[7] else "")
    ),
)
def test_attention_forward_and_backward(xp, dtype, case):
    b, h, sq, sk, dh, masked, quiet, p = case
    seed = 2024
    scale = 1.0 / math.sqrt(dh)
    (q, q64), (k, k64), (v, v64), mask = _inputs(b, h, sq, sk, dh, masked, dtype)
    dev_mask = None if mask is None else xp.asarray(mask)
    out, lse = K.attention(*_on_device(xp, q, k, v), dev_mask, scale, quiet, p, seed)
    out_ref, lse_ref = attention_ref(q64, k64, v64, mask, scale, quiet, p, seed)
    assert out.shape == (b, h, sq, dh) and out.dtype == dtype
    assert lse.shape == (b, h, sq)
    assert lse.dtype == np.float64  # wider than float32: a fully masked row's lse needs it
    assert_close(xp.asnumpy(out), out_ref, dtype, what="attention out")
    assert_close(
        xp.asnumpy(lse), lse_ref, np.float32 if dtype == np.float16 else dtype, scale=10, what="attention lse"
    )

    dout, dout64 = rounded(RNG.standard_normal((b, h, sq, dh)), dtype)
    dq, dk, dv = K.attention_backward(
        *_on_device(xp, dout, q, k, v), out, lse, dev_mask, scale, quiet, p, seed
    )
    out_used = xp.asnumpy(out).astype(np.float64)  # the backward sees the kernel's own out
    dq_ref, dk_ref, dv_ref = attention_backward_ref(
        dout64, q64, k64, v64, out_used, lse_ref, mask, scale, p, seed
    )
    for name, got, want in (("dq", dq, dq_ref), ("dk", dk, dk_ref), ("dv", dv, dv_ref)):
        assert got.dtype == dtype
        assert_close(xp.asnumpy(got), want, dtype, scale=4, what=f"attention {name}")


def test_attention_fully_masked_rows_are_uniform(xp):
    # Every key padded: all scores are -1e4, so the weights are uniform (not NaN).
    b, h, sq, sk, dh = 1, 2, 5, 7, 8
    q = RNG.standard_normal((b, h, sq, dh)).astype(np.float32)
    k = RNG.standard_normal((b, h, sk, dh)).astype(np.float32)
    v = RNG.standard_normal((b, h, sk, dh)).astype(np.float32)
    mask = np.ones((b, sk), dtype=bool)
    out, _ = K.attention(*_on_device(xp, q, k, v), xp.asarray(mask), 0.5, False, 0.0, 0)
    want = np.broadcast_to(v.mean(2, keepdims=True), out.shape)
    np.testing.assert_allclose(xp.asnumpy(out), want, rtol=2e-3, atol=2e-3)


def test_attention_ag_news_size(xp):
    """B=32, H=4, S=256, Dh=32 with mask, quiet softmax and dropout, as in the AG News run."""
    if getattr(xp, "__name__", "") != "cupy":
        pytest.skip("too large for the CPU emulator; runs on the GPU")
    b, h, s, dh = 32, 4, 256, 32
    (q, q64), (k, k64), (v, v64), mask = _inputs(b, h, s, s, dh, True, np.float32)
    q_dev, k_dev, v_dev, mask_dev = _on_device(xp, q, k, v, mask)
    out, lse = K.attention(q_dev, k_dev, v_dev, mask_dev, dh**-0.5, True, 0.1, 5)
    out_ref, lse_ref = attention_ref(q64, k64, v64, mask, dh**-0.5, True, 0.1, 5)
    assert_close(xp.asnumpy(out), out_ref, np.float32, what="out")
    dout = RNG.standard_normal(q.shape).astype(np.float32)
    grads = K.attention_backward(
        xp.asarray(dout), q_dev, k_dev, v_dev, out, lse, mask_dev, dh**-0.5, True, 0.1, 5
    )
    refs = attention_backward_ref(
        dout.astype(np.float64),
        q64,
        k64,
        v64,
        xp.asnumpy(out).astype(np.float64),
        lse_ref,
        mask,
        dh**-0.5,
        0.1,
        5,
    )
    for got, want in zip(grads, refs):
        assert_close(xp.asnumpy(got), want, np.float32, scale=4, what="grad")


def test_attention_rejects_bad_input(xp):
    q = xp.asarray(np.zeros((1, 2, 3, 8), np.float32))
    k = xp.asarray(np.zeros((1, 2, 4, 8), np.float32))
    with pytest.raises(ValueError, match=r"attention: expected k and v of shape"):
        K.attention(q, k, xp.asarray(np.zeros((1, 2, 5, 8), np.float32)), None, 1.0, False, 0.0, 0)
    with pytest.raises(ValueError, match=r"mask_pad must have shape \(B=1, Sk=4\)"):
        K.attention(q, k, k, xp.asarray(np.zeros((1, 3), bool)), 1.0, False, 0.0, 0)
    with pytest.raises(TypeError, match="mask_pad must be bool"):
        K.attention(q, k, k, xp.asarray(np.zeros((1, 4), np.float32)), 1.0, False, 0.0, 0)
    big = xp.asarray(np.zeros((1, 1, 2, 160), np.float32))
    with pytest.raises(ValueError, match="head dimension Dh=160 is not supported"):
        K.attention(big, big, big, None, 1.0, False, 0.0, 0)


# ---- the cuda backend falls back to the composed attention outside the kernels' limits ----------
class _EmulatedCupy(types.ModuleType):
    """The emulator's CuPy stand-in, completed with NumPy for everything the cuda backend's
    primitives call (``xp.exp``, ``xp.matmul``...) and with the device, memory-pool and
    random calls of its constructor, so that a whole ``CudaBackend`` runs on the CPU."""

    def __init__(self, fake):
        super().__init__("emulated_cupy")
        self.__dict__.update(vars(fake))
        self.cuda = types.SimpleNamespace(
            Device=lambda *a: _EmulatedDevice(),
            runtime=types.SimpleNamespace(getDeviceCount=lambda: 1, memGetInfo=lambda: (0, 0)),
            set_allocator=lambda malloc: None,
            memory=types.SimpleNamespace(OutOfMemoryError=MemoryError),
        )
        self.get_default_memory_pool = lambda: types.SimpleNamespace(
            malloc=lambda n: None, free_all_blocks=lambda: None, total_bytes=lambda: 0
        )
        self.random = np.random

    def __getattr__(self, name):
        return getattr(np, name)


class _EmulatedDevice(contextlib.nullcontext):
    id = 0

    def use(self):
        return None


@pytest.fixture
def emulated_cuda(emulated_cupy, monkeypatch):
    """A ``CudaBackend`` on the CPU emulator, standing in for device ``cuda:0`` in this test."""
    from ember.kernels import registry
    from ember.kernels.cuda import runtime
    from ember.kernels.cuda.backend import CudaBackend
    from ember.tensor.device import as_device

    monkeypatch.setattr(runtime, "_probe_result", (_EmulatedCupy(emulated_cupy), None))
    monkeypatch.setenv("CUPY_TF32", "0")
    backend = CudaBackend(0, seed=0)
    monkeypatch.setitem(registry._BACKENDS, ("cuda", 0), backend)
    monkeypatch.setattr(as_device("cuda"), "_backend", None)
    return backend


def _attention_launches(name: str) -> int:
    """Launches so far of the emulated kernel ``name`` (any template instantiation)."""
    return sum(
        k.launches
        for m in cuda_host_emulator.EmulatedRawModule.instances
        for key, k in m.kernels.items()
        if key.split("<")[0] == name
    )


# (B, H, Sq, Sk, Dh, mask, quiet, dropout_p, scale): outside the kernels' limits, and one inside
FALLBACK_CASES = {
    "head_dim_256": (1, 2, 3, 4, 256, "some", False, 0.0, None),
    "head_dim_160_quiet_dropout": (2, 1, 2, 3, 160, "some", True, 0.25, None),
    "zero_keys": (2, 2, 3, 0, 8, None, False, 0.0, None),
    "zero_keys_quiet": (1, 2, 3, 0, 8, "some", True, 0.0, None),
    "infinite_scale": (1, 1, 2, 3, 8, None, False, 0.0, math.inf),
    "fully_masked_rows_fused": (2, 2, 3, 5, 8, "all", False, 0.0, None),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf * 0 in the infinite-scale case
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
@pytest.mark.parametrize("name", list(FALLBACK_CASES))
def test_backend_attention_falls_back_outside_the_kernel_limits(emulated_cuda, name, dtype):
    from ember.kernels.reference import ReferenceBackend

    b, h, sq, sk, dh, masked, quiet, p, scale = FALLBACK_CASES[name]
    scale = 1.0 / math.sqrt(dh) if scale is None else scale
    q = RNG.standard_normal((b, h, sq, dh)).astype(dtype)
    k = RNG.standard_normal((b, h, sk, dh)).astype(dtype)
    v = RNG.standard_normal((b, h, sk, dh)).astype(dtype)
    mask = None if masked is None else RNG.random((b, sk)) < 0.4
    if masked == "all":
        mask[0] = True  # every key of batch 0 padded: its rows average the values
    dout = RNG.standard_normal((b, h, sq, dh)).astype(dtype)
    fused_before = _attention_launches("attention_fwd")
    out, lse = emulated_cuda.attention(q, k, v, mask, scale, quiet, p, 99)
    grads = emulated_cuda.attention_backward(dout, q, k, v, out, lse, mask, scale, quiet, p, 99)
    assert (_attention_launches("attention_fwd") > fused_before) == (name == "fully_masked_rows_fused")

    ref = ReferenceBackend()
    want, want_lse = ref.attention(q, k, v, mask, scale, quiet, p, 99)
    want_grads = ref.attention_backward(dout, q, k, v, want, want_lse, mask, scale, quiet, p, 99)
    assert out.dtype == dtype and out.shape == (b, h, sq, dh)
    np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), **_tol(dtype), equal_nan=True)
    for what, got, exp in zip(("dq", "dk", "dv"), grads, want_grads):
        assert got.dtype == dtype and got.shape == exp.shape, what
        np.testing.assert_allclose(
            got.astype(np.float64), exp.astype(np.float64), **_tol(dtype), equal_nan=True, err_msg=what
        )


def _tol(dtype):
    return {"rtol": 2e-3, "atol": 2e-3} if dtype == np.float16 else {"rtol": 1e-5, "atol": 1e-6}


def test_multi_head_attention_with_256_wide_heads_trains_on_cuda_as_on_cpu(emulated_cuda):
    """Issue 11: ``MultiHeadAttentionConfig(d_model=512, n_heads=2)`` trained on cpu but raised
    on cuda (head dim 256 > 128). Forward and every gradient now match cpu, dropout on."""
    import ember
    from ember import nn

    ember.seed(11)
    mha = nn.MultiHeadAttentionConfig(512, 2, dropout=0.1).init("cpu")
    on_cuda = mha.fork("cuda")
    x = RNG.standard_normal((2, 3, 512)).astype(np.float32)
    pad = np.array([[False, False, True], [True, True, True]])  # batch 1: every key padded

    def run(module, device):
        inp = ember.tensor(x, device=device).require_grad()
        ember.seed(5)  # the same dropout seed on both devices
        out = module(inp, mask_pad=ember.tensor(pad, device=device)).context
        grads = (out * out).sum().backward()
        params = {path: grads.get(p.value).numpy() for path, p in module.named_parameters()}
        return out.numpy(), grads.get(inp).numpy(), params

    want, want_dx, want_params = run(mha, "cpu")
    got, got_dx, got_params = run(on_cuda, "cuda")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_dx, want_dx, rtol=1e-4, atol=1e-5)
    assert got_params.keys() == want_params.keys()
    for path in want_params:
        np.testing.assert_allclose(got_params[path], want_params[path], rtol=1e-4, atol=1e-4, err_msg=path)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_backend_norms_over_an_empty_axis_fall_back(emulated_cuda, dtype):
    # the norm kernels reject an empty normalised axis; reference gives empty results
    from ember.kernels.reference import ReferenceBackend

    ref = ReferenceBackend()
    x = np.zeros((3, 0), dtype)
    gamma, beta = np.zeros(0, dtype), np.zeros(0, dtype)
    for name, args in (("layer_norm", (x, gamma, beta, 1e-5)), ("rms_norm", (x, gamma, 1e-5))):
        got, want = getattr(emulated_cuda, name)(*args), getattr(ref, name)(*args)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, name
    y, mean, rstd = emulated_cuda.layer_norm(x, gamma, beta, 1e-5)
    dx, dgamma, dbeta = emulated_cuda.layer_norm_backward(y, x, mean, rstd, gamma)
    assert dx.shape == (3, 0) and dgamma.shape == (0,) and dbeta.shape == (0,)
    y, rstd = emulated_cuda.rms_norm(x, gamma, 1e-5)
    dx, dgamma = emulated_cuda.rms_norm_backward(y, x, rstd, gamma)
    assert dx.shape == (3, 0) and dgamma.shape == (0,)
