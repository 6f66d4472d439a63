"""The tests' one gradient checker: reverse-mode autodiff against float64 central differences.

Every check compares a directional derivative taken two ways: ``<v, g>`` with ``g`` the
gradient autodiff gives, and the central difference ``(f(x + eps v) - f(x - eps v)) / (2 eps)``
along a random direction ``v`` (:func:`central_difference`). Three entry points share it:

* :func:`gradcheck` — ``out = fn(x_1, ..., x_n)`` of any shape: with a random seed gradient
  ``u`` the dot-product identity ``<J_i v_i, u> == <v_i, J_iᵀ u>`` must hold, once per input
  (so that gradients swapped between inputs are caught) and once along all inputs together;
  the inputs are replaced by perturbed copies. :func:`gradcheck_np` takes NumPy arrays.
* :func:`check_grads` — a scalar ``fn()`` closing over leaf tensors (a module's parameters,
  see :func:`params64`), perturbed in place; ``n_dirs`` directions per leaf.
* :func:`central_difference` on its own — for kernels that work on NumPy arrays directly.

Each entry point draws its directions from ``numpy.random.default_rng(seed)`` in a fixed
order, so a given call always checks the same points along the same directions.
"""

from __future__ import annotations

import numpy as np

import ember


def _quotient(phi, eps: float):
    """``(phi(eps) - phi(-eps)) / (2 eps)`` in float64, and ``|phi(eps)| + |phi(-eps)|``
    (the size of the evaluations, for a roundoff estimate)."""
    fp = np.asarray(phi(eps), dtype=np.float64)
    fm = np.asarray(phi(-eps), dtype=np.float64)
    return (fp - fm) / (2 * eps), np.abs(fp) + np.abs(fm)


def central_difference(f, x, direction, eps: float = 1e-6):
    """The derivative of ``f`` at ``x`` along ``direction`` by central differences (NumPy
    arrays or anything else with ``x + t * direction``)."""
    return _quotient(lambda t: f(x + t * direction), eps)[0]


def _assert_agree(
    auto: float, numeric: float, label: str, rtol: float, atol: float, slack: float = 0.0
) -> None:
    """``|auto - numeric| <= rtol * max(|auto|, |numeric|) + atol + slack``."""
    assert np.isfinite(auto), f"gradcheck ({label}): autodiff gave a non-finite value {auto}"
    err = abs(auto - numeric)
    bound = rtol * max(abs(numeric), abs(auto)) + slack + atol
    assert err <= bound, (
        f"gradcheck ({label}): <v, grad> from backward = {auto!r} but central "
        f"differences give {numeric!r} (|diff| {err:.3e} > {bound:.3e})"
    )


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
        steps = {i: ember.tensor(dirs[i], dtype=ember.float64, device=args[i].device) for i in idx}

        def along(t, steps=steps):
            moved = [(x + t * steps[i]).detach() if i in steps else x for i, x in enumerate(args)]
            return fn(*moved).numpy()

        jvp, size = _quotient(along, eps)
        numeric = float(np.sum(jvp * u))
        auto = float(sum(np.sum(dirs[i] * analytic[i]) for i in idx))
        # rounding of f(x ± eps v) is amplified by 1/(2 eps) in the difference quotient; the
        # sums over elements add their own (tiny) rounding
        roundoff = 64 * np.finfo(np.float64).eps * float(np.sum(np.abs(u) * size)) / (2 * eps)
        roundoff += 1e-12 * float(np.sum(np.abs(jvp * u)))
        _assert_agree(auto, numeric, label, rtol, atol, roundoff)


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


def check_grads(
    fn, tensors, n_dirs: int = 2, eps: float = 1e-6, rtol: float = 1e-4, atol: float = 1e-8, seed: int = 0
) -> None:
    """Assert that the gradients of the scalar ``fn()`` w.r.t. ``tensors`` agree with central
    differences along ``n_dirs`` random directions per tensor.

    Args:
        fn: a function of no arguments returning a float64 scalar tensor; it closes over
            ``tensors``, which are perturbed in place between calls.
        tensors: float64 leaf tensors that require grad (inputs, :func:`params64` of a module)
            on a NumPy-backed device (``reference``: their buffers are written directly).
        n_dirs, eps, rtol, atol, seed: directions per tensor, step, tolerances (no roundoff
            allowance here) and the seed of the directions.
    """
    out = fn()
    grads = out.backward()
    rng = np.random.default_rng(seed)
    for i, t in enumerate(tensors):
        g = grads.get(t)
        assert g is not None, f"tensor {i} {t.shape} got no gradient"
        assert g.shape == t.shape, f"tensor {i}: gradient shape {g.shape}, expected {t.shape}"
        g = g.numpy().astype(np.float64)
        data = t._data
        base = np.array(data, copy=True)

        def along(step, data=data, base=base):
            np.copyto(data, base + step)
            return float(fn().item())

        for _ in range(n_dirs):
            d = rng.standard_normal(base.shape)
            with ember.no_grad():
                try:
                    numeric = float(_quotient(lambda s, d=d: along(s * d), eps)[0])
                finally:
                    np.copyto(data, base)
            _assert_agree(float((g * d).sum()), numeric, f"tensor {i} {t.shape}", rtol, atol)


def weighted_sum(y, seed: int = 1):
    """A scalar that depends on every element of ``y`` with distinct weights."""
    w = np.random.default_rng(seed).standard_normal(y.shape)
    return (y * ember.tensor(w, dtype=y.dtype, device=y.device)).sum()


def params64(module):
    """Cast a module to float64 and return its trainable parameter tensors."""
    module.to(ember.float64)
    return [p.value for p in module.parameters() if p.is_require_grad()]
