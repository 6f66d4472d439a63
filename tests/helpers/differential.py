"""The differential test's engine: run a random program on ``reference`` and on another
backend, step by step, and compare everything.

A program is an input tensor (see :mod:`helpers.differential_values`) and a few steps (see
:mod:`helpers.differential_steps`), drawn one at a time from what the previous step gave
on ``reference``. Each step is checked on its own and then the program as a whole:

* **One step at a time.** Both backends run the step on the *same* input: the reference's
  result of the last non-view step, copied to each backend, followed by the view steps
  since (so a step sees the transposed, strided, broadcast or reversed views they made).
  Forward values, and the gradients of the step's input and operands for a fixed output
  gradient, must agree at the dtype's tolerance: same shape and dtype, NaN where NaN,
  ±inf where ±inf, close elsewhere; ints and bools exactly. Rounding differences are not
  carried from step to step, so a tolerance failure points at the step that made it.
* **Errors.** When the reference raises, the other backend must raise the same exception
  class, raised by ember's own code with a message naming the op; the program ends there.
* **The whole program.** Run again from the input on each backend without resetting, its
  result reduced to a random scalar and differentiated: the result and the gradients of the
  input and of every operand must agree (tolerance ×8, scaled by the largest magnitude).
  Rounding differences of one step may grow in later ones (a norm of a nearly constant
  row divides them by its tiny spread): a *shadow* run of the reference, with noise of the
  size of each step's observed difference added to its results, measures that growth, and
  four times it is allowed on top. A step's backward rounds too (an attention's dq is what
  is left of terms that cancel: float32 fixes it to eps times those terms, not times dq),
  and earlier steps' backward carries that on: each step's backward is run again on both
  backends, from the step's own input, with the gradient the whole program sends into it
  (how much its terms cancel depends on that gradient's direction: an attention's most
  when it is parallel to the output, as a square's is, which a random output gradient
  never is), and two more shadow runs add noise of the size of the difference to the
  gradients it sends back.
  Only for tame values, and skipped when a discontinuous
  step (rounding, comparison, ordering, ties), or one that magnifies rounding to order 1,
  follows a step whose results already differed: the backends may then legitimately part
  ways.
* **Conditioning.** A step that sums products of its inputs may differ by rounding in
  proportion to its inputs' magnitude, or for a norm to its largest 1/std (see
  :func:`rounding_allowance`); that allowance is added to the absolute tolerance of that
  step only. Where it exceeds the dtype's range (rounding alone may overflow: 1e300 values
  in a float64 attention) the values are not compared, only shapes, dtypes and errors.
  Values are compared at the precision they were computed in: a float64 operand cast to
  float32 inside an op gets a float32-accurate gradient.

Comparison rules that are semantics, not tolerance: the sign of a zero is not compared
(-0.0 == 0.0 as in IEEE 754) and neither is a NaN's sign or payload.
"""

from __future__ import annotations

import os
import traceback
import warnings
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

import ember
from helpers.differential_steps import Step, seed_gradient, steps
from helpers.differential_values import DTYPES, Operand, leaves
from helpers.numeric import tol

_EMBER_DIR = os.path.dirname(os.path.abspath(ember.__file__)) + os.sep
CHAIN_FACTOR = 8.0


@dataclass
class Outcome:
    """What one backend made of a step (or of the whole program)."""

    value: np.ndarray | None = None
    error: BaseException | None = None
    grads: list | None = None  # per leaf: an array, or None when it got no gradient
    backward_error: BaseException | None = None


def _build(base: Operand, pending: list, device: str, grad: bool):
    leaf, x = base.build(device, grad)
    for v in pending:
        x = v.fn(x, *(o.build(device, False)[1] for o in v.operands))
    return leaf, x


def _host(t) -> np.ndarray:
    return np.array(t.numpy(), copy=True)


