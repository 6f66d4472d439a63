"""The machine's own limit for the model table: its SGEMM speed, and the work of a step.

    python bench/machine_limit.py        # prints this machine's SGEMM GFLOP/s

``sgemm_gflops`` multiplies square float32 matrices with NumPy's BLAS (every core) and keeps
the best size's median: the speed no float32 step can beat, since a Transformer's work is
almost all matrix products. ``transformer_flops`` counts a model's useful work, the matrix
products over the real (unpadded) tokens: a step that skips padding is credited with the work
it did, never with the padding it skipped.
"""

from __future__ import annotations

import statistics
import time

import numpy as np


def sgemm_gflops(sizes=(1024, 2048, 3072), repeats: int = 10) -> dict:
    """The best median GFLOP/s of ``n x n @ n x n`` float32 products over ``sizes``, and per size."""
    rng = np.random.default_rng(0)
    per_size = {}
    for n in sizes:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        out = np.empty((n, n), dtype=np.float32)
        np.matmul(a, b, out=out)  # warm-up: BLAS threads, pages
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            np.matmul(a, b, out=out)
            times.append(time.perf_counter() - t0)
        per_size[n] = 2 * n**3 / statistics.median(times) / 1e9
    return {"gflops": max(per_size.values()), "per_size": per_size}


def transformer_flops(shape: dict, lengths, train: bool) -> float:
    """FLOPs of the matrix products of a pre-norm Transformer encoder classifier with its head on
    the first token, over rows of ``lengths`` real tokens: per layer the four attention
    projections, the two feed-forward products and the attention's two products over each row's
    own tokens, except in the last layer, whose output is needed at position 0 only (its key and
    value projections over every token, the rest for one query per row); and the head. A
    training step adds the backward's two products per forward product (3x)."""
    lengths = np.asarray(lengths, dtype=np.float64)
    rows, tokens, squares = len(lengths), lengths.sum(), (lengths**2).sum()
    d, ff = shape["d_model"], shape["d_ff"]

    def layer(queries, pairs):  # `queries` positions computed, attending over `pairs` in all
        keys_values = 2 * tokens * d * (2 * d)
        return keys_values + 2 * queries * d * (2 * d) + 2 * 2 * queries * d * ff + 2 * 2 * pairs * d

    forward = (
        (shape["layers"] - 1) * layer(tokens, squares) + layer(rows, tokens) + 2 * rows * d * shape["classes"]
    )
    return float(forward * (3 if train else 1))


if __name__ == "__main__":
    found = sgemm_gflops()
    sizes = ", ".join(f"{n}: {g:.0f}" for n, g in found["per_size"].items())
    print(f"SGEMM (NumPy float32): {found['gflops']:.0f} GFLOP/s (by size {sizes})")
