"""nn.CosineSimilarity and nn.PairwiseDistance: NumPy reference on every backend, Burn's
defaults, PyTorch oracle (forward and gradients), float64 finite differences, broadcasting,
zero vectors, NaN confined to its row, huge values, errors."""

import math

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, weighted_sum

import ember
from ember import nn

P_VALUES = [0.0, 1.0, 1.5, 2.0, 3.0, 4.0, math.inf, -math.inf]


def np_cosine(a, b, dim=1, eps=1e-8):
    na = np.maximum(np.sqrt((a * a).sum(dim)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(dim)), eps)
    return (a * b).sum(dim) / (na * nb)


def np_pairwise(a, b, p=2.0, eps=1e-6):
    d = np.abs(a - b + eps)
    if p == 0:
        return (d != 0).sum(-1).astype(a.dtype)
    if p == math.inf:
        return d.max(-1)
    if p == -math.inf:
        return d.min(-1)
    return (d**p).sum(-1) ** (1 / p)


def _assert_matches_torch(torch, torch_layer, layer, a, b, upstream, atol=0.0):
    """``layer(a, b)`` and its gradients for ``a`` and ``b`` (backward of the weights
    ``upstream``) equal the PyTorch layer's."""
    at, bt = torch.from_numpy(a).requires_grad_(), torch.from_numpy(b).requires_grad_()
    yt = torch_layer(at, bt)
    (yt * torch.from_numpy(upstream)).sum().backward()
    ae, be = ember.tensor(a, device=DEV).require_grad(), ember.tensor(b, device=DEV).require_grad()
    ye = layer(ae, be)
    grads = (ye * ember.tensor(upstream, device=DEV)).sum().backward()
    np.testing.assert_allclose(ye.numpy(), yt.detach().numpy(), rtol=1e-12, atol=atol)
    np.testing.assert_allclose(grads.get(ae).numpy(), at.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads.get(be).numpy(), bt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_defaults_are_burns():
    cos = nn.CosineSimilarityConfig().init()
    assert (cos.dim, cos.eps) == (1, 1e-8)
    dist = nn.PairwiseDistanceConfig().init()
    assert (dist.p, dist.eps) == (2.0, 1e-6)
    assert cos.num_params() == 0 and dist.num_params() == 0


def test_match_numpy(device):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 4, 5)).astype(np.float32)
    ta, tb = ember.tensor(a, device=device), ember.tensor(b, device=device)
    out = nn.CosineSimilarityConfig().init()(ta, tb)
    assert out.shape == (4,)
    np.testing.assert_allclose(out.numpy(), np_cosine(a, b), rtol=1e-5, atol=1e-6)
    for p in P_VALUES:
        out = nn.PairwiseDistanceConfig(p=p).init()(ta, tb)
        assert out.shape == (4,)
        np.testing.assert_allclose(out.numpy(), np_pairwise(a, b, p), rtol=1e-5, atol=1e-6, err_msg=f"p={p}")


def test_any_rank_dim_and_broadcasting():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4, 5))
    b = rng.standard_normal((1, 4, 5))  # one query against a batch
    for dim in (0, 1, -1):
        out = nn.CosineSimilarityConfig(dim=dim).init()(
            ember.tensor(a, device=DEV), ember.tensor(b, device=DEV)
        )
        np.testing.assert_allclose(out.numpy(), np_cosine(a, np.broadcast_to(b, a.shape), dim), rtol=1e-12)
    out = nn.PairwiseDistanceConfig(p=3.0).init()(ember.tensor(a, device=DEV), ember.tensor(b, device=DEV))
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out.numpy(), np_pairwise(a, b, 3.0), rtol=1e-12)
    one = nn.PairwiseDistanceConfig().init()(
        ember.tensor(a[0, 0], device=DEV), ember.tensor(b[0, 0], device=DEV)
    )
    assert one.shape == () and np.isclose(one.item(), np_pairwise(a[0, 0], b[0, 0]))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 4.0, math.inf])
def test_pairwise_distance_matches_torch_with_gradients(p):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 5, 4))
    up = rng.standard_normal(5)
    _assert_matches_torch(
        torch, torch.nn.PairwiseDistance(p=p), nn.PairwiseDistanceConfig(p=p).init(), a, b, up
    )