def _grads(
    y, leaves_, device: str, index: int, reduce: str | None = None, extra=(), dout=None
) -> tuple[list | None, BaseException | None]:
    """The leaves' gradients of ``y``: for ``dout`` (the output gradient; the step's
    :func:`seed_gradient` when None), or of the scalar ``reduce`` makes of ``y`` plus the
    ``<t, n>`` of each ``extra`` pair."""
    if not (y.dtype.is_float and y.numel and y.is_require_grad()):
        return None, None
    try:
        if reduce is None:
            if dout is None:
                dout = seed_gradient(y.shape, y.dtype, index)
            g = y.backward(ember.tensor(dout, dtype=y.dtype, device=device))
        else:
            loss = _scalar_loss(y, reduce, device)
            for t, n in extra:
                loss = loss + (t * ember.tensor(n, dtype=t.dtype, device=device)).sum().to(loss.dtype)
            g = loss.backward()
    except Exception as exc:  # - compared with the other backend's
        return None, exc
    out = []
    for t in leaves_:
        gt = g.get(t) if t.is_require_grad() else None
        if gt is not None and not isinstance(gt, ember.Tensor):
            gt = gt.to_dense()  # a row-sparse gradient
        out.append(None if gt is None else _host(gt))
    return out, None


def _scalar_loss(y, reduce: str, device: str):
    if reduce == "mean":
        return y.mean()
    if reduce == "square":
        return (y * y).sum()
    if reduce == "weighted":
        w = np.random.default_rng(7).standard_normal(y.shape).astype(y.dtype.numpy)
        return (y * ember.tensor(w, dtype=y.dtype, device=device)).sum()
    return y.sum()


def run_step(step: Step, base: Operand, pending: list, device: str, index: int, dout=None) -> Outcome:
    """One step on ``device``, from ``base`` and the pending views, with its backward (for the
    output gradient ``dout``; the step's seed gradient when None)."""
    leaf, x = _build(base, pending, device, grad=True)
    built = [o.build(device, True) for o in step.operands]
    if step.seed is not None:
        ember.seed(step.seed)
    try:
        y = step.fn(x, *(b[1] for b in built))
    except Exception as exc:
        return Outcome(error=exc)
    if dout is not None and tuple(y.shape) != dout.shape:
        return Outcome(_host(y))  # no gradient to compare
    grads, back_err = _grads(y, [leaf] + [b[0] for b in built], device, index, dout=dout)
    return Outcome(_host(y), grads=grads, backward_error=back_err)


def run_program(
    program: list,
    start: Operand,
    device: str,
    reduce: str,
    noise: dict | None = None,
    grad_noise: list | None = None,
) -> Outcome:
    """The whole program on ``device`` from its input, differentiated through ``reduce``;
    ``noise`` (step index -> array) is added to those steps' results (a constant: the
    gradients' formulas are unchanged, only the values they see). ``grad_noise`` (see
    :func:`gradient_noise`) adds rounding-sized noise to the gradients leaving those steps'
    backward instead."""
    try:
        x, all_leaves, inputs = _run_forward(program, start, device, noise)
    except Exception as exc:  # - compared with the other backend's
        return Outcome(error=exc)
    extra = []
    for i, j, at, n in grad_noise or ():
        # <t, n> added to the loss adds n to t's gradient (the leaf's, or the one a step's
        # input sends back through the steps before it)
        t = inputs[at] if j == 0 else all_leaves[_leaf_index(program, i, j)]
        if tuple(t.shape) == n.shape:
            extra.append((t, n))
    grads, back_err = _grads(x, all_leaves, device, 0, reduce, extra)
    return Outcome(_host(x), grads=grads, backward_error=back_err)


