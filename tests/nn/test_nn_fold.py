"""nn.Unfold4d / nn.Fold4d: PyTorch oracle (``F.unfold`` / ``F.fold``, forward and gradients,
float64) over kernel, stride, dilation and padding on every backend; fold(unfold(x)) is x times
the block count of each pixel; the two are adjoint; float64 finite differences; batch 1; Burn's
defaults; config round trips; errors."""

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, weighted_sum
from helpers.layer_grads import ember_forward_backward, torch_forward_backward

import ember
from ember import nn

# (kernel, stride, dilation, padding, image size)
GEOMETRIES = [
    ((2, 2), (1, 1), (1, 1), (0, 0), (4, 5)),
    ((3, 2), (2, 1), (1, 2), (1, 0), (6, 5)),
    ((2, 3), (3, 2), (2, 1), (1, 2), (7, 6)),
    ((1, 1), (2, 2), (1, 1), (0, 0), (5, 4)),
]


@pytest.mark.parametrize("kernel,stride,dilation,padding,size", GEOMETRIES)
def test_unfold_and_fold_match_torch_with_gradients(device, kernel, stride, dilation, padding, size):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    settings = dict(kernel_size=kernel, stride=stride, dilation=dilation, padding=padding)
    rng = np.random.default_rng(sum(size))
    x = rng.standard_normal((2, 3) + size)
    unfold = lambda t: functional.unfold(t, **settings)
    blocks = unfold(torch.from_numpy(x)).shape
    up = rng.standard_normal(tuple(blocks))
    expected = torch_forward_backward(torch, unfold, (x,), up)
    got = ember_forward_backward(nn.Unfold4dConfig(kernel, stride, dilation, padding).init(), x, up, device)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
    cols = rng.standard_normal(tuple(blocks))
    fold = lambda t: functional.fold(t, output_size=size, **settings)
    up = rng.standard_normal((2, 3) + size)
    expected = torch_forward_backward(torch, fold, (cols,), up)
    got = ember_forward_backward(
        nn.Fold4dConfig(size, kernel, stride, dilation, padding).init(), cols, up, device
    )
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


def test_fold_of_unfold_counts_the_blocks_and_they_are_adjoint(device):
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 6))
    unfold = nn.Unfold4dConfig((3, 2), stride=(1, 2), padding=(1, 0)).init()
    fold = nn.Fold4dConfig((5, 6), (3, 2), stride=(1, 2), padding=(1, 0)).init()
    xe = ember.tensor(x, device=device)
    counts = fold(unfold(ember.ones(1, 1, 5, 6, dtype="float64", device=device))).numpy()
    # rows: 3 blocks cover each inner row, 2 the edge rows (a third block would start in the
    # padding); columns: blocks of 2 with stride 2 cover each column once
    per_row = np.array([2.0, 3.0, 3.0, 3.0, 2.0])[:, None]
    np.testing.assert_array_equal(counts[0, 0], np.broadcast_to(per_row, (5, 6)))
    np.testing.assert_allclose(fold(unfold(xe)).numpy(), per_row * x, rtol=1e-12)
    cols = ember.tensor(np.random.default_rng(2).standard_normal(unfold(xe).shape), device=device)
    np.testing.assert_allclose(
        float((unfold(xe) * cols).sum().item()), float((xe * fold(cols)).sum().item()), rtol=1e-12
    )


def test_finite_difference_gradients_batch_one():
    x = ember.randn(1, 2, 5, 4, device=DEV, dtype="float64").require_grad()
    unfold = nn.Unfold4dConfig((2, 3), stride=(2, 1), dilation=(1, 1), padding=(1, 1)).init()
    check_grads(lambda: weighted_sum(unfold(x)), [x])
    cols = ember.randn(1, 2 * 6, 3 * 4, device=DEV, dtype="float64").require_grad()
    fold = nn.Fold4dConfig((5, 4), (2, 3), stride=(2, 1), padding=(1, 1)).init()
    check_grads(lambda: weighted_sum(fold(cols)), [cols])


def test_defaults_ints_and_config_round_trip():
    unfold = nn.Unfold4dConfig(3).init()
    assert (unfold.kernel_size, unfold.stride, unfold.dilation, unfold.padding) == (
        (3, 3),
        (1, 1),
        (1, 1),
        (0, 0),
    )
    fold = nn.Fold4dConfig(6, 2, stride=2).init()
    assert (fold.output_size, fold.kernel_size, fold.stride, fold.padding) == ((6, 6), (2, 2), (2, 2), (0, 0))
    x = np.arange(36.0).reshape(1, 1, 6, 6)
    cols = nn.Unfold4dConfig(2, stride=2).init()(ember.tensor(x, device=DEV))
    assert cols.shape == (1, 4, 9)
    np.testing.assert_array_equal(cols.numpy()[0, :, 0], [0.0, 1.0, 6.0, 7.0])  # kernel row-major
    np.testing.assert_array_equal(fold(cols).numpy(), x)  # non-overlapping blocks: an exact inverse
    assert unfold.num_params() == 0 and fold.num_params() == 0
    blocks = nn.Unfold4dConfig(2, stride=2).init()(ember.zeros(0, 2, 6, 6, device=DEV))
    assert fold(blocks).shape == (0, 2, 6, 6)  # an empty batch
    for cfg in (nn.Unfold4dConfig((2, 3), 2, (1, 2), 1), nn.Fold4dConfig((5, 4), (2, 3), padding=(1, 0))):
        assert type(cfg).from_json(cfg.to_json()) == cfg


def test_errors():
    fold = nn.Fold4dConfig((4, 4), 2).init()
    with pytest.raises(
        ValueError, match=r"Fold4d: expected input \[batch, channels · 4, 9\].*got \[1, 4, 8\]"
    ):
        fold(ember.zeros(1, 4, 8, device=DEV))
    with pytest.raises(ValueError, match=r"Fold4d: expected input .*got \[1, 6, 9\]"):
        fold(ember.zeros(1, 6, 9, device=DEV))
    with pytest.raises(
        ValueError, match=r"Unfold4d: expected input \[batch, channels, height, width\], got \[3, 4, 4\]"
    ):
        nn.Unfold4dConfig(2).init()(ember.zeros(3, 4, 4, device=DEV))
    with pytest.raises(ValueError, match=r"Unfold4d: the image \[2, 4\] padded by \[0, 0\] is smaller"):
        nn.Unfold4dConfig(3).init()(ember.zeros(1, 1, 2, 4, device=DEV))
    with pytest.raises(ValueError, match="Unfold4dConfig: kernel_size, stride and dilation must be positive"):
        nn.Unfold4dConfig(2, stride=0)
    with pytest.raises(ValueError, match="Fold4dConfig: kernel_size must be an int or 2 ints"):
        nn.Fold4dConfig((4, 4), (2, 2, 2))
