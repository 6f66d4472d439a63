"""ember's main job until the text-classification example lands: train a small MLP on a
synthetic two-spirals problem with ember's autodiff and print the loss falling.

Run: python examples/demo.py [--device cpu|reference] [--steps 300]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import ember  # before NumPy, so that ember's OpenBLAS thread setting applies (see README)
from ember import nn
from ember.optim import AdamConfig, GradientsParams


def spirals(n: int, rng: np.random.Generator):
    t = np.sqrt(rng.uniform(0.05, 1.0, n)) * 3 * math.pi
    label = rng.integers(0, 2, n)
    sign = np.where(label == 1, 1.0, -1.0)
    x = np.stack([sign * t * np.cos(t), sign * t * np.sin(t)], 1) / 10
    return (x + rng.normal(0, 0.02, x.shape)).astype(np.float32), label.astype(np.int64)


class MLP(nn.Module):
    def __init__(self, hidden: int, device):
        self.layers = [nn.LinearConfig(2, hidden).init(device), nn.LinearConfig(hidden, hidden).init(device)]
        self.head = nn.LinearConfig(hidden, 2).init(device)

    def forward(self, x):
        for layer in self.layers:
            x = ember.gelu(layer(x))
        return self.head(x)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu (Numba kernels), reference (NumPy) or cuda")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=1e-2)
    args = ap.parse_args()

    ember.seed(0)
    x_np, y_np = spirals(1024, np.random.default_rng(0))
    x, y = ember.tensor(x_np, device=args.device), ember.tensor(y_np, device=args.device)
    model = MLP(64, args.device)
    optim = AdamConfig().init()
    loss_fn = nn.CrossEntropyLossConfig().init()
    print(
        f"Training an MLP ({model.num_params()} parameters) on two spirals on '{args.device}' "
        f"for {args.steps} steps"
    )
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        loss = loss_fn(model(x), y)
        grads = GradientsParams.from_grads(loss.backward(), model)  # returned, never stored on tensors
        model = optim.step(args.lr, model, grads)
        if step == 1 or step % 50 == 0:
            with ember.no_grad():
                acc = (model(x).argmax(1) == y).float().mean().item()
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {100 * acc:5.1f}%")
    print(f"done in {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
