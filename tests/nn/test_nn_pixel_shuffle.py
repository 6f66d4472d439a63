"""nn.PixelShuffle / nn.PixelUnshuffle: the index formula in NumPy on every backend, PyTorch
oracle, inverse of each other, gradients (float64 finite differences), empty batch, errors."""

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, weighted_sum

import ember
from ember import nn


def np_pixel_shuffle(x, r):
    n, c, h, w = x.shape
    out = np.empty((n, c // (r * r), h * r, w * r), x.dtype)
    for ch in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[:, ch, i::r, j::r] = x[:, ch * r * r + i * r + j]
    return out


@pytest.mark.parametrize("r", [1, 2, 3])
def test_shuffle_matches_index_formula_and_unshuffle_inverts_it(device, r):
    x = np.random.default_rng(r).standard_normal((2, 2 * r * r, 3, 2)).astype(np.float32)
    shuffled = nn.PixelShuffleConfig(r).init()(ember.tensor(x, device=device))
    assert shuffled.shape == (2, 2, 3 * r, 2 * r)
    np.testing.assert_array_equal(shuffled.numpy(), np_pixel_shuffle(x, r))
    back = nn.PixelUnshuffleConfig(r).init()(shuffled)
    np.testing.assert_array_equal(back.numpy(), x)


def test_match_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(4).standard_normal((2, 8, 3, 5)).astype(np.float32)
    np.testing.assert_array_equal(
        nn.PixelShuffleConfig(2).init()(ember.tensor(x, device=DEV)).numpy(),
        torch.nn.PixelShuffle(2)(torch.from_numpy(x)).numpy(),
    )
    y = np.random.default_rng(5).standard_normal((2, 3, 6, 9)).astype(np.float32)
    np.testing.assert_array_equal(
        nn.PixelUnshuffleConfig(3).init()(ember.tensor(y, device=DEV)).numpy(),
        torch.nn.PixelUnshuffle(3)(torch.from_numpy(y)).numpy(),
    )


def test_gradients_and_empty_batch():
    rng = np.random.default_rng(6)
    x = ember.tensor(rng.standard_normal((1, 4, 2, 3)), device=DEV).require_grad()
    shuffle = nn.PixelShuffleConfig(2).init()
    check_grads(lambda: weighted_sum(shuffle(x)), [x])
    y = ember.tensor(rng.standard_normal((1, 1, 4, 2)), device=DEV).require_grad()
    unshuffle = nn.PixelUnshuffleConfig(2).init()
    check_grads(lambda: weighted_sum(unshuffle(y)), [y])
    assert shuffle(ember.zeros(0, 4, 2, 3, device=DEV)).shape == (0, 1, 4, 6)
    assert shuffle.num_params() == 0 and len(shuffle.into_record()) == 0


def test_errors_and_config_round_trip():
    with pytest.raises(
        ValueError,
        match=r"PixelShuffle: input channels 6 \(input \[1, 6, 2, 2\]\) must be divisible "
        r"by upscale_factor² = 4",
    ):
        nn.PixelShuffleConfig(2).init()(ember.randn(1, 6, 2, 2, device=DEV))
    with pytest.raises(
        ValueError,
        match=r"PixelUnshuffle: input height and width \(input \[1, 1, 4, 3\]\) must be "
        r"divisible by downscale_factor = 2",
    ):
        nn.PixelUnshuffleConfig(2).init()(ember.randn(1, 1, 4, 3, device=DEV))
    with pytest.raises(
        ValueError,
        match=r"PixelShuffle: expected an input \[batch, channels, height, width\], "
        r"got \[4, 2, 2\]",
    ):
        nn.PixelShuffleConfig(2).init()(ember.randn(4, 2, 2, device=DEV))
    with pytest.raises(ValueError, match="PixelShuffle: upscale_factor must be a positive int, got 0"):
        nn.PixelShuffleConfig(0).init()
    with pytest.raises(ValueError, match="PixelUnshuffle: downscale_factor must be a positive int, got -1"):
        nn.PixelUnshuffleConfig(-1).init()
    for cfg in (nn.PixelShuffleConfig(3), nn.PixelUnshuffleConfig(2)):
        assert type(cfg).from_json(cfg.to_json()) == cfg
