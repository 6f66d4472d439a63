"""RotaryEncoding (Burn's): Burn's own expected values, a NumPy reference, the relative-position
property, float64 gradients, the window shift, records and errors."""

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads, weighted_sum

import ember
from ember import nn

# Burn's rope_encoding.rs tests: input, and the output of RotaryEncodingConfig::new(10, 4)
BURN_INPUT = [
    [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]],
    [[9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]],
]
BURN_OUTPUT = [
    [[1.0000, 2.0000, 3.0000, 4.0000], [-2.3473, 7.4492, 6.9197, 8.0696]],
    [[9.0000, 10.0000, 11.0000, 12.0000], [-4.7567, 18.5034, 14.8393, 16.1492]],
]
# (cos, sin) at position 1 of RotaryEncodingConfig::new(2, 8), one row per frequency (Burn repeats each twice)
BURN_FREQS_POS1 = [
    [5.4030e-01, 8.4147e-01],
    [9.9500e-01, 9.9833e-02],
    [9.9995e-01, 9.9998e-03],
    [9.9999e-01, 9.9999e-04],
]
BURN_SCALED_LAST = [1.0000, 2.1361e-04]  # the last row with Llama 3's frequency scaling


def t(a, dtype=None):
    return ember.tensor(a, dtype=dtype, device=DEV)


def np_rope(x, start, theta=10_000.0):
    """Rotate pairs (x[2i], x[2i+1]) at position p by p·theta^(−2i/d), in float64."""
    d = x.shape[-1]
    freqs = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.arange(start, start + x.shape[-2])[:, None] * freqs[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x, dtype=np.float64)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def test_matches_burns_values():
    rope = nn.RotaryEncodingConfig(10, 4).init(DEV)
    x = t(BURN_INPUT)
    np.testing.assert_allclose(rope(x.unsqueeze(0)).numpy()[0], BURN_OUTPUT, atol=1e-4)  # [1, 2, 2, 4]
    np.testing.assert_allclose(rope(x).numpy(), BURN_OUTPUT, atol=1e-4)  # 3-D input
    np.testing.assert_array_equal(rope(ember.zeros(1, 2, 2, 4, device=DEV)).numpy(), np.zeros((1, 2, 2, 4)))
    freqs = nn.RotaryEncodingConfig(2, 8).init(DEV).freq_complex.numpy()
    assert freqs.shape == (2, 8, 2)
    np.testing.assert_allclose(freqs[0], np.tile([1.0, 0.0], (8, 1)), atol=1e-6)
    np.testing.assert_allclose(freqs[1], np.repeat(BURN_FREQS_POS1, 2, axis=0), rtol=1e-4, atol=1e-6)
    assert repr(rope).startswith("RotaryEncoding {d_model: 4, max_sequence_length: 10")


def _llama3_scaling(freqs):
    """Burn's test helper (Llama 3's frequency scaling by parts), in ember ops."""
    scale, low, high, old_len = 8.0, 1.0, 4.0, 8192.0
    wavelen = freqs.reciprocal() * (2.0 * np.pi)
    smooth = ((wavelen.reciprocal() * old_len) - low) / (high - low)
    blended = (smooth.neg() + 1.0) * (freqs / scale) + smooth * freqs
    out = freqs.mask_where(wavelen >= old_len / high, blended)
    out = out.mask_where(wavelen > old_len / low, freqs / scale)
    return out.mask_where(wavelen < old_len / high, freqs)


def test_frequency_scaling_matches_burn():
    rope = nn.RotaryEncodingConfig(2, 8).init_with_frequency_scaling(_llama3_scaling, DEV)
    np.testing.assert_allclose(rope.freq_complex.numpy()[1, 6:], [BURN_SCALED_LAST] * 2, rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(
        rope.freq_complex.numpy()[1, :6], np.repeat(BURN_FREQS_POS1[:3], 2, axis=0), rtol=1e-4, atol=1e-6
    )
    with pytest.raises(ValueError, match=r"scaling must return a tensor \[4\]"):
        nn.RotaryEncodingConfig(2, 8).init_with_frequency_scaling(lambda f: f[:2], DEV)


@pytest.mark.parametrize("start", [0, 3])
def test_matches_numpy_on_heads(start, device):
    rng = np.random.default_rng(start)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)  # [batch, heads, seq, d_head]
    rope = nn.RotaryEncodingConfig(8, 6, theta=500.0).init(device)
    out = rope.apply(ember.tensor(x, device=device), start)
    np.testing.assert_allclose(out.numpy(), np_rope(x.astype(np.float64), start, 500.0), rtol=1e-5, atol=1e-5)


