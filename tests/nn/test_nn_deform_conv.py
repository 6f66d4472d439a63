"""nn.DeformConv2d against a float64 NumPy reference of torchvision's ``deform_conv2d`` (written
here, loop by loop: torchvision is not installable), forward and the gradients of input,
offsets, mask, weight and bias (the reference differentiated by central differences), on
every backend, over stride, padding, dilation, weight and offset groups; the identity cases
(zero offsets, unit or no mask = Conv2d; a whole-pixel offset = a shifted Conv2d); samples
outside the image; float64 finite differences; batch 1; Burn's defaults and layout; records
and config round trips; errors."""

import math

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import central_difference, check_grads, params64, weighted_sum

import ember
from ember import nn


def np_bilinear(image, y, x):
    """torchvision's bilinear_interpolate: 0 outside (-1, H) x (-1, W), corners outside read 0."""
    height, width = image.shape
    if y <= -1 or y >= height or x <= -1 or x >= width:
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    ly, lx = y - y0, x - x0

    def at(r, c):
        return image[r, c] if 0 <= r < height and 0 <= c < width else 0.0

    return (
        (1 - ly) * (1 - lx) * at(y0, x0)
        + (1 - ly) * lx * at(y0, x0 + 1)
        + ly * (1 - lx) * at(y0 + 1, x0)
        + ly * lx * at(y0 + 1, x0 + 1)
    )


