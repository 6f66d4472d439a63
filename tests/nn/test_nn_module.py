import numpy as np
import pytest
from helpers.devices import DEV, cpu_available

import ember
from ember import nn


class Block(nn.Module):
    def __init__(self, d_in=3):
        self.fc = nn.LinearConfig(d_in, 4).init(DEV)
        self.norm = nn.LayerNormConfig(4).init(DEV)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.norm(self.fc(x)))


class Model(nn.Module):
    def __init__(self):
        self.blocks = [Block(3), Block(4)]
        self.heads = {"cls": nn.LinearConfig(4, 2).init(DEV)}
        self.pair = (nn.Param.from_tensor(ember.ones(2, device=DEV)),)
        self.scale = nn.Param.from_tensor(ember.ones(1, device=DEV))
        self._hidden = nn.LinearConfig(5, 5).init(DEV)  # skipped: leading underscore
        self.constant = ember.arange(3, device=DEV)  # a constant, not a parameter
        self.name = "model"

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.heads["cls"](x) * self.scale.val()


def test_paths_follow_attributes_lists_and_dicts():
    m = Model()
    paths = [p for p, _ in m.named_parameters()]
    assert paths == [
        "blocks.0.fc.weight",
        "blocks.0.fc.bias",
        "blocks.0.norm.gamma",
        "blocks.0.norm.beta",
        "blocks.1.fc.weight",
        "blocks.1.fc.bias",
        "blocks.1.norm.gamma",
        "blocks.1.norm.beta",
        "heads.cls.weight",
        "heads.cls.bias",
        "pair.0",
        "scale",
    ]
    assert [p for p, _ in m.named_children()] == ["blocks.0", "blocks.1", "heads.cls"]
    modules = dict(m.named_modules())
    assert "" in modules and "blocks.1.drop" in modules and "_hidden" not in modules
    ids = [pid for _, pid, _ in m.named_params_with_ids()]
    assert len(set(ids)) == len(ids)


def test_num_params_and_trainable_only():
    m = Model()
    total = (12 + 4 + 4 + 4) + (16 + 4 + 4 + 4) + (8 + 2) + 2 + 1
    assert m.num_params() == total
    m.blocks[0].freeze()
    assert m.num_params(trainable_only=True) == total - 24
    assert m.num_params() == total


def test_tied_parameters_are_reported_once():
    m = Model()
    m.heads["tied"] = m.heads["cls"]
    assert sum(1 for p, _ in m.named_parameters() if p.startswith("heads")) == 2


def test_freeze_unfreeze_with_group():
    m = Model()
    m.freeze(lambda path, pid: path.endswith("bias"))
    frozen = [p for p, par in m.named_parameters() if not par.is_require_grad()]
    assert frozen and all(p.endswith("bias") for p in frozen)
    m.freeze()
    assert m.num_params(trainable_only=True) == 0
    m.unfreeze()
    assert all(p.is_require_grad() for p in m.parameters())

    class Group:
        def matches(self, path, param_id):
            return path.startswith("blocks.1")

    m.freeze(Group())
    assert all(not p.is_require_grad() for path, p in m.named_parameters() if path.startswith("blocks.1"))
    assert all(p.is_require_grad() for path, p in m.named_parameters() if not path.startswith("blocks.1"))


def test_frozen_params_get_no_gradient():
    m = Model()
    m.blocks[0].fc.freeze()
    x = ember.randn(2, 3, device=DEV)
    grads = m(x).sum().backward()
    assert grads.get(m.blocks[0].fc.weight.value) is None
    assert grads.get(m.blocks[1].fc.weight.value) is not None


def test_valid_copy_is_inference_mode():
    ember.seed(0)
    m = Model()
    v = m.valid()
    assert m.training and not v.training and all(not mod.training for mod in v.modules())
    assert all(not p.is_require_grad() for p in v.parameters())
    assert [p.id for p in v.parameters()] == [p.id for p in m.parameters()]
    x = ember.randn(4, 3, device=DEV).require_grad()
    y = v(x)
    assert not y.is_require_grad()  # no graph is recorded, even for inputs that require grad
    # dropout is off: two calls agree, and equal the training model's output without dropout
    np.testing.assert_array_equal(v(x).numpy(), y.numpy())
    with ember.no_grad():
        np.testing.assert_allclose(m(x).numpy(), y.numpy(), rtol=1e-6)
    # the copy is independent
    v.scale.set_value(ember.full([1], 5.0, device=DEV))
    assert float(m.scale.value.item()) == 1.0
    # train() restores the flags
    t = v.train()
    assert t.training and all(p.is_require_grad() for p in t.parameters())


