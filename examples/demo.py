"""ember's main job until the text-classification example lands: train a small MLP on a
synthetic two-spirals problem with ember's autodiff and print the loss falling.

Run: python examples/demo.py [--device cpu|reference] [--steps 300]
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import ember


def spirals(n: int, rng: np.random.Generator):
    t = np.sqrt(rng.uniform(0.05, 1.0, n)) * 3 * math.pi
    label = rng.integers(0, 2, n)
    sign = np.where(label == 1, 1.0, -1.0)
    x = np.stack([sign * t * np.cos(t), sign * t * np.sin(t)], 1) / 10
    return (x + rng.normal(0, 0.02, x.shape)).astype(np.float32), label.astype(np.int64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()

    ember.seed(0)
    dev = args.device
    x_np, y_np = spirals(1024, np.random.default_rng(0))
    x, y = ember.tensor(x_np, device=dev), ember.tensor(y_np, device=dev)
    hidden = 64
    params = {
        "w1": ember.randn(2, hidden, device=dev, std=1.0).require_grad(),
        "b1": ember.zeros(hidden, device=dev).require_grad(),
        "w2": ember.randn(hidden, hidden, device=dev, std=1 / math.sqrt(hidden)).require_grad(),
        "b2": ember.zeros(hidden, device=dev).require_grad(),
        "w3": ember.randn(hidden, 2, device=dev, std=1 / math.sqrt(hidden)).require_grad(),
        "b3": ember.zeros(2, device=dev).require_grad(),
    }

    def forward(inp):
        h = ember.gelu(inp @ params["w1"] + params["b1"])
        h = ember.gelu(h @ params["w2"] + params["b2"])
        return h @ params["w3"] + params["b3"]

    print(f"Training a 2-layer MLP on two spirals on device '{dev}' for {args.steps} steps")
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        logits = forward(x)
        loss = ember.cross_entropy_per_sample(logits, y).mean()
        grads = loss.backward()  # gradients come back in a container, never on the tensors
        with ember.no_grad():
            for name, p in params.items():
                params[name] = (p - args.lr * grads.get(p)).require_grad()
        if step == 1 or step % 50 == 0:
            with ember.no_grad():
                acc = (forward(x).argmax(1) == y).float().mean().item()
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {100 * acc:5.1f}%")
    print(f"done in {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
