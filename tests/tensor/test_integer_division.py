"""Integer ``//``, ``%`` and ``**`` where the result is undefined: a zero divisor or a negative
exponent raises a clear error naming the op (PyTorch raises too; the kernels would return 0 or
NumPy's own error), on every backend and in every operand form. Float results are unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import ember

INTS = [ember.int64, ember.int32]

# the form -> (the call, the error it raises)
DIVISIONS = {
    "floordiv": (lambda a, b: a // b, ZeroDivisionError),
    "floor_divide": (lambda a, b: a.floor_divide(b), ZeroDivisionError),
    "mod": (lambda a, b: a % b, ZeroDivisionError),
    "remainder": (lambda a, b: ember.remainder(a, b), ZeroDivisionError),
}


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("form", sorted(DIVISIONS))
def test_integer_division_by_a_zero_tensor_raises_naming_the_op_and_the_count(device, form, dtype):
    fn, error = DIVISIONS[form]
    a = ember.tensor(np.array([[7, -7, 3]]), device=device).to(dtype)
    b = ember.tensor(np.array([2, 0, 0]), device=device).to(dtype)
    with pytest.raises(error, match=rf"by zero: the divisor, {dtype} of shape \[3\], has 2 zeros") as info:
        fn(a, b)
    assert ("floordiv" if "floor" in form else "mod") in str(info.value)
    assert f"{dtype} of shape [1, 3]" in str(info.value)  # the other operand


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t // 0,
        lambda t: t % 0,
        lambda t: 5 // t,
        lambda t: 5 % t,
        lambda t: ember.floor_divide(t, 0),
    ],
    ids=["tensor//0", "tensor%0", "5//tensor", "5%tensor", "floor_divide(tensor, 0)"],
)
def test_scalar_forms_of_integer_division_by_zero_raise(device, fn):
    t = ember.tensor(np.array([0, 1, 2]), device=device)
    with pytest.raises(ZeroDivisionError, match=r"by zero: the divisor, int64 of shape \[3?\], has 1 zero"):
        fn(t)


def test_integer_division_without_zero_divisors_is_unchanged(device):
    a = ember.tensor(np.array([7, -7, 7, -7, 0]), device=device)
    b = ember.tensor(np.array([2, 2, -2, -2, 3]), device=device)
    np.testing.assert_array_equal(
        (a // b).numpy(), np.array([7, -7, 7, -7, 0]) // np.array([2, 2, -2, -2, 3])
    )
    np.testing.assert_array_equal((a % b).numpy(), np.array([7, -7, 7, -7, 0]) % np.array([2, 2, -2, -2, 3]))


def test_an_empty_result_divides_nothing_so_does_not_raise(device):
    a = ember.zeros((0, 3), dtype=ember.int64, device=device)
    b = ember.tensor(np.array([0, 1, 2]), device=device)
    assert (a // b).shape == (0, 3)
    assert (a % b).shape == (0, 3)


def test_float_division_by_zero_still_gives_inf_and_nan(device):
    a = ember.tensor(np.array([1.0, -1.0, 0.0], np.float32), device=device)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal((a // 0.0).numpy(), np.array([1.0, -1.0, 0.0], np.float32) // 0.0)
        np.testing.assert_array_equal((a % 0.0).numpy(), np.array([1.0, -1.0, 0.0], np.float32) % 0.0)


@pytest.mark.parametrize(
    "fn",
    [lambda t, e: t**e, lambda t, e: t ** e.numpy().tolist()[1], lambda t, e: 2**e, lambda t, e: t.pow(e)],
    ids=["tensor**tensor", "tensor**scalar", "scalar**tensor", "pow"],
)
def test_integer_pow_with_a_negative_exponent_raises_naming_the_op(device, fn):
    t = ember.tensor(np.array([1, 2, 3]), device=device)
    e = ember.tensor(np.array([2, -1, 0]), device=device)
    with pytest.raises(
        ValueError, match=r"pow \(\*\*\): integers to negative integer powers are not allowed"
    ):
        fn(t, e)


def test_integer_pow_message_names_the_shapes_and_dtypes(device):
    t = ember.tensor(np.array([[1, 2, 3]]), device=device).to(ember.int32)
    e = ember.tensor(np.array([-2, -1, 0]), device=device).to(ember.int32)
    with pytest.raises(
        ValueError, match=r"the exponent, int32 of shape \[3\], has 2 negative values"
    ) as info:
        t**e
    assert "int32 of shape [1, 3]" in str(info.value)


def test_integer_pow_with_non_negative_exponents_and_float_pow_are_unchanged(device):
    t = ember.tensor(np.array([1, 2, 3, -2]), device=device)
    np.testing.assert_array_equal(
        (t ** ember.tensor(np.array([0, 3, 2, 3]), device=device)).numpy(), [1, 8, 9, -8]
    )
    f = ember.tensor(np.array([2.0, 4.0], np.float32), device=device)
    np.testing.assert_allclose((f**-1).numpy(), [0.5, 0.25])


@pytest.mark.torch
def test_torch_raises_for_the_same_integer_divisions():
    torch = pytest.importorskip("torch")
    a, b = torch.tensor([7, -7, 3]), torch.tensor([2, 0, 1])
    for fn in (lambda: a // b, lambda: a % b, lambda: a // 0, lambda: a**-1):
        with pytest.raises(RuntimeError):
            fn()