def test_dropout_is_active_in_training_mode():
    ember.seed(1)
    m = Model()
    x = ember.randn(64, 3, device=DEV)
    y = m.blocks[0](x)
    assert (y.numpy() == 0).mean() > 0.3


def test_to_dtype_and_device_keep_ids_and_leaves():
    m = Model()
    ids = [p.id for p in m.parameters()]
    m.blocks[0].fc.freeze()
    out = m.to(ember.float64)
    assert out is m
    assert all(p.dtype is ember.float64 for p in m.parameters())
    assert [p.id for p in m.parameters()] == ids
    assert m.blocks[0].fc.weight.value.is_require_grad() is False
    assert all(p.value._node.is_leaf for p in m.parameters() if p.is_require_grad())
    assert m.constant.dtype is ember.int64  # integer constants keep their dtype
    y = m(ember.randn(2, 3, device=DEV, dtype="float64"))
    assert y.dtype is ember.float64
    m.to("reference", dtype="float32")
    assert all(p.dtype is ember.float32 for p in m.parameters())
    with pytest.raises(TypeError):
        m.to(ember.int64)


def test_fork_and_clone_copy_the_data():
    m = Model()
    f = m.fork(DEV)
    c = m.clone()
    for copy in (f, c):
        assert [p.id for p in copy.parameters()] == [p.id for p in m.parameters()]
        assert all(p.is_require_grad() for p in copy.parameters())
        copy.scale.set_value(ember.full([1], 3.0, device=DEV))
        assert float(m.scale.value.item()) == 1.0
    assert f.devices() == [ember.Device(DEV)]


def test_map_parameters():
    m = Model()
    m.map_parameters(lambda path, t: t * 0.0 if path.endswith("bias") else t)
    assert all(float(p.value.abs().sum()) == 0 for path, p in m.named_parameters() if path.endswith("bias"))
    assert all(p.value._node.is_leaf for p in m.parameters())
    with pytest.raises(ValueError, match="shape"):
        m.map_parameters(lambda path, t: t.reshape(-1))


def test_repr_shows_tree_and_counts():
    text = repr(Model())
    assert text.startswith("Model {")
    assert "fc: Linear {d_input: 3, d_output: 4, bias: True, params: 16}" in text
    assert "0: Block {" in text and "params: 24" in text and text.endswith("params: 65\n}")
    assert (
        repr(nn.PositionalEncodingConfig(4).init(DEV))
        == "PositionalEncoding {d_model: 4, max_sequence_size: 5000, max_timescale: 10000, params: 0}"
    )


def test_forward_not_defined():
    class Empty(nn.Module):
        pass

    with pytest.raises(NotImplementedError, match="Empty"):
        Empty()(1)


@pytest.mark.skipif(not cpu_available(), reason="cpu backend not importable yet")
def test_move_to_cpu_backend_and_back():
    m = Model()
    x = ember.randn(2, 3, device=DEV)
    ref = m.valid()(x).numpy()
    m.to("cpu")
    assert m.devices() == [ember.Device("cpu")] and m.constant.device == ember.Device("cpu")
    np.testing.assert_allclose(m.valid()(x.to("cpu")).numpy(), ref, rtol=1e-5, atol=1e-6)


# ---- nothing put on a module is silently ignored --------------------------------------------------
def test_a_tensor_that_requires_grad_is_refused_as_a_module_attribute():
    class Bare(nn.Module):
        def __init__(self, value):
            self.w = value

    with pytest.raises(
        TypeError, match=r"Bare\.w: a tensor that requires grad is not a parameter.*nn\.Param"
    ):
        Bare(ember.randn(3, device=DEV).require_grad())
    m = Bare(nn.Param(ember.randn(3, device=DEV).require_grad()))  # wrapped: a parameter
    assert [p for p, _ in m.named_parameters()] == ["w"] and "w" in m.into_record()
    with pytest.raises(TypeError, match=r"Bare\.ws\.1"):
        m.ws = [ember.ones(2, device=DEV), ember.ones(2, device=DEV).require_grad()]
    with pytest.raises(TypeError, match=r"Bare\.table\.k"):
        m.table = {"k": ember.ones(2, device=DEV).require_grad()}
    m.constant = ember.ones(2, device=DEV)  # no grad: a constant, as before
    m.derived = m.w.val() * 2.0  # an op result (not a leaf) is not a parameter either
    m._private = ember.ones(2, device=DEV).require_grad()  # private names are skipped by design
    m.later = []
    m.later.append(ember.zeros(2, device=DEV).require_grad())  # slips past assignment...
    with pytest.raises(TypeError, match=r"Bare\.later\.0: a tensor that requires grad"):
        m.parameters()  # ...and is caught when the parameters are walked


