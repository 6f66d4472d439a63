"""nn.GroupNorm and nn.InstanceNorm: NumPy reference on every backend, float64 finite
differences, PyTorch oracle (forward and gradients with copied weights), edge cases (empty
batch, one group, NaN confined to its group, huge and float16 values), errors and records."""

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, params64, weighted_sum

import ember
from ember import nn


def np_group_norm(x, groups, gamma=None, beta=None, eps=1e-5):
    b, c = x.shape[:2]
    g = x.reshape(b, groups, -1)
    mean = g.mean(2, keepdims=True)
    var = ((g - mean) ** 2).mean(2, keepdims=True)
    y = ((g - mean) / np.sqrt(var + eps)).reshape(x.shape)
    if gamma is None:
        return y
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * gamma.reshape(shape) + beta.reshape(shape)


def _set_affine(layer, rng, device):
    c = layer.gamma.shape[0]
    layer.gamma.set_value(ember.tensor(rng.uniform(0.5, 2.0, c).astype(np.float32), device=device))
    layer.beta.set_value(ember.tensor(rng.standard_normal(c).astype(np.float32), device=device))


@pytest.mark.parametrize("shape", [(2, 6, 5), (3, 6, 4, 3)])
def test_group_and_instance_norm_match_numpy(device, shape):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    gn = nn.GroupNormConfig(3, 6).init(device)
    _set_affine(gn, rng, device)
    out = gn(ember.tensor(x, device=device))
    assert out.shape == shape and out.dtype == ember.float32
    np.testing.assert_allclose(
        out.numpy(), np_group_norm(x, 3, gn.gamma.numpy(), gn.beta.numpy()), rtol=1e-4, atol=1e-5
    )
    inorm = nn.InstanceNormConfig(6, epsilon=1e-3).init(device)
    _set_affine(inorm, rng, device)
    np.testing.assert_allclose(
        inorm(ember.tensor(x, device=device)).numpy(),
        np_group_norm(x, 6, inorm.gamma.numpy(), inorm.beta.numpy(), eps=1e-3),
        rtol=1e-4,
        atol=1e-5,
    )


def test_defaults_and_non_affine_layers_have_no_parameters():
    gn = nn.GroupNormConfig(2, 4).init(DEV)
    assert (gn.num_groups, gn.num_channels, gn.epsilon, gn.affine) == (2, 4, 1e-5, True)
    np.testing.assert_array_equal(gn.gamma.numpy(), np.ones(4, np.float32))
    np.testing.assert_array_equal(gn.beta.numpy(), np.zeros(4, np.float32))
    assert [p for p, _ in gn.named_parameters()] == ["gamma", "beta"]
    plain = nn.GroupNormConfig(2, 4, affine=False).init(DEV)
    assert plain.gamma is None and plain.num_params() == 0 and not plain.affine
    x = np.random.default_rng(1).standard_normal((2, 4, 3)).astype(np.float32)
    np.testing.assert_allclose(
        plain(ember.tensor(x, device=DEV)).numpy(), np_group_norm(x, 2), rtol=1e-4, atol=1e-5
    )
    inorm = nn.InstanceNormConfig(4).init(DEV)
    assert inorm.affine and inorm.epsilon == 1e-5  # Burn's default; PyTorch's InstanceNorm has affine=False
    assert nn.InstanceNormConfig(4, affine=False).init(DEV).num_params() == 0


def test_gradients():
    rng = np.random.default_rng(2)
    gn = nn.GroupNormConfig(2, 4).init(DEV)
    _set_affine(gn, rng, DEV)
    params = params64(gn)
    x = ember.tensor(rng.standard_normal((2, 4, 3)), dtype="float64", device=DEV).require_grad()
    check_grads(lambda: weighted_sum(gn(x)), params + [x])
    inorm = nn.InstanceNormConfig(3).init(DEV)
    _set_affine(inorm, rng, DEV)
    params = params64(inorm)
    x2 = ember.tensor(rng.standard_normal((2, 3, 2, 3)), dtype="float64", device=DEV).require_grad()
    check_grads(lambda: weighted_sum(inorm(x2)), params + [x2])