def _run_forward(program: list, start: Operand, device: str, noise: dict | None, taps: list | None = None):
    """The program's result, its leaves, and each step's input (``taps``: a zero leaf added to
    each step's result, whose gradient is the one the whole program sends into that step)."""
    leaf, x = start.build(device, True)
    all_leaves, inputs = [leaf], [leaf]
    for i, step in enumerate(program):
        if i:
            inputs.append(x)
        built = [o.build(device, True) for o in step.operands]
        all_leaves += [b[0] for b in built]
        if step.seed is not None:
            ember.seed(step.seed)
        x = step.fn(x, *(b[1] for b in built))
        if noise and i in noise and x.shape == noise[i].shape:
            x = x + ember.tensor(noise[i], dtype=x.dtype, device=device)
        if taps is not None:
            tap = None
            if x.dtype.is_float and x.is_require_grad():
                tap = ember.zeros(x.shape, dtype=x.dtype, device=device).require_grad()
                x = x + tap
            taps.append(tap)
    return x, all_leaves, inputs


def _leaf_index(program: list, i: int, j: int) -> int:
    """Position in the whole program's leaves of operand ``j - 1`` of step ``i``."""
    return 1 + sum(len(s.operands) for s in program[:i]) + j - 1


def _output_gradients(program: list, start: Operand, device: str, reduce: str) -> list:
    """Per step, the gradient the whole program sends into its result (None where none)."""
    taps: list = []
    try:
        x, _, _ = _run_forward(program, start, device, None, taps)
        grads, _ = _grads(x, [t for t in taps if t is not None], device, 0, reduce)
    except Exception:  # - the program then fails alike on both backends, compared there
        return [None] * len(program)
    found = iter(grads or ())
    return [None if tap is None else next(found, None) for tap in taps]


# ---- comparison ------------------------------------------------------------------------------
def _finite_max(arrays, floor: float = 1.0) -> float:
    """The largest finite magnitude among the float arrays, at least ``floor``."""
    m = floor
    for a in arrays:
        if a is not None and a.dtype.kind == "f" and a.size:
            a = np.abs(a[np.isfinite(a)].astype(np.float64))
            if a.size:
                m = max(m, float(a.max()))
    return m


def rounding_allowance(step: Step, inputs, dtype) -> float:
    """Absolute error two correct implementations may differ by in ``step``'s results.

    An op whose results are sums of its inputs' products (``step.degree`` factors each)
    may round differently with another summation order by about eps · M ** degree, M the
    largest input magnitude: ``sum([1e30, 1, -1e30])`` is 0 or 1, and softmax of scores
    ~1e30 is fixed only up to rounding. eps is that of the precision the op computes in
    (float32 for float16 composites)."""
    if dtype.kind != "f" or not (step.degree or step.conditioning):
        return 0.0
    eps = float(np.finfo(np.float64 if dtype == np.float64 else np.float32).eps)
    with np.errstate(over="ignore", invalid="ignore"):
        if step.conditioning is not None:  # the step knows better, e.g. a norm's largest 1/std
            return float(16.0 * eps * np.float64(step.conditioning(inputs)))
        return float(16.0 * eps * np.float64(_finite_max(inputs)) ** step.degree)  # inf past 1e308


def less_precise(a, b):
    """The less precise of two NumPy dtypes when both are floats, else ``a``."""
    if a.kind == "f" and b.kind == "f" and b.itemsize < a.itemsize:
        return b
    return a


