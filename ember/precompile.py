"""Compile the ``cpu`` backend's kernels before the first training step needs them.

    python -m ember.precompile            # float32, two processes
    python -m ember.precompile --dtype f32,f64 --jobs 1

A fresh install has an empty kernel cache, so the first training step of a new model waits while
Numba compiles every kernel it reaches, one after the other on one core. This command runs
small workloads that reach the same kernels with the same argument types as real models (the
same ``nn`` layers, only tiny), so their machine code lands in the on-disk cache
(:func:`ember.kernels.cpu.jit.cache_dir`) and later processes load it instead. Numba compiles on
one thread per process, so the work is split over ``--jobs`` processes, in two stages:

1. the kernels of :data:`~ember.kernels.cpu.background_compile.FIRST_STAGE_GROUPS` (a
   Transformer training step's costliest stand-ins): the processes of :data:`FIRST_STAGE_WORKERS`
   compile their groups one after the other, each by a workload that compiles only the kernels
   of the groups so far, and mark each group when done;
2. every other kernel, on idle CPU time only (a training process that started this compile
   runs on the first stage's kernels meanwhile): the attention workloads in one process, every
   other kernel in another, and a last pass in this process runs a whole Transformer
   classifier to check that nothing is left to compile; then the marker of the dtype.

`make install` runs it. The cache is keyed by ember's kernel sources, so it is filled once per
installed version. A process that found the cache empty runs the composed kernels meanwhile and
switches to the compiled ones at each marker (:mod:`ember.kernels.cpu.background_compile`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

import ember
import ember.kernels.cpu
from ember import nn
from ember.kernels.cpu.background_compile import FIRST_STAGE_GROUPS, compile_here, mark_compiled
from ember.kernels.cpu.jit import cache_dir
from ember.nn.token_packing import TokenPacking
from ember.optim import AdamConfig, AdamWConfig, GradientsParams

__all__ = ["WORKLOADS", "precompile"]

_DTYPES = {"f32": "float32", "float32": "float32", "f64": "float64", "float64": "float64"}


def _padding_mask(ember, batch: int, seq: int):
    """A [batch, seq] padding mask whose rows have different real lengths (row 0: none padded)."""
    lengths = np.maximum(seq - np.arange(batch) * (seq // max(batch, 1)), 1)
    return ember.tensor(np.arange(seq)[None, :] >= lengths[:, None])


def _attention(dtype: str) -> None:
    """Self-attention with a padding mask, plain and quiet softmax: training and inference."""
    x = ember.randn(3, 16, 32, dtype=getattr(ember, dtype))
    mask = _padding_mask(ember, 3, 16)
    for quiet in (False, True):
        mha = nn.MultiHeadAttentionConfig(32, 4, quiet_softmax=quiet).init(dtype=getattr(ember, dtype))
        out = mha(nn.MhaInput.self_attn(x.require_grad()).mask_pad(mask)).context
        out.sum().backward()
        with ember.no_grad():
            mha.valid()(nn.MhaInput.self_attn(x).mask_pad(mask))


def _layers(dtype: str) -> None:
    """Every other kernel a text model reaches: embeddings, layer norm, GELU, dropout,
    softmaxes, cross-entropy, Adam/AdamW, token packing's rows, and the bag-of-embeddings path
    with its lazy Adam."""
    dt = getattr(ember, dtype)

    class Block(nn.Module):
        def __init__(self):
            self.embedding = nn.EmbeddingConfig(50, 32).init(dtype=dt)
            self.norm = nn.LayerNormConfig(32).init(dtype=dt)
            self.linear = nn.LinearConfig(32, 64).init(dtype=dt)
            self.gelu = nn.Gelu()
            self.dropout = nn.DropoutConfig(0.1).init()
            self.head = nn.LinearConfig(64, 4).init(dtype=dt)

        def forward(self, ids):
            h = self.dropout(self.gelu(self.linear(self.norm(self.embedding(ids)))))
            return self.head(h).mean(1)

    ids = ember.tensor(np.arange(48).reshape(3, 16) % 50)
    labels = ember.tensor([0, 1, 3])
    for optim in (AdamConfig().init(), AdamWConfig().init()):
        for smoothing in (None, 0.1):
            model = Block()
            logits = model(ids)
            loss = nn.CrossEntropyLossConfig(smoothing=smoothing).init()(logits, labels)
            loss = (
                loss + ember.log_softmax(logits, dim=1).mean() * 0 + ember.softmax(logits, dim=1).mean() * 0
            )
            optim.step(1e-3, model, GradientsParams.from_grads(loss.backward(), model))
    with ember.no_grad():
        model.valid()(ids)

    _token_packing(dtype)

    bag = nn.EmbeddingBagConfig(50, 16).init(dtype=dt)
    offsets = ember.tensor([0, 5, 9])
    for optim in (AdamConfig().init(), AdamWConfig().init()):
        out = bag(ember.tensor(np.arange(14) % 50), offsets)
        optim.step(1e-3, bag, GradientsParams.from_grads(out.sum().backward(), bag))


def _token_packing(dtype: str) -> None:
    """Token packing's row gather and scatter, at a size that takes the cpu row kernels."""
    packing = TokenPacking(_padding_mask(ember, 16, 256))
    wide = packing.unpack(ember.randn(packing.count, 64, dtype=getattr(ember, dtype)).require_grad())
    packing.pack(wide * 2.0).sum().backward()


