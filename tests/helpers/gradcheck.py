"""Gradient checks: reverse-mode autodiff against float64 central differences.

For ``out = f(x_1, ..., x_n)`` with a random seed gradient ``u`` (of ``out``'s shape) and a
random direction ``v_i`` per input, the vector-Jacobian product from ``out.backward(u)``
must satisfy the dot-product identity

    <J_i v_i, u> == <v_i, J_iᵀ u>

where ``J_i v_i`` (the Jacobian-vector product) comes from central differences
``(f(x_i + eps v_i) - f(x_i - eps v_i)) / (2 eps)``. The check runs once per input (so that
gradients swapped between inputs are caught) and once along all inputs together (the
directional derivative along a random direction).
"""

from __future__ import annotations

import numpy as np

import ember


def _directional(fn, args, idx, dirs, eps):
    """Central-difference JVP of ``fn`` at ``args`` along ``dirs`` for the inputs in ``idx``;
    also returns the magnitude of the two evaluations (for the roundoff estimate)."""
    plus, minus = list(args), list(args)
    for i, v in zip(idx, dirs):
        x = args[i]
        dv = ember.tensor(v, dtype=ember.float64, device=x.device)
        plus[i] = (x + eps * dv).detach()
        minus[i] = (x - eps * dv).detach()
    fp = fn(*plus).numpy().astype(np.float64)
    fm = fn(*minus).numpy().astype(np.float64)
    return (fp - fm) / (2 * eps), np.abs(fp) + np.abs(fm)


def gradcheck(
    fn, *inputs, wrt=None, eps: float = 1e-6, rtol: float = 1e-6, atol: float = 1e-10, seed: int = 0
) -> None:
    """Assert that the gradients of ``fn`` agree with central differences (dot-product test).

    Args:
        fn: a function of ember tensors returning one float64 tensor. It is called several
            times; a function with randomness (dropout) must reseed itself on every call.
        *inputs: its arguments; tensors, or anything else passed through unchanged.
        wrt: indices of the inputs to check (default: every float64 tensor among them).
        eps: central-difference step.
        rtol: tolerance relative to |<J v, u>| (on top of an estimate of the roundoff of the
            central differences).
        atol: absolute tolerance (for derivatives that are exactly zero).
        seed: seed of the random directions and seed gradient.
    """
    rng = np.random.default_rng(seed)
    args = [x.detach() if isinstance(x, ember.Tensor) else x for x in inputs]
    if wrt is None:
        wrt = [i for i, x in enumerate(args) if isinstance(x, ember.Tensor) and x.dtype is ember.float64]
    wrt = list(wrt)
    assert wrt, "gradcheck: no float64 tensor input to check"
    for i in wrt:
        assert isinstance(args[i], ember.Tensor) and args[i].dtype is ember.float64, (
            f"gradcheck: input {i} must be a float64 tensor, got {getattr(args[i], 'dtype', type(args[i]))}"
        )

    leaves = list(args)
    for i in wrt:
        leaves[i] = args[i].detach().require_grad()
    out = fn(*leaves)
    assert isinstance(out, ember.Tensor), f"gradcheck: fn must return a Tensor, got {type(out).__name__}"
    assert out.dtype is ember.float64, f"gradcheck: fn must return float64, got {out.dtype}"
    assert out.is_require_grad(), "gradcheck: the output is not connected to any checked input"
    u = rng.standard_normal(out.shape)
    grads = out.backward(ember.tensor(u, dtype=ember.float64, device=out.device))
    assert isinstance(grads, ember.Gradients)

    analytic = {}
    for i in wrt:
        g = grads.get(leaves[i])
        if g is None:
            g_np = np.zeros(args[i].shape)
        else:
            assert g.shape == args[i].shape, (
                f"gradcheck: grad of input {i} has shape {g.shape}, expected {args[i].shape}"
            )
            assert g.dtype is ember.float64, f"gradcheck: grad of input {i} has dtype {g.dtype}"
            g_np = g.numpy().astype(np.float64)
        analytic[i] = g_np

    dirs = {i: rng.standard_normal(args[i].shape) for i in wrt}
    checks = [([i], f"input {i}") for i in wrt]
    if len(wrt) > 1:
        checks.append((wrt, "all inputs"))
    for idx, label in checks:
        jvp, size = _directional(fn, args, idx, [dirs[i] for i in idx], eps)
        numeric = float(np.sum(jvp * u))
        auto = float(sum(np.sum(dirs[i] * analytic[i]) for i in idx))
        assert np.isfinite(auto), f"gradcheck ({label}): autodiff gave a non-finite value {auto}"
        # rounding of f(x ± eps v) is amplified by 1/(2 eps) in the difference quotient; the
        # sums over elements add their own (tiny) rounding
        roundoff = 64 * np.finfo(np.float64).eps * float(np.sum(np.abs(u) * size)) / (2 * eps)
        roundoff += 1e-12 * float(np.sum(np.abs(jvp * u)))
        err = abs(auto - numeric)
        bound = rtol * max(abs(numeric), abs(auto)) + roundoff + atol
        assert err <= bound, (
            f"gradcheck ({label}): <v, J^T u> from backward = {auto!r} but central "
            f"differences give <J v, u> = {numeric!r} (|diff| {err:.3e} > {bound:.3e})"
        )


def gradcheck_np(fn, device: str, *arrays, **kw) -> None:
    """``gradcheck`` with NumPy float arrays turned into float64 tensors on ``device``
    (integer/bool arrays become int64/bool tensors, other values pass through)."""
    inputs = []
    for a in arrays:
        if isinstance(a, np.ndarray):
            if a.dtype.kind == "f":
                inputs.append(ember.tensor(a, dtype=ember.float64, device=device))
            else:
                inputs.append(ember.tensor(a, device=device))
        else:
            inputs.append(a)
    gradcheck(fn, *inputs, **kw)
