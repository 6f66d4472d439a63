"""Shared fixtures of the optimizer tests: a small model, a fixed gradient field, and NumPy
transcriptions (float64) of every optimizer's update formula."""

from __future__ import annotations

import numpy as np

import ember
from ember import nn
from ember.optim import GradientsParams

SHAPES = {
    "enc.lin.weight": (4, 3),
    "enc.lin.bias": (3,),
    "conv.weight": (2, 3),
    "conv.bias": (2,),
    "head": (5,),
}


class Block(nn.Module):
    def __init__(self, weight, bias):
        self.weight = weight
        self.bias = bias


class Encoder(nn.Module):
    def __init__(self, lin):
        self.lin = lin


class Tiny(nn.Module):
    """Parameters at the paths of SHAPES: enc.lin.{weight,bias}, conv.{weight,bias}, head."""

    def __init__(self, values: dict, device: str, dtype):
        def param(path):
            return nn.Param(ember.tensor(values[path], dtype=dtype, device=device))

        self.enc = Encoder(Block(param("enc.lin.weight"), param("enc.lin.bias")))
        self.conv = Block(param("conv.weight"), param("conv.bias"))
        self.head = param("head")


def initial_values(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {path: rng.uniform(-1.0, 1.0, shape) for path, shape in SHAPES.items()}


def _field(seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    return {
        path: (rng.uniform(0.5, 2.0, shape), rng.uniform(-1.0, 1.0, shape)) for path, shape in SHAPES.items()
    }


FIELD = _field()


def gradient(path: str, theta: np.ndarray) -> np.ndarray:
    """A fixed, smooth, non-linear gradient field: a·θ + c + 0.3·tanh(3θ)."""
    a, c = FIELD[path]
    return a * theta + c + 0.3 * np.tanh(3.0 * theta)


def model_values(model) -> dict:
    return {path: np.array(p.value.numpy(), dtype=np.float64) for path, p in model.named_parameters()}


def grads_for(model, scale: float = 1.0, skip=()) -> GradientsParams:
    """GradientsParams from the gradient field at the model's current values."""
    out = GradientsParams()
    for path, p in model.named_parameters():
        if path in skip:
            continue
        g = scale * gradient(path, np.asarray(p.value.numpy(), dtype=np.float64))
        out.register(p.id, ember.tensor(g, dtype=p.value.dtype, device=p.value.device))
    return out


def lr_at(k: int, base: float = 0.05) -> float:
    """A learning rate that changes at every step (so using a stale rate shows)."""
    return base * (1.0 + 0.5 * np.sin(1.3 * k))


# The rates of the trajectory tests' steps (the longest runs 20 steps; shorter ones use the first).
LRS = [lr_at(k) for k in range(20)]


# --- NumPy transcriptions of the formulas (float64), one parameter at a time ----------------


def ref_sgd(p, g, st, lr, t, weight_decay=0.0, momentum=None, dampening=0.1, nesterov=False):
    g = g + weight_decay * p
    if momentum is not None:
        v = g.copy() if "v" not in st else momentum * st["v"] + (1.0 - dampening) * g
        st["v"] = v
        g = g + momentum * v if nesterov else v
    return p - lr * g


def ref_adam(
    p,
    g,
    st,
    lr,
    t,
    beta_1=0.9,
    beta_2=0.999,
    eps=1e-5,
    weight_decay=0.0,
    amsgrad=False,
    decoupled=False,
    cautious=False,
):
    if not decoupled:
        g = g + weight_decay * p
    m = beta_1 * st.get("m", 0.0) + (1.0 - beta_1) * g
    v = beta_2 * st.get("v", 0.0) + (1.0 - beta_2) * g * g
    st["m"], st["v"] = m, v
    if amsgrad:
        v = np.maximum(st.get("vmax", 0.0), v)
        st["vmax"] = v
    update = (m / (1.0 - beta_1**t)) / (np.sqrt(v / (1.0 - beta_2**t)) + eps)
    if decoupled:
        if cautious:
            p = p - lr * weight_decay * p * ((p >= 0) == (m >= 0))
        else:
            p = p * (1.0 - lr * weight_decay)
    return p - lr * update


def ref_rmsprop(p, g, st, lr, t, alpha=0.99, momentum=0.9, eps=1e-5, centered=False, weight_decay=0.0):
    g = g + weight_decay * p
    s = alpha * st.get("s", 0.0) + (1.0 - alpha) * g * g
    st["s"] = s
    a = s
    if centered:
        ga = alpha * st.get("ga", 0.0) + (1.0 - alpha) * g
        st["ga"] = ga
        a = s - ga * ga
    d = g / (np.sqrt(a) + eps)
    if momentum > 0:
        d = momentum * st.get("b", 0.0) + d
        st["b"] = d
    return p - lr * d


def ref_adagrad(p, g, st, lr, t, lr_decay=0.0, eps=1e-5, weight_decay=0.0):
    g = g + weight_decay * p
    s = st.get("s", 0.0) + g * g
    st["s"] = s
    return p - lr / (1.0 + (t - 1) * lr_decay) * g / (np.sqrt(s) + eps)


def ref_lion(p, g, st, lr, t, beta_1=0.9, beta_2=0.99, weight_decay=0.0):
    m = st.get("m", 0.0)
    p = p * (1.0 - lr * weight_decay) - lr * np.sign(beta_1 * m + (1.0 - beta_1) * g)
    st["m"] = beta_2 * m + (1.0 - beta_2) * g
    return p


def ref_trajectory(update, steps: int, lrs, grad_scale: float = 1.0, clip=None, values=None):
    """Run ``update`` (a ref_* partial) on every parameter; returns the values after each step.

    Args:
        clip: optional function (dict of grads) -> dict of grads applied before the update.
    """
    values = {k: v.copy() for k, v in (values or initial_values()).items()}
    states = {k: {} for k in values}
    out = []
    for k in range(steps):
        grads = {path: grad_scale * gradient(path, v) for path, v in values.items()}
        if clip is not None:
            grads = clip(grads)
        values = {path: update(values[path], grads[path], states[path], lrs[k], k + 1) for path in values}
        out.append({k2: v.copy() for k2, v in values.items()})
    return out


def ember_trajectory(
    optim, steps: int, lrs, device: str = "cpu", dtype=ember.float64, grad_scale: float = 1.0, model=None
):
    model = model or Tiny(initial_values(), device, dtype)
    out = []
    for k in range(steps):
        model = optim.step(lrs[k], model, grads_for(model, grad_scale))
        out.append(model_values(model))
    return out, model


def assert_trajectories_close(got, want, rtol=1e-10, atol=1e-12):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        for path in w:
            np.testing.assert_allclose(
                g[path], w[path], rtol=rtol, atol=atol, err_msg=f"step {k + 1}, parameter {path}"
            )
