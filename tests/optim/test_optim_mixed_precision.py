"""Mixed precision: float16 compute copy, float32 master weights and optimizer state, dynamic
loss scaling that skips overflowing steps and counts them."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.optim import AdamConfig
from ember.optim.mixed_precision import DynamicLossScalerConfig, MixedPrecision

DEVICES = ["reference", "cpu"]


class MLP(nn.Module):
    def __init__(self, device):
        self.inner = nn.LinearConfig(8, 16).init(device)
        self.outer = nn.LinearConfig(16, 3).init(device)

    def forward(self, x):
        return self.outer(ember.gelu(self.inner(x)))


def _data(device):
    rng = np.random.default_rng(0)
    return ember.tensor(rng.standard_normal((32, 8)), device=device), ember.tensor(
        rng.integers(0, 3, 32), device=device
    )


@pytest.mark.parametrize("device", DEVICES)
def test_dtypes_of_compute_copy_master_and_optimizer_state(device):
    ember.seed(0)
    master = MLP(device)
    optim = AdamConfig().init()
    mp = MixedPrecision(optim, master, DynamicLossScalerConfig(init_scale=2.0**8).init())
    x, y = _data(device)
    master = mp.step(1e-3, nn.CrossEntropyLossConfig().init()(mp.model(x.half()), y))
    assert all(p.dtype is ember.float16 for _, p in mp.model.named_parameters())
    assert all(p.dtype is ember.float32 for _, p in master.named_parameters())
    for _, p in master.named_parameters():
        state = optim.state_of(p.id)
        arrays = [v for v in state.values() if isinstance(v, np.ndarray)]
        assert arrays and all(a.dtype == np.float32 for a in arrays)
    # the compute copy holds the updated master values, rounded to float16
    for (_, p16), (_, p32) in zip(mp.model.named_parameters(), master.named_parameters()):
        np.testing.assert_array_equal(p16.val().numpy(), p32.val().numpy().astype(np.float16))


@pytest.mark.parametrize("device", DEVICES)
def test_overflowing_steps_are_skipped_counted_and_leave_the_master_alone(device):
    ember.seed(0)
    master = MLP(device)
    before = {path: p.val().numpy().copy() for path, p in master.named_parameters()}
    mp = MixedPrecision(AdamConfig().init(), master, DynamicLossScalerConfig(init_scale=2.0**40).init())
    x, y = _data(device)
    loss_fn = nn.CrossEntropyLossConfig().init()
    master = mp.step(1e-2, loss_fn(mp.model(x.half()), y))
    assert mp.skipped_steps == 1 and mp.scaler.scale == 2.0**39
    for path, p in master.named_parameters():
        np.testing.assert_array_equal(p.val().numpy(), before[path])
    for _ in range(40):
        master = mp.step(1e-2, loss_fn(mp.model(x.half()), y))
    assert 1 < mp.skipped_steps < 41 and mp.scaler.scale < 2.0**40
    assert any(not np.array_equal(p.val().numpy(), before[path]) for path, p in master.named_parameters())


@pytest.mark.parametrize("device", DEVICES)
def test_mixed_precision_tracks_float32_training(device):
    x, y = _data(device)
    loss_fn = nn.CrossEntropyLossConfig().init()
    ember.seed(0)
    ref = MLP(device)
    mp_master = ref.clone()
    optim = AdamConfig().init()
    for _ in range(30):
        loss32 = loss_fn(ref(x), y)
        ref = optim.step(1e-2, ref, ember.optim.GradientsParams.from_grads(loss32.backward(), ref))
    mp = MixedPrecision(AdamConfig().init(), mp_master)  # default scale 2^16: the first steps may overflow
    first = None
    for _ in range(30):
        loss16 = loss_fn(mp.model(x.half()), y)
        first = first if first is not None else loss16.item()
        mp.step(1e-2, loss16)
    assert mp.skipped_steps <= 3
    assert loss16.item() < 0.8 * first
    assert abs(loss16.item() - loss32.item()) < 0.1


def test_scale_grows_after_the_growth_interval_and_configs_are_validated():
    scaler = DynamicLossScalerConfig(init_scale=8.0, growth_interval=2).init()
    scaler.update(True)
    assert scaler.scale == 8.0
    scaler.update(True)
    assert scaler.scale == 16.0
    scaler.update(False)
    assert scaler.scale == 8.0 and scaler.skipped_steps == 1
    restored = DynamicLossScalerConfig().init()
    restored.load_state(scaler.state())
    assert restored.state() == scaler.state()
    for bad in (
        dict(init_scale=0.0),
        dict(growth_factor=1.0),
        dict(backoff_factor=1.5),
        dict(growth_interval=0),
    ):
        with pytest.raises(ValueError, match="DynamicLossScalerConfig"):
            DynamicLossScalerConfig(**bad).init()
    with pytest.raises(TypeError, match="float32"):
        MixedPrecision(AdamConfig().init(), MLP("cpu").to(ember.float64))