@pytest.mark.parametrize("dim", [1, 0, -1])
def test_cosine_similarity_matches_torch_with_gradients(dim):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 3, 4, 2))
    b[0, 0, 0] = 0.0  # a zero vector along dim -1: its norm is clamped by eps
    up = rng.standard_normal(np.delete(a.shape, dim % 3))
    _assert_matches_torch(
        torch,
        torch.nn.CosineSimilarity(dim=dim),
        nn.CosineSimilarityConfig(dim=dim).init(),
        a,
        b,
        up,
        atol=1e-14,
    )


def test_gradients():
    rng = np.random.default_rng(4)
    a = ember.tensor(rng.standard_normal((3, 4)), device=DEV).require_grad()
    b = ember.tensor(rng.standard_normal((3, 4)), device=DEV).require_grad()
    cos = nn.CosineSimilarityConfig().init()
    check_grads(lambda: weighted_sum(cos(a, b)), [a, b])
    for p in (1.0, 2.0, 2.5, 4.0):
        dist = nn.PairwiseDistanceConfig(p=p).init()
        check_grads(lambda: weighted_sum(dist(a, b)), [a, b])


def test_zero_vectors_nan_rows_and_huge_values():
    a = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [np.nan, 1.0, 1.0]], np.float32)
    b = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]], np.float32)
    cos = nn.CosineSimilarityConfig().init()(ember.tensor(a, device=DEV), ember.tensor(b, device=DEV)).numpy()
    assert cos[0] == 0.0 and np.isclose(cos[1], 1.0) and np.isnan(cos[2])  # zero vector: 0, not NaN
    dist = (
        nn.PairwiseDistanceConfig().init()(ember.tensor(a, device=DEV), ember.tensor(b, device=DEV)).numpy()
    )
    assert np.isfinite(dist[:2]).all() and np.isnan(dist[2])
    # the same vectors scaled by 1e18: squares (~1e37) still fit float32, the similarity is scale-free
    big = nn.CosineSimilarityConfig().init()(
        ember.tensor(a[1:2] * 1e18, device=DEV), ember.tensor(b[1:2] * 1e18, device=DEV)
    )
    np.testing.assert_allclose(big.numpy(), [1.0], rtol=1e-5)
    same = nn.PairwiseDistanceConfig().init()(ember.tensor(b, device=DEV), ember.tensor(b, device=DEV))
    np.testing.assert_allclose(same.numpy(), np.full(3, np.sqrt(3) * 1e-6), rtol=1e-4)  # eps on each entry
    empty = nn.PairwiseDistanceConfig().init()(ember.zeros(0, 3, device=DEV), ember.zeros(0, 3, device=DEV))
    assert empty.shape == (0,)


def test_errors_name_the_layer_and_shapes():
    cos, dist = nn.CosineSimilarityConfig().init(), nn.PairwiseDistanceConfig().init()
    with pytest.raises(
        ValueError,
        match=r"cosine_similarity: x1 \[2, 3\] and x2 \[2, 4\] must have the same rank "
        r"\(>= 1\) and broadcastable shapes",
    ):
        cos(ember.randn(2, 3, device=DEV), ember.randn(2, 4, device=DEV))
    with pytest.raises(ValueError, match=r"pairwise_distance: x1 \[2, 3\] and x2 \[3\]"):
        dist(ember.randn(2, 3, device=DEV), ember.randn(3, device=DEV))
    with pytest.raises(IndexError, match="cosine_similarity: dim 2 is out of range for inputs of rank 2"):
        nn.CosineSimilarityConfig(dim=2).init()(ember.randn(2, 3, device=DEV), ember.randn(2, 3, device=DEV))
    with pytest.raises(TypeError, match="pairwise_distance: x2 must be a float Tensor, got int64 tensor"):
        dist(ember.randn(2, 3, device=DEV), ember.tensor(np.zeros((2, 3), np.int64), device=DEV))
    with pytest.raises(TypeError, match="cosine_similarity: x1 is float32 but x2 is float64"):
        cos(ember.randn(2, 3, device=DEV), ember.randn(2, 3, device=DEV, dtype="float64"))
    with pytest.raises(ValueError, match="PairwiseDistance: p must be a number"):
        nn.PairwiseDistanceConfig(p=float("nan")).init()
    with pytest.raises(ValueError, match="CosineSimilarity: eps must be a finite number"):
        nn.CosineSimilarityConfig(eps=float("inf")).init()
    for cfg in (nn.CosineSimilarityConfig(dim=-1, eps=1e-6), nn.PairwiseDistanceConfig(p=1.0, eps=0.0)):
        assert type(cfg).from_json(cfg.to_json()) == cfg
