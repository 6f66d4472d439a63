"""A two-layer tanh MLP written with plain ember ops, trained by a hand-written SGD loop."""

from __future__ import annotations

import numpy as np

import ember


def init_params(rng: np.random.Generator, d_in: int, hidden: int, d_out: int) -> list[np.ndarray]:
    """Float64 weights and biases (uniform ±1/sqrt(fan_in), like Burn's Linear)."""
    b1, b2 = 1 / np.sqrt(d_in), 1 / np.sqrt(hidden)
    return [
        rng.uniform(-b1, b1, (d_in, hidden)),
        rng.uniform(-b1, b1, hidden),
        rng.uniform(-b2, b2, (hidden, d_out)),
        rng.uniform(-b2, b2, d_out),
    ]


def forward(params, x):
    w1, b1, w2, b2 = params
    return (x @ w1 + b1).tanh() @ w2 + b2


def mse(pred, y):
    return ((pred - y) ** 2).mean()


def cross_entropy(pred, targets):
    return ember.cross_entropy_per_sample(pred, targets).mean()


def sgd_step(params, grads, lr: float):
    """p <- p - lr * g, giving fresh leaves (the old graph is dropped)."""
    with ember.no_grad():
        return [(p - lr * grads.get(p)).detach().require_grad() for p in params]


def train(
    device: str,
    init: list[np.ndarray],
    x: np.ndarray,
    y: np.ndarray,
    steps: int,
    lr: float,
    loss: str = "mse",
    dtype=ember.float64,
) -> list[float]:
    """Run ``steps`` SGD steps from ``init`` on ``device``; returns the loss of every step."""
    params = [ember.tensor(p, dtype=dtype, device=device).require_grad() for p in init]
    tx = ember.tensor(x, dtype=dtype, device=device)
    ty = ember.tensor(y, device=device) if loss == "ce" else ember.tensor(y, dtype=dtype, device=device)
    losses = []
    for _ in range(steps):
        pred = forward(params, tx)
        value = mse(pred, ty) if loss == "mse" else cross_entropy(pred, ty)
        grads = value.backward()
        losses.append(float(value.item()))
        params = sgd_step(params, grads, lr)
    return losses
