"""float16 through the fused ops on every backend: results close to the float32 computation
(the fused kernels compute half inputs with float32 accumulation), gradients in float16."""
import numpy as np
import pytest

import ember

OPS = {
    "softmax": lambda x: ember.softmax(x),
    "log_softmax": lambda x: ember.log_softmax(x),
    "layer_norm": lambda x: ember.layer_norm(x),
    "rms_norm": lambda x: ember.rms_norm(x),
    "gelu": lambda x: ember.gelu(x),
    "gelu_tanh": lambda x: ember.gelu(x, approximate="tanh"),
    "cross_entropy": lambda x: ember.cross_entropy_per_sample(x, ember.tensor([0, 3, 7, 1, 2, 5], device=x.device)),
    "embedding": lambda x: ember.embedding(x, ember.tensor([[1, 2], [5, 1]], device=x.device)),
    "attention": lambda x: ember.attention(*(x.reshape(1, 2, 3, 8),) * 3, quiet=True),
}


@pytest.mark.parametrize("op", list(OPS))
def test_half_matches_single_and_backprops(device, op):
    x32 = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)
    up = np.random.default_rng(1).standard_normal(OPS[op](ember.tensor(x32)).shape).astype(np.float32)
    outs, grads = {}, {}
    for dtype in (ember.float32, ember.float16):
        x = ember.tensor(x32, dtype=dtype, device=device).require_grad()
        y = OPS[op](x)
        assert y.dtype is dtype
        g = (y.float() * ember.tensor(up, device=device)).sum().backward().get(x)
        assert g.dtype is dtype
        outs[dtype], grads[dtype] = y.float().numpy(), g.float().numpy()
    np.testing.assert_allclose(outs[ember.float16], outs[ember.float32], rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(grads[ember.float16], grads[ember.float32], rtol=5e-2, atol=5e-2)


def test_half_dropout_keeps_the_float32_mask(device):
    x = ember.ones(64, 64, device=device)
    ember.seed(3)
    m32 = ember.dropout(x, 0.3).numpy() != 0
    ember.seed(3)
    m16 = ember.dropout(x.half(), 0.3).numpy() != 0
    np.testing.assert_array_equal(m16, m32)
