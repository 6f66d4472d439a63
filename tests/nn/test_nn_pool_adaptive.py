"""nn.AdaptiveAvgPool3d and the shared adaptive pooling behind nn.AdaptiveAvgPool2d: PyTorch
oracle (forward and gradients, float64) over output sizes smaller than, equal to and larger
than the input, divisible or not, on every backend; a NaN or infinity reaches only the outputs
whose bin contains it; float64 finite differences; batch 1 and an empty batch; config round
trips; errors. Also: the 2-D pool and conv configs take an int where a pair goes
(``MaxPool2dConfig(2)``), as PyTorch and Burn users write them."""

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, weighted_sum
from helpers.layer_grads import ember_forward_backward, torch_forward_backward

import ember
from ember import nn


@pytest.mark.parametrize("output_size", [(1, 1, 1), (2, 3, 4), (5, 7, 6), (3, 9, 2), (7, 4, 11)])
def test_adaptive_avg_pool3d_matches_torch_with_gradients(device, output_size):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(output_size))
    x = rng.standard_normal((2, 3, 5, 7, 6))
    up = rng.standard_normal((2, 3) + output_size)
    expected = torch_forward_backward(
        torch, lambda t: torch.nn.functional.adaptive_avg_pool3d(t, output_size), (x,), up
    )
    got = ember_forward_backward(nn.AdaptiveAvgPool3dConfig(output_size).init(), x, up, device)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("output_size", [(1, 1), (3, 5), (4, 4), (7, 8), (10, 3)])
def test_adaptive_avg_pool2d_matches_torch_with_gradients(device, output_size):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(output_size))
    x = rng.standard_normal((2, 3, 7, 8))
    up = rng.standard_normal((2, 3) + output_size)
    expected = torch_forward_backward(
        torch, lambda t: torch.nn.functional.adaptive_avg_pool2d(t, output_size), (x,), up
    )
    got = ember_forward_backward(nn.AdaptiveAvgPool2dConfig(output_size).init(), x, up, device)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


def test_nan_and_inf_stay_in_their_bins(device):
    torch = pytest.importorskip("torch")
    x = np.zeros((1, 1, 6, 8))
    x[0, 0, 0, 1] = np.inf
    x[0, 0, 5, 6] = np.nan
    out = nn.AdaptiveAvgPool2dConfig((3, 4)).init()(ember.tensor(x, device=device)).numpy()[0, 0]
    expected = np.zeros((3, 4))
    expected[0, 0] = np.inf  # rows 0-1, cols 0-1
    expected[2, 3] = np.nan  # rows 4-5, cols 6-7
    np.testing.assert_array_equal(out, expected)
    # overlapping bins (7 into 3: [0, 3), [2, 5), [4, 7); 5 into 2: [0, 3), [2, 5)): a NaN at
    # depth 2, height 2 reaches the 2 x 2 bins holding it, and no other
    x = np.zeros((1, 1, 7, 5, 3))
    x[0, 0, 2, 2, 1] = np.nan
    out = nn.AdaptiveAvgPool3dConfig((3, 2, 1)).init()(ember.tensor(x, device=device)).numpy()
    ref = torch.nn.functional.adaptive_avg_pool3d(torch.from_numpy(x), (3, 2, 1)).numpy()
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    assert np.isnan(out).sum() == 4 and np.isnan(out[0, 0, :2, :, 0]).all()
    np.testing.assert_array_equal(out[~np.isnan(out)], 0.0)


def test_finite_difference_gradients_batch_one_and_empty_batch():
    x = ember.randn(1, 2, 5, 4, 7, device=DEV, dtype="float64").require_grad()
    pool = nn.AdaptiveAvgPool3dConfig((3, 4, 2)).init()
    check_grads(lambda: weighted_sum(pool(x)), [x])
    x2 = ember.randn(1, 2, 5, 7, device=DEV, dtype="float64").require_grad()
    pool2 = nn.AdaptiveAvgPool2dConfig((3, 9)).init()
    check_grads(lambda: weighted_sum(pool2(x2)), [x2])
    assert pool(ember.zeros(0, 3, 4, 4, 4, device=DEV)).shape == (0, 3, 3, 4, 2)
    assert pool2(ember.zeros(0, 3, 4, 4, device=DEV)).shape == (0, 3, 3, 9)


def test_config_round_trip_ints_and_errors():
    cfg = nn.AdaptiveAvgPool3dConfig(2)
    assert cfg.output_size == (2, 2, 2) and cfg.init().num_params() == 0
    for cfg in (nn.AdaptiveAvgPool3dConfig((1, 2, 3)), nn.AdaptiveAvgPool2dConfig((4, 1))):
        assert type(cfg).from_json(cfg.to_json()) == cfg
    pool = nn.AdaptiveAvgPool3dConfig((2, 2, 2)).init()
    with pytest.raises(
        ValueError,
        match=r"AdaptiveAvgPool3d: expected a float input \[batch, channels, depth, height, width\], got float32 \[2, 3, 4, 5\]",
    ):
        pool(ember.randn(2, 3, 4, 5, device=DEV))
    with pytest.raises(
        ValueError, match=r"AdaptiveAvgPool3d: cannot pool an empty spatial dim, got input \[1, 1, 0, 2, 2\]"
    ):
        pool(ember.zeros(1, 1, 0, 2, 2, device=DEV))
    with pytest.raises(
        ValueError, match=r"AdaptiveAvgPool3d: output_size must be three positive ints, got \[2, 0, 2\]"
    ):
        nn.AdaptiveAvgPool3dConfig((2, 0, 2)).init()
    with pytest.raises(ValueError, match="AdaptiveAvgPool3dConfig: output_size must be an int or 3 ints"):
        nn.AdaptiveAvgPool3dConfig((2, 2))


def test_2d_pool_and_conv_configs_take_an_int_for_a_pair():
    x = ember.tensor(np.random.default_rng(3).standard_normal((1, 2, 6, 6)), device=DEV)
    pool = nn.MaxPool2dConfig(2).init()
    assert (pool.kernel_size, pool.stride, pool.dilation) == ((2, 2), (2, 2), (1, 1))
    np.testing.assert_array_equal(pool(x).numpy(), nn.MaxPool2dConfig((2, 2)).init()(x).numpy())
    pool = nn.MaxPool2dConfig(3, strides=2, dilation=1).init()
    assert (pool.kernel_size, pool.stride, pool.dilation) == ((3, 3), (2, 2), (1, 1))
    avg = nn.AvgPool2dConfig(3, strides=1).init()
    assert (avg.kernel_size, avg.stride) == ((3, 3), (1, 1)) and avg(x).shape == (1, 2, 4, 4)
    assert nn.AdaptiveAvgPool2dConfig(1).init().output_size == (1, 1)
    conv = nn.Conv2dConfig((2, 3), 3, stride=2, dilation=1).init(DEV)
    assert (conv.kernel_size, conv.stride, conv.dilation) == ((3, 3), (2, 2), (1, 1))
    assert conv.weight.shape == (3, 2, 3, 3)
    cfg = nn.MaxPool2dConfig(2)  # saved as the pair it means
    assert nn.MaxPool2dConfig.from_json(cfg.to_json()) == nn.MaxPool2dConfig((2, 2))
    with pytest.raises(
        ValueError, match=r"MaxPool2dConfig: kernel_size must be an int or 2 ints, got \(2, 2, 2\)"
    ):
        nn.MaxPool2dConfig((2, 2, 2))
    with pytest.raises(ValueError, match="AvgPool2dConfig: strides must be an int or 2 ints, got True"):
        nn.AvgPool2dConfig(2, strides=True)
