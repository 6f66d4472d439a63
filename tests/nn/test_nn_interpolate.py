"""nn.Interpolate1d / nn.Interpolate2d: PyTorch's F.interpolate as oracle (nearest, nearest-exact,
linear, cubic; both align_corners; forward and gradients), Burn's Lanczos3 formula in NumPy,
every backend against reference, Burn's defaults and scale-factor rounding, float64 finite
differences, NaN/inf reaching only the outputs that use them, empty batch, errors."""

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, weighted_sum

import ember
from ember import nn

MODES = [
    ("Nearest", "nearest", None),
    ("NearestExact", "nearest-exact", None),
    ("Linear", "bilinear", True),
    ("Linear", "bilinear", False),
    ("Cubic", "bicubic", True),
    ("Cubic", "bicubic", False),
]
SIZES_2D = [(9, 4), (5, 7), (2, 13), (1, 1)]


def _torch_resize(torch, x, size, torch_mode, align_corners, up):
    xt = torch.from_numpy(x).requires_grad_()
    kwargs = {} if align_corners is None else {"align_corners": align_corners}
    yt = torch.nn.functional.interpolate(xt, size=size, mode=torch_mode, **kwargs)
    (yt * torch.from_numpy(up)).sum().backward()
    return yt.detach().numpy(), xt.grad.numpy()


@pytest.mark.parametrize("mode,torch_mode,align", MODES)
def test_2d_matches_torch_with_gradients(mode, torch_mode, align):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 7))
    for size in SIZES_2D:
        layer = nn.Interpolate2dConfig(output_size=size, mode=mode, align_corners=bool(align)).init()
        up = rng.standard_normal((2, 3) + size)
        expected, expected_grad = _torch_resize(torch, x, size, torch_mode, align, up)
        xe = ember.tensor(x, device=DEV).require_grad()
        ye = layer(xe)
        grad = (ye * ember.tensor(up, device=DEV)).sum().backward().get(xe)
        assert ye.shape == (2, 3) + size
        np.testing.assert_allclose(
            ye.numpy(), expected, rtol=1e-12, atol=1e-12, err_msg=f"{mode} {align} {size}"
        )
        np.testing.assert_allclose(grad.numpy(), expected_grad, rtol=1e-12, atol=1e-12, err_msg=f"{size}")


@pytest.mark.parametrize("mode,torch_mode,align", MODES)
def test_1d_matches_torch(mode, torch_mode, align):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6))
    for size in (1, 4, 6, 13):
        layer = nn.Interpolate1dConfig(output_size=size, mode=mode, align_corners=bool(align)).init()
        up = rng.standard_normal((2, 3, size))
        if torch_mode == "bicubic":  # PyTorch has no 1-D cubic: a height-1 image resized in width only
            expected, expected_grad = _torch_resize(
                torch, x[:, :, None], (1, size), torch_mode, align, up[:, :, None]
            )
            expected, expected_grad = expected[:, :, 0], expected_grad[:, :, 0]
        else:
            expected, expected_grad = _torch_resize(torch, x, size, torch_mode.replace("bi", ""), align, up)
        xe = ember.tensor(x, device=DEV).require_grad()
        ye = layer(xe)
        grad = (ye * ember.tensor(up, device=DEV)).sum().backward().get(xe)
        np.testing.assert_allclose(
            ye.numpy(), expected, rtol=1e-12, atol=1e-12, err_msg=f"{mode} {align} {size}"
        )
        np.testing.assert_allclose(grad.numpy(), expected_grad, rtol=1e-12, atol=1e-12)


