"""nn.LocalResponseNorm: NumPy reference of Burn's window (odd and even sizes) on every backend,
PyTorch oracle for odd sizes (forward and gradients), float64 finite differences, NaN confined
to its window, errors and config round trip."""

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, weighted_sum

import ember
from ember import nn


def np_lrn(x, size, alpha=1e-4, beta=0.75, k=1.0):
    """Burn's window: channels [c - (size-1)//2, c + size//2], zeros outside, divided by size."""
    c = x.shape[1]
    out = np.empty_like(x)
    for ch in range(c):
        lo, hi = max(ch - (size - 1) // 2, 0), min(ch + size // 2, c - 1)
        window = (x[:, lo : hi + 1] ** 2).sum(1)
        out[:, ch] = x[:, ch] / (k + alpha / size * window) ** beta
    return out


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_matches_numpy_for_odd_and_even_windows(device, size):
    x = np.random.default_rng(size).standard_normal((2, 5, 3, 2)).astype(np.float32) * 3
    lrn = nn.LocalResponseNormConfig(size, alpha=0.5, beta=0.6, k=2.0).init(device)
    out = lrn(ember.tensor(x, device=device))
    assert out.shape == x.shape
    np.testing.assert_allclose(out.numpy(), np_lrn(x, size, 0.5, 0.6, 2.0), rtol=1e-5, atol=1e-6)


def test_defaults_are_burns():
    lrn = nn.LocalResponseNormConfig(5).init()
    assert (lrn.size, lrn.alpha, lrn.beta, lrn.k) == (5, 1e-4, 0.75, 1.0)
    assert lrn.num_params() == 0 and len(lrn.into_record()) == 0


@pytest.mark.parametrize("size,shape", [(3, (2, 6, 4)), (5, (2, 7, 3, 2)), (1, (1, 3, 2, 2, 2))])
def test_matches_torch_for_odd_sizes_with_gradients(size, shape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape) * 2
    up = rng.standard_normal(shape)
    ref = torch.nn.LocalResponseNorm(size, alpha=0.3, beta=0.8, k=1.5)
    xt = torch.from_numpy(x).requires_grad_()
    yt = ref(xt)
    (yt * torch.from_numpy(up)).sum().backward()
    lrn = nn.LocalResponseNormConfig(size, alpha=0.3, beta=0.8, k=1.5).init()
    xe = ember.tensor(x, device=DEV).require_grad()
    ye = lrn(xe)
    grad = (ye * ember.tensor(up, device=DEV)).sum().backward().get(xe)
    np.testing.assert_allclose(ye.numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_gradients():
    x = ember.tensor(
        np.random.default_rng(8).standard_normal((2, 4, 3)), dtype="float64", device=DEV
    ).require_grad()
    for size in (2, 3):
        lrn = nn.LocalResponseNormConfig(size, alpha=0.7, beta=0.9, k=0.5).init()
        check_grads(lambda: weighted_sum(lrn(x)), [x])


def test_nan_reaches_only_its_window_and_empty_batch():
    x = np.random.default_rng(9).standard_normal((1, 6, 2)).astype(np.float32)
    x[0, 2, 1] = np.nan
    y = nn.LocalResponseNormConfig(3).init()(ember.tensor(x, device=DEV)).numpy()
    assert np.isnan(y[0, 1:4, 1]).all()  # channels whose window holds channel 2
    assert np.isfinite(y[0, [0, 4, 5], 1]).all() and np.isfinite(y[0, :, 0]).all()
    assert nn.LocalResponseNormConfig(3).init()(ember.zeros(0, 6, 2, device=DEV)).shape == (0, 6, 2)


def test_errors_and_config_round_trip():
    with pytest.raises(ValueError, match="LocalResponseNormConfig: size must be a positive int, got 0"):
        nn.LocalResponseNormConfig(0).init()
    with pytest.raises(ValueError, match="LocalResponseNorm: beta must be a finite number"):
        nn.LocalResponseNorm(3, beta=float("nan"))
    lrn = nn.LocalResponseNormConfig(3).init()
    with pytest.raises(
        ValueError,
        match=r"LocalResponseNorm: expected a float input \[batch, channels, \*spatial\] "
        r"of rank >= 3, got float32 \[4, 5\]",
    ):
        lrn(ember.randn(4, 5, device=DEV))
    cfg = nn.LocalResponseNormConfig(4, alpha=0.1, beta=0.5, k=2.0)
    assert nn.LocalResponseNormConfig.from_json(cfg.to_json()) == cfg
