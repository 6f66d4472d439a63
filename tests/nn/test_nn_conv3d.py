"""nn.Conv3d: PyTorch oracle (forward and input/weight/bias gradients, float64, copied weights)
over stride, padding, dilation and groups on every backend, Burn's padding choices (Same with
an even kernel, asymmetric), float64 finite differences, batch 1, Burn's defaults and
initialisation, records and config round trips, errors."""

from functools import partial

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, params64, weighted_sum
from helpers.layer_grads import ember_forward_backward, torch_forward_backward

import ember
from ember import nn

# (kernel, stride, padding, dilation, groups, channels)
GEOMETRIES = [
    ((3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1, (2, 3)),
    ((2, 3, 1), (2, 1, 2), (0, 1, 0), (1, 2, 1), 1, (3, 2)),
    ((3, 2, 2), (1, 2, 1), (2, 0, 1), (2, 1, 2), 2, (4, 6)),
    ((1, 1, 1), (3, 3, 3), (0, 0, 0), (1, 1, 1), 3, (3, 3)),
]


def _ember_run(layer, x, up, device):
    return ember_forward_backward(layer, x, up, device, params=("weight", "bias"))


@pytest.mark.parametrize("kernel,stride,padding,dilation,groups,channels", GEOMETRIES)
def test_matches_torch_with_gradients(device, kernel, stride, padding, dilation, groups, channels):
    torch = pytest.importorskip("torch")
    ember.seed(sum(kernel))
    layer = nn.Conv3dConfig(
        channels, kernel, stride=stride, dilation=dilation, groups=groups, padding=padding
    ).init(device, "float64")
    rng = np.random.default_rng(sum(stride))
    x = rng.standard_normal((2, channels[0], 6, 7, 5))
    kwargs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    shape = torch.nn.functional.conv3d(
        torch.from_numpy(x), torch.from_numpy(layer.weight.numpy()), None, **kwargs
    ).shape
    up = rng.standard_normal(tuple(shape))
    expected = torch_forward_backward(
        torch,
        partial(torch.nn.functional.conv3d, **kwargs),
        (x, layer.weight.numpy(), layer.bias.numpy()),
        up,
    )
    for got, want in zip(_ember_run(layer, x, up, device), expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_same_padding_even_kernel_and_batch_one_match_torch(device):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    ember.seed(3)
    # Same with kernel 2 and stride 2 over 5: out 3, total padding 1 -> (0, 1), at the end (Burn's rule)
    layer = nn.Conv3dConfig((2, 3), (2, 3, 2), stride=(2, 1, 2), padding=nn.PaddingConfig3d.Same).init(
        device, "float64"
    )
    x = np.random.default_rng(4).standard_normal((1, 2, 5, 4, 6))
    up = np.random.default_rng(5).standard_normal((1, 3, 3, 4, 3))
    padded = lambda t: functional.pad(t, (0, 0, 1, 1, 0, 1))  # (w: 0, 0), (h: 1, 1), (d: 0, 1)
    xt = torch.from_numpy(x).requires_grad_()
    yt = functional.conv3d(
        padded(xt),
        torch.from_numpy(layer.weight.numpy()),
        torch.from_numpy(layer.bias.numpy()),
        stride=(2, 1, 2),
    )
    (yt * torch.from_numpy(up)).sum().backward()
    out, grad, _, _ = _ember_run(layer, x, up, device)
    assert out.shape == (1, 3, 3, 4, 3)
    np.testing.assert_allclose(out, yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad, xt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_finite_difference_gradients():
    ember.seed(6)
    layer = nn.Conv3dConfig(
        (4, 2), (2, 2, 3), stride=(1, 2, 1), dilation=(2, 1, 1), groups=2, padding=1
    ).init(DEV)
    params = params64(layer)
    x = ember.randn(2, 4, 5, 4, 5, device=DEV, dtype="float64").require_grad()
    check_grads(lambda: weighted_sum(layer(x)), params + [x])


def test_defaults_init_bound_and_int_settings():
    ember.seed(7)
    layer = nn.Conv3dConfig((4, 8), 3, groups=2).init(DEV)
    assert (layer.stride, layer.dilation, layer.kernel_size, layer.groups) == (
        (1, 1, 1),
        (1, 1, 1),
        (3, 3, 3),
        2,
    )
    assert layer.padding == nn.PaddingConfig3d.Valid
    assert layer.weight.shape == (8, 2, 3, 3, 3) and layer.bias.shape == (8,)
    bound = 1 / np.sqrt(2 * 27)  # KaimingUniform(1/sqrt 3) over fan_in = channels_in/groups * k
    w = layer.weight.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(layer.bias.numpy()).max() <= bound
    cfg = nn.Conv3dConfig((1, 1), 2, stride=2, dilation=1, padding=1)
    assert (cfg.kernel_size, cfg.stride, cfg.dilation) == ((2, 2, 2), (2, 2, 2), (1, 1, 1))
    assert cfg.padding == nn.PaddingConfig3d.Explicit(1, 1, 1)
    assert nn.Conv3dConfig((1, 2), 1, bias=False).init(DEV).bias is None
    assert layer(ember.zeros(0, 4, 3, 4, 5, device=DEV)).shape == (0, 8, 1, 2, 3)  # an empty batch
    assert nn.Conv3dConfig((1, 1), 3, padding="same").init(DEV)(
        ember.randn(1, 1, 4, 5, 6, device=DEV)
    ).shape == (
        1,
        1,
        4,
        5,
        6,
    )


def test_records_and_config_round_trip(tmp_path):
    ember.seed(8)
    layer = nn.Conv3dConfig((2, 4), (3, 1, 2)).init(DEV)
    assert {path: tuple(p.shape) for path, p in layer.named_parameters()} == {
        "weight": (4, 2, 3, 1, 2),
        "bias": (4,),
    }
    path = layer.save_file(tmp_path / "conv3d.bpk")
    ember.seed(9)
    other = nn.Conv3dConfig((2, 4), (3, 1, 2)).init(DEV)
    x = ember.randn(1, 2, 4, 3, 3, device=DEV)
    assert not np.allclose(other(x).numpy(), layer(x).numpy())
    other.load_file(path)
    np.testing.assert_array_equal(other(x).numpy(), layer(x).numpy())
    with pytest.raises(Exception, match="weight"):
        nn.Conv3dConfig((2, 4), (3, 3, 2)).init(DEV).load_file(path)
    for cfg, tag in (
        (
            nn.Conv3dConfig(
                (2, 4), (3, 1, 2), stride=(2, 1, 1), padding=nn.PaddingConfig3d.Explicit(1, 0, 2)
            ),
            '"Explicit"',
        ),
        (nn.Conv3dConfig((3, 3), 3, groups=3, padding=nn.PaddingConfig3d.Same, bias=False), '"Same"'),
    ):
        back = nn.Conv3dConfig.from_json(cfg.to_json())
        assert back == cfg and tag in cfg.to_json()


def test_errors():
    layer = nn.Conv3dConfig((3, 4), 3).init(DEV)
    with pytest.raises(ValueError, match=r"Conv3d: input has 2 channels but the weight \[4, 3, 3, 3, 3\]"):
        layer(ember.randn(1, 2, 5, 5, 5, device=DEV))
    with pytest.raises(ValueError, match=r"Conv3d: expected input \[batch, channels, depth, height, width\]"):
        layer(ember.randn(1, 3, 5, 5, device=DEV))
    with pytest.raises(ValueError, match="Conv3d: the \\(padded\\) input \\[2, 5, 5\\] is smaller"):
        layer(ember.randn(1, 3, 2, 5, 5, device=DEV))
    with pytest.raises(ValueError, match="multiples of groups"):
        nn.Conv3dConfig((3, 4), 3, groups=2).init(DEV)
    with pytest.raises(ValueError, match="Conv3dConfig: kernel_size must be an int or 3 ints"):
        nn.Conv3dConfig((3, 4), (3, 3))
    with pytest.raises(ValueError, match="PaddingConfig3d.Explicit: paddings must be non-negative"):
        nn.PaddingConfig3d.Explicit(1, -1, 0)
