import numpy as np
import pytest

import ember
from ember import nn
from nn_gradcheck import DEV


def test_param_id_prints_as_burn_and_parses_back():
    pid = nn.ParamId(0x0123456789ABCDEF)
    text = str(pid)
    assert len(text) == 13 and text == text.lower()
    assert nn.ParamId.from_str(text) == pid
    assert int(pid) == 0x0123456789ABCDEF == pid.val()
    # Burn's encoding: base32hex (DNSSEC alphabet) of the little-endian bytes
    import base64
    assert text == base64.b32hexencode((0x0123456789ABCDEF).to_bytes(8, "little")).decode().rstrip("=").lower()
    assert nn.ParamId(0) != nn.ParamId(1)
    assert hash(nn.ParamId(5)) == hash(nn.ParamId(5))


def test_param_ids_are_random_and_validated():
    ids = {int(nn.ParamId()) for _ in range(200)}
    assert len(ids) == 200
    with pytest.raises(ValueError):
        nn.ParamId(-1)
    with pytest.raises(ValueError):
        nn.ParamId(1 << 64)
    with pytest.raises(ValueError):
        nn.ParamId.from_str("not base32!")


def test_param_float_requires_grad_and_is_a_leaf():
    t = ember.randn(3, 2, device=DEV)
    p = nn.Param.from_tensor(t)
    assert p.require_grad and p.value.requires_grad and p.value._node.is_leaf
    assert p.val() is p.value and p.base() is p.value
    grads = (p.val() * 2.0).sum().backward()
    np.testing.assert_allclose(grads.get(p.value).numpy(), np.full((3, 2), 2.0))


def test_param_keeps_a_given_leaf_and_detaches_op_results():
    leaf = ember.randn(2, device=DEV).require_grad()
    p = nn.Param(leaf)
    assert p.value is leaf
    derived = leaf * 3.0
    q = nn.Param(derived)
    assert q.value._node.is_leaf and q.value is not derived


def test_int_params_never_require_grad():
    p = nn.Param(ember.tensor([1, 2, 3], device=DEV))
    assert not p.require_grad
    with pytest.raises(TypeError):
        p.set_require_grad(True)
    with pytest.raises(TypeError):
        nn.Param(ember.tensor([1, 2], device=DEV), require_grad=True)


def test_set_require_grad_and_set_value():
    p = nn.Param.from_tensor(ember.zeros(2, 2, device=DEV))
    pid = p.id
    p.set_require_grad(False)
    assert not p.require_grad and not p.value.requires_grad
    p.set_require_grad(True)
    assert p.value.requires_grad
    p.set_value(ember.ones(2, 2, device=DEV))
    assert p.id == pid and p.value.requires_grad
    np.testing.assert_array_equal(p.numpy(), np.ones((2, 2)))
    with pytest.raises(ValueError, match="shape"):
        p.set_value(ember.ones(3, device=DEV))
    p.value = ember.zeros(2, 2, device=DEV)
    assert float(p.value.sum()) == 0.0


def test_running_state_is_never_trainable():
    r = nn.RunningState(ember.zeros(3, device=DEV))
    assert not r.require_grad
    r.set_require_grad(True)
    assert not r.require_grad
    r.update(ember.ones(3, device=DEV))
    np.testing.assert_array_equal(r.numpy(), np.ones(3))
