"""nn.MaxPool1d / nn.AvgPool1d / nn.AdaptiveAvgPool1d: PyTorch oracle over stride, padding,
dilation, ceil_mode and count_include_pad (forward and gradients), NumPy reference for
Burn's padding choices (Same, asymmetric) on every backend, Burn's defaults, float64 finite
differences, NaN/inf, empty batch, errors and config round trips."""

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, weighted_sum

import ember
from ember import nn

# (kernel, stride, padding, dilation, ceil_mode): padding <= kernel / 2, as PyTorch requires
GEOMETRIES = [
    (3, 2, 1, 1, False),
    (3, 2, 1, 2, True),
    (4, 3, 2, 1, True),
    (2, 1, 0, 3, False),
    (5, 5, 0, 1, True),
]


def _check_against_torch(torch, rng, reference, layer, x, exact=False):
    """``layer``'s output on ``x`` and its input gradient (for a random upstream) equal those of
    the PyTorch function ``reference``; ``exact``: the output to the bit (max pooling picks
    inputs)."""
    xt = torch.from_numpy(x).requires_grad_()
    yt = reference(xt)
    up = rng.standard_normal(tuple(yt.shape))
    (yt * torch.from_numpy(up)).sum().backward()
    xe = ember.tensor(x, device=DEV).require_grad()
    ye = layer(xe)
    grad = (ye * ember.tensor(up, device=DEV)).sum().backward().get(xe).numpy()
    if exact:
        np.testing.assert_array_equal(ye.numpy(), yt.detach().numpy())
        np.testing.assert_allclose(grad, xt.grad.numpy(), rtol=1e-12)
    else:
        np.testing.assert_allclose(ye.numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(grad, xt.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil", GEOMETRIES)
def test_pools_match_torch_with_gradients(kernel, stride, padding, dilation, ceil):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    rng = np.random.default_rng(kernel * 10 + stride)
    x = rng.standard_normal((2, 3, 11))
    max_ref = lambda t: functional.max_pool1d(t, kernel, stride, padding, dilation, ceil_mode=ceil)
    layer = nn.MaxPool1dConfig(
        kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil
    ).init()
    _check_against_torch(torch, rng, max_ref, layer, x, exact=True)
    for include in (True, False):
        avg_ref = lambda t: functional.avg_pool1d(
            t,
            kernel,
            stride,
            padding,
            ceil_mode=ceil,
            count_include_pad=include,
        )
        layer = nn.AvgPool1dConfig(
            kernel, stride=stride, padding=padding, count_include_pad=include, ceil_mode=ceil
        ).init()
        _check_against_torch(torch, rng, avg_ref, layer, x)


@pytest.mark.parametrize("output_size", [1, 3, 4, 11, 15])
def test_adaptive_avg_pool_matches_torch_with_gradients(output_size):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(output_size)
    x = rng.standard_normal((2, 3, 11))
    _check_against_torch(
        torch,
        rng,
        lambda t: torch.nn.functional.adaptive_avg_pool1d(t, output_size),
        nn.AdaptiveAvgPool1dConfig(output_size).init(),
        x,
    )


def test_burn_padding_choices_match_numpy(device):
    x = np.random.default_rng(7).standard_normal((2, 2, 7)).astype(np.float32)
    t = ember.tensor(x, device=device)
    # Same with stride 2 over 7: out = 4, total padding (4-1)*2 + 3 - 7 = 2 -> (1, 1)
    same = nn.MaxPool1dConfig(3, stride=2, padding=nn.PaddingConfig1d.Same).init()(t).numpy()
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1)), constant_values=-np.inf)
    np.testing.assert_array_equal(
        same, np.stack([padded[..., i : i + 3].max(-1) for i in range(0, 7, 2)], -1)
    )
    # asymmetric explicit padding (0, 1), kernel 2: the last window is [x6, 0]
    avg = nn.AvgPool1dConfig(2, padding=nn.PaddingConfig1d.Explicit(0, 1)).init()(t).numpy()
    zero_padded = np.pad(x, ((0, 0), (0, 0), (0, 1)))
    np.testing.assert_allclose(avg, zero_padded.reshape(2, 2, 4, 2).mean(-1), rtol=1e-6)
    excl = nn.AvgPool1dConfig(2, padding=(0, 1), count_include_pad=False).init()(t).numpy()
    np.testing.assert_allclose(excl[..., :3], x[..., :6].reshape(2, 2, 3, 2).mean(-1), rtol=1e-6)
    np.testing.assert_allclose(excl[..., 3], x[..., 6], rtol=1e-6)  # one real element in the last window
    adaptive = nn.AdaptiveAvgPool1dConfig(3).init()(t).numpy()
    bins = [(0, 3), (2, 5), (4, 7)]
    np.testing.assert_allclose(adaptive, np.stack([x[..., a:b].mean(-1) for a, b in bins], -1), rtol=1e-6)


