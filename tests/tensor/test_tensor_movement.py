"""Movement ops on every backend: reshape, permute, transpose, flatten, squeeze/unsqueeze,
expand, repeat, narrow, flip, cat, stack, split, chunk, pad."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.gradcheck import gradcheck_np
from helpers.numeric import assert_close

import ember

X_SHAPE = (2, 3, 4)

# name: (ember fn, numpy fn) — every case is checked forward (float32, int64) and by gradcheck
MOVES = {
    "reshape": (lambda t: t.reshape(4, 6), lambda x: x.reshape(4, 6)),
    "reshape_minus1": (lambda t: t.reshape((3, -1)), lambda x: x.reshape(3, -1)),
    "view": (lambda t: t.view(-1), lambda x: x.reshape(-1)),
    "permute": (lambda t: t.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1)),
    "permute_list": (lambda t: t.permute([1, -1, 0]), lambda x: x.transpose(1, 2, 0)),
    "transpose": (lambda t: t.transpose(), lambda x: np.swapaxes(x, -1, -2)),
    "transpose_dims": (lambda t: t.transpose(0, 2), lambda x: np.swapaxes(x, 0, 2)),
    "swap_dims": (lambda t: t.swap_dims(0, 1), lambda x: np.swapaxes(x, 0, 1)),
    "T": (lambda t: t.T, lambda x: x.transpose(2, 1, 0)),
    "flatten": (lambda t: t.flatten(), lambda x: x.reshape(-1)),
    "flatten_range": (lambda t: ember.flatten(t, 1, 2), lambda x: x.reshape(2, 12)),
    "unsqueeze": (lambda t: t.unsqueeze(1), lambda x: x[:, None]),
    "unsqueeze_end": (lambda t: t.unsqueeze(-1), lambda x: x[..., None]),
    "squeeze": (lambda t: t.unsqueeze(0).unsqueeze(3).squeeze(), lambda x: x),
    "squeeze_dim": (lambda t: t.unsqueeze(0).unsqueeze(3).squeeze(3), lambda x: x[None]),
    "squeeze_dims": (lambda t: t.unsqueeze(0).unsqueeze(3).squeeze((0, 3)), lambda x: x),
    "expand": (lambda t: t[:, :1].expand(2, 5, 4), lambda x: np.broadcast_to(x[:, :1], (2, 5, 4))),
    "expand_new_dims": (lambda t: t.expand(3, -1, 3, 4), lambda x: np.broadcast_to(x, (3, 2, 3, 4))),
    "repeat": (lambda t: t.repeat(2, 1, 3), lambda x: np.tile(x, (2, 1, 3))),
    "repeat_new_dims": (lambda t: t.repeat(2, 1, 1, 2), lambda x: np.tile(x, (2, 1, 1, 2))),
    "narrow": (lambda t: t.narrow(1, 1, 2), lambda x: x[:, 1:3]),
    "narrow_negative_start": (lambda t: t.narrow(-1, -3, 2), lambda x: x[..., 1:3]),
    "flip": (lambda t: t.flip(0), lambda x: x[::-1]),
    "flip_dims": (lambda t: t.flip((0, 2)), lambda x: x[::-1, :, ::-1]),
    "pad_last": (lambda t: t.pad((1, 2)), lambda x: np.pad(x, ((0, 0), (0, 0), (1, 2)))),
    "pad_two": (
        lambda t: ember.pad(t, (0, 1, 2, 0), value=-1.5),
        lambda x: np.pad(x, ((0, 0), (2, 0), (0, 1)), constant_values=-1.5),
    ),
    "pad_all": (lambda t: t.pad((1, 1, 0, 1, 1, 0)), lambda x: np.pad(x, ((1, 0), (0, 1), (1, 1)))),
}


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64], ids=str)
@pytest.mark.parametrize("name", list(MOVES))
def test_movement_forward(device, rng, name, dtype):
    fn, ref = MOVES[name]
    x = (rng.standard_normal(X_SHAPE) * 4).astype(dtype.numpy)
    out = fn(ember.tensor(x, device=device))
    want = ref(x)
    if name.startswith("pad") and dtype is ember.int64:
        want = ref(x.astype(np.float64)).astype(np.int64)  # the fill value is cast to int
    assert out.dtype is dtype
    assert out.shape == want.shape
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("name", list(MOVES))
def test_movement_gradients(device, rng, name):
    fn, _ = MOVES[name]
    gradcheck_np(fn, device, rng.standard_normal(X_SHAPE))


def test_noop_moves_return_input(device):
    t = ember.ones(2, 3, device=device)
    assert t.reshape(2, 3) is t and t.permute(0, 1) is t and t.expand(2, 3) is t


def test_cat_stack(device, rng):
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((1, 3)), rng.standard_normal((4, 3))
    ta, tb, tc = (ember.tensor(v, dtype=ember.float64, device=device) for v in (a, b, c))
    assert_close(ember.cat([ta, tb, tc]), np.concatenate([a, b, c]), dtype=ember.float64)
    assert_close(ember.cat([ta.T, tc.T], dim=-1), np.concatenate([a.T, c.T], axis=-1))
    d = rng.standard_normal((2, 3))
    td = ember.tensor(d, dtype=ember.float64, device=device)
    for dim in (0, 1, 2, -1):
        assert_close(ember.stack([ta, td], dim=dim), np.stack([a, d], axis=dim))
    mixed = ember.cat([ember.tensor([1, 2], device=device), ember.tensor([0.5], device=device)])
    assert mixed.dtype is ember.float32 and mixed.numpy().tolist() == [1.0, 2.0, 0.5]


def test_cat_stack_gradients(device, rng):
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((1, 3)), rng.standard_normal((4, 3))
    gradcheck_np(lambda x, y, z: ember.cat([x, y, z], 0), device, a, b, c)
    gradcheck_np(lambda x, y: ember.cat([x.T, y.T], dim=1) * 2, device, a, c)
    d = rng.standard_normal((2, 3))
    gradcheck_np(lambda x, y: ember.stack([x, y, x], dim=1), device, a, d)


def test_cat_with_constant(device, rng):
    a = rng.standard_normal((2, 3))
    const = ember.ones(1, 3, dtype=ember.float64, device=device)  # does not require grad
    gradcheck_np(lambda x: ember.cat([const, x, const]), device, a)


def test_split_chunk(device, rng):
    x = rng.standard_normal((7, 4))
    t = ember.tensor(x, dtype=ember.float64, device=device)
    parts = t.split(3)
    assert [p.shape for p in parts] == [(3, 4), (3, 4), (1, 4)]
    for p, w in zip(parts, np.split(x, [3, 6])):
        assert_close(p, w)
    parts = ember.split(t, [1, 2, 1], dim=1)
    assert [p.shape for p in parts] == [(7, 1), (7, 2), (7, 1)]
    for p, w in zip(parts, np.split(x, [1, 3], axis=1)):
        assert_close(p, w)
    chunks = t.chunk(3)  # as torch.chunk: ceil(7/3) = 3 rows per chunk
    assert [c.shape for c in chunks] == [(3, 4), (3, 4), (1, 4)]
    chunks = ember.chunk(t, 2, dim=1)
    assert [c.shape for c in chunks] == [(7, 2), (7, 2)]
    assert_close(chunks[1], x[:, 2:])
    with pytest.raises(ValueError, match="split"):
        t.split([3, 3])
    with pytest.raises(ValueError, match="chunk"):
        t.chunk(0)


def test_split_gradients(device, rng):
    x = rng.standard_normal((7, 4))
    gradcheck_np(lambda t: t.split(3)[0] * t.split(3)[1], device, x)
    gradcheck_np(lambda t: ember.cat(t.chunk(2, dim=1)[::-1], dim=1), device, x)


def test_movement_of_scalars_and_empties(device):
    s = ember.tensor(2.0, device=device)
    assert s.reshape(1, 1).shape == (1, 1) and s.flatten().shape == (1,) and s.unsqueeze(0).shape == (1,)
    assert s.expand(2, 3).numpy().tolist() == [[2.0] * 3] * 2
    e = ember.zeros(0, 3, device=device)
    assert e.reshape(3, 0).shape == (3, 0) and e.T.shape == (3, 0)
    assert ember.cat([e, ember.ones(2, 3, device=device)]).shape == (2, 3)


def test_pad_with_nothing_to_pad_returns_the_input(device):
    # found by the differential test: a 0-d tensor with no pads reached NumPy's pad, whose
    # own TypeError ("`pad_width` must be of integral type") named neither op nor shape
    x = ember.tensor(0.5, device=device)
    assert x.pad(()) is x and x.pad((), 3.0).item() == 0.5
    y = ember.tensor([[1.0, 2.0]], device=device)
    assert y.pad((0, 0, 0, 0), 3.0) is y
