import math

import numpy as np
import pytest
from helpers.devices import DEV

import ember
from ember import nn
from ember.nn import init


def test_constant_ones_zeros():
    assert np.all(init.Constant(2.5).init_tensor((2, 3), DEV).numpy() == 2.5)
    assert np.all(init.Ones().init((4,), DEV).numpy() == 1)
    assert np.all(init.Zeros().init_tensor((4,), DEV, "float64").numpy() == 0)


def test_uniform_and_normal_statistics():
    ember.seed(0)
    u = init.Uniform(-2.0, 3.0).init_tensor((20000,), DEV).numpy()
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.05
    n = init.Normal(1.0, 2.0).init_tensor((20000,), DEV).numpy()
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.05


def test_kaiming_uniform_default_bound_is_one_over_sqrt_fan_in():
    ember.seed(0)
    w = nn.LinearConfig(64, 256).init(DEV).weight.numpy()
    bound = 1 / math.sqrt(64)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound * 5


def test_kaiming_normal_and_fan_out_only():
    ember.seed(0)
    w = (
        init.KaimingNormal(gain=2.0, fan_out_only=True)
        .init_tensor((100, 400), DEV, fan_in=100, fan_out=400)
        .numpy()
    )
    assert abs(w.std() - 2.0 / math.sqrt(400)) < 0.01
    w = init.KaimingUniform(gain=1.0).init_tensor((100, 400), DEV, fan_in=100).numpy()
    assert np.abs(w).max() <= math.sqrt(3) / 10


def test_xavier():
    ember.seed(0)
    a = math.sqrt(3.0) * math.sqrt(2.0 / (30 + 50))
    w = init.XavierUniform().init_tensor((30, 50), DEV, fan_in=30, fan_out=50).numpy()
    assert np.abs(w).max() <= a and np.abs(w).max() > 0.9 * a
    w = init.XavierNormal(gain=1.5).init_tensor((300, 500), DEV, fan_in=300, fan_out=500).numpy()
    assert abs(w.std() - 1.5 * math.sqrt(2.0 / 800)) < 0.002


def test_seeding_reproduces_initialisation():
    ember.seed(7)
    a = nn.LinearConfig(8, 8).init(DEV).weight.numpy()
    ember.seed(7)
    b = nn.LinearConfig(8, 8).init(DEV).weight.numpy()
    np.testing.assert_array_equal(a, b)


def test_fan_is_required():
    with pytest.raises(ValueError, match="fan_in"):
        init.KaimingUniform().init((3, 3), DEV)
    with pytest.raises(ValueError, match="fan_out"):
        init.XavierNormal().init((3, 3), DEV, fan_in=3)
    with pytest.raises(TypeError):
        init.Ones().init((3,), DEV, dtype="int64")
    with pytest.raises(ValueError):
        init.Uniform(1.0, 1.0)


def test_initializer_in_config_json_round_trip(tmp_path):
    cfg = nn.LinearConfig(3, 5, initializer=init.XavierNormal(gain=0.5))
    path = cfg.save(tmp_path / "linear.json")
    back = nn.LinearConfig.load(path)
    assert back == cfg and isinstance(back.initializer, init.XavierNormal)
    text = nn.LinearConfig(3, 5).to_json()
    assert '"KaimingUniform"' in text and '"layout": "Row"' in text