def np_lanczos3_2d(x, size, align_corners):
    """Burn's reference loop: a 6x6 window, taps outside the image skipped, weights renormalised."""

    def weight(t):
        if t == 0:
            return 1.0
        if abs(t) >= 3:
            return 0.0
        return np.sin(np.pi * t) * np.sin(np.pi * t / 3) / (np.pi * t * np.pi * t / 3)

    def coord(o, n_in, n_out):
        if align_corners:
            return o * (n_in - 1) / max(n_out - 1, 1)
        return (o + 0.5) * n_in / n_out - 0.5

    b, c, h, w = x.shape
    out = np.zeros((b, c) + size)
    for oh in range(size[0]):
        for ow in range(size[1]):
            sy, sx = coord(oh, h, size[0]), coord(ow, w, size[1])
            y0, x0 = np.floor(sy), np.floor(sx)
            acc, total = 0.0, 0.0
            for ky in range(-2, 4):
                yi = int(y0) + ky
                if not 0 <= yi < h:
                    continue
                for kx in range(-2, 4):
                    xi = int(x0) + kx
                    if not 0 <= xi < w:
                        continue
                    wt = weight(sy - (y0 + ky)) * weight(sx - (x0 + kx))
                    acc = acc + x[:, :, yi, xi] * wt
                    total += wt
            out[:, :, oh, ow] = acc / total if total != 0 else acc
    return out


@pytest.mark.parametrize("align", [True, False])
def test_lanczos_matches_burns_formula(align):
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 8))
    for size in ((9, 4), (3, 11), (5, 8)):
        y = nn.Interpolate2dConfig(output_size=size, mode="Lanczos", align_corners=align).init()(
            ember.tensor(x, device=DEV)
        )
        np.testing.assert_allclose(y.numpy(), np_lanczos3_2d(x, size, align), rtol=1e-12, atol=1e-12)
    y1 = nn.Interpolate1dConfig(output_size=11, mode="Lanczos", align_corners=align).init()(
        ember.tensor(x[:, :, 0], device=DEV)
    )
    np.testing.assert_allclose(y1.numpy(), np_lanczos3_2d(x[:, :, :1], (1, 11), align)[:, :, 0], rtol=1e-12)


@pytest.mark.parametrize("mode", ["Nearest", "Linear", "Cubic", "Lanczos"])
def test_every_backend_agrees_with_reference(device, mode):
    x = np.random.default_rng(3).standard_normal((2, 3, 6, 5)).astype(np.float32)
    layer = nn.Interpolate2dConfig(output_size=(8, 3), mode=mode, align_corners=False).init()
    expected = layer(ember.tensor(x, device=DEV)).numpy()
    np.testing.assert_allclose(layer(ember.tensor(x, device=device)).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_burn_defaults_and_scale_factor_rounding():
    cfg = nn.Interpolate2dConfig(output_size=(4, 4))
    assert cfg.mode is nn.InterpolateMode.Nearest and cfg.align_corners is True and cfg.scale_factor is None
    x = ember.randn(1, 2, 10, 3, device=DEV)
    # Burn keeps the scale as f32: 10 * f32(0.7) = 6.99999988 truncates to 6
    assert nn.Interpolate2dConfig(scale_factor=(0.7, 2.5)).init()(x).shape == (1, 2, 6, 7)
    assert nn.Interpolate1dConfig(scale_factor=1.5).init()(ember.randn(2, 1, 5, device=DEV)).shape == (
        2,
        1,
        7,
    )
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 4)
    up = nn.Interpolate1dConfig(output_size=7, mode="Linear").init()(ember.tensor(x, device=DEV))
    np.testing.assert_allclose(up.numpy()[0, 0], np.linspace(0, 3, 7), rtol=1e-6)  # align_corners=True
    near = nn.Interpolate1dConfig(scale_factor=2.0).init()(ember.tensor(x, device=DEV))
    np.testing.assert_array_equal(near.numpy()[0, 0], [0, 0, 1, 1, 2, 2, 3, 3])


def test_gradients():
    rng = np.random.default_rng(4)
    x = ember.tensor(rng.standard_normal((1, 2, 4, 3)), device=DEV).require_grad()
    for mode in ("Linear", "Cubic", "Lanczos", "NearestExact"):
        layer = nn.Interpolate2dConfig(output_size=(5, 2), mode=mode, align_corners=False).init()
        check_grads(lambda: weighted_sum(layer(x)), [x])
    x1 = ember.tensor(rng.standard_normal((2, 1, 5)), device=DEV).require_grad()
    layer1 = nn.Interpolate1dConfig(output_size=8, mode="Cubic").init()
    check_grads(lambda: weighted_sum(layer1(x1)), [x1])


