"""Element-wise ops on every backend: arithmetic operators with broadcasting and scalars,
comparisons, logical ops, unary math and activations, where / mask_fill / clamp.
Forward against NumPy; gradients against central differences (float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import npref
from helpers.gradcheck import gradcheck_np
from helpers.numeric import assert_close, away_from

import ember

FLOATS = [ember.float32, ember.float64]

# ---- binary arithmetic --------------------------------------------------------------------------
BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.true_divide),
    "pow": (lambda a, b: a**b, np.power),
    "maximum": (lambda a, b: a.maximum(b), np.maximum),
    "minimum": (lambda a, b: a.minimum(b), np.minimum),
}


def _operands(rng, op, shape_a=(3, 1, 4), shape_b=(2, 4)):
    a = rng.standard_normal(shape_a)
    b = rng.standard_normal(shape_b)
    if op == "pow":  # positive bases both ways round (the forward test swaps the operands)
        a, b = np.abs(a) + 0.5, np.abs(b) + 0.5
    if op == "div":
        b = away_from(rng, shape_b, gap=0.3)
    if op in ("maximum", "minimum"):
        b = b + 0.05  # no exact ties
    return a, b


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_forward_broadcast(device, rng, op, dtype):
    fn, ref = BINARY[op]
    a, b = _operands(rng, op)
    a, b = a.astype(dtype.numpy), b.astype(dtype.numpy)
    ta, tb = ember.tensor(a, device=device), ember.tensor(b, device=device)
    out = fn(ta, tb)
    assert_close(out, ref(a.astype(np.float64), b.astype(np.float64)), dtype=dtype)
    assert out.shape == (3, 2, 4)
    out = fn(tb, ta)  # operands swapped: broadcasting is symmetric
    assert_close(out, ref(b.astype(np.float64), a.astype(np.float64)), dtype=dtype)


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_gradients(device, rng, op):
    fn, _ = BINARY[op]
    a, b = _operands(rng, op)
    gradcheck_np(fn, device, a, b)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_floordiv_mod_float(device, rng, dtype):
    a = (rng.standard_normal((4, 5)) * 5).astype(dtype.numpy)
    b = away_from(rng, (5,), gap=0.5, scale=2).astype(dtype.numpy)
    ta, tb = ember.tensor(a, device=device), ember.tensor(b, device=device)
    # computed in the tensor dtype: floor() of a rounded quotient is what the op defines
    assert_close(ta // tb, np.floor_divide(a, b), dtype=dtype)
    assert_close(ta % tb, np.remainder(a, b), dtype=dtype)
    assert_close(ta.remainder(tb), np.remainder(a, b), dtype=dtype)
    assert_close(ta.floor_divide(tb), np.floor_divide(a, b), dtype=dtype)


def test_mod_gradient(device, rng):
    a = rng.uniform(0.1, 0.9, (3, 4)) + rng.integers(-3, 3, (3, 4))  # away from the jumps of a % b
    b = np.full((4,), 1.0) + rng.uniform(0.0, 0.05, (4,))
    gradcheck_np(lambda x, y: x % y, device, a, b, eps=1e-7)


def test_int_arithmetic_python_semantics(device):
    a = np.array([7, -7, 7, -7, 0, 5], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, 1], dtype=np.int64)
    ta, tb = ember.tensor(a, device=device), ember.tensor(b, device=device)
    for got, want in (
        (ta + tb, a + b),
        (ta - tb, a - b),
        (ta * tb, a * b),
        (ta // tb, a // b),
        (ta % tb, a % b),
        (ta**2, a**2),
        (-ta, -a),
        (abs(ta), np.abs(a)),
    ):
        assert got.dtype is ember.int64
        np.testing.assert_array_equal(got.numpy(), want)
    q = ta / tb
    assert q.dtype is ember.float32
    assert_close(q, a / b)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_scalars_on_either_side(device, rng, dtype):
    x = (np.abs(rng.standard_normal((2, 3))) + 0.5).astype(dtype.numpy)
    t = ember.tensor(x, device=device)
    xd = x.astype(np.float64)
    cases = [
        (t + 2, xd + 2),
        (2 + t, 2 + xd),
        (t - 1.5, xd - 1.5),
        (1.5 - t, 1.5 - xd),
        (t * 3, xd * 3),
        (3 * t, 3 * xd),
        (t / 4, xd / 4),
        (4 / t, 4 / xd),
        (t**2, xd**2),
        (2**t, 2**xd),
        (t**0.5, xd**0.5),
        (t // 0.3, np.floor_divide(x, dtype.numpy.type(0.3))),
        (-t, -xd),
        (+t, xd),
    ]
    for got, want in cases:
        assert_close(got, want, dtype=dtype)


def test_scalar_gradients(device, rng):
    x = np.abs(rng.standard_normal((2, 3))) + 0.5
    for fn in (
        lambda t: 2.0 - t,
        lambda t: 3.0 / t,
        lambda t: 2.0**t,
        lambda t: t**3.0,
        lambda t: t * 4 + 1,
        lambda t: -t,
        lambda t: (t - 0.2) * (t + 0.1),
    ):
        gradcheck_np(fn, device, x)
    neg = -x  # integer powers of negative bases are defined
    assert_close(ember.tensor(neg, device=device) ** 3, neg**3, dtype=ember.float64)
    gradcheck_np(lambda t: t**3 + t**2.0, device, neg)


def test_operands_from_lists_and_arrays(device):
    t = ember.tensor([1.0, 2.0], device=device)
    assert_close(t + [10.0, 20.0], np.array([11.0, 22.0]))
    assert_close(t * np.array([2.0, 3.0], dtype=np.float32), np.array([2.0, 6.0]))


# ---- comparisons and logical ops -----------------------------------------------------------------
def test_comparisons(device, rng):
    a = rng.integers(-2, 3, (3, 4)).astype(np.float32)
    b = rng.integers(-2, 3, (4,)).astype(np.float32)
    ta, tb = ember.tensor(a, device=device), ember.tensor(b, device=device)
    for got, want in (
        (ta == tb, a == b),
        (ta != tb, a != b),
        (ta < tb, a < b),
        (ta <= tb, a <= b),
        (ta > tb, a > b),
        (ta >= tb, a >= b),
        (ta > 0, a > 0),
        (ta > 0, a > 0),
        (ta <= 1.0, a <= 1.0),
        (ta.equal(tb), a == b),
        (ta.greater(tb), a > b),
        (ta.greater_equal(tb), a >= b),
        (ta.lower(tb), a < b),
        (ta.lower_equal(tb), a <= b),
    ):
        assert got.dtype is ember.bool_
        np.testing.assert_array_equal(got.numpy(), want)
    ti = ember.tensor(a.astype(np.int64), device=device)
    np.testing.assert_array_equal((ti == tb).numpy(), a == b)  # int vs float compares values


def test_logical_ops(device):
    a = np.array([[True, False, True, False]])
    b = np.array([[True], [False]])
    ta, tb = ember.tensor(a, device=device), ember.tensor(b, device=device)
    for got, want in (
        (ta & tb, a & b),
        (ta | tb, a | b),
        (ta ^ tb, a ^ b),
        (~ta, ~a),
        (ta & True, a & True),
        (False | ta, False | a),
        (True ^ ta, True ^ a),
        (ta.logical_and(tb), a & b),
        (ta.logical_not(), ~a),
    ):
        assert got.dtype is ember.bool_
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(TypeError, match="bool"):
        ~ember.tensor([1, 2], device=device)
    with pytest.raises(TypeError, match="logical_and"):
        ember.tensor([1.0], device=device) & ember.tensor([True], device=device)


def test_bool_arithmetic_rejected(device):
    t = ember.tensor([True, False], device=device)
    with pytest.raises(TypeError, match="bool"):
        t + t
    with pytest.raises(TypeError, match="bool"):
        t.exp()


# ---- unary math ----------------------------------------------------------------------------------
def _pos(rng, shape):
    return np.abs(rng.standard_normal(shape)) + 0.3


UNARY = {
    # name: (ember fn, numpy reference in float64, input sampler)
    "exp": (lambda t: t.exp(), np.exp, lambda r, s: r.standard_normal(s)),
    "log": (lambda t: t.log(), np.log, _pos),
    "log1p": (lambda t: t.log1p(), np.log1p, lambda r, s: r.uniform(-0.7, 2.0, s)),
    "expm1": (lambda t: t.expm1(), np.expm1, lambda r, s: r.standard_normal(s)),
    "sqrt": (lambda t: t.sqrt(), np.sqrt, _pos),
    "rsqrt": (lambda t: t.rsqrt(), lambda x: 1 / np.sqrt(x), _pos),
    "abs": (lambda t: t.abs(), np.abs, lambda r, s: away_from(r, s)),
    "neg": (lambda t: t.neg(), np.negative, lambda r, s: r.standard_normal(s)),
    "sin": (lambda t: t.sin(), np.sin, lambda r, s: r.standard_normal(s) * 2),
    "cos": (lambda t: t.cos(), np.cos, lambda r, s: r.standard_normal(s) * 2),
    "tanh": (lambda t: t.tanh(), np.tanh, lambda r, s: r.standard_normal(s) * 2),
    "sigmoid": (lambda t: t.sigmoid(), npref.sigmoid, lambda r, s: r.standard_normal(s) * 3),
    "erf": (lambda t: t.erf(), npref.erf, lambda r, s: r.standard_normal(s) * 1.5),
    "relu": (lambda t: ember.relu(t), lambda x: np.maximum(x, 0), lambda r, s: away_from(r, s)),
    "silu": (lambda t: ember.silu(t), lambda x: x * npref.sigmoid(x), lambda r, s: r.standard_normal(s) * 2),
    "softplus": (lambda t: ember.softplus(t), npref.softplus, lambda r, s: r.standard_normal(s) * 3),
    "softplus_beta": (
        lambda t: t.softplus(beta=2.0, threshold=5.0),
        lambda x: npref.softplus(x, 2.0, 5.0),
        lambda r, s: away_from(r, s, points=(2.5,), scale=2),
    ),
    "leaky_relu": (
        lambda t: ember.leaky_relu(t, 0.1),
        lambda x: np.where(x >= 0, x, 0.1 * x),
        lambda r, s: away_from(r, s),
    ),
    "reciprocal": (lambda t: t.reciprocal(), lambda x: 1 / x, lambda r, s: away_from(r, s, gap=0.3)),
    "square": (lambda t: t.square(), np.square, lambda r, s: r.standard_normal(s)),
    "clamp": (
        lambda t: ember.clamp(t, -0.5, 0.7),
        lambda x: np.clip(x, -0.5, 0.7),
        lambda r, s: away_from(r, s, points=(-0.5, 0.7), gap=0.05),
    ),
    "clamp_min": (
        lambda t: t.clamp_min(0.2),
        lambda x: np.maximum(x, 0.2),
        lambda r, s: away_from(r, s, points=(0.2,), gap=0.05),
    ),
    "clamp_max": (
        lambda t: t.clamp(max=-0.1),
        lambda x: np.minimum(x, -0.1),
        lambda r, s: away_from(r, s, points=(-0.1,), gap=0.05),
    ),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_forward(device, rng, name, dtype):
    fn, ref, sample = UNARY[name]
    x = sample(rng, (3, 5)).astype(dtype.numpy)
    out = fn(ember.tensor(x, device=device))
    assert_close(out, ref(x.astype(np.float64)), dtype=dtype)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_gradients(device, rng, name):
    fn, _, sample = UNARY[name]
    gradcheck_np(fn, device, sample(rng, (3, 5)))


def test_non_differentiable_unary(device):
    x = np.array([-1.5, -0.5, 0.0, 0.4, 2.5, 3.7], dtype=np.float32)
    t = ember.tensor(x, device=device)
    for got, want in (
        (t.sign(), np.sign(x)),
        (t.floor(), np.floor(x)),
        (t.ceil(), np.ceil(x)),
        (t.round(), np.round(x)),
    ):
        assert got.dtype is ember.float32
        np.testing.assert_array_equal(got.numpy(), want)
    special = ember.tensor([1.0, math.inf, -math.inf, math.nan], device=device)
    np.testing.assert_array_equal(special.isnan().numpy(), [False, False, False, True])
    np.testing.assert_array_equal(special.isinf().numpy(), [False, True, True, False])
    np.testing.assert_array_equal(special.isfinite().numpy(), [True, False, False, False])
    s = ember.tensor(x.astype(np.float64), device=device).require_grad()
    assert not s.sign().is_require_grad() and not s.floor().is_require_grad()


def test_unary_on_int_gives_float(device):
    t = ember.tensor([1, 4, 9], device=device)
    out = t.sqrt()
    assert out.dtype is ember.float32
    assert_close(out, np.array([1.0, 2.0, 3.0]))
    assert t.abs().dtype is ember.int64 and t.square().dtype is ember.int64
    np.testing.assert_array_equal(ember.tensor([-3, 2], device=device).sign().numpy(), [-1, 1])


def test_sigmoid_softplus_extremes_are_stable(device):
    x = ember.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=ember.float64, device=device)
    assert_close(x.sigmoid(), npref.sigmoid(np.clip(x.numpy(), -700, 700)))
    sp = ember.softplus(x).numpy()
    assert np.all(np.isfinite(sp))
    np.testing.assert_allclose(
        sp, [0.0, np.log1p(np.exp(-50.0)), np.log(2.0), 50.0, 1000.0], rtol=1e-12, atol=1e-300
    )


# ---- where / mask_fill ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_where_and_mask_fill(device, rng, dtype):
    cond = rng.random((3, 1, 4)) > 0.5
    a = rng.standard_normal((2, 4)).astype(dtype.numpy)
    b = rng.standard_normal((3, 2, 1)).astype(dtype.numpy)
    tc = ember.tensor(cond, device=device)
    ta, tb = ember.tensor(a, device=device), ember.tensor(b, device=device)
    assert_close(ember.where(tc, ta, tb), np.where(cond, a, b).astype(np.float64), dtype=dtype)
    assert_close(ember.where(tc, ta, 0.5), np.where(cond, a, 0.5), dtype=dtype)
    assert_close(ember.where(tc, -1.0, tb), np.where(cond, -1.0, b), dtype=dtype)
    assert_close(ta.where(tc, tb), np.where(cond, a, b), dtype=dtype)
    mask = rng.random((2, 4)) > 0.5
    tm = ember.tensor(mask, device=device)
    assert_close(ember.mask_fill(ta, tm, -7.0), np.where(mask, -7.0, a), dtype=dtype)
    assert_close(ta.masked_fill(tm, 3.0), np.where(mask, 3.0, a), dtype=dtype)
    assert_close(ta.mask_where(tm, tb[0]), np.where(mask, b[0], a), dtype=dtype)
    ti = ember.tensor([1, 2, 3, 4], device=device)
    out = ember.where(ember.tensor([True, False, True, False], device=device), ti, 0)
    assert out.dtype is ember.int64 and out.numpy().tolist() == [1, 0, 3, 0]
    with pytest.raises(TypeError, match="where"):
        ember.where(ta, ta, tb)


def test_where_mask_fill_gradients(device, rng):
    cond = rng.random((3, 1, 4)) > 0.5
    a = rng.standard_normal((2, 4))
    b = rng.standard_normal((3, 2, 1))
    tc = ember.tensor(cond, device=device)
    gradcheck_np(lambda x, y: ember.where(tc, x, y), device, a, b)
    mask = ember.tensor(rng.random((2, 4)) > 0.5, device=device)
    gradcheck_np(lambda x: x.mask_fill(mask, 2.0) * x, device, a)


@pytest.mark.parametrize("dtype", [ember.float16] + FLOATS, ids=str)
def test_0d_results_stay_arrays_for_the_next_op(device, dtype):
    # found by the differential test: NumPy gives scalars, not arrays, for 0-d ufunc and
    # indexing results; the next op failed on them (reference erf: AttributeError; cpu erf:
    # "erf: x must be a numpy.ndarray")
    x = ember.tensor(0.5, dtype=dtype, device=device)
    row = ember.tensor([0.5, -1.0], dtype=dtype, device=device)
    for y, want in (
        ((-x).erf(), math.erf(-0.5)),
        (x.erf(), math.erf(0.5)),
        ((x + x).erf(), math.erf(1.0)),
        (row[1].erf(), math.erf(-1.0)),
        (ember.gelu(-x), -0.5 * 0.5 * (1 + math.erf(-0.5 / math.sqrt(2)))),
    ):
        assert y.shape == () and y.dtype is dtype
        assert isinstance(y.device.backend.to_host(y._data), np.ndarray)
        np.testing.assert_allclose(float(y.item()), want, rtol=2e-3 if dtype is ember.float16 else 1e-6)


def test_where_checks_all_three_shapes_together(device):
    # found by the differential test: cond [1, 1, 0] broadcasts with x [2, 4, 1] and with
    # other [3, 1, 0], but x and other do not: NumPy's own ValueError named no op
    cond = ember.zeros(1, 1, 0, dtype="bool", device=device)
    with pytest.raises(
        ValueError, match=r"where: shapes \[1, 1, 0\] \(condition\), \[2, 4, 1\] and \[3, 1, 0\]"
    ):
        ember.where(cond, ember.zeros(2, 4, 1, device=device), ember.zeros(3, 1, 0, device=device))
    assert ember.where(cond, ember.zeros(2, 4, 1, device=device), 1.0).shape == (2, 4, 0)
