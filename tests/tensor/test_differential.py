"""Differential test: random op programs on every backend, compared with ``reference``.

Hypothesis draws an input (float16/32/64, int32/64 or bool; zero-size dims; contiguous,
transposed or strided memory; tame or wild values: ±inf, NaN, -0.0, huge, subnormal) and a
few steps of one family mix (element-wise math with broadcasting, reductions, matmul, the
fused nn composites, attention, views and indexing), then checks every step and the whole
program's gradients on the other backend against the reference (see
``tests/helpers/differential.py`` for the exact rules). A failure shrinks to a short
program, printed as code.

CI runs a few thousand programs in all, the same ones every run (derandomized, no example
database). Longer runs:

    EMBER_DIFFERENTIAL_EXAMPLES=200000 pytest tests/tensor/test_differential.py

spreads that many programs over the tests in the same proportions, and
``EMBER_DIFFERENTIAL_SEED=<int>`` draws another set of programs (reproducible by its seed).
"""

from __future__ import annotations

import os

from helpers.differential import check_random_program
from helpers.differential_values import FLOATS
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

# Programs per test in CI; EMBER_DIFFERENTIAL_EXAMPLES rescales them to that total.
CI_EXAMPLES = {"elementwise": 600, "reduction": 400, "nn": 600, "attention": 250, "movement": 550}
_TOTAL = int(os.environ.get("EMBER_DIFFERENTIAL_EXAMPLES", "0") or 0)
_SEED = os.environ.get("EMBER_DIFFERENTIAL_SEED")


def differential(name: str):
    """Hypothesis settings of one test: its share of the examples, derandomized (or seeded)."""
    n = CI_EXAMPLES[name]
    if _TOTAL > 0:
        n = max(1, round(_TOTAL * n / sum(CI_EXAMPLES.values())))
    config = settings(
        max_examples=n,
        deadline=None,
        database=None,
        derandomize=_SEED is None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )

    def apply(test):
        test = config(test)
        return seed(int(_SEED))(test) if _SEED is not None else test

    return apply


@differential("elementwise")
@given(data=st.data())
def test_elementwise_programs(other_device, data):
    check_random_program(
        data, other_device, {"unary": 4, "binary": 4, "where": 1, "clamp": 1, "view": 2, "reduction": 1}
    )


@differential("reduction")
@given(data=st.data())
def test_reduction_and_matmul_programs(other_device, data):
    check_random_program(
        data, other_device, {"reduction": 4, "matmul": 2, "view": 2, "unary": 1, "binary": 1, "join": 1}
    )


@differential("nn")
@given(data=st.data())
def test_nn_composite_programs(other_device, data):
    check_random_program(
        data,
        other_device,
        {
            "softmax": 3,
            "norm": 3,
            "unary": 1,
            "cross_entropy": 2,
            "embedding": 1,
            "embedding_bag": 1,
            "dropout": 1,
            "view": 3,
            "binary": 1,
        },
        dtypes=FLOATS * 4 + ("int64",),
        min_dims=1,
    )


@differential("attention")
@given(data=st.data())
def test_attention_programs(other_device, data):
    check_random_program(
        data, other_device, {"attention": 3, "view": 1, "softmax": 1}, max_steps=3, dtypes=FLOATS, min_dims=2
    )


@differential("movement")
@given(data=st.data())
def test_movement_and_indexing_programs(other_device, data):
    check_random_program(data, other_device, {"view": 3, "join": 2, "indexing": 3, "binary": 1})
