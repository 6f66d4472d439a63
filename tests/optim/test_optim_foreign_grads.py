"""Gradients of another model are an error, not a silent no-op (issue #30 item 5); the
legitimate ways of stepping with few or no gradients keep working."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.optim import AdamConfig, GradientsParams, SgdConfig


class Pair(nn.Module):
    """Two linear layers; a loss may use one of them only."""

    def __init__(self, device):
        self.first = nn.LinearConfig(3, 2).init(device=device)
        self.second = nn.LinearConfig(3, 2).init(device=device)


def _linear(seed=0):
    ember.seed(seed)
    return nn.LinearConfig(3, 2).init(device="reference")


def _x():
    return ember.tensor(np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32), device="reference")


def _loss(model, x):
    return (model(x) ** 2).sum()


def _values(model):
    return {path: p.numpy().copy() for path, p in model.named_parameters()}


def _assert_unchanged(model, before):
    for path, p in model.named_parameters():
        np.testing.assert_array_equal(p.numpy(), before[path], err_msg=path)


# ---- the mistakes ----------------------------------------------------------------------------


def test_step_with_gradients_of_another_model_raises():
    a, b = _linear(0), _linear(0)  # same values, other ParamIds
    grads_b = GradientsParams.from_grads(_loss(b, _x()).backward(), b)
    before = _values(a)
    with pytest.raises(
        ValueError,
        match=r"ModuleOptimizer.step: `grads` holds 2 gradients but none of them belongs to a "
        r"parameter of the Linear being stepped \(2 trainable of 2 parameters\).*another model.*"
        r"GradientsParams.from_grads\(loss.backward\(\), model\)",
    ):
        AdamConfig().init().step(1e-2, a, grads_b)
    _assert_unchanged(a, before)
    assert len(grads_b) == 2  # nothing was consumed


def test_step_counts_frozen_parameters_in_the_message():
    a, b = _linear(0), _linear(1)
    a.bias.set_require_grad(False)
    grads_b = GradientsParams.from_grads(_loss(b, _x()).backward(), b)
    with pytest.raises(ValueError, match=r"\(1 trainable of 2 parameters\)"):
        SgdConfig().init().step(0.1, a, grads_b)


def test_from_grads_of_another_models_backward_raises():
    a, b = _linear(0), _linear(0)
    grads = _loss(b, _x()).backward()
    with pytest.raises(
        ValueError,
        match=r"GradientsParams.from_grads: `grads` holds 2 gradients but none of them belongs to a "
        r"trainable parameter of the Linear given \(2 trainable parameters\).*another model",
    ):
        GradientsParams.from_grads(grads, a)
    assert len(grads) == 2  # still there for the right model
    assert len(GradientsParams.from_grads(grads, b)) == 2


def test_from_grads_of_a_copy_raises_and_names_the_copy():
    model = _linear(0)
    copy = model.clone()  # same ParamIds, but other tensors: the backward of one is not the other's
    grads = _loss(model, _x()).backward()
    with pytest.raises(ValueError, match=r"clone\(\), fork\(\) and to\(\)"):
        GradientsParams.from_grads(grads, copy)


def test_from_grads_twice_says_the_gradients_were_taken():
    model = _linear(0)
    x = _x().require_grad()  # a leaf that is not a parameter keeps a gradient in the container
    grads = _loss(model, x).backward()
    assert len(GradientsParams.from_grads(grads, model)) == 2
    with pytest.raises(ValueError, match="holds 1 gradients.*already taken out by an earlier from_grads"):
        GradientsParams.from_grads(grads, model)


# ---- what keeps working ----------------------------------------------------------------------


def test_empty_container_is_a_step_that_updates_nothing():
    model = _linear(0)
    before = _values(model)
    assert AdamConfig().init().step(1e-2, model, GradientsParams()) is model
    _assert_unchanged(model, before)


def test_gradients_of_frozen_parameters_only_update_nothing():
    model = _linear(0)
    grads = GradientsParams.from_grads(_loss(model, _x()).backward(), model)
    model.freeze()  # frozen after the backward: its gradients still belong to it
    before = _values(model)
    SgdConfig().init().step(0.1, model, grads)
    _assert_unchanged(model, before)


def test_parameters_the_loss_did_not_use_are_skipped():
    model = Pair("reference")
    grads = GradientsParams.from_grads(_loss(model.first, _x()).backward(), model)
    assert set(grads.ids()) == {model.first.weight.id, model.first.bias.id}
    before = _values(model)
    SgdConfig().init().step(0.1, model, grads)
    after = _values(model)
    assert not np.array_equal(after["first.weight"], before["first.weight"])
    np.testing.assert_array_equal(after["second.weight"], before["second.weight"])


def test_from_module_allows_a_module_the_loss_did_not_use():
    model = Pair("reference")
    grads = _loss(model.first, _x()).backward()
    assert GradientsParams.from_module(grads, model.second).is_empty()
    assert len(GradientsParams.from_module(grads, model.first)) == 2


def test_a_frozen_module_gives_an_empty_container():
    model = _linear(0).freeze()
    x = _x().require_grad()
    grads = _loss(model, x).backward()
    assert len(grads) == 1 and GradientsParams.from_grads(grads, model).is_empty()


def test_a_clone_steps_with_the_originals_gradients():
    # Same ParamIds: what fork() for another device and MixedPrecision's master copy rely on.
    model = _linear(0)
    master = model.clone()
    grads = GradientsParams.from_grads(_loss(model, _x()).backward(), model)
    before = _values(master)
    SgdConfig().init().step(0.1, master, grads)
    assert not np.array_equal(master.weight.numpy(), before["weight"]) and grads.is_empty()


def test_lora_adapters_only():
    model = nn.apply_lora(_linear(0), nn.Lora(2, 4.0))
    grads = GradientsParams.from_grads(_loss(model, _x()).backward(), model)
    trainable = {p.id for _, p in model.named_parameters() if p.is_require_grad()}
    assert set(grads.ids()) <= trainable and len(grads) > 0
    AdamConfig().init().step(1e-2, model, grads)
    assert grads.is_empty()


def test_lbfgs_closure_returning_another_models_gradients_raises():
    from ember.optim import LbfgsConfig

    a, b = _linear(0), _linear(0)
    x = _x()

    def closure(m):  # the mistake: b's loss and gradients, whatever module it is given
        loss = _loss(b, x)
        return loss, GradientsParams.from_grads(loss.backward(), b)

    before = _values(a)
    with pytest.raises(
        ValueError,
        match=r"Lbfgs.step: .* holds 2 gradients but none of them belongs to one of the "
        r"module's 2 trainable parameters",
    ):
        LbfgsConfig().init().step(1.0, a, closure)
    _assert_unchanged(a, before)


def test_accumulating_another_models_gradients_raises():
    from ember.optim import GradientsAccumulator

    a, b = _linear(0), _linear(0)
    acc = GradientsAccumulator()
    grads_b = GradientsParams.from_grads(_loss(b, _x()).backward(), b)
    with pytest.raises(
        ValueError,
        match=r"GradientsAccumulator.accumulate: `grads` holds 2 gradients but none of them belongs to a "
        r"parameter of the Linear given \(2 parameters\)",
    ):
        acc.accumulate(a, grads_b)
    assert acc.num_accumulated == 0 and len(grads_b) == 2
    acc.accumulate(a, GradientsParams())  # an empty pass still counts, as before
    assert acc.num_accumulated == 1 and acc.grads().is_empty()