# ---- habits from other frameworks ---------------------------------------------------------------
class Widget(nn.Module):
    """A user layer with a config beside it gets the same hint as ember's layers."""

    def __init__(self, weight: nn.Param):
        self.weight = weight


class WidgetConfig(ember.Config):
    size: int

    def init(self, device=None, dtype=None):
        return Widget(nn.Param(ember.zeros(self.size, device=device)))


def test_constructing_a_layer_with_sizes_points_to_its_config():
    with pytest.raises(TypeError, match=r"nn\.Linear\(3, 2\): .*use nn\.LinearConfig\(3, 2\)\.init\(\)"):
        nn.Linear(3, 2)
    with pytest.raises(TypeError, match=r"use nn\.EmbeddingConfig\(100, 16\)\.init\(\)"):
        nn.Embedding(100, 16)
    with pytest.raises(TypeError, match=r"use nn\.LayerNormConfig\(8\)\.init\(\)"):
        nn.LayerNorm(8)
    with pytest.raises(TypeError, match=r"use nn\.MultiHeadAttentionConfig\(64, 8\)\.init\(\)"):
        nn.MultiHeadAttention(64, 8)
    # arguments that do not fit the config: its fields are listed instead
    with pytest.raises(TypeError, match=r"use nn\.Conv2dConfig\(channels, kernel_size, .*\)\.init\(\)"):
        nn.Conv2d(3, 8, 3)
    with pytest.raises(TypeError, match=r"^Widget\(4\): .*use WidgetConfig\(4\)\.init\(\)"):
        Widget(4)
    # the constructors still take what they take
    assert nn.Dropout(0.25).prob == 0.25 and nn.LeakyRelu(0.2).negative_slope == 0.2
    lin = nn.Linear(nn.Param(ember.zeros(3, 2, device=DEV)), None)
    assert lin(ember.ones(1, 3, device=DEV)).shape == (1, 2)
    assert Widget(nn.Param(ember.zeros(2, device=DEV))).num_params() == 2


def test_every_layer_with_a_config_gets_the_hint():
    layers = [getattr(nn, name) for name in nn.__all__ if f"{name}Config" in nn.__all__]
    assert len(layers) >= 15
    for layer in layers:
        with pytest.raises(TypeError, match=rf"{layer.__name__}Config\("):
            layer(3, 2, 1, 0, 5, 7, 9, 11, 13, 15)  # binds to no constructor


# ---- gradient lookups by key --------------------------------------------------------------------
def test_gradients_and_gradients_params_lookups():
    from ember.optim import GradientsParams

    m = Model()
    m.blocks[0].fc.freeze()
    x = ember.randn(2, 3, device=DEV)
    w = m.blocks[1].fc.weight
    hidden = w * 2.0
    grads = (m(x).sum() + hidden.sum()).backward()
    assert w.value in grads and w in grads and grads[w] is grads.get(w.value)
    with pytest.raises(KeyError, match="does not require grad"):
        grads[m.blocks[0].fc.weight]
    with pytest.raises(KeyError, match="result of op 'mul'"):
        grads[hidden]
    unused = ember.zeros(2, device=DEV).require_grad()
    with pytest.raises(KeyError, match="does not depend on it"):
        grads[unused]
    with pytest.raises(TypeError, match="GradientsParams.from_grads"):
        grads[w.id]

    gp = GradientsParams.from_grads(grads, m)
    assert w in gp and w.id in gp and int(w.id) in gp
    assert gp[w] is gp[w.id] is gp[int(w.id)] is gp.get(w)
    assert m.blocks[0].fc.weight not in gp
    with pytest.raises(KeyError, match="frozen"):
        gp[m.blocks[0].fc.weight]
    with pytest.raises(KeyError, match=str(nn.ParamId(5))):
        gp[nn.ParamId(5)]
    with pytest.raises(TypeError, match="expected a ParamId"):
        gp["weight"]