@pytest.mark.parametrize("kind", ["group", "instance1d", "instance2d"])
def test_matches_torch_forward_and_gradients(kind):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    if kind == "group":
        layer, ref, shape = nn.GroupNormConfig(2, 6).init(DEV), torch.nn.GroupNorm(2, 6), (3, 6, 4, 2)
    elif kind == "instance1d":
        layer, ref, shape = (
            nn.InstanceNormConfig(4).init(DEV),
            torch.nn.InstanceNorm1d(4, affine=True),
            (2, 4, 7),
        )
    else:
        layer, ref, shape = (
            nn.InstanceNormConfig(3).init(DEV),
            torch.nn.InstanceNorm2d(3, affine=True),
            (2, 3, 4, 5),
        )
    _set_affine(layer, rng, DEV)
    layer.to(ember.float64)
    ref = ref.double()
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(layer.gamma.numpy()))
        ref.bias.copy_(torch.from_numpy(layer.beta.numpy()))
    x = rng.standard_normal(shape) * 2 - 1
    up = rng.standard_normal(shape)
    xt = torch.from_numpy(x).requires_grad_()
    yt = ref(xt)
    (yt * torch.from_numpy(up)).sum().backward()
    xe = ember.tensor(x, device=DEV).require_grad()
    ye = layer(xe)
    grads = (ye * ember.tensor(up, device=DEV)).sum().backward()
    np.testing.assert_allclose(ye.numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads.get(xe).numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(
        grads.get(layer.gamma.value).numpy(), ref.weight.grad.numpy(), rtol=1e-9, atol=1e-11
    )
    np.testing.assert_allclose(
        grads.get(layer.beta.value).numpy(), ref.bias.grad.numpy(), rtol=1e-9, atol=1e-11
    )


def test_empty_batch_one_group_and_nan_stays_in_its_group():
    gn = nn.GroupNormConfig(2, 4).init(DEV)
    assert gn(ember.zeros(0, 4, 3, device=DEV)).shape == (0, 4, 3)
    x = np.random.default_rng(4).standard_normal((2, 4, 3)).astype(np.float32)
    one = nn.GroupNormConfig(1, 4, affine=False).init(DEV)  # one group: every channel and position together
    whole = (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(one(ember.tensor(x, device=DEV)).numpy(), whole, rtol=1e-4, atol=1e-5)
    x[1, 3, 0] = np.nan  # sample 1, group 1
    y = gn(ember.tensor(x, device=DEV)).numpy()
    assert np.isnan(y[1, 2:]).all()
    assert np.isfinite(y[0]).all() and np.isfinite(y[1, :2]).all()


def test_huge_and_float16_values_normalise():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 6)).astype(np.float32)
    gn = nn.GroupNormConfig(2, 4, affine=False).init(DEV)
    expected = np_group_norm(x.astype(np.float64), 2)
    # scale-free up to epsilon: 1e15 keeps the squared deviations (~1e30) inside float32
    np.testing.assert_allclose(gn(ember.tensor(x * 1e15, device=DEV)).numpy(), expected, rtol=1e-3, atol=1e-4)
    # squares of ~1000 overflow float16 (max 65504): the statistics are taken in float32
    half = (x * 1000).astype(np.float16)
    y = gn(ember.tensor(half, device=DEV))
    assert y.dtype == ember.float16 and np.isfinite(y.numpy()).all()
    np.testing.assert_allclose(
        y.numpy().astype(np.float64), np_group_norm(half.astype(np.float64), 2), rtol=1e-2, atol=1e-2
    )


def test_errors_name_the_layer_and_shapes():
    with pytest.raises(ValueError, match=r"GroupNormConfig: num_channels=6 is not divisible by num_groups=4"):
        nn.GroupNormConfig(4, 6).init(DEV)
    with pytest.raises(ValueError, match="GroupNormConfig: num_groups must be a positive int"):
        nn.GroupNormConfig(0, 6).init(DEV)
    with pytest.raises(ValueError, match="InstanceNormConfig: num_channels must be a positive int"):
        nn.InstanceNormConfig(0).init(DEV)
    gn = nn.GroupNormConfig(2, 4).init(DEV)
    with pytest.raises(
        ValueError, match=r"GroupNorm: expected input \[batch, 4, \*spatial\] of rank >= 3, got \[2, 3, 5\]"
    ):
        gn(ember.randn(2, 3, 5, device=DEV))
    with pytest.raises(ValueError, match=r"got \[2, 4\]"):
        gn(ember.randn(2, 4, device=DEV))
    with pytest.raises(TypeError, match="GroupNorm: expected a float Tensor input, got int64"):
        gn(ember.tensor(np.zeros((1, 4, 2), np.int64), device=DEV))
    with pytest.raises(ValueError, match=r"InstanceNorm: expected input \[batch, 3"):
        nn.InstanceNormConfig(3).init(DEV)(ember.randn(1, 4, 5, device=DEV))
    with pytest.raises(ValueError, match="InstanceNorm: gamma and beta must both be given"):
        nn.InstanceNorm(nn.InstanceNormConfig(3).init(DEV).gamma, None, 3)
    with pytest.raises(ValueError, match=r"GroupNorm: gamma must have shape \[6\], got \[4\]"):
        nn.GroupNorm(gn.gamma, gn.beta, 2, 6)


def test_records_and_configs_round_trip(tmp_path):
    rng = np.random.default_rng(6)
    gn = nn.GroupNormConfig(2, 4).init(DEV)
    _set_affine(gn, rng, DEV)
    path = gn.save_file(tmp_path / "gn.bpk")
    other = nn.GroupNormConfig(2, 4).init(DEV).load_file(path)
    np.testing.assert_array_equal(other.gamma.numpy(), gn.gamma.numpy())
    np.testing.assert_array_equal(other.beta.numpy(), gn.beta.numpy())
    assert set(gn.into_record()) == {"gamma", "beta"}
    inorm = nn.InstanceNormConfig(3).init(DEV)
    _set_affine(inorm, rng, DEV)
    back = nn.InstanceNormConfig(3).init(DEV).load_file(inorm.save_file(tmp_path / "in.bpk"))
    np.testing.assert_array_equal(back.gamma.numpy(), inorm.gamma.numpy())
    with pytest.raises(Exception, match="gamma"):
        nn.InstanceNormConfig(4).init(DEV).load_file(tmp_path / "in.bpk")  # shape [3] vs [4]
    for cfg in (nn.GroupNormConfig(2, 4, epsilon=1e-3, affine=False), nn.InstanceNormConfig(3, affine=False)):
        assert type(cfg).from_json(cfg.to_json()) == cfg
