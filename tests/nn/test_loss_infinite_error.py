"""Huber and smooth-L1 losses of an infinite error have a finite gradient (±delta, ±1), not
NaN from the quadratic branch they do not take; a NaN error still gives NaN — found by the PyTorch differential test
(issue #30)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn

INF = np.inf


def _loss_and_grad(loss_fn, device, dtype):
    p = ember.tensor([INF, -INF, 0.5, 3.0, -0.25, np.nan], dtype=dtype, device=device).require_grad()
    t = ember.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=dtype, device=device).require_grad()
    loss = loss_fn(p, t)
    grads = loss.sum().backward()
    return loss.numpy(), grads.get(p).numpy(), grads.get(t).numpy()


# (loss, its unreduced form, expected loss, expected gradient w.r.t. the prediction)
CASES = {
    "huber": (
        nn.HuberLossConfig(2.0).init(),
        "forward_no_reduction",
        [INF, INF, 0.125, 4.0, 0.03125, np.nan],
        [2.0, -2.0, 0.5, 2.0, -0.25, np.nan],
    ),
    "smooth_l1": (
        nn.SmoothL1LossConfig(1.0).init(),
        "forward",
        [INF, INF, 0.125, 2.5, 0.03125, np.nan],
        [1.0, -1.0, 0.5, 1.0, -0.25, np.nan],
    ),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", CASES)
def test_infinite_error_has_finite_gradient(device, dtype, name):
    module, method, want_loss, want_grad = CASES[name]
    loss, gp, gt = _loss_and_grad(getattr(module, method), device, dtype)
    np.testing.assert_array_equal(loss, np.array(want_loss, dtype))
    np.testing.assert_array_equal(gp, np.array(want_grad, dtype))
    np.testing.assert_array_equal(gt, -gp)
