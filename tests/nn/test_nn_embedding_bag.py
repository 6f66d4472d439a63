"""nn.EmbeddingBag / ember.embedding_bag: PyTorch oracle (forward and backward, offsets and
padded forms, empty bags, per-sample weights), float64 finite differences, cpu against
reference, row-sparse gradients, records and misuse errors."""

import numpy as np
import pytest
from helpers.gradcheck import check_grads, weighted_sum

import ember
from ember import nn

DEVICES = ["reference", "cpu"]
MODES = ["sum", "mean", "max"]

# 4 bags over 9 indices: an empty bag in the middle and one at the end, a repeated index
INDICES = np.array([3, 1, 3, 7, 0, 9, 9, 2, 5], dtype=np.int64)
OFFSETS = np.array([0, 4, 4, 9], dtype=np.int64)


def _bag(device, mode, n=12, d=5, sparse=True, seed=0):
    ember.seed(seed)
    return nn.EmbeddingBagConfig(n, d, mode=mode, sparse=sparse).init(device)


def _bag_and_torch(torch, device, mode):
    """A bag and PyTorch's EmbeddingBag holding the same weight."""
    bag = _bag(device, mode)
    weight = bag.weight.numpy()
    ref = torch.nn.EmbeddingBag(weight.shape[0], weight.shape[1], mode=mode)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(weight))
    return bag, ref


def _backward_both(torch, out, ref_out, seed, device):
    """Back-propagate one random upstream through PyTorch's output and ember's; returns ember's
    gradients (PyTorch's are on its tensors)."""
    up = np.random.default_rng(seed).standard_normal(out.shape).astype(np.float32)
    (ref_out * torch.from_numpy(up)).sum().backward()
    return (out * ember.tensor(up, device=device)).sum().backward()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", MODES)