def test_defaults_are_burns():
    mp = nn.MaxPool1dConfig(3).init()
    assert (mp.stride, mp.dilation, mp.ceil_mode, mp.padding) == (3, 1, False, nn.PaddingConfig1d.Valid)
    ap = nn.AvgPool1dConfig(4).init()
    assert (ap.stride, ap.count_include_pad, ap.ceil_mode, ap.padding) == (
        4,
        True,
        False,
        nn.PaddingConfig1d.Valid,
    )
    x = np.arange(12, dtype=np.float32).reshape(1, 2, 6)
    np.testing.assert_array_equal(mp(ember.tensor(x, device=DEV)).numpy(), x.reshape(1, 2, 2, 3).max(-1))
    assert mp.num_params() == 0 and ap.num_params() == 0


def test_gradients():
    x = ember.tensor(np.random.default_rng(8).standard_normal((2, 2, 9)), device=DEV).require_grad()
    for layer in (
        nn.MaxPool1dConfig(3, stride=2, padding=(1, 2), dilation=2, ceil_mode=True).init(),
        nn.AvgPool1dConfig(
            4, stride=3, padding=nn.PaddingConfig1d.Same, count_include_pad=False, ceil_mode=True
        ).init(),
        nn.AdaptiveAvgPool1dConfig(4).init(),
    ):
        check_grads(lambda: weighted_sum(layer(x)), [x])


def test_nan_inf_and_empty_batch():
    x = np.zeros((1, 1, 8), np.float32)
    x[0, 0, 1] = np.inf
    x[0, 0, 6] = np.nan
    t = ember.tensor(x, device=DEV)
    adaptive = nn.AdaptiveAvgPool1dConfig(4).init()(t).numpy()[0, 0]
    assert np.isinf(adaptive[0]) and adaptive[1] == adaptive[2] == 0 and np.isnan(adaptive[3])
    mp = nn.MaxPool1dConfig(2).init()(t).numpy()[0, 0]
    assert np.isinf(mp[0]) and mp[1] == mp[2] == 0 and np.isnan(mp[3])
    ap = nn.AvgPool1dConfig(4).init()(t).numpy()[0, 0]
    assert np.isinf(ap[0]) and np.isnan(ap[1])
    for layer in (
        nn.MaxPool1dConfig(2).init(),
        nn.AvgPool1dConfig(2).init(),
        nn.AdaptiveAvgPool1dConfig(3).init(),
    ):
        assert layer(ember.zeros(0, 3, 8, device=DEV)).shape[:2] == (0, 3)


def test_errors_and_config_round_trip():
    with pytest.raises(
        ValueError,
        match=r"MaxPool1d: input \[1, 2, 3\] padded by \(0, 0\) is shorter than the "
        r"kernel 3 \(dilation 2\)",
    ):
        nn.MaxPool1dConfig(3, dilation=2).init()(ember.randn(1, 2, 3, device=DEV))
    with pytest.raises(
        ValueError,
        match=r"AvgPool1d: expected a float input \[batch, channels, length\], "
        r"got float32 \[2, 3, 4, 5\]",
    ):
        nn.AvgPool1dConfig(2).init()(ember.randn(2, 3, 4, 5, device=DEV))
    with pytest.raises(ValueError, match="MaxPool1d: stride must be a positive int, got 0"):
        nn.MaxPool1dConfig(2, stride=0).init()
    with pytest.raises(ValueError, match="AdaptiveAvgPool1d: output_size must be a positive int, got 0"):
        nn.AdaptiveAvgPool1dConfig(0).init()
    with pytest.raises(
        ValueError, match=r"AdaptiveAvgPool1d: cannot pool an empty length, got input \[1, 2, 0\]"
    ):
        nn.AdaptiveAvgPool1dConfig(2).init()(ember.zeros(1, 2, 0, device=DEV))
    for cfg in (
        nn.MaxPool1dConfig(3, padding=nn.PaddingConfig1d.Explicit(1, 2), dilation=2, ceil_mode=True),
        nn.AvgPool1dConfig(2, stride=1, padding=nn.PaddingConfig1d.Same, count_include_pad=False),
        nn.AdaptiveAvgPool1dConfig(5),
    ):
        assert type(cfg).from_json(cfg.to_json()) == cfg