def np_deform_conv2d(x, offset, mask, weight, bias, stride, pads, dilation, weight_groups, offset_groups):
    """out[b, o, i, j] = bias[o] + sum_{c, ky, kx} w · mask · bilinear(x[b, c], moved tap)."""
    batch, channels, height, width = x.shape
    c_out, c_group, kh, kw = weight.shape
    (top, bottom), (left, right) = pads
    oh = (height + top + bottom - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (width + left + right - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    k = kh * kw
    per_offset_group = channels // offset_groups
    out_per_group = c_out // weight_groups
    out = np.zeros((batch, c_out, oh, ow))
    for b in range(batch):
        for o in range(c_out):
            g = o // out_per_group
            for i in range(oh):
                for j in range(ow):
                    acc = 0.0 if bias is None else bias[o]
                    for ci in range(c_group):
                        c = g * c_group + ci
                        og = c // per_offset_group
                        for ky in range(kh):
                            for kx in range(kw):
                                tap = og * k + ky * kw + kx
                                y = i * stride[0] - top + ky * dilation[0] + offset[b, 2 * tap, i, j]
                                xs = j * stride[1] - left + kx * dilation[1] + offset[b, 2 * tap + 1, i, j]
                                scale = 1.0 if mask is None else mask[b, tap, i, j]
                                acc += weight[o, ci, ky, kx] * scale * np_bilinear(x[b, c], y, xs)
                    out[b, o, i, j] = acc
    return out


# (channels, kernel, stride, padding (top, left, bottom, right), dilation, weight_groups, offset_groups, size)
GEOMETRIES = [
    ((2, 3), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, 1, (5, 4)),
    ((4, 6), (3, 2), (2, 1), (1, 0, 1, 2), (1, 2), 2, 2, (6, 5)),
    ((4, 2), (2, 2), (1, 2), (0, 1, 1, 0), (2, 1), 1, 4, (5, 6)),
]


def _layer_and_inputs(
    device, channels, kernel, stride, padding, dilation, weight_groups, offset_groups, size, seed
):
    ember.seed(seed)
    layer = nn.DeformConv2dConfig(
        channels,
        kernel,
        stride=stride,
        dilation=dilation,
        weight_groups=weight_groups,
        offset_groups=offset_groups,
        padding=nn.PaddingConfig2d.Explicit(*padding),
    ).init(device, "float64")
    rng = np.random.default_rng(seed)
    top, left, bottom, right = padding
    oh = (size[0] + top + bottom - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (size[1] + left + right - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    k = kernel[0] * kernel[1]
    x = rng.standard_normal((2, channels[0]) + size)
    offset = 1.5 * rng.standard_normal((2, 2 * offset_groups * k, oh, ow))  # some samples leave the image
    mask = rng.uniform(0.0, 1.0, (2, offset_groups * k, oh, ow))
    pads = ((top, bottom), (left, right))
    return layer, x, offset, mask, pads


def _reference(layer, x, offset, mask, pads):
    return np_deform_conv2d(
        x,
        offset,
        mask,
        layer.weight.numpy(),
        layer.bias.numpy(),
        layer.stride,
        pads,
        layer.dilation,
        layer.weight_groups,
        layer.offset_groups,
    )


@pytest.mark.parametrize(
    "channels,kernel,stride,padding,dilation,weight_groups,offset_groups,size", GEOMETRIES
)
def test_matches_numpy_reference_with_gradients(
    device, channels, kernel, stride, padding, dilation, weight_groups, offset_groups, size
):
    layer, x, offset, mask, pads = _layer_and_inputs(
        device,
        channels,
        kernel,
        stride,
        padding,
        dilation,
        weight_groups,
        offset_groups,
        size,
        seed=sum(size),
    )
    expected = _reference(layer, x, offset, mask, pads)
    inputs = {
        name: ember.tensor(a, device=device).require_grad()
        for name, a in (("x", x), ("offset", offset), ("mask", mask))
    }
    out = layer(inputs["x"], inputs["offset"], inputs["mask"])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10, atol=1e-12)
    assert out.shape == expected.shape
    up = np.random.default_rng(1).standard_normal(expected.shape)
    grads = (out * ember.tensor(up, device=device)).sum().backward()
    # the reference's directional derivatives (central differences) against ember's gradients
    arrays = {
        "x": x,
        "offset": offset,
        "mask": mask,
        "weight": layer.weight.numpy(),
        "bias": layer.bias.numpy(),
    }
    tensors = dict(inputs, weight=layer.weight.value, bias=layer.bias.value)
    rng = np.random.default_rng(2)

    def loss(**changed):
        a = dict(arrays, **changed)
        out = np_deform_conv2d(
            a["x"],
            a["offset"],
            a["mask"],
            a["weight"],
            a["bias"],
            stride,
            pads,
            dilation,
            weight_groups,
            offset_groups,
        )
        return float((out * up).sum())

    for name, base in arrays.items():
        direction = rng.standard_normal(base.shape)
        numeric = float(central_difference(lambda a, name=name: loss(**{name: a}), base, direction))
        analytic = float((grads.get(tensors[name]).numpy() * direction).sum())
        assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(numeric)), (name, numeric, analytic)


def test_zero_offsets_and_unit_mask_are_conv2d(device):
    torch = pytest.importorskip("torch")
    ember.seed(3)
    cfg = nn.DeformConv2dConfig(
        (4, 6), (3, 2), stride=(2, 1), dilation=(1, 2), weight_groups=2, offset_groups=2, padding=1
    )
    layer = cfg.init(device, "float64")
    x = np.random.default_rng(3).standard_normal((1, 4, 7, 6))
    offset = ember.zeros(1, 2 * 2 * 6, 4, 6, dtype="float64", device=device)
    mask = ember.ones(1, 2 * 6, 4, 6, dtype="float64", device=device)
    expected = torch.nn.functional.conv2d(
        torch.from_numpy(x),
        torch.from_numpy(layer.weight.numpy()),
        torch.from_numpy(layer.bias.numpy()),
        stride=(2, 1),
        padding=1,
        dilation=(1, 2),
        groups=2,
    ).numpy()
    xe = ember.tensor(x, device=device)
    np.testing.assert_allclose(layer(xe, offset, mask).numpy(), expected, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(layer(xe, offset).numpy(), expected, rtol=1e-12, atol=1e-13)  # no mask
    conv = nn.Conv2d(layer.weight, layer.bias, (2, 1), (1, 2), 2, nn.PaddingConfig2d.Explicit(1, 1))
    np.testing.assert_allclose(layer(xe, offset).numpy(), conv(xe).numpy(), rtol=1e-12, atol=1e-13)


def test_whole_pixel_offset_is_a_shifted_conv2d():
    """dy = 1, dx = -1 on every tap reads the image one row down and one column left, zero
    outside it: a convolution of the zero-padded image, its output moved by (2, 0)."""
    ember.seed(4)
    layer = nn.DeformConv2dConfig((2, 3), 3).init(DEV, "float64")
    x = np.random.default_rng(4).standard_normal((1, 2, 5, 6))
    offset = np.zeros((1, 18, 3, 4))
    offset[:, 0::2] = 1.0
    offset[:, 1::2] = -1.0
    out = layer(ember.tensor(x, device=DEV), ember.tensor(offset, device=DEV)).numpy()
    conv = nn.Conv2d(layer.weight, layer.bias)  # on the image padded by one zero per side
    padded = conv(ember.tensor(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), device=DEV)).numpy()
    np.testing.assert_allclose(out, padded[:, :, 2:, :4], rtol=1e-12, atol=1e-13)


def test_samples_outside_the_image_read_zero_with_no_gradient():
    ember.seed(5)
    layer = nn.DeformConv2dConfig((1, 2), 2).init(DEV, "float64")
    x = ember.randn(1, 1, 4, 4, device=DEV, dtype="float64").require_grad()
    far = np.full((1, 8, 3, 3), 50.0)
    far[:, 1::2] = -50.0
    offset = ember.tensor(far, device=DEV).require_grad()
    out = layer(x, offset)
    np.testing.assert_allclose(
        out.numpy(), np.broadcast_to(layer.bias.numpy()[None, :, None, None], (1, 2, 3, 3))
    )
    grads = weighted_sum(out).backward()
    assert not grads.get(offset).numpy().any() and not grads.get(x).numpy().any()


def test_finite_difference_gradients_batch_one():
    layer, x, offset, mask, _ = _layer_and_inputs(
        DEV, (2, 2), (2, 3), (1, 2), (1, 1, 0, 1), (1, 1), 2, 2, (4, 5), seed=6
    )
    params = params64(layer)
    xt, ot, mt = (ember.tensor(a[:1], device=DEV).require_grad() for a in (x, offset, mask))
    check_grads(lambda: weighted_sum(layer(xt, ot, mt)), params + [xt, ot, mt])


def test_defaults_layout_and_init_bound():
    ember.seed(7)
    layer = nn.DeformConv2dConfig((4, 8), (3, 3), weight_groups=2).init(DEV)
    assert (layer.stride, layer.dilation, layer.weight_groups, layer.offset_groups) == ((1, 1), (1, 1), 2, 1)
    assert layer.padding == nn.PaddingConfig2d.Valid and layer.kernel_size == (3, 3)
    assert layer.weight.shape == (8, 2, 3, 3) and layer.bias.shape == (8,)
    bound = 1 / np.sqrt(2 * 9)  # fan_in = channels_in / weight_groups * k
    assert np.abs(layer.weight.numpy()).max() <= bound and np.abs(layer.weight.numpy()).max() > 0.9 * bound
    same = nn.DeformConv2dConfig((1, 1), 2, padding="same", bias=False).init(
        DEV
    )  # an even kernel: (0, 1) padding
    assert same.bias is None
    assert layer(ember.zeros(0, 4, 5, 5, device=DEV), ember.zeros(0, 18, 3, 3, device=DEV)).shape == (
        0,
        8,
        3,
        3,
    )
    assert same(ember.randn(1, 1, 5, 4, device=DEV), ember.zeros(1, 8, 5, 4, device=DEV)).shape == (
        1,
        1,
        5,
        4,
    )


def test_records_and_config_round_trip(tmp_path):
    ember.seed(8)
    build = lambda: nn.DeformConv2dConfig((2, 3), (2, 2), offset_groups=2).init(DEV)
    layer = build()
    assert {path: tuple(p.shape) for path, p in layer.named_parameters()} == {
        "weight": (3, 2, 2, 2),
        "bias": (3,),
    }
    path = layer.save_file(tmp_path / "deform.bpk")
    ember.seed(9)
    other = build()
    x, offset = ember.randn(1, 2, 4, 4, device=DEV), ember.randn(1, 16, 3, 3, device=DEV)
    assert not np.allclose(other(x, offset).numpy(), layer(x, offset).numpy())
    other.load_file(path)
    np.testing.assert_array_equal(other(x, offset).numpy(), layer(x, offset).numpy())
    cfg = nn.DeformConv2dConfig(
        (4, 4), (3, 1), stride=2, weight_groups=2, offset_groups=4, padding=nn.PaddingConfig2d.Explicit(1, 0)
    )
    assert nn.DeformConv2dConfig.from_json(cfg.to_json()) == cfg


def test_errors():
    layer = nn.DeformConv2dConfig((2, 2), (3, 3), offset_groups=2).init(DEV)
    x = ember.randn(1, 2, 5, 5, device=DEV)
    with pytest.raises(
        ValueError, match=r"DeformConv2d: offset must have shape \[1, 36, 3, 3\], got \[1, 18, 3, 3\]"
    ):
        layer(x, ember.zeros(1, 18, 3, 3, device=DEV))
    with pytest.raises(
        ValueError, match=r"DeformConv2d: mask must have shape \[1, 18, 3, 3\], got \[1, 9, 3, 3\]"
    ):
        layer(x, ember.zeros(1, 36, 3, 3, device=DEV), ember.ones(1, 9, 3, 3, device=DEV))
    with pytest.raises(ValueError, match="DeformConv2d: input has 3 channels"):
        layer(ember.randn(1, 3, 5, 5, device=DEV), ember.zeros(1, 36, 3, 3, device=DEV))
    with pytest.raises(
        ValueError, match=r"DeformConv2d: expected a float input \[batch, channels, height, width\]"
    ):
        layer(ember.randn(2, 5, 5, device=DEV), None)
    with pytest.raises(ValueError, match=r"channels_in \(3\) must be a multiple of offset_groups \(2\)"):
        nn.DeformConv2dConfig((3, 2), 3, offset_groups=2).init(DEV)
    with pytest.raises(ValueError, match="multiples of groups"):
        nn.DeformConv2dConfig((3, 2), 3, weight_groups=2).init(DEV)