def test_inf_and_nan_reach_only_the_outputs_that_use_them():
    x = np.zeros((1, 1, 5), np.float32)
    x[0, 0, 2] = np.inf
    t = ember.tensor(x, device=DEV)
    lin = (
        nn.Interpolate1dConfig(output_size=9, mode="Linear").init()(t).numpy()[0, 0]
    )  # samples at 0, .5, 1, ...
    assert np.isinf(lin[3:6]).all() and (lin[[0, 1, 2, 6, 7, 8]] == 0).all()
    near = nn.Interpolate1dConfig(output_size=10).init()(t).numpy()[0, 0]
    assert np.isinf(near[4:6]).all() and (np.delete(near, [4, 5]) == 0).all()
    same = nn.Interpolate1dConfig(output_size=5, mode="Cubic").init()(t).numpy()[0, 0]
    assert np.isinf(same[2]) and (np.delete(same, 2) == 0).all()  # integer positions: one non-zero tap
    x[0, 0, 2] = np.nan
    lanczos = (
        nn.Interpolate1dConfig(output_size=5, mode="Lanczos").init()(ember.tensor(x, device=DEV)).numpy()
    )
    assert np.isnan(lanczos[0, 0, 2]) and (np.delete(lanczos[0, 0], 2) == 0).all()


def test_empty_batch_float16_and_config_round_trip():
    layer = nn.Interpolate2dConfig(output_size=(4, 6), mode="bilinear", align_corners=False).init()
    assert layer(ember.zeros(0, 3, 2, 3, device=DEV)).shape == (0, 3, 4, 6)
    half = layer(ember.randn(1, 2, 3, 3, device=DEV).to(ember.float16))
    assert half.dtype == ember.float16 and half.shape == (1, 2, 4, 6)
    cfg = nn.Interpolate2dConfig(output_size=(4, 6), mode="bicubic", align_corners=False)
    assert cfg.mode is nn.InterpolateMode.Cubic and '"Cubic"' in cfg.to_json()
    assert nn.Interpolate2dConfig.from_json(cfg.to_json()) == cfg
    cfg1 = nn.Interpolate1dConfig(scale_factor=0.5, mode=nn.InterpolateMode.NearestExact)
    assert nn.Interpolate1dConfig.from_json(cfg1.to_json()) == cfg1


def test_errors_name_the_layer_and_shapes():
    with pytest.raises(ValueError, match="Interpolate1d: give exactly one of output_size and scale_factor"):
        nn.Interpolate1dConfig().init()
    with pytest.raises(ValueError, match="Interpolate2d: give exactly one of output_size and scale_factor"):
        nn.Interpolate2dConfig(output_size=(2, 2), scale_factor=(2.0, 2.0)).init()
    with pytest.raises(
        ValueError, match=r"Interpolate2d: output_size must be 2 positive int\(s\), got \(0, 3\)"
    ):
        nn.Interpolate2dConfig(output_size=(0, 3)).init()
    with pytest.raises(ValueError, match="Interpolate1d: scale_factor must be 1 positive finite number"):
        nn.Interpolate1dConfig(scale_factor=-2.0).init()
    with pytest.raises(
        ValueError,
        match=r"Interpolate1dConfig: mode must be an InterpolateMode \(Nearest, "
        r"NearestExact, Linear, Cubic, Lanczos\) or its name, got 'area'",
    ):
        nn.Interpolate1dConfig(output_size=3, mode="area")
    with pytest.raises(
        ValueError,
        match=r"Interpolate2d: expected a float input \[batch, channels, height, width\], "
        r"got float32 \[2, 3, 4\]",
    ):
        nn.Interpolate2dConfig(output_size=(2, 2)).init()(ember.randn(2, 3, 4, device=DEV))
    with pytest.raises(
        ValueError,
        match=r"Interpolate1d: scale_factor \[0.1\] turns the input \[1, 1, 5\] into an "
        r"empty output \[0\]",
    ):
        nn.Interpolate1dConfig(scale_factor=0.1).init()(ember.randn(1, 1, 5, device=DEV))
    with pytest.raises(
        ValueError, match=r"Interpolate1d: cannot resample an empty spatial dim, got input \[1, 2, 0\]"
    ):
        nn.Interpolate1dConfig(output_size=3).init()(ember.zeros(1, 2, 0, device=DEV))
