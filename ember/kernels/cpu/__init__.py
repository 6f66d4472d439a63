"""Fused Numba kernels of ember's ``cpu`` backend, one module per concept.

Each module implements composites of the backend contract (``ember/kernels/backend.py``),
forward and backward, on NumPy arrays, agreeing with the ``reference`` backend:

* :mod:`.softmax` — ``softmax``, ``log_softmax`` and their backward;
* :mod:`.norms` — ``layer_norm``, ``rms_norm`` and their backward;
* :mod:`.activations` — ``gelu`` (exact and tanh) and its backward, element-wise ``erf``;
* :mod:`.cross_entropy` — ``cross_entropy`` with label smoothing and its backward;
* :mod:`.embedding` — ``embedding`` lookup and its scatter-add backward;
* :mod:`.embedding_bag` — ``embedding_bag`` (sum/mean/max over ragged bags), its row-sparse
  backward and the row-sparse helpers (``coalesce_rows``, ``rows_to_dense``);
* :mod:`.dropout` — hash-RNG ``dropout`` and its backward;
* :mod:`.attention` — the attention core (mask, quiet softmax, dropout) and its backward, its
  tile products in :mod:`.tilegemm` (on the :mod:`.microkernel`) and its row passes in
  :mod:`.vector_rows`, both LLVM vector IR built with :mod:`.vector_ir`;
* :mod:`.optim_updates` — the multi-tensor optimizer updates and gradient clipping, in place
  on whole parameter groups (one kernel call per group);
* :mod:`.optim_sparse_updates` — the lazy optimizer updates of row-sparse gradients.

Conventions: float32 and float64 inputs, reductions over the last axis with leading
dimensions flattened into rows, new arrays returned (inputs never modified), integer
indices validated before any unchecked loop runs (the optimizer updates write their
parameter and state arrays in place instead). :mod:`.jit` configures Numba (cache
directory, threads) and :mod:`.vecmath` holds the vectorisable math the kernels share.

The function names equal their module names in several cases (``softmax.softmax``), so
the package exposes the modules, not the functions: ``from ember.kernels.cpu import
softmax; softmax.softmax(x)``. Importing the package imports Numba; kernels compile on
first use per dtype and are cached on disk.
"""

from __future__ import annotations

# isort: off
from ember.kernels import threads as _threads  # noqa: F401  (first: OpenMP wait policy)
from . import jit  # (second: sets up Numba's cache directory and threads)

# isort: on
from . import (
    activations,
    attention,
    cross_entropy,
    dropout,
    embedding,
    embedding_bag,
    norms,
    optim_sparse_updates,
    optim_updates,
    softmax,
    vecmath,
)

__all__ = [
    "activations",
    "attention",
    "cross_entropy",
    "dropout",
    "embedding",
    "embedding_bag",
    "jit",
    "norms",
    "optim_sparse_updates",
    "optim_updates",
    "softmax",
    "vecmath",
]