def _first_stage(dtype: str) -> None:
    """A Transformer classifier's training step and inference (compiling, under
    ``compile_here(only=...)``, just the first stage's share), and token packing's rows."""
    _classifier(dtype)
    _token_packing(dtype)


def _classifier(dtype: str) -> None:
    """A whole pre-norm Transformer classifier (what the text-classification example trains):
    one training step and one inference batch, to catch anything the parts above missed."""
    dt = getattr(ember, dtype)

    class Classifier(nn.Module):
        def __init__(self, quiet: bool):
            self.embedding = nn.EmbeddingConfig(50, 32).init(dtype=dt)
            self.encoder = nn.TransformerEncoderConfig(
                32, 64, 4, 1, norm_first=True, quiet_softmax=quiet
            ).init(dtype=dt)
            self.head = nn.LinearConfig(32, 4).init(dtype=dt)

        def forward(self, ids, mask):
            h = self.encoder(nn.TransformerEncoderInput(self.embedding(ids)).mask_pad(mask))
            return self.head(h[:, 0])

    ids = ember.tensor(np.arange(48).reshape(3, 16) % 50)
    mask = _padding_mask(ember, 3, 16)
    for quiet in (False, True):
        model = Classifier(quiet)
        loss = nn.CrossEntropyLossConfig().init()(model(ids, mask), ember.tensor([0, 1, 3]))
        AdamConfig().init().step(1e-3, model, GradientsParams.from_grads(loss.backward(), model))
        with ember.no_grad():
            model.valid()(ids, mask)


#: The workloads, by name. Stage 1 runs ``first-stage`` in the processes of FIRST_STAGE_WORKERS,
#: once per group, each time compiling that group's kernels; stage 2 runs ``attention`` and
#: ``layers`` in parallel processes and ``classifier`` after them.
WORKLOADS: dict[str, Callable[[str], None]] = {
    "first-stage": _first_stage,
    "attention": _attention,
    "layers": _layers,
    "classifier": _classifier,
}

#: Stage 1's processes, each with the groups it compiles in turn: dropout's kernels compile in a
#: fraction of a second and are the costliest stand-in, so they come before the attention's.
FIRST_STAGE_WORKERS = (("dropout", "attention"), ("layers",))


def _group_list(text: str) -> tuple[str, ...]:
    groups = tuple(g for g in text.split(",") if g)
    unknown = [g for g in groups if g not in FIRST_STAGE_GROUPS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown first-stage groups {unknown}; known: {sorted(FIRST_STAGE_GROUPS)}"
        )
    return groups


