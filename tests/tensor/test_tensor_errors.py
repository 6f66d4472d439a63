"""Invalid input raises clear errors naming the op and what was wrong, on every backend:
shape / dtype / device mismatches, out-of-range indices (IndexError before any kernel runs),
out-of-range dims (IndexError)."""

from __future__ import annotations

import numpy as np
import pytest

import ember


@pytest.fixture
def f(device):
    def make(*shape, dtype=ember.float32):
        return ember.ones(*shape, dtype=dtype, device=device)

    return make


def _other(device: str) -> str:
    return "reference" if device != "reference" else "cpu"


# ---- shape mismatches ---------------------------------------------------------------------------
def test_binary_shape_mismatch(f):
    with pytest.raises(ValueError, match=r"add.*\[2, 3\].*\[4\]"):
        f(2, 3) + f(4)
    with pytest.raises(ValueError, match=r"mul.*\[3, 2\].*\[3, 3\]"):
        f(3, 2) * f(3, 3)
    with pytest.raises(ValueError, match="where"):
        ember.where(f(2, dtype=ember.bool_), f(3), f(2))


def test_matmul_shape_errors(f):
    with pytest.raises(ValueError, match=r"matmul.*\[2, 3\].*\[4, 5\]"):
        f(2, 3) @ f(4, 5)
    with pytest.raises(ValueError, match="matmul.*batch"):
        f(2, 3, 4) @ f(3, 4, 5)
    with pytest.raises(ValueError, match="matmul"):
        f(3) @ ember.ones((), device=f(1).device)
    with pytest.raises(TypeError, match="matmul"):
        f(2, 2, dtype=ember.bool_) @ f(2, 2, dtype=ember.bool_)


def test_movement_shape_errors(f):
    with pytest.raises(ValueError, match=r"reshape.*\[2, 3\].*\[4, 2\]"):
        f(2, 3).reshape(4, 2)
    with pytest.raises(ValueError, match="reshape"):
        f(2, 3).reshape(-1, -1)
    with pytest.raises(ValueError, match="permute"):
        f(2, 3).permute(0)
    with pytest.raises(ValueError, match="permute"):
        f(2, 3).permute(0, 0)
    with pytest.raises(ValueError, match=r"expand.*\[2, 3\].*\[4, 3\]"):
        f(2, 3).expand(4, 3)
    with pytest.raises(ValueError, match="squeeze"):
        f(2, 3).squeeze(0)
    with pytest.raises(ValueError, match=r"cat.*\[2, 3\].*\[2, 4\]"):
        ember.cat([f(2, 3), f(2, 4)], dim=0)
    with pytest.raises(ValueError, match="stack"):
        ember.stack([f(2, 3), f(3, 2)])
    with pytest.raises(ValueError, match="cat"):
        ember.cat([])
    with pytest.raises(ValueError, match="pad"):
        f(2, 3).pad((1,))
    with pytest.raises(ValueError, match="repeat"):
        f(2, 3).repeat(2)
    with pytest.raises(IndexError, match="narrow"):
        f(2, 3).narrow(1, 2, 2)


