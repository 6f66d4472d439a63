"""The scalar argument checks shared by the kernels, the composed defaults and the optimizer
configs (``ember.kernels.arg_checks``): one wording for one mistake, everywhere."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ember.kernels.arg_checks import finite_scalar, per_tensor, step_numbers


def test_finite_scalar_accepts_real_numbers_as_float():
    assert finite_scalar("op", "x", 0.5) == 0.5
    for value in (3, np.float32(0.25), np.int64(2), np.float64(-1.5)):
        out = finite_scalar("op", "x", value)
        assert type(out) is float and out == float(value)
    assert finite_scalar("op", "beta", 0.0, unit_interval=True) == 0.0
    assert finite_scalar("op", "eps", 0.0, minimum=0.0) == 0.0


@pytest.mark.parametrize(
    "value,error,message",
    [
        (math.nan, ValueError, r"^Adam: `beta_1` must be finite, got nan$"),
        (math.inf, ValueError, r"^Adam: `beta_1` must be finite, got inf$"),
        (True, TypeError, r"^Adam: `beta_1` must be a number, got True$"),
        ("0.9", TypeError, r"^Adam: `beta_1` must be a number, got '0.9'$"),
        (None, TypeError, r"^Adam: `beta_1` must be a number, got None$"),
        (np.array(0.9), TypeError, r"must be a number"),
    ],
)
def test_finite_scalar_names_the_op_and_argument(value, error, message):
    with pytest.raises(error, match=message):
        finite_scalar("Adam", "beta_1", value)


def test_finite_scalar_ranges():
    with pytest.raises(ValueError, match=r"^op: `beta` must be in \[0, 1\), got 1.0$"):
        finite_scalar("op", "beta", 1.0, unit_interval=True)
    with pytest.raises(ValueError, match=r"^op: `beta` must be in \[0, 1\), got -0.1$"):
        finite_scalar("op", "beta", -0.1, unit_interval=True)
    with pytest.raises(ValueError, match=r"^op: `eps` must be >= 0, got -1e-08$"):
        finite_scalar("op", "eps", -1e-8, minimum=0.0)
    with pytest.raises(ValueError, match=r"^op: `k` must be >= 1.5, got 1.0$"):
        finite_scalar("op", "k", 1, minimum=1.5)


def test_per_tensor_broadcasts_a_scalar_and_checks_lists():
    np.testing.assert_array_equal(per_tensor("op", "lr", 0.1, 3), [0.1, 0.1, 0.1])
    out = per_tensor("op", "lr", [0.1, np.float32(0.2)], 2)
    assert out.dtype == np.float64 and out.tolist() == [0.1, float(np.float32(0.2))]
    assert per_tensor("op", "lr", 0.1, 0).shape == (0,)
    np.testing.assert_array_equal(per_tensor("op", "flags", [True, False], 2), [1.0, 0.0])
    with pytest.raises(
        ValueError,
        match=r"^op: `lr` must be a scalar or hold one value per tensor "
        r"\(3\), got shape \(2,\)$",
    ):
        per_tensor("op", "lr", [0.1, 0.2], 3)
    with pytest.raises(ValueError, match=r"^op: `lr` must be finite, got \[0.1, nan\]$"):
        per_tensor("op", "lr", [0.1, math.nan], 2)


def test_step_numbers_are_whole_and_at_least_one():
    np.testing.assert_array_equal(step_numbers("op", "steps", [1, 2.0, 7], 3), [1, 2, 7])
    for bad in (0, [1, 0], [1, 1.5], -3):
        with pytest.raises(ValueError, match=r"^op: `steps` must be integers >= 1 \(the 1-based step t\)"):
            step_numbers("op", "steps", bad, 2 if isinstance(bad, list) else 1)
