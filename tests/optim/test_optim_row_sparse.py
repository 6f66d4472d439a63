"""Row-sparse gradients (ember.RowSparse) through GradientsParams, accumulation, clipping,
every optimizer (against the dense update, and lazy Adam against torch.optim.SparseAdam)
and optimizer records."""

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.kernels.families.optimizer_args import AdamArgs, AdamState, SgdArgs, SgdState
from ember.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    GradientClippingConfig,
    GradientsAccumulator,
    GradientsParams,
    LionConfig,
    MomentumConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)

DEVICES = ["reference", "cpu"]
N, D = 40, 6

OPTIMIZERS = {
    "sgd": SgdConfig(),
    "sgd_momentum_decay": SgdConfig(weight_decay=WeightDecayConfig(0.1), momentum=MomentumConfig(0.9, 0.1)),
    "sgd_nesterov": SgdConfig(momentum=MomentumConfig(0.8, 0.0, True)),
    "adam": AdamConfig(epsilon=0.0),
    "adam_amsgrad_l2": AdamConfig(epsilon=0.0, amsgrad=True, weight_decay=WeightDecayConfig(0.05)),
    "adamw": AdamWConfig(epsilon=0.0, weight_decay=0.1),
    "adamw_cautious": AdamWConfig(epsilon=0.0, weight_decay=0.1, cautious_weight_decay=True),
    "rmsprop": RmsPropConfig(),
    "adagrad": AdaGradConfig(),
    "lion": LionConfig(),
}
EXACT = {"sgd", "rmsprop", "adagrad", "lion"}  # equal to the dense update on every row
LAZY = set(OPTIMIZERS) - EXACT  # equal on the rows in the gradient, the others untouched


class Table(nn.Module):
    def __init__(self, device, seed=0, dtype=ember.float32):
        rng = np.random.default_rng(seed)
        self.weight = nn.Param(ember.tensor(rng.uniform(-1, 1, (N, D)), dtype=dtype, device=device))
        self.bias = nn.Param(ember.tensor(rng.uniform(-1, 1, (3,)), dtype=dtype, device=device))


def _rows(rng, k=9):
    return np.sort(rng.choice(N, k, replace=False)).astype(np.int64)


def _grad_values(table, rows):
    """A fixed, non-linear gradient field of the current weights (a·θ + c on the rows)."""
    theta = table.weight.numpy()[rows].astype(np.float64)
    a = np.linspace(0.5, 2.0, D)
    return (a * theta + 0.3 * np.tanh(3 * theta) + np.cos(rows)[:, None]).astype(np.float32)


def _grads(table, rows, values, sparse, device, bias=True):
    g = GradientsParams()
    sp = ember.RowSparse(ember.tensor(rows, device=device), ember.tensor(values, device=device), (N, D))
    g.register(table.weight.id, sp if sparse else sp.to_dense())
    if bias:
        g.register(table.bias.id, ember.tensor(np.array([0.3, -0.2, 0.1], np.float32), device=device))
    return g


def _steps(config, device, row_sets, sparse):
    table = Table(device)
    opt = config.init()
    for rows in row_sets:
        table = opt.step(0.05, table, _grads(table, rows, _grad_values(table, rows), sparse, device))
    return table.weight.numpy(), table.bias.numpy()


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # dense Adam with ε = 0 on zero rows: 0/0
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_sparse_step_equals_dense_update_on_touched_rows(device, name):
    rng = np.random.default_rng(1)
    rows = _rows(rng)
    constant = [rows] * 4  # the same rows every step: the lazy rule equals the dense one there
    w_sparse, b_sparse = _steps(OPTIMIZERS[name], device, constant, sparse=True)
    w_dense, b_dense = _steps(OPTIMIZERS[name], device, constant, sparse=False)
    np.testing.assert_allclose(w_sparse[rows], w_dense[rows], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(b_sparse, b_dense, rtol=1e-6)
    others = np.setdiff1d(np.arange(N), rows)
    if name in EXACT:
        np.testing.assert_allclose(w_sparse, w_dense, rtol=2e-5, atol=1e-6)
    else:  # lazy: the rows never in a gradient are bit-identical to the initial table
        np.testing.assert_array_equal(w_sparse[others], Table(device).weight.numpy()[others])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["sgd", "adagrad", "rmsprop"])