def test_scores_depend_on_relative_positions_only():
    rope = nn.RotaryEncodingConfig(16, 8).init(DEV, "float64")
    rng = np.random.default_rng(1)
    q, k = t(rng.standard_normal((1, 1, 1, 8))), t(rng.standard_normal((1, 1, 1, 8)))

    def score(m, n):
        return float((rope.apply(q, m) * rope.apply(k, n)).sum().item())

    assert score(5, 2) == pytest.approx(score(12, 9), rel=1e-10)
    assert score(0, 0) == pytest.approx(float((q * k).sum().item()), rel=1e-12)
    assert abs(score(5, 2) - score(5, 3)) > 1e-3


def test_gradient_matches_finite_differences():
    rope = nn.RotaryEncodingConfig(6, 4).init(DEV, "float64")
    assert rope.freq_complex.dtype is ember.float64
    x = ember.tensor(np.random.default_rng(2).standard_normal((2, 2, 3, 4)), device=DEV).require_grad()
    check_grads(lambda: weighted_sum(rope.apply(x, 2)), [x])


def test_shift_and_reset_follow_burn():
    x = t(BURN_INPUT).unsqueeze(0)
    big = nn.RotaryEncodingConfig(10, 4).init(DEV)
    for start in (2, 6):  # 2: the kept rows are moved and the rest computed; 6: all recomputed
        small = nn.RotaryEncodingConfig(4, 4).init(DEV)
        small.shift(start)
        assert small.start_offset == start
        np.testing.assert_allclose(
            small.apply(x, 0).numpy(), big.apply(x, start).numpy(), rtol=1e-5, atol=1e-5
        )
    small = nn.RotaryEncodingConfig(4, 4).init(DEV)
    small.shift(2)
    small.shift(5)
    np.testing.assert_allclose(small.apply(x, 1).numpy(), big.apply(x, 6).numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="monotonically increasing"):
        small.shift(4)
    small.reset()
    assert small.start_offset == 0
    np.testing.assert_allclose(small.apply(x, 0).numpy(), big.apply(x, 0).numpy(), rtol=1e-6, atol=1e-6)
    small.shift(2)  # a reset window shifts from the start again
    np.testing.assert_allclose(small.apply(x, 0).numpy(), big.apply(x, 2).numpy(), rtol=1e-5, atol=1e-5)


def test_edge_cases_and_records(tmp_path):
    rope = nn.RotaryEncodingConfig(4, 4).init(DEV)
    one = ember.randn(1, 1, 4, device=DEV)
    np.testing.assert_allclose(
        rope.apply(one, 0).numpy(), one.numpy(), rtol=1e-6
    )  # position 0 is the identity
    assert rope.apply(ember.zeros(0, 2, 3, 4, device=DEV), 1).shape == (0, 2, 3, 4)
    assert rope.apply(ember.zeros(2, 0, 4, device=DEV), 4).shape == (2, 0, 4)
    # the tables are constants: no parameters, an empty record, moved and cast by to()
    assert rope.num_params() == 0 and len(rope.into_record()) == 0
    path = rope.save_file(tmp_path / "rope.bpk")
    nn.RotaryEncodingConfig(4, 4).init(DEV).load_file(path)
    rope.to(ember.float64)
    assert (
        rope.freq_complex.dtype is ember.float64 and rope.apply(one.to(ember.float64)).dtype is ember.float64
    )
    half = rope.apply(one.to(ember.float16))
    assert half.dtype is ember.float16


def test_clear_errors():
    with pytest.raises(ValueError, match="d_model must be even"):
        nn.RotaryEncodingConfig(10, 15).init(DEV)
    with pytest.raises(ValueError, match="theta must be positive"):
        nn.RotaryEncodingConfig(10, 4, theta=0.0).init(DEV)
    with pytest.raises(ValueError, match="max_sequence_length must be positive"):
        nn.RotaryEncodingConfig(0, 4).init(DEV)
    rope = nn.RotaryEncodingConfig(4, 4).init(DEV)
    with pytest.raises(
        ValueError, match=r"last dim of the input \[1, 2, 6\] must be the encoding's d_model 4"
    ):
        rope(ember.zeros(1, 2, 6, device=DEV))
    with pytest.raises(ValueError, match=r"positions 2\.\.5 exceed the table's max_sequence_length 4"):
        rope.apply(ember.zeros(1, 3, 4, device=DEV), 2)
    with pytest.raises(ValueError, match="at least 2 dims"):
        rope(ember.zeros(4, device=DEV))
    with pytest.raises(ValueError, match="start must be a non-negative int"):
        rope.apply(ember.zeros(1, 1, 4, device=DEV), -1)
    with pytest.raises(TypeError, match="float tensor"):
        rope(ember.zeros(1, 2, 4, dtype="int64", device=DEV))
