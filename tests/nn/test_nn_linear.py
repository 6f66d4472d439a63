import numpy as np
import pytest
from helpers.devices import DEV, cpu_available
from helpers.gradcheck import check_grads, params64, weighted_sum

import ember
from ember import nn


def test_forward_matches_numpy_with_leading_dims():
    ember.seed(0)
    lin = nn.LinearConfig(4, 3).init(DEV)
    x = np.random.default_rng(0).standard_normal((2, 5, 4)).astype(np.float32)
    y = lin(ember.tensor(x, device=DEV))
    assert y.shape == (2, 5, 3)
    np.testing.assert_allclose(y.numpy(), x @ lin.weight.numpy() + lin.bias.numpy(), rtol=1e-5, atol=1e-6)
    y1 = lin(ember.tensor(x[0, 0], device=DEV))
    assert y1.shape == (3,)


def test_no_bias():
    lin = nn.LinearConfig(4, 3, bias=False).init(DEV)
    assert lin.bias is None and lin.num_params() == 12
    x = ember.randn(2, 4, device=DEV)
    np.testing.assert_allclose(lin(x).numpy(), x.numpy() @ lin.weight.numpy(), rtol=1e-6)


def test_gradients_central_differences():
    ember.seed(1)
    lin = nn.LinearConfig(3, 2).init(DEV)
    params = params64(lin)
    x = ember.randn(2, 4, 3, device=DEV, dtype="float64").require_grad()
    check_grads(lambda: weighted_sum(lin(x)), params + [x])


def test_shape_errors_name_the_layer():
    lin = nn.LinearConfig(4, 3).init(DEV)
    with pytest.raises(ValueError, match=r"Linear: input of shape \[2, 5\] does not end with d_input=4"):
        lin(ember.randn(2, 5, device=DEV))
    with pytest.raises(ValueError):
        nn.LinearConfig(0, 3).init(DEV)


def test_layout_col_saves_transposed_weight():
    lin = nn.LinearConfig(4, 3, layout=nn.LinearLayout.Col).init(DEV)
    assert lin.weight.shape == (4, 3)
    rec = lin.into_record()
    np.testing.assert_array_equal(rec["weight"].array, lin.weight.numpy().T)
    other = nn.LinearConfig(4, 3, layout=nn.LinearLayout.Col).init(DEV)
    other.load_record(rec)
    np.testing.assert_array_equal(other.weight.numpy(), lin.weight.numpy())


def test_matches_torch_linear():
    torch = pytest.importorskip("torch")
    lin = nn.LinearConfig(5, 3).init(DEV)
    ref = torch.nn.Linear(5, 3)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(lin.weight.numpy().T.copy()))
        ref.bias.copy_(torch.from_numpy(lin.bias.numpy()))
    x = np.random.default_rng(2).standard_normal((7, 5)).astype(np.float32)
    xt = torch.from_numpy(x).requires_grad_()
    out = ref(xt)
    out.pow(2).sum().backward()
    xe = ember.tensor(x, device=DEV).require_grad()
    ye = lin(xe)
    grads = (ye * ye).sum().backward()
    np.testing.assert_allclose(ye.numpy(), out.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        grads.get(lin.weight.value).numpy(), ref.weight.grad.numpy().T, rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(grads.get(lin.bias.value).numpy(), ref.bias.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads.get(xe).numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(not cpu_available(), reason="cpu backend not importable yet")
def test_cpu_backend_agrees_with_reference():
    ember.seed(3)
    lin = nn.LinearConfig(6, 4).init(DEV)
    x = ember.randn(3, 6, device=DEV)
    ref = lin(x).numpy()
    lin.to("cpu")
    np.testing.assert_allclose(lin(x.to("cpu")).numpy(), ref, rtol=1e-5, atol=1e-6)
