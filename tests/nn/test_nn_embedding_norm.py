import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, params64, weighted_sum

import ember
from ember import nn


def test_embedding_lookup_and_gradient():
    ember.seed(0)
    emb = nn.EmbeddingConfig(10, 4).init(DEV)
    ids = ember.tensor([[1, 2, 1], [9, 0, 3]], device=DEV)
    out = emb(ids)
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out.numpy(), emb.weight.numpy()[ids.numpy()])
    grads = out.sum().backward()
    g = grads.get(emb.weight.value).numpy()
    assert g[1].tolist() == [2.0] * 4 and g[5].tolist() == [0.0] * 4
    with pytest.raises(IndexError):
        emb(ember.tensor([[10]], device=DEV))
    with pytest.raises(TypeError):
        emb(ember.randn(2, device=DEV))


def test_embedding_matches_torch_forward_and_gradient():
    torch = pytest.importorskip("torch")
    ember.seed(1)
    emb = nn.EmbeddingConfig(12, 5).init(DEV)
    ref = torch.nn.Embedding(12, 5)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(emb.weight.numpy()))
    ids = np.array([[3, 3, 11, 0], [7, 3, 2, 11]], dtype=np.int64)
    up = np.random.default_rng(0).standard_normal((2, 4, 5)).astype(np.float32)
    out = emb(ember.tensor(ids, device=DEV))
    ref_out = ref(torch.from_numpy(ids))
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), rtol=1e-6)
    grads = (out * ember.tensor(up, device=DEV)).sum().backward()
    (ref_out * torch.from_numpy(up)).sum().backward()
    np.testing.assert_allclose(
        grads.get(emb.weight.value).numpy(), ref.weight.grad.numpy(), rtol=1e-5, atol=1e-6
    )


def test_embedding_initializer_is_standard_normal():
    ember.seed(0)
    w = nn.EmbeddingConfig(500, 40).init(DEV).weight.numpy()
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1.0) < 0.02


def _np_layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def test_layer_norm_forward_and_gradients():
    ember.seed(1)
    ln = nn.LayerNormConfig(5).init(DEV)
    ln.gamma.set_value(ember.randn(5, device=DEV))
    ln.beta.set_value(ember.randn(5, device=DEV))
    x = np.random.default_rng(0).standard_normal((2, 3, 5)).astype(np.float32)
    y = ln(ember.tensor(x, device=DEV))
    np.testing.assert_allclose(
        y.numpy(), _np_layer_norm(x, ln.gamma.numpy(), ln.beta.numpy(), 1e-5), rtol=1e-5, atol=1e-5
    )
    params = params64(ln)
    xe = ember.tensor(x, dtype="float64", device=DEV).require_grad()
    check_grads(lambda: weighted_sum(ln(xe)), params + [xe])


def test_layer_norm_without_bias_and_half_precision():
    ln = nn.LayerNormConfig(4, bias=False, epsilon=1e-3).init(DEV)
    assert ln.beta is None and ln.num_params() == 4
    x = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float16)
    y = ln(ember.tensor(x, device=DEV))
    assert y.dtype is ember.float16
    np.testing.assert_allclose(
        y.numpy().astype(np.float32), _np_layer_norm(x.astype(np.float32), 1, 0, 1e-3), atol=2e-3
    )
    with pytest.raises(ValueError, match="d_model=4"):
        ln(ember.randn(2, 5, device=DEV))


def test_layer_norm_matches_torch():
    torch = pytest.importorskip("torch")
    ln = nn.LayerNormConfig(6).init(DEV)
    ln.gamma.set_value(ember.randn(6, device=DEV))
    ref = torch.nn.LayerNorm(6, eps=1e-5)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(ln.gamma.numpy()))
    x = np.random.default_rng(4).standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(
        ln(ember.tensor(x, device=DEV)).numpy(),
        ref(torch.from_numpy(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-5,
    )


def test_rms_norm_forward_and_gradients():
    rms = nn.RmsNormConfig(4).init(DEV)
    rms.gamma.set_value(ember.randn(4, device=DEV))
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    expected = x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-5) * rms.gamma.numpy()
    np.testing.assert_allclose(rms(ember.tensor(x, device=DEV)).numpy(), expected, rtol=1e-5, atol=1e-6)
    params = params64(rms)
    xe = ember.tensor(x, dtype="float64", device=DEV).require_grad()
    check_grads(lambda: weighted_sum(rms(xe)), params + [xe])
    with pytest.raises(ValueError, match="epsilon"):
        nn.RmsNormConfig(4, epsilon=0.0).init(DEV)
