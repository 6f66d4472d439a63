import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, params64, weighted_sum

import ember
from ember import nn


def t(a, dtype=None):
    return ember.tensor(a, dtype=dtype, device=DEV)


def np_conv2d(x, w, b, stride, pad, dilation, groups):
    x = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, co, oh, ow))
    per = co // groups
    for o in range(co):
        g = o // per
        for i in range(oh):
            for j in range(ow):
                hs, ws = i * stride[0], j * stride[1]
                patch = x[
                    :,
                    g * cg : (g + 1) * cg,
                    hs : hs + dilation[0] * (kh - 1) + 1 : dilation[0],
                    ws : ws + dilation[1] * (kw - 1) + 1 : dilation[1],
                ]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3)) + (b[o] if b is not None else 0)
    return out


def test_conv2d_matches_naive_numpy():
    ember.seed(0)
    conv = nn.Conv2dConfig(
        (4, 6),
        (3, 2),
        stride=(2, 1),
        dilation=(1, 2),
        groups=2,
        padding=nn.PaddingConfig2d.Explicit(1, 2, 1, 2),
    ).init(DEV)
    x = np.random.default_rng(0).standard_normal((2, 4, 7, 6)).astype(np.float32)
    expected = np_conv2d(x, conv.weight.numpy(), conv.bias.numpy(), (2, 1), (1, 2), (1, 2), 2)
    np.testing.assert_allclose(conv(t(x)).numpy(), expected, rtol=1e-4, atol=1e-5)
    assert conv.weight.shape == (6, 2, 3, 2)


def test_conv_initialiser_bound_uses_group_fan_in():
    ember.seed(0)
    conv = nn.Conv2dConfig((8, 16), (3, 3), groups=2).init(DEV)
    bound = 1 / np.sqrt(4 * 9)
    w = conv.weight.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(conv.bias.numpy()).max() <= bound


def test_same_padding_keeps_size():
    conv = nn.Conv2dConfig((1, 1), (4, 3), stride=(1, 1), padding=nn.PaddingConfig2d.Same).init(DEV)
    assert conv(ember.randn(1, 1, 7, 5, device=DEV)).shape == (1, 1, 7, 5)
    conv1 = nn.Conv1dConfig(2, 3, 5, stride=2, padding="same").init(DEV)
    assert conv1(ember.randn(1, 2, 9, device=DEV)).shape == (1, 3, 5)


def test_conv_gradients():
    ember.seed(1)
    conv = nn.Conv2dConfig((2, 4), (2, 3), stride=(1, 2), groups=2, padding=(1, 1)).init(DEV)
    params = params64(conv)
    x = ember.randn(2, 2, 4, 5, device=DEV, dtype="float64").require_grad()
    check_grads(lambda: weighted_sum(conv(x)), params + [x])
    conv1 = nn.Conv1dConfig(3, 2, 3, dilation=2, padding=nn.PaddingConfig1d.Explicit(1, 2)).init(DEV)
    params = params64(conv1)
    x1 = ember.randn(2, 3, 8, device=DEV, dtype="float64").require_grad()
    check_grads(lambda: weighted_sum(conv1(x1)), params + [x1])


def test_conv_errors():
    conv = nn.Conv2dConfig((3, 4), (3, 3)).init(DEV)
    with pytest.raises(ValueError, match="channels"):
        conv(ember.randn(1, 2, 5, 5, device=DEV))
    with pytest.raises(ValueError, match="smaller than the dilated kernel"):
        conv(ember.randn(1, 3, 2, 5, device=DEV))
    with pytest.raises(ValueError, match="multiples of groups"):
        nn.Conv2dConfig((3, 4), (3, 3), groups=2).init(DEV)


def test_conv_config_json_round_trip():
    cfg = nn.Conv2dConfig((3, 4), (3, 3), padding=nn.PaddingConfig2d.Explicit(1, 1, 1, 1))
    back = nn.Conv2dConfig.from_json(cfg.to_json())
    assert back == cfg and '"Explicit"' in cfg.to_json()
    cfg = nn.Conv1dConfig(1, 1, 3, padding=nn.PaddingConfig1d.Same)
    assert nn.Conv1dConfig.from_json(cfg.to_json()).padding == nn.PaddingConfig1d.Same


def _torch_conv(torch, conv, dims):
    cls = torch.nn.Conv1d if dims == 1 else torch.nn.Conv2d
    c_out, c_group = conv.weight.shape[:2]
    ref = cls(
        c_group * conv.groups,
        c_out,
        conv.weight.shape[2:],
        stride=conv.stride,
        dilation=conv.dilation,
        groups=conv.groups,
        bias=True,
    )
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(conv.weight.numpy()))
        ref.bias.copy_(torch.from_numpy(conv.bias.numpy()))
    return ref


