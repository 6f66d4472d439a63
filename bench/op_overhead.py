"""The per-op overhead: microseconds per call of ops on tiny (4, 16) float32 tensors, where the
work is nothing and the framework's Python and dispatch are everything — ember with fusion on,
ember with fusion off, and PyTorch eager, each in its own process (NumPy imported first)::

    python bench/op_overhead.py               # the table
    python bench/op_overhead.py --rounds 5    # each cell the median of 5 processes, interleaved

A cell is the best of 7 repeats of ``--number`` calls (the least disturbed), and with
``--rounds`` the median over processes. To compare two ember revisions, run the script of one
with ``PYTHONPATH`` set to the other's checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import timeit

import numpy as np

OPS = ("add", "mul_scalar", "exp", "add_grad", "sum", "matmul")
MODES = ("ember", "ember_unfused", "torch")


def _cases(mode: str):
    a0 = np.ones((4, 16), np.float32)
    if mode == "torch":
        import torch

        torch.set_num_threads(os.cpu_count() or 1)
        a, b = torch.tensor(a0), torch.tensor(a0)
        ag = a.clone().requires_grad_()
        w = torch.tensor(np.ones((16, 4), np.float32))
    else:
        import ember

        a, b = ember.tensor(a0), ember.tensor(a0)
        ag = a.detach().require_grad()
        w = ember.tensor(np.ones((16, 4), np.float32))
    return {
        "add": lambda: a + b,
        "mul_scalar": lambda: a * 2.0,
        "exp": lambda: a.exp(),
        "add_grad": lambda: ag + b,
        "sum": lambda: a.sum(),
        "matmul": lambda: a @ w,
    }


def worker(mode: str, number: int) -> dict:
    if mode == "ember_unfused":
        os.environ["EMBER_FUSION"] = "0"
    try:
        cases = _cases(mode)
    except ImportError:
        return {}
    return {op: min(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6 for op, fn in cases.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000, help="calls per repeat")
    parser.add_argument("--rounds", type=int, default=1, help="processes per column, interleaved")
    parser.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.number)))
        return 0
    samples = {mode: {op: [] for op in OPS} for mode in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            command = [sys.executable, __file__, "--worker", mode, "--number", str(args.number)]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                continue
            for op, us in json.loads(done.stdout.strip().splitlines()[-1]).items():
                samples[mode][op].append(us)
    cell = {
        m: {op: float(np.median(v)) if v else None for op, v in ops.items()} for m, ops in samples.items()
    }
    print(
        f"µs per call on (4, 16) float32{f', median of {args.rounds} processes' if args.rounds > 1 else ''}"
    )
    print(f"{'op':<12}" + "".join(f"{m:>15}" for m in MODES) + f"{'ember/torch':>13}")
    for op in OPS:
        row = [cell[m][op] for m in MODES]
        text = "".join(f"{'-' if v is None else f'{v:.2f}':>15}" for v in row)
        ratio = f"{row[0] / row[2]:>13.2f}" if row[0] and row[2] else f"{'-':>13}"
        print(f"{op:<12}{text}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