def test_nn_shape_errors(f, device):
    with pytest.raises(ValueError, match=r"layer_norm.*gamma.*\[4\]"):
        ember.layer_norm(f(2, 4), f(3))
    with pytest.raises(ValueError, match="rms_norm.*gamma"):
        ember.rms_norm(f(2, 4), f(2, 4))
    ids = ember.tensor([0, 1], device=device)
    with pytest.raises(ValueError, match=r"cross_entropy.*logits.*\[2, 3, 4\]"):
        ember.cross_entropy_per_sample(f(2, 3, 4), ids)
    with pytest.raises(ValueError, match=r"cross_entropy.*targets.*3.*\[2\]"):
        ember.cross_entropy_per_sample(f(3, 4), ids)
    with pytest.raises(ValueError, match="cross_entropy.*smoothing"):
        ember.cross_entropy_per_sample(f(2, 4), ids, smoothing=1.5)
    with pytest.raises(ValueError, match="embedding.*weight"):
        ember.embedding(f(4), ids)
    with pytest.raises(ValueError, match="attention.*q"):
        ember.attention(f(2, 3, 4), f(2, 3, 4), f(2, 3, 4))
    with pytest.raises(ValueError, match="attention"):
        ember.attention(f(1, 2, 3, 4), f(1, 2, 5, 4), f(1, 2, 6, 4))
    with pytest.raises(ValueError, match=r"attention.*mask_pad.*\[1, 5\]"):
        ember.attention(f(1, 2, 3, 4), f(1, 2, 5, 4), f(1, 2, 5, 4), mask_pad=f(1, 3, dtype=ember.bool_))
    with pytest.raises(ValueError, match="attention.*dropout_p"):
        ember.attention(f(1, 1, 2, 2), f(1, 1, 2, 2), f(1, 1, 2, 2), dropout_p=1.0)
    with pytest.raises(ValueError, match=r"gather.*rank"):
        ember.gather(f(2, 3), 1, ember.zeros(2, dtype=ember.int64, device=device))
    with pytest.raises(ValueError, match="scatter_add"):
        ember.scatter_add(f(2, 3), 1, ember.zeros(2, 2, dtype=ember.int64, device=device), f(2, 3))
    with pytest.raises(ValueError, match="index_select.*1-D"):
        ember.index_select(f(2, 3), 0, ember.zeros(1, 1, dtype=ember.int64, device=device))
    with pytest.raises(ValueError, match="index_put"):
        ember.index_put(f(3, 4), (0,), f(3))
    with pytest.raises(ValueError, match="topk"):
        ember.topk(f(2, 3), 4)


# ---- dtype mismatches ---------------------------------------------------------------------------
def test_dtype_errors(f, device):
    with pytest.raises(TypeError, match="logical_or.*float32"):
        f(2) | f(2)
    with pytest.raises(TypeError, match="softmax.*int64"):
        ember.softmax(f(2, dtype=ember.int64))
    with pytest.raises(TypeError, match="layer_norm.*int"):
        ember.layer_norm(f(2, 3, dtype=ember.int32))
    with pytest.raises(TypeError, match="gelu"):
        ember.gelu(f(3, dtype=ember.int64))
    with pytest.raises(TypeError, match="attention.*float64"):
        ember.attention(f(1, 1, 2, 2), f(1, 1, 2, 2, dtype=ember.float64), f(1, 1, 2, 2))
    with pytest.raises(TypeError, match=r"gather.*float32"):
        ember.gather(f(2, 3), 1, f(2, 3))
    with pytest.raises(TypeError, match="embedding"):
        ember.embedding(f(4, 2), f(3))
    with pytest.raises(TypeError, match="where"):
        ember.where(f(2), f(2), f(2))
    with pytest.raises(TypeError, match="mask_fill"):
        ember.mask_fill(f(2), f(2), 0.0)
    with pytest.raises(IndexError, match="index"):
        f(3)[f(2)]  # float index tensor
    with pytest.raises(ValueError, match="gelu.*approximate"):
        ember.gelu(f(3), approximate="erf")


# ---- device mismatches --------------------------------------------------------------------------
def test_device_mismatch(device):
    other = _other(device)
    a = ember.ones(2, 3, device=device)
    b = ember.ones(2, 3, device=other)
    for fn, op in (
        (lambda: a + b, "add"),
        (lambda: a @ b.T, "matmul"),
        (lambda: ember.cat([a, b]), "cat"),
        (lambda: ember.where(a > 0, a, b), "where"),
        (lambda: ember.gather(a, 1, ember.zeros(2, 3, dtype=ember.int64, device=other)), "gather"),
        (lambda: ember.embedding(a, ember.zeros(2, dtype=ember.int64, device=other)), "embedding"),
        (lambda: ember.layer_norm(a, ember.ones(3, device=other)), "layer_norm"),
    ):
        with pytest.raises(RuntimeError) as info:
            fn()
        msg = str(info.value)
        assert op in msg and str(device) in msg and other in msg, msg