def assert_same(
    got: np.ndarray,
    want: np.ndarray,
    what: str,
    factor: float = 1.0,
    scaled: bool = False,
    allowance: float = 0.0,
    precision=None,
    shadows=(),
) -> None:
    """``got`` (other backend) equals ``want`` (reference): shape, dtype, NaN/±inf positions,
    and values within the tolerance of ``precision`` (the dtype the values were computed in,
    ``want``'s by default) times ``factor`` (the absolute part times the largest finite
    magnitude of ``want`` too when ``scaled``) plus ``allowance``.

    ``shadows`` are the reference's results with its intermediate results perturbed by
    rounding-sized noise: four times their largest distance from ``want`` is allowed on top,
    element by element, and where one disagrees with ``want`` on NaN/±inf the positions are
    not compared."""
    if got.shape != want.shape or got.dtype != want.dtype:
        raise AssertionError(
            f"{what}: got {got.dtype}{list(got.shape)}, reference gives {want.dtype}{list(want.shape)}"
        )
    if want.dtype.kind != "f":
        bad = np.flatnonzero(got.ravel() != want.ravel())
        if bad.size:
            i = bad[0]
            raise AssertionError(
                f"{what}: {bad.size} values differ, first at flat index {i}: "
                f"{got.ravel()[i]!r} vs reference {want.ravel()[i]!r}"
            )
        return
    if allowance >= float(np.finfo(want.dtype).max):
        return  # the op's rounding alone can overflow at these magnitudes: no value is determined
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    rtol, atol = tol(ember.dtype_from_numpy(less_precise(want.dtype, np.dtype(precision or want.dtype))))
    finite = np.isfinite(w)
    if scaled and finite.any():
        atol = atol * max(1.0, float(np.abs(w[finite]).max()))
    rtol, atol = rtol * factor, atol * factor + allowance
    same_special = np.where(np.isnan(w), np.isnan(g), np.where(np.isinf(w), g == w, np.isfinite(g)))
    with np.errstate(invalid="ignore"):
        for shadow in shadows:
            if shadow is None or shadow.shape != want.shape:
                continue
            sh = shadow.astype(np.float64).ravel()
            stable = np.where(np.isnan(w), np.isnan(sh), np.where(np.isinf(w), sh == w, np.isfinite(sh)))
            same_special |= ~stable  # the reference itself flips here under rounding noise
            atol = np.maximum(atol, atol + 4.0 * np.where(np.isfinite(sh) & finite, np.abs(sh - w), 0.0))
        close = same_special & (~finite | (np.abs(g - w) <= atol + rtol * np.abs(w)))
    if not close.all():
        bad = np.flatnonzero(~close)
        i = bad[0]
        limit = float(np.broadcast_to(atol, w.shape)[i])
        raise AssertionError(
            f"{what}: {bad.size} of {w.size} values differ (rtol {rtol:g}, atol {limit:g}), first "
            f"at {np.unravel_index(i, want.shape)}: {got.ravel()[i]!r} vs reference "
            f"{want.ravel()[i]!r}"
        )


def assert_ember_error(exc: BaseException, step: Step, where: str) -> None:
    """``exc`` was raised by ember's own code and its message names the op."""
    frames = traceback.extract_tb(exc.__traceback__)
    origin = os.path.abspath(frames[-1].filename) if frames else ""
    if not origin.startswith(_EMBER_DIR):
        raise AssertionError(
            f"{step.label}: {where} raised {type(exc).__name__}({exc}) from {origin}, not a clear ember error"
        ) from exc
    text = str(exc).lower()
    if not any(name.lower() in text for name in (step.op,) + tuple(step.names)):
        raise AssertionError(
            f"{step.label}: {where} raised {type(exc).__name__}({exc}), a message that does "
            f"not name the op {step.op!r}"
        ) from exc


