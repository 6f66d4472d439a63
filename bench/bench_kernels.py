"""Matmul and every fused kernel of the backend contract at the AG News model's sizes, on each
backend (ember-cpu, ember-reference = the op composed from NumPy) and PyTorch when installed.

Kernels are timed at the backend level (one call on ready arrays), forward and backward.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from sizes import BATCH, D_FF, D_MODEL, HEAD_DIM, HEADS, SEQ, VOCAB

import ember

try:
    import torch
except ImportError:  # the torch columns are simply absent
    torch = None

IMPLS = ["ember-cpu", "numpy"] + (["torch"] if torch is not None else [])
RNG = np.random.default_rng(0)


def _backend(impl):
    return ember.Device("cpu" if impl == "ember-cpu" else "reference").backend


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _by_direction(direction, forward, backward):
    """The call an ember benchmark times: ``forward`` for ``"fwd"``, else ``backward``."""
    return forward if direction == "fwd" else backward


def _torch_timed(direction, forward, inputs, grad_output):
    """What a PyTorch benchmark times: ``forward`` itself, or the gradient of its output (computed
    once, here) with respect to ``inputs`` for ``grad_output``."""
    if direction == "fwd":
        return forward
    out = forward()
    return lambda: torch.autograd.grad(out, inputs, torch.from_numpy(grad_output), retain_graph=True)


def _run(benchmark, group, impl, fn):
    benchmark.group = group
    benchmark.extra_info["impl"] = impl
    fn()  # warm-up (JIT compilation, caches)
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    # sub-millisecond kernels: several calls per round so timer and scheduler noise average out
    iterations = max(1, min(50, int(2e-3 / max(once, 1e-6))))
    benchmark.pedantic(fn, rounds=15, iterations=iterations, warmup_rounds=2)


@pytest.mark.parametrize("impl", IMPLS)
def bench_matmul(benchmark, impl):
    a, b = _f32(BATCH * SEQ, D_MODEL), _f32(D_MODEL, D_FF)
    if impl == "torch":
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        fn = lambda: ta @ tb
    else:
        be = _backend(impl)
        fn = lambda: be.matmul(a, b)
    _run(benchmark, f"matmul [{BATCH * SEQ},{D_MODEL}]x[{D_MODEL},{D_FF}]", impl, fn)


def _bench_softmax_like(benchmark, impl, direction, op, x, torch_graph_in_fwd):
    """``op`` (softmax or log_softmax: the last axis, backward from the output) on ``x``; PyTorch's
    forward records its graph only with ``torch_graph_in_fwd``."""
    dy = _f32(*x.shape)
    if impl == "torch":
        torch_op = getattr(torch, op)
        tx = torch.from_numpy(x).requires_grad_(torch_graph_in_fwd or direction == "bwd")
        fn = _torch_timed(direction, lambda: torch_op(tx, -1), tx, dy)
    else:
        be = _backend(impl)
        forward, backward = getattr(be, op), getattr(be, f"{op}_backward")
        y = forward(x)
        fn = _by_direction(direction, lambda: forward(x), lambda: backward(y, dy))
    _run(benchmark, f"{op} {direction} [{x.shape[0]},{x.shape[1]}]", impl, fn)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def bench_softmax(benchmark, impl, direction):
    x = _f32(BATCH * HEADS * SEQ, SEQ)
    _bench_softmax_like(benchmark, impl, direction, "softmax", x, torch_graph_in_fwd=False)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def bench_log_softmax(benchmark, impl, direction):
    x = _f32(BATCH * SEQ, D_MODEL)
    _bench_softmax_like(benchmark, impl, direction, "log_softmax", x, torch_graph_in_fwd=True)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def bench_layer_norm(benchmark, impl, direction):
    x, g, b = _f32(BATCH, SEQ, D_MODEL), _f32(D_MODEL), _f32(D_MODEL)
    dy = _f32(*x.shape)
    if impl == "torch":
        tx, tg, tb = (torch.from_numpy(a).requires_grad_(True) for a in (x, g, b))
        fn = _torch_timed(
            direction, lambda: torch.nn.functional.layer_norm(tx, (D_MODEL,), tg, tb, 1e-5), (tx, tg, tb), dy
        )
    else:
        be = _backend(impl)
        _, mean, rstd = be.layer_norm(x, g, b, 1e-5)
        fn = _by_direction(
            direction,
            lambda: be.layer_norm(x, g, b, 1e-5),
            lambda: be.layer_norm_backward(dy, x, mean, rstd, g),
        )
    _run(benchmark, f"layer_norm {direction} [{BATCH},{SEQ},{D_MODEL}]", impl, fn)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("direction", ["fwd", "bwd"])
@pytest.mark.parametrize("approximate", [False, True], ids=["erf", "tanh"])
def bench_gelu(benchmark, impl, direction, approximate):
    x, dy = _f32(BATCH, SEQ, D_FF), _f32(BATCH, SEQ, D_FF)
    if impl == "torch":
        mode = "tanh" if approximate else "none"
        tx = torch.from_numpy(x).requires_grad_(True)
        fn = _torch_timed(direction, lambda: torch.nn.functional.gelu(tx, approximate=mode), tx, dy)
    else:
        be = _backend(impl)
        fn = _by_direction(
            direction, lambda: be.gelu(x, approximate), lambda: be.gelu_backward(x, dy, approximate)
        )
    kind = "tanh" if approximate else "erf"
    _run(benchmark, f"gelu-{kind} {direction} [{BATCH},{SEQ},{D_FF}]", impl, fn)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def bench_cross_entropy(benchmark, impl, direction):
    n, c = 256, VOCAB  # a vocabulary-sized softmax: the AG News head itself is only [32, 4]
    logits = _f32(n, c)
    targets = RNG.integers(0, c, n).astype(np.int64)
    dloss = np.full(n, 1.0 / n, np.float32)
    if impl == "torch":
        tl, tt = torch.from_numpy(logits).requires_grad_(True), torch.from_numpy(targets)
        fn = _torch_timed(
            direction, lambda: torch.nn.functional.cross_entropy(tl, tt, reduction="none"), tl, dloss
        )
    else:
        be = _backend(impl)
        _, lse = be.cross_entropy(logits, targets, 0.0)
        fn = _by_direction(
            direction,
            lambda: be.cross_entropy(logits, targets, 0.0),
            lambda: be.cross_entropy_backward(logits, targets, lse, dloss, 0.0),
        )
    _run(benchmark, f"cross_entropy {direction} [{n},{c}]", impl, fn)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def bench_embedding(benchmark, impl, direction):
    w = _f32(VOCAB, D_MODEL)
    ids = RNG.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int64)
    dout = _f32(BATCH, SEQ, D_MODEL)
    if impl == "torch":
        tw, tids = torch.from_numpy(w).requires_grad_(True), torch.from_numpy(ids)
        fn = _torch_timed(direction, lambda: torch.nn.functional.embedding(tids, tw), tw, dout)
    else:
        be = _backend(impl)
        fn = _by_direction(
            direction, lambda: be.embedding(w, ids), lambda: be.embedding_backward(dout, ids, VOCAB)
        )
    _run(benchmark, f"embedding {direction} [{VOCAB},{D_MODEL}] ids [{BATCH},{SEQ}]", impl, fn)


@pytest.mark.parametrize("impl", IMPLS)
def bench_dropout(benchmark, impl):
    x = _f32(BATCH, SEQ, D_FF)
    if impl == "torch":
        tx = torch.from_numpy(x)
        fn = lambda: torch.nn.functional.dropout(tx, 0.1, training=True)
    else:
        be = _backend(impl)
        fn = lambda: be.dropout(x, 0.1, 1234)
    _run(benchmark, f"dropout fwd p=0.1 [{BATCH},{SEQ},{D_FF}]", impl, fn)


def _heads(x):
    """[B, S, H, D] memory as its [B, H, S, D] view: the heads split off a projection, as
    multi-head attention (ember's and PyTorch's) hands them to the kernel."""
    return x.transpose(0, 2, 1, 3)


def _attn_inputs():
    q, k, v = (_heads(_f32(BATCH, SEQ, HEADS, HEAD_DIM)) for _ in range(3))
    lengths = RNG.integers(SEQ // 4, SEQ + 1, BATCH)
    mask = np.arange(SEQ)[None, :] >= lengths[:, None]
    return q, k, v, mask


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("direction", ["fwd", "bwd"])
def bench_attention(benchmark, impl, direction):
    q, k, v, mask = _attn_inputs()
    dout = _heads(_f32(BATCH, SEQ, HEADS, HEAD_DIM))
    scale = 1 / math.sqrt(HEAD_DIM)
    if impl == "torch":
        tq, tk, tv = (torch.from_numpy(a).requires_grad_(True) for a in (q, k, v))
        bias = torch.from_numpy(np.where(mask, -1e4, 0.0).astype(np.float32))[:, None, None, :]
        sdpa = torch.nn.functional.scaled_dot_product_attention
        fn = _torch_timed(direction, lambda: sdpa(tq, tk, tv, attn_mask=bias), (tq, tk, tv), dout)
    else:
        be = _backend(impl)
        out, lse = be.attention(q, k, v, mask, scale, True, 0.0, 0)
        fn = _by_direction(
            direction,
            lambda: be.attention(q, k, v, mask, scale, True, 0.0, 0),
            lambda: be.attention_backward(dout, q, k, v, out, lse, mask, scale, True, 0.0, 0),
        )
    _run(benchmark, f"attention {direction} B{BATCH} H{HEADS} S{SEQ} D{HEAD_DIM} masked", impl, fn)
