"""One optimizer step (Adam, AdamW) over the AG News model's parameters, ember vs torch.optim.

The parameters are those of the example's model (~4.5M float32): token embedding
28996x128, positional embedding 256x128, 4 encoder layers (query/key/value/output Linear
128x128 with biases, feed-forward Linear 128x512 and 512x128 with biases, 2 LayerNorms of
128), and the output Linear 128x4. A timed ember call is ``ModuleOptimizer.step`` with a
fresh ``GradientsParams`` (what a training step does); a torch call is ``optimizer.step()``
with the gradients already in ``.grad`` (torch's default implementation choice).
"""

from __future__ import annotations

import numpy as np
import pytest
from sizes import CLASSES, D_FF, D_MODEL

import ember
from ember import nn
from ember.optim import AdamConfig, AdamWConfig, GradientsParams

try:
    import torch
except ImportError:  # the torch rows are simply absent
    torch = None

VOCAB_BERT_CASED = 28_996
MAX_SEQ = 256
N_LAYERS = 4


def shapes() -> list[tuple[str, tuple[int, ...]]]:
    out = [
        ("embedding_token.weight", (VOCAB_BERT_CASED, D_MODEL)),
        ("embedding_pos.weight", (MAX_SEQ, D_MODEL)),
    ]
    for layer in range(N_LAYERS):
        prefix = f"transformer.layers.{layer}"
        for name in ("query", "key", "value", "output"):
            out += [
                (f"{prefix}.mha.{name}.weight", (D_MODEL, D_MODEL)),
                (f"{prefix}.mha.{name}.bias", (D_MODEL,)),
            ]
        out += [
            (f"{prefix}.pwff.linear_inner.weight", (D_MODEL, D_FF)),
            (f"{prefix}.pwff.linear_inner.bias", (D_FF,)),
            (f"{prefix}.pwff.linear_outer.weight", (D_FF, D_MODEL)),
            (f"{prefix}.pwff.linear_outer.bias", (D_MODEL,)),
        ]
        for norm in ("norm_1", "norm_2"):
            out += [(f"{prefix}.{norm}.gamma", (D_MODEL,)), (f"{prefix}.{norm}.beta", (D_MODEL,))]
    out += [("output.weight", (D_MODEL, CLASSES)), ("output.bias", (CLASSES,))]
    return out


NUMEL = sum(int(np.prod(s)) for _, s in shapes())
RNG = np.random.default_rng(0)
VALUES = {name: RNG.standard_normal(shape).astype(np.float32) * 0.02 for name, shape in shapes()}
GRADS = {name: RNG.standard_normal(shape).astype(np.float32) * 1e-3 for name, shape in shapes()}


class Params(nn.Module):
    """The parameter set as a module (a dict of Params keyed by the model's dotted paths)."""

    def __init__(self, device):
        self.params = {name: nn.Param(ember.tensor(VALUES[name], device=device)) for name in VALUES}


IMPLS = ["ember-cpu", "ember-reference"] + (["torch"] if torch is not None else [])
OPTIMIZERS = {
    "adam": (lambda: AdamConfig().init(), lambda ps: torch.optim.Adam(ps, lr=1e-3, eps=1e-5)),
    "adamw": (
        lambda: AdamWConfig().init(),
        lambda ps: torch.optim.AdamW(ps, lr=1e-3, eps=1e-5, weight_decay=1e-4),
    ),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", list(OPTIMIZERS))
def bench_optimizer_step(benchmark, kind, impl):
    make_ember, make_torch = OPTIMIZERS[kind]
    benchmark.group = f"{kind} step, AG News params ({NUMEL / 1e6:.2f}M float32)"
    benchmark.extra_info["impl"] = impl
    if impl == "torch":
        tparams = []
        for name, value in VALUES.items():
            t = torch.tensor(value, requires_grad=True)
            t.grad = torch.from_numpy(GRADS[name].copy())
            tparams.append(t)
        opt = make_torch(tparams)

        def fn():
            opt.step()
    else:
        device = "cpu" if impl == "ember-cpu" else "reference"
        model = Params(device)
        optim = make_ember()
        grads = {p.id: ember.tensor(GRADS[name], device=device) for name, p in model.params.items()}

        def fn():
            gp = GradientsParams()
            for pid, g in grads.items():
                gp.register(pid, g)
            optim.step(1e-3, model, gp)

    fn()  # warm-up: state allocation, kernel compilation
    benchmark.pedantic(fn, rounds=10, iterations=1, warmup_rounds=1)