def test_exact_optimizers_match_dense_everywhere_with_changing_rows(device, name):
    rng = np.random.default_rng(2)
    row_sets = [_rows(rng, k) for k in (5, 12, 1, 8)]
    w_sparse, _ = _steps(OPTIMIZERS[name], device, row_sets, sparse=True)
    w_dense, _ = _steps(OPTIMIZERS[name], device, row_sets, sparse=False)
    np.testing.assert_allclose(w_sparse, w_dense, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_lazy_adam_first_step_formula(device):
    """SparseAdam's step with ε > 0: θ − lr·√(1−β2)/(1−β1) · m/(√v + ε) from zero moments."""
    rng = np.random.default_rng(3)
    rows = _rows(rng)
    table = Table(device)
    before = table.weight.numpy().astype(np.float64)
    values = _grad_values(table, rows)
    opt = AdamConfig(epsilon=1e-3).init()
    table = opt.step(0.1, table, _grads(table, rows, values, True, device, bias=False))
    g = values.astype(np.float64)
    m, v = 0.1 * g, 0.001 * g * g
    expect = before[rows] - 0.1 * np.sqrt(0.001) / 0.1 * m / (np.sqrt(v) + 1e-3)
    np.testing.assert_allclose(table.weight.numpy()[rows], expect, rtol=1e-5)
    state = opt.state_of(table.weight)
    assert state["steps"] == 1 and state["momentum.moment_1"].shape == (N, D)
    others = np.setdiff1d(np.arange(N), rows)
    assert np.all(state["momentum.moment_1"][others] == 0) and np.all(state["momentum.moment_2"][others] == 0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["mean", "sum"])
def test_lazy_adam_matches_torch_sparse_adam(device, mode):
    torch = pytest.importorskip("torch")
    ember.seed(4)
    bag = nn.EmbeddingBagConfig(N, D, mode=mode).init(device)
    ref = torch.nn.EmbeddingBag(N, D, mode=mode, sparse=True)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(bag.weight.numpy()))
    opt = AdamConfig(beta_1=0.8, beta_2=0.99, epsilon=1e-6).init()
    ref_opt = torch.optim.SparseAdam(ref.parameters(), lr=0.05, betas=(0.8, 0.99), eps=1e-6)
    rng = np.random.default_rng(5)
    target = rng.standard_normal((4, D)).astype(np.float32)
    for _ in range(6):
        ids = rng.integers(0, N // 2, 14).astype(np.int64)  # overlapping, repeated rows
        offsets = np.array([0, 3, 3, 9], np.int64)
        out = bag(ember.tensor(ids, device=device), ember.tensor(offsets, device=device))
        loss = ((out - ember.tensor(target, device=device)) ** 2).sum()
        bag = opt.step(0.05, bag, GradientsParams.from_grads(loss.backward(), bag))
        ref_opt.zero_grad()
        ref_out = ref(torch.from_numpy(ids), torch.from_numpy(offsets))
        ((ref_out - torch.from_numpy(target)) ** 2).sum().backward()
        ref_opt.step()
        np.testing.assert_allclose(bag.weight.numpy(), ref.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    state = ref_opt.state[ref.weight]
    mine = opt.state_of(bag.weight)
    assert mine["steps"] == int(state["step"])
    np.testing.assert_allclose(mine["momentum.moment_2"], state["exp_avg_sq"].numpy(), rtol=1e-4, atol=1e-9)


@pytest.mark.parametrize("device", DEVICES)
def test_accumulation_of_sparse_gradients(device):
    ember.seed(6)
    bag = nn.EmbeddingBagConfig(N, D, mode="sum").init(device)
    acc = GradientsAccumulator()
    batches = [np.array([1, 5, 5, 9], np.int64), np.array([9, 2, 30], np.int64)]
    dense_sum = np.zeros((N, D), np.float32)
    for ids in batches:
        out = bag(ember.tensor(ids, device=device), ember.tensor([0, 2], device=device))
        grads = GradientsParams.from_grads((out * out).sum().backward(), bag)
        g = grads.get(bag.weight)
        assert isinstance(g, ember.RowSparse)
        dense_sum += g.to_dense().numpy()
        acc.accumulate(bag, grads)
    total = acc.grads().get(bag.weight)
    assert isinstance(total, ember.RowSparse) and total.indices.tolist() == [1, 2, 5, 9, 30]
    np.testing.assert_allclose(total.to_dense().numpy(), dense_sum, rtol=1e-6)
    # a dense gradient of the same table makes the sum dense
    acc.accumulate(bag, _single(bag.weight, total))
    dense = ember.ones(N, D, device=device)
    acc.accumulate(bag, _single(bag.weight, dense))
    mixed = acc.grads().get(bag.weight)
    assert isinstance(mixed, ember.Tensor)
    np.testing.assert_allclose(mixed.numpy(), dense_sum + 1, rtol=1e-6)


def _single(param, grad):
    g = GradientsParams()
    g.register(param.id, grad)
    return g


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "clip",
    [
        GradientClippingConfig.Value(0.4),
        GradientClippingConfig.Norm(1.5),
        GradientClippingConfig.GlobalNorm(2.0),
    ],
    ids=["value", "norm", "global"],
)
def test_clipping_of_sparse_gradients_equals_dense(device, clip):
    rng = np.random.default_rng(7)
    rows = _rows(rng)
    results = []
    for sparse in (True, False):
        table = Table(device)
        opt = SgdConfig(gradient_clipping=clip).init()
        table = opt.step(0.1, table, _grads(table, rows, _grad_values(table, rows), sparse, device))
        results.append((table.weight.numpy(), table.bias.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6, atol=1e-7)
    table = Table(device)
    sp = _grads(table, rows, _grad_values(table, rows), True, device).get(table.weight)
    clipped = clip.init().clip_gradient(sp)
    assert isinstance(clipped, ember.RowSparse)
    np.testing.assert_allclose(
        clipped.to_dense().numpy(), clip.init().clip_gradient(sp.to_dense()).numpy(), rtol=1e-6
    )
    assert sp.norm() == pytest.approx(float(np.linalg.norm(sp.to_dense().numpy())), rel=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["adam", "sgd_momentum_decay", "adamw"])
def test_optimizer_record_round_trip_of_lazy_state(device, name, tmp_path):
    rng = np.random.default_rng(8)
    row_sets = [_rows(rng) for _ in range(5)]
    table, opt = Table(device), OPTIMIZERS[name].init()
    for rows in row_sets[:3]:
        table = opt.step(0.05, table, _grads(table, rows, _grad_values(table, rows), True, device))
    path = opt.save(tmp_path / "optim")
    resumed_table = Table(device)
    resumed_table.load_record(table.into_record())
    resumed = OPTIMIZERS[name].init().load(path)
    for rows in row_sets[3:]:
        table = opt.step(0.05, table, _grads(table, rows, _grad_values(table, rows), True, device))
        resumed_table = resumed.step(
            0.05, resumed_table, _grads(resumed_table, rows, _grad_values(resumed_table, rows), True, device)
        )
    np.testing.assert_array_equal(resumed_table.weight.numpy(), table.weight.numpy())
    if name != "sgd_momentum_decay":  # SGD keeps no step counter (Burn's record layout)
        assert resumed.state_of(table.weight)["steps"] == 5


def test_cpu_step_is_in_place_and_validates_rows():
    table, opt = Table("cpu"), AdamConfig().init()
    rows = np.array([3, 17], np.int64)
    table = opt.step(0.1, table, _grads(table, rows, _grad_values(table, rows), True, "cpu"))
    array = table.weight.value._data
    table = opt.step(0.1, table, _grads(table, rows, _grad_values(table, rows), True, "cpu"))
    assert table.weight.value._data is array  # the table is updated in place, not copied
    backend = table.weight.device.backend
    m, v = (np.zeros((N, D), np.float32) for _ in range(2))
    values = np.ones((2, D), np.float32)
    with pytest.raises(IndexError, match=rf"\[0, {N}\)"):
        backend.sparse_adam_update(array, np.array([3, N], np.int64), values, AdamState(m, v), AdamArgs(0.1))
    with pytest.raises(ValueError, match="strictly increasing"):
        backend.sparse_adam_update(array, np.array([5, 3], np.int64), values, AdamState(m, v), AdamArgs(0.1))
    with pytest.raises(ValueError, match="values must have shape"):
        backend.sparse_sgd_update(array, np.array([3], np.int64), values, SgdState(), SgdArgs(0.1))


@pytest.mark.parametrize(
    "config",
    [AdamConfig(), AdamWConfig(amsgrad=True), SgdConfig(momentum=MomentumConfig())],
    ids=["adam", "adamw_amsgrad", "sgd_momentum"],
)
def test_cpu_train_step_allocates_what_the_batch_touches_not_the_table(config):
    """Forward, backward and optimizer step on a 100,000 x 16 table (6.4 MB) touching ~1,000
    rows: no [n, d] temporary anywhere on the path (NumPy reports its allocations to tracemalloc)."""
    import tracemalloc

    n, d = 100_000, 16
    ember.seed(10)
    bag = nn.EmbeddingBagConfig(n, d).init("cpu")
    opt = config.init()
    ids = ember.tensor(np.arange(0, n, 97), device="cpu")
    offsets = ember.tensor([0, 100, 500], device="cpu")

    def step():
        loss = bag(ids, offsets).square().sum()
        opt.step(1e-3, bag, GradientsParams.from_grads(loss.backward(), bag))

    step()  # state allocation (dense, once), kernel compilation
    tracemalloc.start()
    try:
        step()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * d * 4 // 10, f"peak {peak} bytes for a {n * d * 4}-byte table"


@pytest.mark.parametrize("device", DEVICES)
def test_row_sparse_api(device):
    rows = ember.tensor([7, 2, 7, 0], device=device)
    values = ember.tensor(np.arange(12, dtype=np.float32).reshape(4, 3), device=device)
    sp = ember.RowSparse(rows, values, (10, 3))
    assert sp.indices.tolist() == [0, 2, 7] and sp.nnz == 3 and sp.shape == (10, 3)
    dense = np.zeros((10, 3), np.float32)
    np.add.at(dense, [7, 2, 7, 0], np.arange(12, dtype=np.float32).reshape(4, 3))
    np.testing.assert_array_equal(sp.to_dense().numpy(), dense)
    other = ember.RowSparse(ember.tensor([2, 9], device=device), ember.ones(2, 3, device=device), (10, 3))
    both = sp + other
    assert isinstance(both, ember.RowSparse) and both.indices.tolist() == [0, 2, 7, 9]
    np.testing.assert_array_equal(both.to_dense().numpy(), dense + other.to_dense().numpy())
    full = ember.ones(10, 3, device=device)
    for mixed in (sp + full, full + sp):
        assert isinstance(mixed, ember.Tensor)
        np.testing.assert_array_equal(mixed.numpy(), dense + 1)
    np.testing.assert_array_equal((2 * sp).to_dense().numpy(), 2 * dense)
    np.testing.assert_array_equal((-sp / 2).to_dense().numpy(), -dense / 2)
    assert sp.double().dtype is ember.float64 and bool(sp.isfinite().all())
    assert "nnz=3" in repr(sp)
    moved = GradientsParams()
    moved.register(1, sp)
    target = "cpu" if device == "reference" else "reference"
    moved_grad = moved.to(target).get(1)
    assert isinstance(moved_grad, ember.RowSparse) and str(moved_grad.device) == target
    np.testing.assert_array_equal(moved_grad.to_dense().numpy(), dense)
    with pytest.raises(IndexError):
        ember.RowSparse(ember.tensor([10], device=device), ember.ones(1, 3, device=device), (10, 3))
    with pytest.raises(ValueError, match="do not describe rows"):
        ember.RowSparse(ember.tensor([1], device=device), ember.ones(1, 4, device=device), (10, 3))
    with pytest.raises(ValueError, match="shapes"):
        _ = sp + ember.ones(3, 3, device=device)


def test_mixed_precision_with_sparse_table():
    ember.seed(9)

    class Model(nn.Module):
        def __init__(self):
            self.bag = nn.EmbeddingBagConfig(N, D).init("cpu")

    master = Model()
    before = master.bag.weight.numpy().copy()
    mp = optim.MixedPrecision(
        AdamConfig().init(), master, optim.DynamicLossScalerConfig(init_scale=8.0).init()
    )
    out = mp.model.bag(ember.tensor([1, 4, 4], device="cpu"), ember.tensor([0, 1], device="cpu"))
    master = mp.step(0.01, out.float().square().sum())
    after = master.bag.weight.numpy()
    changed = np.flatnonzero(np.any(after != before, axis=1))
    assert changed.tolist() == [1, 4] and mp.skipped_steps == 0