def _yield_cpu() -> None:
    """Run this process only when a CPU would otherwise idle (Linux's SCHED_IDLE; elsewhere the
    lowest priority): stage 2 must not slow a training step running on stage 1's kernels."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):  # not Linux, or refused
        os.nice(19)


def _run_here(name: str, dtypes: Sequence[str]) -> None:
    for dtype in dtypes:
        WORKLOADS[name](dtype)


def precompile(
    dtypes: Sequence[str] = ("float32",), jobs: int = 2, verbose: bool = False
) -> dict[str, float]:
    """Fill the kernel cache for ``dtypes``; returns the seconds each workload took.

    Args:
        dtypes: float dtype names (``"float32"``, ``"float64"``).
        jobs: processes compiling at once (1: everything in this process).
        verbose: print each workload's time as it ends.

    Raises:
        ValueError: an unknown dtype or ``jobs`` < 1.
        RuntimeError: a workload process failed (its output is in the message).
    """
    dtypes = [_DTYPES.get(d, d) for d in dtypes]
    bad = [d for d in dtypes if d not in ("float32", "float64")]
    if bad or jobs < 1:
        raise ValueError(
            f"precompile: dtypes must be float32/float64 and jobs >= 1, got {bad or dtypes}, {jobs}"
        )
    timings: dict[str, float] = {}
    start = time.perf_counter()
    # stage 1: the first stage's kernels, each group marked as soon as it is cached
    first = [(f"first stage: {', '.join(groups)}", "first-stage", groups) for groups in FIRST_STAGE_WORKERS]
    seconds = _run_jobs(first, dtypes, jobs, False, timings, start)
    if verbose:
        print(f"  first stage: {seconds:.1f} s", flush=True)
    # stage 2: everything else, yielding the CPU to a training process
    second = [(name, name, ()) for name in ("attention", "layers")]
    seconds = _run_jobs(second, dtypes, jobs, True, timings, start)
    if verbose:
        print(f"  second stage: {seconds:.1f} s", flush=True)
    # The workloads must compile the kernels, not run their stand-ins (nor start a second compile).
    compile_here()
    t0 = time.perf_counter()
    _run_here("classifier", dtypes)
    timings["classifier"] = time.perf_counter() - t0
    if verbose:
        print(f"  classifier (check): {timings['classifier']:.1f} s", flush=True)
    for dtype in dtypes:
        mark_compiled(dtype)  # processes waiting on this dtype switch to the kernels
    return timings


def _run_jobs(specs, dtypes, jobs: int, idle: bool, timings: dict, start: float) -> float:
    """Run the workloads ``specs`` ((label, workload, first-stage groups or ())), in this
    process one after the other (``jobs`` 1) or each in a process of its own (on idle CPU time
    only, with ``idle``); records when each one ended (seconds since ``start``) under its label
    and returns the stage's seconds. A job with groups compiles and marks them one by one."""
    t0 = time.perf_counter()
    if jobs == 1:
        for label, name, groups in specs:
            _run_worker(name, groups, dtypes)
            timings[label] = time.perf_counter() - start
    else:
        procs = {}
        for label, name, groups in specs:
            cmd = [sys.executable, "-m", "ember.precompile", "--dtype", ",".join(dtypes), "--workload", name]
            cmd += ["--groups", ",".join(groups)] if groups else []
            cmd += ["--idle"] if idle else []
            procs[label] = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=os.environ.copy()
            )
        for label, proc in procs.items():
            output, _ = proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(
                    f"precompile: the {label!r} workload failed ({proc.returncode}):\n{output}"
                )
            timings[label] = time.perf_counter() - start
    return time.perf_counter() - t0


def _run_worker(name: str, groups: Sequence[str], dtypes: Sequence[str]) -> None:
    """Run workload ``name`` once per first-stage group of ``groups``, compiling only the
    kernels of the groups so far and then marking the group (processes waiting on its kernels
    switch to them); without groups, once, compiling every kernel it reaches."""
    if not groups:
        compile_here()
        _run_here(name, dtypes)
        return
    kernels: frozenset[str] = frozenset()
    for group in groups:
        kernels |= FIRST_STAGE_GROUPS[group]
        compile_here(kernels)
        _run_here(name, dtypes)
        for dtype in dtypes:
            mark_compiled(dtype, group)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``python -m ember.precompile [--dtype f32,f64] [--jobs N]``."""
    ap = argparse.ArgumentParser(prog="python -m ember.precompile", description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="f32", help="comma-separated float dtypes: f32, f64 (default f32)")
    ap.add_argument("--jobs", type=int, default=2, help="processes compiling at once (default 2)")
    # a stage's worker process: one workload, compiling only some kernels, maybe on idle CPU time
    ap.add_argument("--workload", choices=sorted(WORKLOADS), help=argparse.SUPPRESS)
    ap.add_argument("--groups", type=_group_list, default=(), help=argparse.SUPPRESS)
    ap.add_argument("--idle", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    if args.workload:
        if args.idle:
            _yield_cpu()
        _run_worker(args.workload, args.groups, [_DTYPES.get(d, d) for d in dtypes])
        return
    start = time.perf_counter()
    print(f"ember: compiling the cpu kernels ({', '.join(dtypes)}) into {cache_dir()}", flush=True)
    precompile(dtypes, jobs=args.jobs, verbose=True)
    print(f"ember: kernels ready in {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