def test_offsets_form_matches_torch(device, mode):
    torch = pytest.importorskip("torch")
    bag, ref = _bag_and_torch(torch, device, mode)
    out = bag(ember.tensor(INDICES, device=device), ember.tensor(OFFSETS, device=device))
    ref_out = ref(torch.from_numpy(INDICES), torch.from_numpy(OFFSETS))
    assert out.shape == (4, 5)
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert np.all(out.numpy()[[1, 3]] == 0)  # the empty bags
    grad = _backward_both(torch, out, ref_out, 1, device).get(bag.weight.value)
    assert isinstance(grad, ember.RowSparse)
    assert grad.indices.tolist() == sorted(set(INDICES.tolist()))
    np.testing.assert_allclose(grad.to_dense().numpy(), ref.weight.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_empty_bags_give_zeros():
    bag = _bag("cpu", "max")
    out = bag(ember.tensor(INDICES, device="cpu"), ember.tensor([0, 0, 4, 9, 9], device="cpu")).numpy()
    assert out.shape == (5, 5)
    assert np.all(out[[0, 3, 4]] == 0) and np.all(out[1] != 0)
    empty = bag(ember.tensor(np.zeros(0, np.int64), device="cpu"), ember.tensor([0, 0], device="cpu"))
    assert empty.shape == (2, 5) and np.all(empty.numpy() == 0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", MODES)
def test_padded_form_with_mask_matches_torch(device, mode):
    torch = pytest.importorskip("torch")
    bag, ref = _bag_and_torch(torch, device, mode)
    ids = np.array([[4, 2, 11, 0], [7, 7, 1, 5], [3, 9, 9, 9]], dtype=np.int64)
    pad = np.array([[False, False, True, True], [False, False, False, False], [True, True, True, True]])
    ids_with_junk = np.where(pad, -1, ids)  # padded positions are ignored, even out of range
    out = bag(ember.tensor(ids_with_junk, device=device), mask=ember.tensor(pad, device=device))
    flat = ids[~pad]
    offsets = np.concatenate([[0], np.cumsum((~pad).sum(1))[:-1]])
    ref_out = ref(torch.from_numpy(flat), torch.from_numpy(offsets))
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert np.all(out.numpy()[2] == 0)
    grad = _backward_both(torch, out, ref_out, 2, device).get(bag.weight.value)
    np.testing.assert_allclose(grad.to_dense().numpy(), ref.weight.grad.numpy(), rtol=1e-6, atol=1e-7)
    # without a mask every position counts (torch's 2-D input)
    out2 = bag(ember.tensor(ids, device=device))
    np.testing.assert_allclose(
        out2.numpy(), ref(torch.from_numpy(ids)).detach().numpy(), rtol=1e-6, atol=1e-7
    )


@pytest.mark.parametrize("device", DEVICES)
def test_per_sample_weights_match_torch(device):
    torch = pytest.importorskip("torch")
    bag, ref = _bag_and_torch(torch, device, "sum")
    psw = np.random.default_rng(3).uniform(-1, 2, INDICES.shape).astype(np.float32)
    w = ember.tensor(psw, device=device).require_grad()
    out = bag(
        ember.tensor(INDICES, device=device), ember.tensor(OFFSETS, device=device), per_sample_weights=w
    )
    tw = torch.from_numpy(psw.copy()).requires_grad_()
    ref_out = ref(torch.from_numpy(INDICES), torch.from_numpy(OFFSETS), per_sample_weights=tw)
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), rtol=1e-6, atol=1e-6)
    grads = _backward_both(torch, out, ref_out, 4, device)
    np.testing.assert_allclose(
        grads.get(bag.weight.value).to_dense().numpy(), ref.weight.grad.numpy(), rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(grads.get(w).numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_per_sample_weights_in_padded_form():
    bag = _bag("cpu", "sum")
    ids = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
    pad = np.array([[False, True, False], [False, False, False]])
    psw = ember.tensor(np.array([[0.5, 9.0, 2.0], [1.0, -1.0, 3.0]], np.float32), device="cpu").require_grad()
    out = bag(ember.tensor(ids, device="cpu"), per_sample_weights=psw, mask=ember.tensor(pad, device="cpu"))
    w = bag.weight.numpy()
    np.testing.assert_allclose(out.numpy()[0], 0.5 * w[1] + 2.0 * w[3], rtol=1e-6)
    g = out.sum().backward().get(psw).numpy()
    assert g.shape == (2, 3) and g[0, 1] == 0.0
    np.testing.assert_allclose(g[0, 0], w[1].sum(), rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", MODES)
def test_float64_finite_differences(device, mode):
    bag = _bag(device, mode, n=10, d=4, seed=5)
    bag.to(ember.float64)
    weight = bag.weight.value
    ids = ember.tensor(np.array([2, 2, 5, 1, 8, 0, 3], np.int64), device=device)
    offsets = ember.tensor(np.array([0, 3, 3, 5], np.int64), device=device)
    check_grads(lambda: weighted_sum(bag(ids, offsets)), [weight])
    if mode == "sum":
        psw = ember.tensor(np.random.default_rng(6).standard_normal(7), device=device).require_grad()
        check_grads(lambda: weighted_sum(bag(ids, offsets, per_sample_weights=psw)), [weight, psw])


@pytest.mark.parametrize("mode", MODES)
def test_cpu_backend_agrees_with_reference(mode):
    rng = np.random.default_rng(7)
    n, d, total = 300, 19, 700
    weight = rng.standard_normal((n, d)).astype(np.float32)
    ids = rng.integers(0, n, total).astype(np.int64)
    offsets = np.sort(rng.integers(0, total, 63))
    offsets[0] = 0
    psw = rng.uniform(-1, 1, total).astype(np.float32) if mode == "sum" else None
    up = rng.standard_normal((63, d)).astype(np.float32)
    results = {}
    for device in DEVICES:
        w = ember.tensor(weight, device=device).require_grad()
        p = None if psw is None else ember.tensor(psw, device=device).require_grad()
        out = ember.embedding_bag(
            w,
            ember.tensor(ids, device=device),
            ember.tensor(offsets, device=device),
            per_sample_weights=p,
            mode=mode,
            sparse=True,
        )
        grads = (out * ember.tensor(up, device=device)).sum().backward()
        g = grads.get(w)
        results[device] = (
            out.numpy(),
            g.indices.numpy(),
            g.values.numpy(),
            None if p is None else grads.get(p).numpy(),
        )
    ref, cpu = results["reference"], results["cpu"]
    np.testing.assert_allclose(cpu[0], ref[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(cpu[1], ref[1])
    np.testing.assert_allclose(cpu[2], ref[2], rtol=1e-5, atol=1e-6)
    if psw is not None:
        np.testing.assert_allclose(cpu[3], ref[3], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_dense_gradient_when_not_sparse_and_mixed_use(device):
    bag = _bag(device, "mean", sparse=False)
    ids, offs = ember.tensor(INDICES, device=device), ember.tensor(OFFSETS, device=device)
    dense = bag(ids, offs).sum().backward().get(bag.weight.value)
    assert isinstance(dense, ember.Tensor) and dense.shape == (12, 5)
    bag.sparse = True
    sparse = bag(ids, offs).sum().backward().get(bag.weight.value)
    np.testing.assert_allclose(sparse.to_dense().numpy(), dense.numpy(), rtol=1e-6)
    # the table used twice sparsely stays sparse; also used densely, the sum is dense
    twice = (bag(ids, offs).sum() + bag(ids, offs).sum()).backward().get(bag.weight.value)
    assert isinstance(twice, ember.RowSparse)
    np.testing.assert_allclose(twice.to_dense().numpy(), 2 * dense.numpy(), rtol=1e-6)
    look = ember.tensor([[0, 11]], device=device)
    mixed = (bag(ids, offs).sum() + ember.embedding(bag.weight.value, look).sum()).backward()
    g = mixed.get(bag.weight.value)
    assert isinstance(g, ember.Tensor)
    expect = dense.numpy().copy()
    expect[[0, 11]] += 1.0
    np.testing.assert_allclose(g.numpy(), expect, rtol=1e-6)


def test_half_precision_forward_and_sparse_gradient():
    bag = _bag("cpu", "mean").to(ember.float16)
    out = bag(ember.tensor(INDICES, device="cpu"), ember.tensor(OFFSETS, device="cpu"))
    assert out.dtype is ember.float16
    g = out.float().sum().backward().get(bag.weight.value)
    assert isinstance(g, ember.RowSparse) and g.dtype is ember.float16


def test_record_round_trip_and_embedding_layout(tmp_path):
    bag = _bag("cpu", "sum", n=30, d=6)
    path = bag.save_file(tmp_path / "bag")
    other = _bag("cpu", "sum", n=30, d=6, seed=9)
    assert not np.array_equal(other.weight.numpy(), bag.weight.numpy())
    other.load_file(path)
    np.testing.assert_array_equal(other.weight.numpy(), bag.weight.numpy())
    # same record layout as nn.Embedding: each loads the other's table
    emb = nn.EmbeddingConfig(30, 6).init("cpu")
    emb.load_file(path)
    np.testing.assert_array_equal(emb.weight.numpy(), bag.weight.numpy())
    assert list(bag.into_record().keys()) == list(emb.into_record().keys())


def test_config_and_errors():
    bag = _bag("cpu", "mean", n=10, d=3)
    ids, offs = ember.tensor([1, 2, 3], device="cpu"), ember.tensor([0, 2], device="cpu")
    with pytest.raises(IndexError, match="table of 10 rows"):
        bag(ember.tensor([1, 10, 3], device="cpu"), offs)
    with pytest.raises(IndexError, match="table of 10 rows"):
        bag(ember.tensor([[1, -2]], device="cpu"))
    with pytest.raises(ValueError, match="only supported with mode='sum'"):
        bag(ids, offs, per_sample_weights=ember.ones(3, device="cpu"))
    with pytest.raises(ValueError, match="only supported with mode='sum'"):
        _bag("cpu", "max", n=10, d=3)(ids, offs, per_sample_weights=ember.ones(3, device="cpu"))
    sum_bag = _bag("cpu", "sum", n=10, d=3)
    with pytest.raises(ValueError, match="shape of indices"):
        sum_bag(ids, offs, per_sample_weights=ember.ones(2, device="cpu"))
    with pytest.raises(ValueError, match="mode must be one of"):
        nn.EmbeddingBagConfig(10, 3, mode="median").init("cpu")
    with pytest.raises(ValueError, match="mode must be one of"):
        ember.embedding_bag(bag.weight.value, ids, offs, mode="prod")
    with pytest.raises(ValueError, match="offsets must start at 0"):
        bag(ids, ember.tensor([1, 2], device="cpu"))
    with pytest.raises(ValueError, match="never decrease"):
        bag(ids, ember.tensor([0, 2, 1], device="cpu"))
    with pytest.raises(ValueError, match="<= the number of indices"):
        bag(ids, ember.tensor([0, 4], device="cpu"))
    with pytest.raises(ValueError, match="need offsets"):
        bag(ids)
    with pytest.raises(ValueError, match="offsets go with 1-D"):
        bag(ember.tensor([[1, 2]], device="cpu"), offs)
    with pytest.raises(ValueError, match="mask goes with padded"):
        bag(ids, offs, mask=ember.tensor([False, False, True], device="cpu"))
    with pytest.raises(ValueError, match="mask must be a bool tensor"):
        bag(ember.tensor([[1, 2]], device="cpu"), mask=ember.tensor([[0, 1]], device="cpu"))
    with pytest.raises(TypeError, match="indices must be an int tensor"):
        bag(ember.tensor([1.0, 2.0], device="cpu"), offs)
    with pytest.raises(ValueError, match="positive"):
        nn.EmbeddingBagConfig(0, 3).init("cpu")
    assert "mode" in repr(bag) and bag.extra_repr()["n_embedding"] == 10
