import numpy as np
import pytest
from helpers.devices import DEV

import ember
from ember import nn


def test_param_id_prints_as_burn_and_parses_back():
    pid = nn.ParamId(0x0123456789ABCDEF)
    text = str(pid)
    assert len(text) == 13 and text == text.lower()
    assert nn.ParamId.from_str(text) == pid
    assert int(pid) == 0x0123456789ABCDEF == pid.val()
    # Burn's encoding: base32hex (DNSSEC alphabet) of the little-endian bytes
    import base64

    assert (
        text == base64.b32hexencode((0x0123456789ABCDEF).to_bytes(8, "little")).decode().rstrip("=").lower()
    )
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
    assert p.is_require_grad() and p.value.is_require_grad() and p.value._node.is_leaf
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
    assert not p.is_require_grad()
    with pytest.raises(TypeError):
        p.set_require_grad(True)
    with pytest.raises(TypeError):
        nn.Param(ember.tensor([1, 2], device=DEV), require_grad=True)


def test_set_require_grad_and_set_value():
    p = nn.Param.from_tensor(ember.zeros(2, 2, device=DEV))
    pid = p.id
    p.set_require_grad(False)
    assert not p.is_require_grad() and not p.value.is_require_grad()
    p.set_require_grad(True)
    assert p.value.is_require_grad()
    p.set_value(ember.ones(2, 2, device=DEV))
    assert p.id == pid and p.value.is_require_grad()
    np.testing.assert_array_equal(p.numpy(), np.ones((2, 2)))
    with pytest.raises(ValueError, match="shape"):
        p.set_value(ember.ones(3, device=DEV))
    p.value = ember.zeros(2, 2, device=DEV)
    assert float(p.value.sum()) == 0.0


def test_running_state_is_never_trainable():
    r = nn.RunningState(ember.zeros(3, device=DEV))
    assert not r.is_require_grad()
    r.set_require_grad(True)
    assert not r.is_require_grad()
    r.update(ember.ones(3, device=DEV))
    np.testing.assert_array_equal(r.numpy(), np.ones(3))


# ---- a Param behaves as its tensor ----------------------------------------------------------------
def _pair():
    ember.seed(7)
    w = nn.Param.from_tensor(ember.randn(3, 4, device=DEV))
    x = ember.randn(2, 3, device=DEV)
    return w, x


def test_param_works_in_operators_functions_methods_and_indexing():
    w, x = _pair()
    v = w.value.numpy()
    b = nn.Param.from_tensor(ember.randn(4, device=DEV))
    cases = {
        "x @ w": (x @ w, x.numpy() @ v),
        "w.T @ x.T": (w.T @ x.T, v.T @ x.numpy().T),
        "w + b": (w + b, v + b.numpy()),
        "b + w": (b + w, b.numpy() + v),
        "2 - w": (2.0 - w, 2.0 - v),
        "w * 3": (w * 3.0, v * 3.0),
        "w / 2": (w / 2.0, v / 2.0),
        "w ** 2": (w**2, v**2),
        "-w": (-w, -v),
        "abs(w)": (abs(w), np.abs(v)),
        "ndarray + w": (np.ones((3, 4), np.float32) + w, 1.0 + v),
        "x.matmul(w)": (x.matmul(w), x.numpy() @ v),
        "ember.matmul": (ember.matmul(x, w), x.numpy() @ v),
        "ember.relu": (ember.relu(w), np.maximum(v, 0.0)),
        "ember.gelu": (ember.gelu(w), ember.gelu(w.value).numpy()),
        "ember.softmax": (ember.softmax(w, -1), ember.softmax(w.value, -1).numpy()),
        "ember.cat": (ember.cat([w, w.value], 0), np.concatenate([v, v], 0)),
        "ember.where": (ember.where(w.value > 0, w, 0.0), np.where(v > 0, v, 0.0)),
        "x.where": (w.value.where(w.value > 0, w), v),
        "clamp(min=param)": (ember.zeros(3, 4, device=DEV).clamp(min=w), np.maximum(v, 0.0)),
        "w.sum(0)": (w.sum(0), v.sum(0)),
        "w.exp()": (w.exp(), np.exp(v)),
        "w.reshape": (w.reshape(4, 3), v.reshape(4, 3)),
        "w[1]": (w[1], v[1]),
        "w[:, 1:3]": (w[:, 1:3], v[:, 1:3]),
        "w[index]": (w[ember.tensor([2, 0], device=DEV)], v[[2, 0]]),
        "x[:, 0] < w[:2, 0]": (x[:, 0] < w[:2, 0], x.numpy()[:, 0] < v[:2, 0]),
        "w == w.value": (w == w.value, np.ones((3, 4), bool)),
        "w >= 0": (w >= 0.0, v >= 0.0),
        "np.asarray(w)": (np.asarray(w), v),
    }
    for name, (got, want) in cases.items():
        got = got.numpy() if isinstance(got, ember.Tensor) else got
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    assert len(w) == 3 and w.shape == (3, 4) and w.dtype == ember.float32 and w.device == ember.Device(DEV)
    assert w.ndim == 2 and w.numel == 12 and w.is_require_grad() and [list(r.shape) for r in w] == [[4]] * 3
    one = nn.Param.from_tensor(ember.tensor([2.5], device=DEV))
    assert float(one) == 2.5 and bool(one) and one.item() == 2.5
    assert "sum" in dir(w) and "set_value" in dir(w)


