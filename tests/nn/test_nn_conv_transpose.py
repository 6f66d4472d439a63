"""nn.ConvTranspose1d/2d/3d: PyTorch oracle (forward and input/weight/bias gradients, float64,
copied weights) over stride, padding, padding_out, dilation and groups on every backend; the
adjoint identity with Conv (a transposed convolution is the gradient of a convolution w.r.t.
its input); Burn's padding_out beyond the stride; float64 finite differences; batch 1; Burn's
defaults, layout and initialisation; records and config round trips; errors."""

from functools import partial

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, params64, weighted_sum
from helpers.layer_grads import ember_forward_backward, torch_forward_backward

import ember
from ember import nn

CONFIGS = {1: nn.ConvTranspose1dConfig, 2: nn.ConvTranspose2dConfig, 3: nn.ConvTranspose3dConfig}

# (dims, channels, kernel, stride, padding, padding_out, dilation, groups, input spatial size)
GEOMETRIES = [
    (1, (3, 2), 3, 1, 0, 0, 1, 1, (7,)),
    (1, (4, 6), 4, 3, 2, 1, 2, 2, (5,)),
    (1, (2, 4), 1, 2, 0, 1, 1, 2, (6,)),
    (2, (2, 3), (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1, (4, 5)),
    (2, (4, 6), (3, 2), (2, 3), (1, 2), (1, 0), (1, 2), 2, (5, 4)),
    (2, (3, 3), (2, 2), (2, 2), (0, 1), (1, 1), (1, 1), 3, (3, 3)),
    (3, (2, 3), (2, 3, 2), (2, 1, 2), (1, 1, 0), (1, 0, 1), (1, 1, 2), 1, (3, 4, 3)),
    (3, (4, 2), (3, 1, 2), (1, 2, 1), (0, 0, 1), (0, 1, 0), (2, 1, 1), 2, (4, 3, 4)),
]


def _torch_fn(torch, dims):
    return getattr(torch.nn.functional, f"conv_transpose{dims}d")


def _ember_run(layer, x, up, device):
    return ember_forward_backward(layer, x, up, device, params=("weight", "bias"))


@pytest.mark.parametrize("dims,channels,kernel,stride,padding,padding_out,dilation,groups,size", GEOMETRIES)
def test_matches_torch_with_gradients(
    device, dims, channels, kernel, stride, padding, padding_out, dilation, groups, size
):
    torch = pytest.importorskip("torch")
    ember.seed(len(size) + groups)
    layer = CONFIGS[dims](
        channels,
        kernel,
        stride=stride,
        dilation=dilation,
        groups=groups,
        padding=padding,
        padding_out=padding_out,
    ).init(device, "float64")
    rng = np.random.default_rng(groups * 10 + dims)
    x = rng.standard_normal((2, channels[0]) + size)
    kwargs = dict(
        stride=stride, padding=padding, output_padding=padding_out, groups=groups, dilation=dilation
    )
    weight, bias = layer.weight.numpy(), layer.bias.numpy()
    shape = _torch_fn(torch, dims)(torch.from_numpy(x), torch.from_numpy(weight), None, **kwargs).shape
    up = rng.standard_normal(tuple(shape))
    expected = torch_forward_backward(torch, partial(_torch_fn(torch, dims), **kwargs), (x, weight, bias), up)
    for got, want in zip(_ember_run(layer, x, up, device), expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_is_the_adjoint_of_conv(dims):
    """<conv(x), y> == <x, conv_transpose(y)> with the same filters and no bias."""
    rng = np.random.default_rng(dims)
    stride, dilation, padding = {
        1: (2, 2, 1),
        2: ((2, 1), (1, 2), (1, 0)),
        3: ((1, 2, 2), (2, 1, 1), (1, 1, 0)),
    }[dims]
    kernel = {1: 3, 2: (3, 2), 3: (2, 3, 2)}[dims]
    size = {1: (9,), 2: (7, 8), 3: (5, 6, 5)}[dims]
    as_tuple = lambda v: (v,) * dims if isinstance(v, int) else tuple(v)
    # padding_out gives back the input elements the convolution's last window skipped
    padding_out = tuple(
        (n + 2 * p - d * (k - 1) - 1) % s
        for n, p, d, k, s in zip(
            size, as_tuple(padding), as_tuple(dilation), as_tuple(kernel), as_tuple(stride)
        )
    )
    assert any(padding_out) == (dims == 3)  # one geometry needs it
    transposed = CONFIGS[dims](
        (6, 4),
        kernel,
        stride=stride,
        dilation=dilation,
        groups=2,
        padding=padding,
        padding_out=padding_out[0] if dims == 1 else padding_out,
        bias=False,
    ).init(DEV, "float64")
    x = ember.tensor(rng.standard_normal((2, 4) + size), device=DEV)
    pads = tuple((p, p) for p in as_tuple(padding))
    # the convolution from 4 to 6 channels uses the same [6, 2, *k] tensor as its weight
    conv = nn.conv.conv_nd(x, transposed.weight.val(), None, as_tuple(stride), pads, as_tuple(dilation), 2)
    y = ember.tensor(rng.standard_normal(conv.shape), device=DEV)
    back = transposed(y)
    assert back.shape == x.shape
    np.testing.assert_allclose(float((conv * y).sum().item()), float((x * back).sum().item()), rtol=1e-12)


def test_padding_out_beyond_the_stride_pads_the_end():
    """Burn places no bound on padding_out (PyTorch wants it below the stride or dilation):
    output o is still tap position o + padding, and the positions past the last tap get only
    the bias."""
    torch = pytest.importorskip("torch")
    ember.seed(4)
    layer = nn.ConvTranspose1dConfig((2, 3), 3, stride=1, padding=1, padding_out=3).init(DEV, "float64")
    x = np.random.default_rng(4).standard_normal((1, 2, 5))
    out = layer(ember.tensor(x, device=DEV)).numpy()
    taps = torch.nn.functional.conv_transpose1d(
        torch.from_numpy(x), torch.from_numpy(layer.weight.numpy()), None
    ).numpy()  # unpadded: 7 positions
    bias = layer.bias.numpy()[None, :, None]
    assert out.shape == (1, 3, 8)  # (5 - 1) + 3 - 2 + 3
    np.testing.assert_allclose(out[..., :6], taps[..., 1:] + bias, rtol=1e-12)
    np.testing.assert_allclose(out[..., 6:], np.broadcast_to(bias, (1, 3, 2)), rtol=1e-12)


def test_finite_difference_gradients_and_batch_one():
    ember.seed(5)
    for layer, shape in (
        (
            nn.ConvTranspose1dConfig((2, 4), 3, stride=2, padding=1, padding_out=1, groups=2).init(DEV),
            (1, 2, 5),
        ),
        (
            nn.ConvTranspose2dConfig((4, 2), (2, 3), stride=(2, 1), dilation=(1, 2), padding=1).init(DEV),
            (1, 4, 3, 4),
        ),
        (
            nn.ConvTranspose3dConfig((2, 2), 2, stride=(1, 2, 2), padding_out=(0, 1, 0)).init(DEV),
            (1, 2, 2, 3, 2),
        ),
    ):
        params = params64(layer)
        x = ember.randn(*shape, device=DEV, dtype="float64").require_grad()
        check_grads(lambda: weighted_sum(layer(x)), params + [x])


def test_defaults_layout_and_init_bound():
    ember.seed(6)
    one = nn.ConvTranspose1dConfig((4, 6), 3, groups=2).init(DEV)
    assert (one.stride, one.dilation, one.padding, one.padding_out, one.kernel_size) == (1, 1, 0, 0, 3)
    assert one.channels == (4, 6) and one.groups == 2
    assert one.weight.shape == (4, 3, 3) and one.bias.shape == (6,)  # [C_in, C_out / groups, k]
    bound = 1 / np.sqrt(3 * 3)  # fan_in = channels_out / groups * k, as Burn and PyTorch
    assert np.abs(one.weight.numpy()).max() <= bound and np.abs(one.weight.numpy()).max() > 0.9 * bound
    two = nn.ConvTranspose2dConfig((2, 4), 3, stride=2, padding=1, padding_out=1).init(DEV)
    assert (two.kernel_size, two.stride, two.padding, two.padding_out, two.dilation) == (
        (3, 3),
        (2, 2),
        (1, 1),
        (1, 1),
        (1, 1),
    )
    assert two(ember.randn(1, 2, 4, 5, device=DEV)).shape == (1, 4, 8, 10)  # the usual x2 upsampling
    assert two(ember.zeros(0, 2, 4, 5, device=DEV)).shape == (0, 4, 8, 10)  # an empty batch
    three = nn.ConvTranspose3dConfig((1, 2), (1, 2, 3), bias=False).init(DEV)
    assert three.weight.shape == (1, 2, 1, 2, 3) and three.bias is None
    assert three.padding == (0, 0, 0) and three.padding_out == (0, 0, 0)
    assert "padding_out" in str(three)


def test_records_and_config_round_trip(tmp_path):
    ember.seed(7)
    layer = nn.ConvTranspose2dConfig((3, 4), (2, 3), stride=2).init(DEV)
    assert {path: tuple(p.shape) for path, p in layer.named_parameters()} == {
        "weight": (3, 4, 2, 3),
        "bias": (4,),
    }
    path = layer.save_file(tmp_path / "convt.bpk")
    ember.seed(8)
    other = nn.ConvTranspose2dConfig((3, 4), (2, 3), stride=2).init(DEV)
    x = ember.randn(1, 3, 3, 3, device=DEV)
    assert not np.allclose(other(x).numpy(), layer(x).numpy())
    other.load_file(path)
    np.testing.assert_array_equal(other(x).numpy(), layer(x).numpy())
    with pytest.raises(Exception, match="weight"):
        nn.ConvTranspose2dConfig((3, 4), (3, 3)).init(DEV).load_file(path)
    for cfg in (
        nn.ConvTranspose1dConfig((2, 4), 3, stride=2, padding=1, padding_out=1, groups=2, bias=False),
        nn.ConvTranspose2dConfig((2, 4), (3, 2), stride=(2, 1), dilation=(1, 2), padding=(1, 0)),
        nn.ConvTranspose3dConfig((2, 2), 2, padding_out=(1, 0, 1), stride=2),
    ):
        assert type(cfg).from_json(cfg.to_json()) == cfg


def test_errors():
    layer = nn.ConvTranspose2dConfig((3, 4), 3).init(DEV)
    with pytest.raises(
        ValueError, match=r"ConvTranspose2d: input \[1, 2, 4, 4\] has 2 channels but the weight"
    ):
        layer(ember.randn(1, 2, 4, 4, device=DEV))
    with pytest.raises(
        ValueError, match=r"ConvTranspose2d: expected input \[batch, channels, height, width\]"
    ):
        layer(ember.randn(3, 4, 4, device=DEV))
    padded = nn.ConvTranspose1dConfig((1, 1), 2, padding=2).init(DEV)
    with pytest.raises(ValueError, match=r"ConvTranspose1d: input \[1, 1, 1\] gives output size \[-2\]"):
        padded(ember.randn(1, 1, 1, device=DEV))
    with pytest.raises(ValueError, match="multiples of groups"):
        nn.ConvTranspose1dConfig((3, 4), 3, groups=2).init(DEV)
    with pytest.raises(ValueError, match="padding and padding_out must be non-negative ints"):
        nn.ConvTranspose1dConfig((1, 1), 3, padding_out=-1).init(DEV)
    with pytest.raises(ValueError, match="ConvTranspose3dConfig: stride must be an int or 3 ints"):
        nn.ConvTranspose3dConfig((1, 1), 3, stride=(1, 2))
