"""A descending sort (and topk) orders as PyTorch does: NaN first, stable among ties, and an
int type's minimum last — found by the PyTorch differential test (issue #30)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

NAN = float("nan")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_descending_float_sort_puts_nan_first_and_keeps_ties_in_order(device, dtype):
    x = ember.tensor([[1.0, NAN, 3.0, -np.inf, NAN, 1.0, np.inf]], dtype=dtype, device=device)
    values, indices = x.sort(-1, descending=True)
    np.testing.assert_array_equal(values.numpy()[0], np.array([NAN, NAN, np.inf, 3, 1, 1, -np.inf], dtype))
    assert indices.numpy().tolist() == [[1, 4, 6, 2, 0, 5, 3]]
    # ascending stays as it was: NaN last
    assert x.sort(-1)[1].numpy().tolist() == [[3, 0, 5, 2, 6, 1, 4]]


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_descending_int_sort_puts_the_minimum_last(device, dtype):
    low = np.iinfo(dtype).min
    x = ember.tensor([[0, low, 5, -1, 5], [low, low, 1, 2, 3]], dtype=dtype, device=device)
    values, indices = x.sort(-1, descending=True)
    assert values.numpy().tolist() == [[5, 5, 0, -1, low], [3, 2, 1, low, low]]
    assert indices.numpy().tolist() == [[2, 4, 0, 3, 1], [4, 3, 2, 0, 1]]
    top, where = x.topk(2, -1)
    assert top.numpy().tolist() == [[5, 5], [3, 2]]
    assert where.numpy().tolist() == [[2, 4], [4, 3]]


def test_descending_sort_along_dim_0_and_of_bools(device):
    x = ember.tensor([[1.0, NAN], [NAN, 2.0], [3.0, 0.0]], device=device)
    assert x.argsort(0, descending=True).numpy().tolist() == [[1, 0], [2, 1], [0, 2]]
    b = ember.tensor([False, True, False, True], device=device)
    assert b.argsort(descending=True).numpy().tolist() == [1, 3, 0, 2]