def compare_outcomes(
    got: Outcome,
    want: Outcome,
    step: Step,
    other: str,
    factor: float = 1.0,
    scaled: bool = False,
    inputs=(),
    precision=None,
    shadows=(),
) -> bool:
    """Assert ``got`` (on ``other``) agrees with ``want`` (on reference), ``inputs`` being the
    step's host arrays; returns whether the forward values are bitwise equal.

    A gradient is compared at the precision of the step's result when that is lower than its
    own: a float64 operand cast to float32 inside the op gets a float32-accurate gradient.
    ``precision`` lowers that further (the least precise dtype a whole program went through);
    ``shadows`` are the reference's outcomes under rounding-sized noise (see :func:`assert_same`).
    """
    if want.error is not None or got.error is not None:
        if want.error is None or got.error is None or type(got.error) is not type(want.error):
            raise AssertionError(
                f"{step.label}: reference {_describe(want.error)}, {other} {_describe(got.error)}"
            )
        assert_ember_error(want.error, step, "reference")
        assert_ember_error(got.error, step, other)
        return True
    out_precision = (
        want.value.dtype if precision is None else less_precise(want.value.dtype, np.dtype(precision))
    )
    allowance = rounding_allowance(step, inputs, out_precision)
    shadows = [sh for sh in shadows if sh.error is None and sh.backward_error is None]
    assert_same(
        got.value,
        want.value,
        f"{step.label}: forward on {other}",
        factor,
        scaled,
        allowance,
        out_precision,
        [sh.value for sh in shadows],
    )
    if (want.backward_error is None) != (got.backward_error is None) or (
        want.backward_error is not None and type(want.backward_error) is not type(got.backward_error)
    ):
        raise AssertionError(
            f"{step.label}: backward: reference {_describe(want.backward_error)}, "
            f"{other} {_describe(got.backward_error)}"
        )
    if want.backward_error is not None:
        assert_ember_error(want.backward_error, step, "reference backward")
    if (want.grads is None) != (got.grads is None):
        raise AssertionError(
            f"{step.label}: reference gives gradients {want.grads is not None}, {other} "
            f"{got.grads is not None}"
        )
    for i, (g, w) in enumerate(zip(got.grads or (), want.grads or ())):
        name = "x" if i == 0 else f"operand a{i - 1}"
        shadow_grads = [sh.grads[i] for sh in shadows if sh.grads is not None]
        if (g is None) != (w is None):
            raise AssertionError(
                f"{step.label}: gradient of {name}: reference {w is not None}, {other} {g is not None}"
            )
        if g is not None:
            grad_precision = less_precise(w.dtype, out_precision)
            # the output gradient (|values| < 5) multiplies every term of the backward
            assert_same(
                g,
                w,
                f"{step.label}: gradient of {name} on {other}",
                factor,
                scaled,
                5.0 * rounding_allowance(step, inputs, grad_precision),
                grad_precision,
                shadow_grads,
            )
    return bool(np.array_equal(got.value, want.value, equal_nan=True))


def rounding_noise(got: np.ndarray, want: np.ndarray, index: int) -> np.ndarray | None:
    """Noise the size of the difference between two backends' results of one step (at least
    a few ulps of ``want``), with random signs: what the reference's shadow run adds there."""
    if want.dtype.kind != "f" or got.shape != want.shape or not want.size:
        return None
    w, g = want.astype(np.float64), got.astype(np.float64)
    both = np.isfinite(w) & np.isfinite(g)
    gap = float(np.abs(g - w)[both].max()) if both.any() else 0.0
    ulps = 4.0 * float(np.finfo(want.dtype).eps) * np.abs(np.where(np.isfinite(w), w, 0.0))
    signs = np.random.default_rng(500 + index).choice([-1.0, 1.0], size=want.shape)
    return (signs * np.maximum(gap, ulps)).astype(want.dtype)


def gradient_noise(program: list, start: Operand, reduce: str, other: str, measured: list) -> list:
    """Noise for the gradients each step's backward sends to its leaves (its input, the result
    of step ``base_at - 1``, and its operands): the two backends' difference there, sign
    and all, when that backward gets, from the step's input on reference, the gradient the
    whole program sends into the step. A step whose gradient cancels (an attention's dq,
    what is left of terms that cancel) rounds it off by eps times its terms, not times the
    result, and how much cancels depends on that gradient (a square's is parallel to the
    output); the whole program's earlier steps carry the difference into their own, where
    the rounding of neighbouring elements adds up (random signs would let it cancel).
    ``measured`` holds ``(index, step, base, pending, base_at)`` per step; the entries are
    ``(index, leaf, base_at, noise)``, for :func:`run_program`."""
    douts = _output_gradients(program, start, "reference", reduce)
    out = []
    for index, step, base, pending, base_at in measured:
        dout = douts[index]
        if dout is None:
            continue
        want = run_step(step, base, pending, "reference", index, dout)
        got = run_step(step, base, pending, other, index, dout)
        for j, (g, w) in enumerate(zip(got.grads or (), want.grads or ())):
            if g is None or w is None or g.shape != w.shape or np.array_equal(g, w, equal_nan=True):
                continue
            with np.errstate(invalid="ignore"):
                gap = g.astype(np.float64) - w.astype(np.float64)
            out.append((index, j, base_at, np.where(np.isfinite(gap), gap, 0.0)))
    return out