def test_gradients_reach_a_param_used_directly_as_through_its_value():
    w, x = _pair()
    b = nn.Param.from_tensor(ember.randn(4, device=DEV))

    def loss(weight, bias):
        return (ember.gelu(x @ weight + bias) * weight.sum(0)).square().mean()

    direct = loss(w, b).backward()
    through_value = loss(w.value, b.value).backward()
    for p in (w, b):
        np.testing.assert_allclose(direct[p].numpy(), through_value[p.value].numpy(), rtol=1e-6)
        assert p in direct and p.value in direct
    frozen = nn.Param(ember.randn(3, 4, device=DEV), require_grad=False)
    assert frozen not in ((x @ frozen).sum() + w.sum()).backward()


def test_a_lora_adapted_param_computes_on_its_effective_value():
    ember.seed(2)
    layer = nn.LinearConfig(3, 4).init(DEV).apply_lora(nn.Lora(2, 4.0))
    w = layer.weight
    adapter = w.adapter()
    adapter.b.set_value(ember.randn(2, 4, device=DEV))  # a non-zero delta
    x = ember.randn(5, 3, device=DEV)
    np.testing.assert_allclose((x @ w).numpy(), (x @ w.val()).numpy(), rtol=1e-6)
    assert not np.allclose((x @ w).numpy(), (x @ w.value).numpy())
    grads = (x @ w).square().sum().backward()
    assert adapter.a in grads and adapter.b in grads and grads.get(w.value) is None


def test_param_item_assignment_and_in_place_arithmetic():
    frozen = nn.Param(ember.zeros(3, device=DEV), require_grad=False)
    frozen[1] = 5.0
    np.testing.assert_array_equal(frozen.numpy(), [0.0, 5.0, 0.0])
    trainable = nn.Param.from_tensor(ember.zeros(3, device=DEV))
    with pytest.raises(RuntimeError, match="set_value"):
        trainable[0] = 1.0
    with pytest.raises(TypeError, match="set_value"):
        trainable += 1.0
    assert isinstance(trainable, nn.Param)


def test_params_hash_by_identity_and_report_unknown_attributes():
    a = nn.Param.from_tensor(ember.zeros(2, device=DEV))
    b = nn.Param(a.value.detach(), id=a.id)
    assert len({a, b}) == 2 and {a: 1}[a] == 1
    with pytest.raises(AttributeError, match="'Param' object has no attribute 'no_such_thing'"):
        a.no_such_thing  # noqa: B018
    assert a.is_require_grad() is True  # Param's own flag, not Tensor.require_grad()


def test_any_object_with_the_tensor_hook_is_accepted_by_ops():
    class Wrapped:
        def __init__(self, t):
            self.t = t

        def __ember_tensor__(self):
            return self.t

    class Broken:
        def __ember_tensor__(self):
            return [1.0]

    t = ember.tensor([-1.0, 2.0], device=DEV)
    np.testing.assert_array_equal(ember.relu(Wrapped(t)).numpy(), [0.0, 2.0])
    np.testing.assert_array_equal((t + Wrapped(t)).numpy(), [-2.0, 4.0])
    with pytest.raises(TypeError, match=r"Broken.__ember_tensor__\(\) must return an ember Tensor, got list"):
        t + Broken()