# ---- out-of-range indices --------------------------------------------------------------------
def test_out_of_range_indices_raise_index_error(device):
    x = ember.ones(3, 4, device=device)
    idx = lambda v: ember.tensor(v, device=device)
    with pytest.raises(IndexError, match=r"gather.*4"):
        ember.gather(x, 1, idx([[0, 4], [0, 0], [1, 1]]))
    with pytest.raises(IndexError, match="gather"):
        ember.gather(x, 0, idx([[-1, 0, 0, 0]]))
    with pytest.raises(IndexError, match=r"index_select.*3"):
        ember.index_select(x, 0, idx([0, 3]))
    with pytest.raises(IndexError, match="index_select"):
        ember.index_select(x, 1, idx([-1]))
    with pytest.raises(IndexError, match=r"embedding.*10"):
        ember.embedding(ember.ones(10, 2, device=device), idx([[1, 10]]))
    with pytest.raises(IndexError, match="embedding"):
        ember.embedding(ember.ones(10, 2, device=device), idx([-1]))
    with pytest.raises(IndexError, match="scatter_add"):
        ember.scatter_add(x, 1, idx([[5, 0]]), ember.ones(1, 2, device=device))
    with pytest.raises(IndexError, match="one_hot"):
        ember.one_hot(idx([0, 3]), 3)
    with pytest.raises(IndexError, match="one_hot"):
        ember.one_hot(idx([-1]), 3)
    with pytest.raises(IndexError, match="cross_entropy"):
        ember.cross_entropy_per_sample(x, idx([0, 1, 4]))
    with pytest.raises(IndexError, match="index"):
        x[3]
    with pytest.raises(IndexError, match="index"):
        x[0, -5]
    with pytest.raises(IndexError, match="index"):
        x[idx([0, 3])]
    with pytest.raises(IndexError, match="index"):
        x[:, idx([-5])]
    with pytest.raises(IndexError, match="index"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="index"):
        x[ember.tensor([True, False], device=device)]
    with pytest.raises(IndexError, match="index"):
        ember.index_put(x, (idx([7]),), 1.0)
    with pytest.raises(IndexError):
        x[..., ...]
    with pytest.raises(ValueError, match="step"):
        x[::-1]


# ---- bad dims ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.sum(2),
        lambda x: x.mean(-3),
        lambda x: x.max((0, 5)),
        lambda x: x.argmax(2),
        lambda x: x.cumsum(3),
        lambda x: ember.softmax(x, 2),
        lambda x: ember.log_softmax(x, -3),
        lambda x: x.permute(0, 2),
        lambda x: x.transpose(0, 2),
        lambda x: x.flatten(0, 4),
        lambda x: x.squeeze(2),
        lambda x: x.unsqueeze(4),
        lambda x: x.flip(2),
        lambda x: ember.cat([x, x], 2),
        lambda x: ember.stack([x, x], 4),
        lambda x: x.split(1, 2),
        lambda x: x.chunk(2, -3),
        lambda x: x.narrow(2, 0, 1),
        lambda x: x.sort(2),
        lambda x: x.topk(1, 2),
        lambda x: x.gather(2, x.int()),
        lambda x: x.index_select(2, ember.tensor([0], device=x.device)),
        lambda x: ember.scatter_add(x, 2, x.int(), x),
    ],
    ids=[
        "sum",
        "mean",
        "max",
        "argmax",
        "cumsum",
        "softmax",
        "log_softmax",
        "permute",
        "transpose",
        "flatten",
        "squeeze",
        "unsqueeze",
        "flip",
        "cat",
        "stack",
        "split",
        "chunk",
        "narrow",
        "sort",
        "topk",
        "gather",
        "index_select",
        "scatter_add",
    ],
)
def test_bad_dims_raise_index_error(device, call):
    x = ember.ones(2, 3, device=device)
    with pytest.raises(IndexError, match="dim"):
        call(x)


def test_dim_must_be_int(device):
    with pytest.raises(TypeError, match="dim"):
        ember.ones(2, 3, device=device).sum(1.0)


def test_repeated_dims_rejected(device):
    with pytest.raises(ValueError, match="repeated"):
        ember.ones(2, 3, device=device).sum((1, -1))


def test_errors_leave_no_partial_state(device):
    x = ember.tensor(np.arange(4.0), device=device)
    with pytest.raises(IndexError):
        x[ember.tensor([9], device=device)] = 1.0
    np.testing.assert_array_equal(x.numpy(), np.arange(4.0))