def _describe(exc) -> str:
    return "succeeds" if exc is None else f"raises {type(exc).__name__}({exc})"


# ---- the driver ------------------------------------------------------------------------------
class ScriptedDraws:
    """Stands in for Hypothesis's ``data`` in :func:`check_random_program`: each ``draw``
    returns the next scripted value (a failing case's draws, replayed without Hypothesis)."""

    def __init__(self, *values):
        self._values = list(values)

    def draw(self, strategy, label=None):
        return self._values.pop(0)


def check_random_program(
    data, other: str, families: dict, max_steps: int = 4, dtypes=DTYPES, min_dims: int = 0
) -> None:
    """Draw a program step by step with ``data`` and check it on ``other`` against reference."""
    start, wild = data.draw(leaves(dtypes, min_dims), label="input")
    n_steps = data.draw(st.integers(1, max_steps), label="number of steps")
    base, pending, program = start, [], []
    inexact, comparable = False, True
    lowest = start.values.dtype  # the least precise float dtype the program goes through
    noise = {}  # step index -> rounding-sized noise for the reference's shadow run
    measured = []  # per step: (index, step, base, pending, base_at), to rerun its backward
    base_at = 0  # the step whose input is ``base``
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        _, x_ref = _build(base, pending, "reference", grad=False)
        for i in range(n_steps):
            step = data.draw(steps(x_ref, wild, families), label=f"step {i}")
            program.append(step)
            want = run_step(step, base, pending, "reference", i)
            got = run_step(step, base, pending, other, i)
            inputs = [_host(x_ref)] + [o.values for o in step.operands]  # as the step sees them
            # after a rounding difference, a discontinuous step, or one that magnifies rounding
            # to order 1 (a norm of a nearly constant row: sign(x) for one element and eps = 0),
            # may legitimately send the backends apart
            if inexact and (step.jumps or rounding_allowance(step, inputs, np.dtype(np.float32)) > 1.0):
                comparable = False
            bitwise = compare_outcomes(got, want, step, other, inputs=inputs)
            if want.error is not None:
                return  # the program ends at the first error (raised alike on both)
            inexact = inexact or not bitwise
            if not bitwise and not step.view:
                noise[i] = rounding_noise(got.value, want.value, i)
            measured.append((i, step, base, list(pending), base_at))
            lowest = less_precise(lowest, want.value.dtype) if lowest.kind == "f" else want.value.dtype
            if step.view:
                pending.append(step)
            else:
                base, pending, base_at = Operand(want.value), [], i + 1
            _, x_ref = _build(base, pending, "reference", grad=False)
        if wild or not comparable:
            return  # wild magnitudes make rounding differences in one step arbitrary in the next
        reduce = data.draw(st.sampled_from(["sum", "weighted", "mean", "square"]), label="scalar reduction")
        whole = Step(
            "program",
            " -> ".join(s.label for s in program) + f" -> {reduce}",
            None,
            names=tuple(n for s in program for n in (s.op,) + s.names),
        )
        noise = {i: n for i, n in noise.items() if n is not None}
        grad_noise = gradient_noise(program, start, reduce, other, measured)
        # noise of both signs: one of the two moves each value to the other backend's side
        shadows = [
            run_program(program, start, "reference", reduce, {i: sign * n for i, n in noise.items()})
            for sign in ((1, -1) if noise else ())
        ] + [
            run_program(
                program, start, "reference", reduce, grad_noise=[(*e[:3], sign * e[3]) for e in grad_noise]
            )
            for sign in ((1, -1) if grad_noise else ())
        ]
        compare_outcomes(
            run_program(program, start, other, reduce),
            run_program(program, start, "reference", reduce),
            whole,
            other,
            CHAIN_FACTOR,
            scaled=True,
            precision=lowest if lowest.kind == "f" else None,
            shadows=shadows,
        )