@pytest.mark.parametrize("dims", [1, 2])
def test_conv_matches_torch_with_gradients(dims):
    torch = pytest.importorskip("torch")
    ember.seed(2)
    if dims == 1:
        conv = nn.Conv1dConfig(4, 6, 3, stride=2, dilation=2, groups=2, padding=(2, 2)).init(DEV)
        x = np.random.default_rng(0).standard_normal((2, 4, 11)).astype(np.float32)
        pad = lambda a: torch.nn.functional.pad(a, (2, 2))
    else:
        conv = nn.Conv2dConfig((4, 6), (3, 3), stride=(2, 1), dilation=(1, 2), groups=2, padding=(1, 2)).init(
            DEV
        )
        x = np.random.default_rng(0).standard_normal((2, 4, 7, 8)).astype(np.float32)
        pad = lambda a: torch.nn.functional.pad(a, (2, 2, 1, 1))
    ref = _torch_conv(torch, conv, dims)
    xt = torch.from_numpy(x).requires_grad_()
    yt = ref(pad(xt))
    yt.pow(2).sum().backward()
    xe = t(x).require_grad()
    ye = conv(xe)
    grads = (ye * ye).sum().backward()
    np.testing.assert_allclose(ye.numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grads.get(xe).numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        grads.get(conv.weight.value).numpy(), ref.weight.grad.numpy(), rtol=1e-4, atol=1e-3
    )


def test_pools_match_numpy_and_defaults():
    x = np.arange(2 * 1 * 4 * 6, dtype=np.float32).reshape(2, 1, 4, 6) % 7
    mp = nn.MaxPool2dConfig((2, 3)).init()
    assert mp.stride == (2, 3)
    expected = x.reshape(2, 1, 2, 2, 2, 3).max(axis=(3, 5))
    np.testing.assert_array_equal(mp(t(x)).numpy(), expected)
    ap = nn.AvgPool2dConfig((2, 3)).init()
    np.testing.assert_allclose(ap(t(x)).numpy(), x.reshape(2, 1, 2, 2, 2, 3).mean(axis=(3, 5)), rtol=1e-6)
    ad = nn.AdaptiveAvgPool2dConfig((1, 1)).init()
    np.testing.assert_allclose(ad(t(x)).numpy(), x.mean(axis=(2, 3), keepdims=True), rtol=1e-6)


def test_pool_gradients():
    x = ember.randn(2, 2, 5, 5, device=DEV, dtype="float64").require_grad()
    for pool in (
        nn.MaxPool2dConfig((2, 2), strides=(2, 1), padding=(1, 1)).init(),
        nn.AvgPool2dConfig(
            (3, 3), strides=(2, 2), padding=(1, 1), count_include_pad=False, ceil_mode=True
        ).init(),
        nn.AdaptiveAvgPool2dConfig((3, 2)).init(),
    ):
        check_grads(lambda: weighted_sum(pool(x)), [x])


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_pools_match_torch(ceil_mode):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = np.random.default_rng(3).standard_normal((2, 3, 7, 8)).astype(np.float32)
    xt = torch.from_numpy(x)
    out = nn.MaxPool2dConfig(
        (3, 2), strides=(2, 2), padding=(1, 1), dilation=(1, 2), ceil_mode=ceil_mode
    ).init()(t(x))
    ref = F.max_pool2d(xt, (3, 2), (2, 2), (1, 1), dilation=(1, 2), ceil_mode=ceil_mode)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
    for include in (True, False):
        out = nn.AvgPool2dConfig(
            (3, 3), strides=(2, 3), padding=(1, 1), count_include_pad=include, ceil_mode=ceil_mode
        ).init()(t(x))
        ref = F.avg_pool2d(xt, 3, (2, 3), 1, ceil_mode=ceil_mode, count_include_pad=include)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    for size in ((3, 5), (4, 4), (7, 8)):
        out = nn.AdaptiveAvgPool2dConfig(size).init()(t(x))
        np.testing.assert_allclose(out.numpy(), F.adaptive_avg_pool2d(xt, size).numpy(), rtol=1e-5, atol=1e-6)


def test_pool_errors():
    with pytest.raises(ValueError, match="MaxPool2d"):
        nn.MaxPool2dConfig((2, 2)).init()(ember.randn(2, 4, 4, device=DEV))
    with pytest.raises(ValueError, match="smaller than the kernel"):
        nn.AvgPool2dConfig((5, 5)).init()(ember.randn(1, 1, 4, 4, device=DEV))
