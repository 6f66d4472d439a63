"""A model whose norm and activation are written from primitives, against the same model on
ember's hand-written kernels: the training step the fusion engine has to make fast.

Two pre-norm feed-forward blocks, ``h = h + W2 · SwiGLU(W1 · RMSNorm(h))`` on a [2048, 256]
float32 batch (feed-forward width 1024), loss ``mean(h²)``, plain SGD. The step (forward,
backward, update) is timed for

* ``composed``: RMSNorm ``x / sqrt(mean(x*x, -1) + eps) * w`` and SwiGLU ``a * sigmoid(a) * b``
  from element-wise ops and a mean, fusion on (the default);
* ``composed_unfused``: the same with fusion off (``EMBER_FUSION=0``);
* ``kernels``: ``ember.rms_norm`` and ``ember.swiglu``, ember's hand-written kernels.

Each in its own process (NumPy imported first), median of ``--repeats`` steps after warm-up::

    python bench/fusion_model.py
    python bench/fusion_model.py --rows 4096 --repeats 20
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np
from fusion_chains import timed  # (bench/ is on the path when run as a script)

MODES = ("composed", "composed_unfused", "kernels")
D, F, BLOCKS, EPS, LR = 256, 1024, 2, 1e-6, 1e-3


def _params(rng):
    out = []
    for _ in range(BLOCKS):
        out.append(np.ones(D, np.float32))  # norm scale
        out.append((rng.standard_normal((D, 2 * F)) / np.sqrt(D)).astype(np.float32))
        out.append((rng.standard_normal((F, D)) / np.sqrt(F)).astype(np.float32))
    return out


def worker(mode: str, rows: int, repeats: int) -> dict:
    if mode == "composed_unfused":
        os.environ["EMBER_FUSION"] = "0"
    import ember

    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((rows, D)).astype(np.float32)
    params = [ember.tensor(p).require_grad() for p in _params(rng)]

    def norm(x, w):
        if mode == "kernels":
            return ember.rms_norm(x, w, EPS)
        return x / ((x * x).mean(-1, keepdim=True) + EPS).sqrt() * w

    def act(a, b):
        return ember.swiglu(a, b) if mode == "kernels" else a * a.sigmoid() * b

    def step():
        h = ember.tensor(x0)
        for k in range(BLOCKS):
            w, w1, w2 = params[3 * k : 3 * k + 3]
            ab = norm(h, w) @ w1
            h = h + act(ab[:, :F], ab[:, F:]) @ w2
        grads = (h * h).mean().backward()
        with ember.no_grad():
            for i, p in enumerate(params):
                params[i] = (p - grads[p] * LR).detach().require_grad()
        return float(params[0].numpy()[0])

    return timed(step, repeats)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.rows, args.repeats)))
        return 0
    results = {}
    for mode in MODES:
        command = [sys.executable, __file__, "--worker", mode, "--rows", str(args.rows)]
        done = subprocess.run(command + ["--repeats", str(args.repeats)], capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            return 1
        results[mode] = json.loads(done.stdout.strip().splitlines()[-1])["ms"]
    print(
        f"train step, {BLOCKS} blocks RMSNorm + SwiGLU, [{args.rows}, {D}] float32, median of {args.repeats} (ms)"
    )
    for mode in MODES:
        print(f"  {mode:<18}{results[mode]:8.1f}   {results[mode] / results['kernels']:.2f}x kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
