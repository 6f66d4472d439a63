import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, params64, weighted_sum

import ember
from ember import nn


def _stats(x):
    axes = (0,) + tuple(range(2, x.ndim))
    return x.mean(axes), x.var(axes)  # biased variance, as Burn


def test_train_forward_and_running_update_2d():
    bn = nn.BatchNormConfig(3).init_2d(DEV)
    bn.gamma.set_value(ember.tensor([1.0, 2.0, 0.5], device=DEV))
    bn.beta.set_value(ember.tensor([0.0, 1.0, -1.0], device=DEV))
    x = np.random.default_rng(0).standard_normal((4, 3, 2, 5)).astype(np.float32) * 3 + 1
    y = bn(ember.tensor(x, device=DEV)).numpy()
    mean, var = _stats(x)
    shape = (1, 3, 1, 1)
    expected = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5) * bn.gamma.numpy().reshape(
        shape
    ) + bn.beta.numpy().reshape(shape)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * var, rtol=1e-5)
    assert not bn.running_mean.is_require_grad()


def test_valid_uses_running_statistics():
    bn = nn.BatchNormConfig(2, momentum=0.5).init_1d(DEV)
    x = np.random.default_rng(1).standard_normal((8, 2, 3)).astype(np.float32)
    bn(ember.tensor(x, device=DEV))
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    v = bn.valid()
    z = np.random.default_rng(2).standard_normal((5, 2, 3)).astype(np.float32)
    out = v(ember.tensor(z, device=DEV)).numpy()
    np.testing.assert_allclose(
        out, (z - rm[None, :, None]) / np.sqrt(rv[None, :, None] + 1e-5), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_array_equal(v.running_mean.numpy(), rm)  # inference does not update


def test_running_stats_are_recorded_but_not_trained():
    bn = nn.BatchNormConfig(4).init(DEV)
    paths = [p for p, _ in bn.named_parameters()]
    assert paths == ["gamma", "beta", "running_mean", "running_var"]
    assert set(bn.into_record()) == set(paths)
    bn.unfreeze()
    assert bn.num_params(trainable_only=True) == 8 and bn.num_params() == 16


def test_gradients():
    bn = nn.BatchNormConfig(2).init(DEV)
    bn.gamma.set_value(ember.tensor([1.5, -0.5], device=DEV))
    params = params64(bn)
    x = ember.randn(3, 2, 4, device=DEV, dtype="float64").require_grad()
    check_grads(lambda: weighted_sum(bn(x)), params + [x])


def test_rank_checks():
    with pytest.raises(ValueError, match="BatchNorm2d"):
        nn.BatchNormConfig(3).init_2d(DEV)(ember.randn(2, 3, 4, device=DEV))
    with pytest.raises(ValueError, match=r"\[batch, 3"):
        nn.BatchNormConfig(3).init(DEV)(ember.randn(2, 4, device=DEV))


def test_matches_torch_batchnorm():
    torch = pytest.importorskip("torch")
    bn = nn.BatchNormConfig(3).init_2d(DEV)
    ref = torch.nn.BatchNorm2d(3, eps=1e-5, momentum=0.1)
    x = np.random.default_rng(3).standard_normal((4, 3, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(
        bn(ember.tensor(x, device=DEV)).numpy(),
        ref(torch.from_numpy(x)).detach().numpy(),
        rtol=1e-4,
        atol=1e-5,
    )
    np.testing.assert_allclose(bn.running_mean.numpy(), ref.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    # PyTorch keeps the unbiased variance in running_var; Burn (and ember) the biased one
    n = 4 * 5 * 5
    unbiased = (ref.running_var.numpy() - 0.9) / 0.1
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * unbiased * (n - 1) / n, rtol=1e-5)
    ref.eval()
    z = np.random.default_rng(4).standard_normal((2, 3, 5, 5)).astype(np.float32)
    ref.running_var.copy_(torch.from_numpy(bn.running_var.numpy()))
    np.testing.assert_allclose(
        bn.valid()(ember.tensor(z, device=DEV)).numpy(),
        ref(torch.from_numpy(z)).detach().numpy(),
        rtol=1e-4,
        atol=1e-5,
    )
