"""The top-k metrics rank a row the same way whether it arrives as an ember tensor or as a
NumPy array: NaN first (as ``ember.topk`` and PyTorch), lower index first on ties, and an
integer type's minimum last."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.train.metric._array import topk_rows

ROWS = {
    "nan_and_ties": np.array(
        [[1.0, np.nan, 3.0, 3.0, -np.inf, np.inf], [np.nan, np.nan, 0.0, -0.0, 2.0, 2.0]]
    ),
    "int_minimum": np.array([[np.iinfo(np.int64).min, 5, 5, -1, 7, 0]], dtype=np.int64),
    "float32": np.array([[0.5, 0.25, np.nan, 0.5, -1.0, 9.0]], dtype=np.float32),
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_numpy_rows_rank_as_the_tensor_path(name):
    a = ROWS[name]
    from_tensor = topk_rows(ember.tensor(a), 4)
    from_numpy = topk_rows(a, 4)
    np.testing.assert_array_equal(from_numpy, from_tensor)


def test_descending_with_nan_first_and_lower_index_first_on_ties():
    np.testing.assert_array_equal(topk_rows(ROWS["nan_and_ties"], 6)[0], [1, 5, 2, 3, 0, 4])
    assert topk_rows(ROWS["int_minimum"], 6)[0].tolist() == [4, 1, 2, 5, 3, 0]
