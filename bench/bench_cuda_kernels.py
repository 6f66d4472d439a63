"""The cuda backend's fused kernels at the AG News model's sizes, against the same op composed
from CuPy and against PyTorch CUDA (when installed), timed with CUDA events.

Memory-bound kernels report achieved GB/s (bytes of their logical inputs and outputs per
call); attention reports TFLOP/s (forward 4·B·H·S²·Dh, backward 2.5x that). Skips cleanly,
saying why, without CuPy or a GPU.

    python bench/bench_cuda_kernels.py results.json      # table on stdout + JSON
    pytest bench/bench_cuda_kernels.py -m cuda            # as pytest-benchmark cases
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sizes import BATCH, CLASSES, D_FF, D_MODEL, HEAD_DIM, HEADS, SEQ, VOCAB

from ember.kernels.cuda import runtime

IMPLS = ("ember-cuda", "cupy", "torch")
F32 = 4


@dataclass
class Case:
    """One kernel and direction at one size; ``make(impl, cp, torch)`` returns a callable."""

    name: str
    make: Callable[[str, Any, Any], Callable[[], Any] | None]
    bytes: int = 0  # bytes moved per call (memory-bound kernels)
    flops: float = 0.0  # floating-point operations per call (attention)


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _rand(cp, *shape, dtype=np.float32):
    return cp.asarray(np.random.default_rng(0).standard_normal(shape).astype(dtype))


def _tt(torch, a, grad=False):
    t = torch.as_tensor(a, device="cuda")
    return t.requires_grad_(True) if grad else t


def _softmax_case(direction: str) -> Case:
    shape = (BATCH * HEADS * SEQ, SEQ)

    def make(impl, cp, torch):
        from ember.kernels import cuda as K

        x, dy = _rand(cp, *shape), _rand(cp, *shape)
        y = K.softmax(x)
        if impl == "ember-cuda":
            if direction == "fwd":
                return lambda: K.softmax(x)
            return lambda: K.softmax_backward(y, dy)
        if impl == "cupy":

            def fwd():
                e = cp.exp(x - x.max(-1, keepdims=True))
                return e / e.sum(-1, keepdims=True)

            return fwd if direction == "fwd" else (lambda: y * (dy - (dy * y).sum(-1, keepdims=True)))
        tx, tdy = _tt(torch, x, True), _tt(torch, dy)
        ty = torch.softmax(tx, -1)
        return (
            (lambda: torch.softmax(tx, -1))
            if direction == "fwd"
            else (lambda: torch.autograd.grad(ty, tx, tdy, retain_graph=True))
        )

    n = math.prod(shape)
    return Case(f"softmax {direction} {list(shape)}", make, bytes=(2 if direction == "fwd" else 3) * n * F32)


def _layer_norm_case(direction: str) -> Case:
    shape = (BATCH * SEQ, D_MODEL)

    def make(impl, cp, torch):
        from ember.kernels import cuda as K

        x, dy, g, b = _rand(cp, *shape), _rand(cp, *shape), _rand(cp, D_MODEL), _rand(cp, D_MODEL)
        _, mean, rstd = K.layer_norm(x, g, b, 1e-5)
        if impl == "ember-cuda":
            return (
                (lambda: K.layer_norm(x, g, b, 1e-5))
                if direction == "fwd"
                else (lambda: K.layer_norm_backward(dy, x, mean, rstd, g))
            )
        if impl == "cupy":

            def fwd():
                mu = x.mean(-1, keepdims=True)
                r = 1 / cp.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
                return (x - mu) * r * g + b

            def bwd():
                xh = (x - mean[:, None]) * rstd[:, None]
                gg = dy * g
                dx = gg - gg.mean(-1, keepdims=True) - xh * (gg * xh).mean(-1, keepdims=True)
                return dx * rstd[:, None], (dy * xh).sum(0), dy.sum(0)

            return fwd if direction == "fwd" else bwd
        tx, tg, tb = _tt(torch, x, True), _tt(torch, g, True), _tt(torch, b, True)
        tdy = _tt(torch, dy)
        f = lambda: torch.nn.functional.layer_norm(tx, (D_MODEL,), tg, tb, 1e-5)
        ty = f()
        return (
            f
            if direction == "fwd"
            else (lambda: torch.autograd.grad(ty, (tx, tg, tb), tdy, retain_graph=True))
        )

    n = math.prod(shape)
    return Case(
        f"layer_norm {direction} {list(shape)}", make, bytes=(2 if direction == "fwd" else 3) * n * F32
    )


def _gelu_case(direction: str) -> Case:
    shape = (BATCH * SEQ, D_FF)

    def make(impl, cp, torch):
        from ember.kernels import cuda as K

        x, dy = _rand(cp, *shape), _rand(cp, *shape)
        if impl == "ember-cuda":
            if direction == "fwd":
                return lambda: K.gelu(x, False)
            return lambda: K.gelu_backward(x, dy, False)
        if impl == "cupy":
            import cupyx.scipy.special as sp

            def fwd():
                return x * 0.5 * (1 + sp.erf(x * 0.7071067811865476))

            def bwd():
                cdf = 0.5 * (1 + sp.erf(x * 0.7071067811865476))
                return dy * (cdf + x * 0.3989422804014327 * cp.exp(-0.5 * x * x))

            return fwd if direction == "fwd" else bwd
        tx, tdy = _tt(torch, x, True), _tt(torch, dy)
        ty = torch.nn.functional.gelu(tx)
        if direction == "fwd":
            return lambda: torch.nn.functional.gelu(tx)
        return lambda: torch.autograd.grad(ty, tx, tdy, retain_graph=True)

    n = math.prod(shape)
    return Case(f"gelu {direction} {list(shape)}", make, bytes=(2 if direction == "fwd" else 3) * n * F32)


def _dropout_case() -> Case:
    shape = (BATCH * SEQ, D_FF)

    def make(impl, cp, torch):
        from ember.kernels import cuda as K

        x = _rand(cp, *shape)
        if impl == "ember-cuda":
            return lambda: K.dropout(x, 0.1, 1234)
        if impl == "cupy":
            return lambda: x * (cp.random.random(shape, dtype=np.float32) >= 0.1) * (1 / 0.9)
        tx = _tt(torch, x)
        return lambda: torch.nn.functional.dropout(tx, 0.1, training=True)

    return Case(f"dropout fwd {list(shape)}", make, bytes=2 * math.prod(shape) * F32)


def _cross_entropy_case(direction: str) -> Case:
    n, c = BATCH, CLASSES

    def make(impl, cp, torch):
        from ember.kernels import cuda as K

        logits = _rand(cp, n, c)
        t = cp.asarray(np.arange(n) % c)
        dloss = cp.full((n,), 1.0 / n, dtype=np.float32)
        _loss, lse = K.cross_entropy(logits, t, 0.1)
        if impl == "ember-cuda":
            return (
                (lambda: K.cross_entropy(logits, t, 0.1))
                if direction == "fwd"
                else (lambda: K.cross_entropy_backward(logits, t, lse, dloss, 0.1))
            )
        if impl == "cupy":

            def fwd():
                m = logits.max(1, keepdims=True)
                ls = (m + cp.log(cp.exp(logits - m).sum(1, keepdims=True)))[:, 0]
                return ls - 0.9 * logits[cp.arange(n), t] - 0.1 / c * logits.sum(1), ls

            def bwd():
                g = cp.exp(logits - lse[:, None]) - 0.1 / c
                g[cp.arange(n), t] -= 0.9
                return g * dloss[:, None]

            return fwd if direction == "fwd" else bwd
        tl, tt, td = _tt(torch, logits, True), _tt(torch, t), _tt(torch, dloss)
        ty = torch.nn.functional.cross_entropy(tl, tt, reduction="none", label_smoothing=0.1)
        f = lambda: torch.nn.functional.cross_entropy(tl, tt, reduction="none", label_smoothing=0.1)
        return f if direction == "fwd" else (lambda: torch.autograd.grad(ty, tl, td, retain_graph=True))

    return Case(f"cross_entropy {direction} [{n},{c}]", make, bytes=2 * n * c * F32)


def _embedding_case(direction: str) -> Case:
    def make(impl, cp, torch):
        from ember.kernels import cuda as K

        w = _rand(cp, VOCAB, D_MODEL)
        ids = cp.asarray(np.random.default_rng(1).integers(0, VOCAB, (BATCH, SEQ)))
        dout = _rand(cp, BATCH, SEQ, D_MODEL)
        if impl == "ember-cuda":
            return (
                (lambda: K.embedding(w, ids))
                if direction == "fwd"
                else (lambda: K.embedding_backward(dout, ids, VOCAB))
            )
        if impl == "cupy":

            def bwd():
                dw = cp.zeros((VOCAB, D_MODEL), dtype=np.float32)
                cp.add.at(dw, ids.reshape(-1), dout.reshape(-1, D_MODEL))
                return dw

            return (lambda: w[ids]) if direction == "fwd" else bwd
        tw, ti, td = _tt(torch, w, True), _tt(torch, ids), _tt(torch, dout)
        ty = torch.nn.functional.embedding(ti, tw)
        return (
            (lambda: torch.nn.functional.embedding(ti, tw))
            if direction == "fwd"
            else (lambda: torch.autograd.grad(ty, tw, td, retain_graph=True))
        )

    rows = BATCH * SEQ * D_MODEL * F32
    moved = 2 * rows if direction == "fwd" else 3 * rows + VOCAB * D_MODEL * F32
    return Case(f"embedding {direction} [{BATCH},{SEQ}]x[{VOCAB},{D_MODEL}]", make, bytes=moved)


def _attention_case(direction: str) -> Case:
    b, h, s, dh = BATCH, HEADS, SEQ, HEAD_DIM

    def make(impl, cp, torch):
        from ember.kernels import cuda as K

        q, k, v, dout = (_rand(cp, b, h, s, dh) for _ in range(4))
        mask = cp.asarray(np.random.default_rng(2).random((b, s)) < 0.2)
        scale = dh**-0.5
        out, lse = K.attention(q, k, v, mask, scale, True, 0.1, 7)
        if impl == "ember-cuda":
            return (
                (lambda: K.attention(q, k, v, mask, scale, True, 0.1, 7))
                if direction == "fwd"
                else (lambda: K.attention_backward(dout, q, k, v, out, lse, mask, scale, True, 0.1, 7))
            )
        if impl == "cupy":

            def scores():
                sc = cp.matmul(q, k.transpose(0, 1, 3, 2)) * scale
                sc = cp.where(cp.random.random(sc.shape, dtype=np.float32) >= 0.1, sc / 0.9, 0)
                return cp.where(mask[:, None, None, :], -1e4, sc)

            def fwd():
                sc = scores()
                m = cp.maximum(sc.max(-1, keepdims=True), 0)
                e = cp.exp(sc - m)
                return cp.matmul(e / (e.sum(-1, keepdims=True) + cp.exp(-m)), v)

            def bwd():
                w = cp.exp(scores() - lse[..., None])
                dv = cp.matmul(w.transpose(0, 1, 3, 2), dout)
                ds = w * (cp.matmul(dout, v.transpose(0, 1, 3, 2)) - (dout * out).sum(-1, keepdims=True))
                ds = cp.where(mask[:, None, None, :], 0, ds) * scale
                return cp.matmul(ds, k), cp.matmul(ds.transpose(0, 1, 3, 2), q), dv

            return fwd if direction == "fwd" else bwd
        tq, tk, tv = (_tt(torch, a, True) for a in (q, k, v))
        tmask = ~_tt(torch, mask)[:, None, None, :]  # torch: True = attend
        f = lambda: torch.nn.functional.scaled_dot_product_attention(
            tq, tk, tv, attn_mask=tmask, dropout_p=0.1, scale=scale
        )
        ty = f()
        tdo = _tt(torch, dout)
        return (
            f
            if direction == "fwd"
            else (lambda: torch.autograd.grad(ty, (tq, tk, tv), tdo, retain_graph=True))
        )

    fwd_flops = 4.0 * b * h * s * s * dh
    return Case(
        f"attention {direction} [{b},{h},{s},{dh}]",
        make,
        flops=fwd_flops if direction == "fwd" else 2.5 * fwd_flops,
    )


def _adam_case() -> Case:
    layers = 4
    shapes = [(VOCAB, D_MODEL), (SEQ, D_MODEL)]
    for _ in range(layers):
        shapes += [(D_MODEL, D_MODEL)] * 4 + [(D_MODEL,)] * 4  # attention projections
        shapes += [(D_MODEL, D_FF), (D_FF,), (D_FF, D_MODEL), (D_MODEL,)]  # feed-forward
        shapes += [(D_MODEL,)] * 4  # two layer norms
    shapes += [(D_MODEL, CLASSES), (CLASSES,)]
    n = sum(math.prod(s) for s in shapes)

    def make(impl, cp, torch):
        from ember.kernels import cuda as K
        from ember.kernels.families.optimizer_args import AdamArgs, AdamState

        ps = [_rand(cp, *s) * 0.02 for s in shapes]
        gs = [_rand(cp, *s) for s in shapes]
        ms = [cp.zeros(s, dtype=np.float32) for s in shapes]
        vs = [cp.zeros(s, dtype=np.float32) for s in shapes]
        if impl == "ember-cuda":
            # the args are built per step, as an optimizer does
            return lambda: K.adam_update(
                ps, gs, AdamState(ms, vs), AdamArgs(1e-3, weight_decay=5e-5, steps=10)
            )
        if impl == "cupy":

            def step():
                for p, g, m, v in zip(ps, gs, ms, vs):
                    gg = g + 5e-5 * p
                    m *= 0.9
                    m += 0.1 * gg
                    v *= 0.999
                    v += 0.001 * gg * gg
                    p -= 1e-3 * (m / (1 - 0.9**10)) / (cp.sqrt(v / (1 - 0.999**10)) + 1e-5)

            return step
        tps = [_tt(torch, p).clone().requires_grad_(True) for p in ps]
        for tp, g in zip(tps, gs):
            tp.grad = _tt(torch, g).clone()
        opt = torch.optim.Adam(tps, lr=1e-3, eps=1e-5, weight_decay=5e-5, fused=True)
        return opt.step

    return Case(f"adam_update {len(shapes)} tensors, {n} params", make, bytes=7 * n * F32)


def cases() -> list[Case]:
    """Every benchmarked kernel, forward and backward."""
    out = []
    for d in ("fwd", "bwd"):
        out += [
            _softmax_case(d),
            _layer_norm_case(d),
            _gelu_case(d),
            _cross_entropy_case(d),
            _embedding_case(d),
            _attention_case(d),
        ]
    return out + [_dropout_case(), _adam_case()]


def time_ms(impl: str, cp, torch, fn, warmup: int = 3, iters: int = 20) -> float:
    """Mean milliseconds per call, measured with CUDA events around `iters` calls."""
    for _ in range(warmup):
        fn()
    if impl == "torch":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / iters
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / iters


def run_all() -> dict:
    """Benchmark every case and implementation; returns the JSON-ready results."""
    reason = runtime.unavailable_reason()
    if reason is not None:
        return {"skipped": reason, "results": []}
    cp = runtime.cupy_or_error()
    torch = _torch_cuda()
    results = []
    for case in cases():
        for impl in IMPLS:
            if impl == "torch" and torch is None:
                continue
            row = {"kernel": case.name, "impl": impl}
            try:
                fn = case.make(impl, cp, torch)
                ms = time_ms(impl, cp, torch, fn)
                row["ms"] = ms
                if case.bytes:
                    row["GB/s"] = case.bytes / (ms * 1e-3) / 1e9
                if case.flops:
                    row["TFLOP/s"] = case.flops / (ms * 1e-3) / 1e12
            except Exception as exc:  # one failing implementation must not hide the others
                row["error"] = f"{type(exc).__name__}: {exc}"
            results.append(row)
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    return {"device": name.decode() if isinstance(name, bytes) else str(name), "results": results}


def render(report: dict) -> str:
    """A plain-text table of the results."""
    if "skipped" in report:
        return f"cuda benchmarks skipped: {report['skipped']}"
    lines = [
        f"device: {report['device']}",
        f"{'kernel':<48} {'impl':<11} {'ms':>9} {'GB/s':>8} {'TFLOP/s':>8}",
    ]
    for r in report["results"]:
        if "error" in r:
            lines.append(f"{r['kernel']:<48} {r['impl']:<11} error: {r['error'][:60]}")
            continue
        gbs = f"{r['GB/s']:.0f}" if "GB/s" in r else "-"
        tfl = f"{r['TFLOP/s']:.2f}" if "TFLOP/s" in r else "-"
        lines.append(f"{r['kernel']:<48} {r['impl']:<11} {r['ms']:>9.4f} {gbs:>8} {tfl:>8}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    report = run_all()
    print(render(report))
    if len(argv) > 1:
        with open(argv[1], "w") as f:
            json.dump(report, f, indent=2)
        print(f"wrote {argv[1]}")
    return 0


# ---- pytest-benchmark entry points -------------------------------------------------------------
@pytest.fixture(scope="module")
def gpu():
    reason = runtime.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    return runtime.cupy_or_error(), _torch_cuda()


_CASES = cases()


@pytest.mark.cuda
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", _CASES, ids=[c.name for c in _CASES])
def bench_cuda_kernel(benchmark, gpu, case, impl):
    cp, torch = gpu
    if impl == "torch" and torch is None:
        pytest.skip("PyTorch with CUDA is not installed")
    fn = case.make(impl, cp, torch)
    sync = torch.cuda.synchronize if impl == "torch" else cp.cuda.Device().synchronize

    def call():
        fn()
        sync()

    benchmark.group = case.name
    benchmark.extra_info["impl"] = impl
    call()
    benchmark.pedantic(call, rounds=20, iterations=1, warmup_rounds=2)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
