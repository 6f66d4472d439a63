"""Element-wise chains written from primitive ops, forward + backward: ember without fusion,
ember with fusion, ember's own kernel for the same maths, PyTorch eager and ``torch.compile``.

Each (chain, framework) pair runs in its own process (NumPy imported first), warms up (so a
fused chain is compiled and ``torch.compile`` has traced), then reports the median of the
timed repeats. With ``--rounds R`` every process runs R times, the rounds interleaved (all
the cells once, then again), and a cell shows the median of its R medians: a burst of load
on a shared machine then moves one round, not one column::

    python bench/fusion_chains.py                  # the table, every chain
    python bench/fusion_chains.py --rounds 5       # steadier on a noisy machine
    python bench/fusion_chains.py --rows 2048      # a smaller problem
    python bench/fusion_chains.py --json out.json

A framework that is not installed (PyTorch) shows "-".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

CHAINS = ("tanh_gelu", "swiglu", "rms_norm", "bias_scale")
MODES = ("ember_unfused", "ember_fused", "ember_kernel", "torch_eager", "torch_compile")
HAND_KERNEL = {
    "tanh_gelu": "ember.gelu(x, 'tanh')",
    "swiglu": "ember.swiglu(x, b)",
    "rms_norm": "ember.rms_norm",
}
C = 0.7978845608028654


def _composed(chain: str, x, w, b):
    """The chain written from primitives: the same text for ember and PyTorch tensors."""
    if chain == "tanh_gelu":
        return 0.5 * x * (1 + (C * (x + 0.044715 * x * x * x)).tanh())
    if chain == "swiglu":
        return x * x.sigmoid() * b
    if chain == "rms_norm":
        return x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * w
    return (x + w) * 0.5 + b


def _ember_step(chain: str, mode: str, x0, w0, b0):
    import ember

    seed = ember.ones(*x0.shape)  # made once, as the PyTorch step's

    def step():
        x = ember.tensor(x0).require_grad()
        w = ember.tensor(w0).require_grad()
        b = ember.tensor(b0).require_grad()
        if mode == "ember_kernel":
            if chain == "tanh_gelu":
                y = ember.gelu(x, "tanh")
            elif chain == "swiglu":
                y = ember.swiglu(x, b)
            else:
                y = ember.rms_norm(x, w, 1e-6)
        else:
            y = _composed(chain, x, w, b)
        grads = y.backward(seed)
        return grads[x].numpy()

    return step


def _torch_step(chain: str, mode: str, x0, w0, b0):
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    fn = lambda x, w, b: _composed(chain, x, w, b)
    if mode == "torch_compile":
        fn = torch.compile(fn)
    seed = torch.ones(*x0.shape)

    def step():
        x = torch.tensor(x0, requires_grad=True)
        w = torch.tensor(w0, requires_grad=True)
        b = torch.tensor(b0, requires_grad=True)
        fn(x, w, b).backward(seed)
        return x.grad.numpy()

    return step


def worker(chain: str, mode: str, rows: int, cols: int, repeats: int) -> dict:
    if mode == "ember_unfused":
        os.environ["EMBER_FUSION"] = "0"
    if mode == "ember_kernel" and chain not in HAND_KERNEL:
        return {"ms": None}
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((rows, cols)).astype(np.float32)
    w0 = rng.standard_normal(cols).astype(np.float32)
    b0 = rng.standard_normal((rows, cols)).astype(np.float32)
    try:
        make = _torch_step if mode.startswith("torch") else _ember_step
        step = make(chain, mode, x0, w0, b0)
    except ImportError:
        return {"ms": None}
    return timed(step, repeats)


def timed(step, repeats: int) -> dict:
    """``{"ms": median of repeats, "warmup_s"}`` of ``step()`` after three warm-up calls (they
    compile: fused chains on their second sighting, torch.compile; and fill caches)."""
    first = time.perf_counter()
    for _ in range(3):
        step()
    warm = time.perf_counter() - first
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {"ms": float(np.median(times)) * 1e3, "warmup_s": warm}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--cols", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1, help="processes per cell, interleaved")
    parser.add_argument("--chains", nargs="*", default=list(CHAINS), choices=CHAINS)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--worker", nargs=2, metavar=("CHAIN", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker, args.rows, args.cols, args.repeats)))
        return 0
    samples = {(chain, mode): [] for chain in args.chains for mode in MODES}
    for _ in range(args.rounds):
        for chain, mode in samples:
            command = [sys.executable, __file__, "--worker", chain, mode, "--rows", str(args.rows)]
            command += ["--cols", str(args.cols), "--repeats", str(args.repeats)]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                continue
            ms = json.loads(done.stdout.strip().splitlines()[-1])["ms"]
            if ms is not None:
                samples[chain, mode].append(ms)
    results = {cell: float(np.median(v)) if v else None for cell, v in samples.items()}
    width = max(len(m) for m in MODES)
    rounds = f", median of {args.rounds} interleaved rounds" if args.rounds > 1 else ""
    print(f"fwd+bwd of [{args.rows}, {args.cols}] float32, median of {args.repeats} (ms){rounds}")
    ratios = ("fused/unfused", "fused/kernel", "fused/compile")
    print(f"{'chain':<12}" + "".join(f"{m:>{width + 2}}" for m in MODES + ratios))
    for chain in args.chains:
        row = [results[chain, m] for m in MODES]
        cells = "".join(f"{'-' if v is None else f'{v:.1f}':>{width + 2}}" for v in row)
        unfused, fused, kernel, _, compiled = row
        for other in (unfused, kernel, compiled):
            cells += f"{fused / other:>{width + 2}.2f}" if fused and other else f"{'-':>{width + 2}}"
        print(f"{chain:<12}{cells}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({f"{c}/{m}": v for (c, m), v in results.items()}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
