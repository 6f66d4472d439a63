"""One optimizer step on a large embedding table with a row-sparse gradient vs a dense one.

The table is 500,000 x 64 float32 (a fastText-style hashed n-gram table); a batch touches
2,000 of its rows. ``ember-cpu`` steps with the ``RowSparse`` gradient (lazy Adam, plain
SGD: O(touched rows)); ``ember-cpu-dense`` with the same gradient made dense (O(table));
``torch`` is ``torch.optim.SparseAdam`` / ``SGD`` with a sparse COO gradient and
``torch-dense`` the dense ``Adam`` / ``SGD`` (foreach) with a dense one. A timed ember call
is ``ModuleOptimizer.step`` with a fresh ``GradientsParams`` (what a training step does).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.optim import AdamConfig, GradientsParams, SgdConfig

try:
    import torch
except ImportError:  # the torch rows are simply absent
    torch = None

ROWS, DIM, TOUCHED = 500_000, 64, 2_000
RNG = np.random.default_rng(0)
TABLE = RNG.standard_normal((ROWS, DIM)).astype(np.float32)
INDICES = np.sort(RNG.choice(ROWS, TOUCHED, replace=False)).astype(np.int64)
VALUES = (RNG.standard_normal((TOUCHED, DIM)) * 1e-2).astype(np.float32)

IMPLS = ["ember-cpu", "ember-cpu-dense"] + (["torch", "torch-dense"] if torch is not None else [])
OPTIMIZERS = {"adam": AdamConfig, "sgd": SgdConfig}


class Table(nn.Module):
    def __init__(self):
        self.weight = nn.Param(ember.tensor(TABLE.copy(), device="cpu"))


def _torch_step(kind: str, dense: bool):
    weight = torch.tensor(TABLE.copy(), requires_grad=True)
    grad = torch.sparse_coo_tensor(torch.from_numpy(INDICES)[None], torch.from_numpy(VALUES), (ROWS, DIM))
    grad = grad.coalesce()
    if dense:
        grad = grad.to_dense()
    if kind == "adam":
        opt = torch.optim.Adam([weight], lr=1e-3) if dense else torch.optim.SparseAdam([weight], lr=1e-3)
    else:
        opt = torch.optim.SGD([weight], lr=1e-3)

    def fn():
        weight.grad = grad
        opt.step()

    return fn


def _ember_step(kind: str, dense: bool):
    model, optim = Table(), OPTIMIZERS[kind]().init()
    sparse = ember.RowSparse(
        ember.tensor(INDICES, device="cpu"), ember.tensor(VALUES, device="cpu"), (ROWS, DIM)
    )
    grad = sparse.to_dense() if dense else sparse

    def fn():
        gp = GradientsParams()
        gp.register(model.weight.id, grad)
        optim.step(1e-3, model, gp)

    return fn


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", list(OPTIMIZERS))
def bench_sparse_table_step(benchmark, kind, impl):
    benchmark.group = f"{kind} step, {ROWS}x{DIM} table, {TOUCHED} touched rows"
    benchmark.extra_info["impl"] = impl
    dense = impl.endswith("-dense")
    fn = _torch_step(kind, dense) if impl.startswith("torch") else _ember_step(kind, dense)
    fn()  # warm-up: state allocation, kernel compilation
    benchmark.pedantic(fn, rounds=20 if not dense else 8, iterations=1, warmup_rounds=1)
